// allreduceSum on every backend, ranks as threads: correctness for awkward sizes and world
// sizes, identical results on every rank, and repeated calls on kept buffers.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trainer/comm/communicator.h"
#include "trainer/comm/gloo_communicator.h"
#include "trainer/comm/tcp_communicator.h"
#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using testing::runRanks;

struct Case {
  std::string backend;
  int n;
  size_t count;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string backend = info.param.backend;
  for (char& c : backend) {
    if (c == '-') c = '_';
  }
  return backend + "_N" + std::to_string(info.param.n) + "_" + std::to_string(info.param.count);
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const std::string& backend : testing::allBackends()) {
    for (int n : {2, 3, 4}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, (size_t{1} << 20) + 3}) {
        cases.push_back({backend, n, count});
      }
    }
  }
  // tcp's other algorithms: halving-doubling with ranks beyond a power of two (6 ranks, 400 KB)
  // and the ring at 4 ranks (above 16 MiB).
  cases.push_back({"tcp", 6, 100003});
  cases.push_back({"tcp", 4, (size_t{4} << 20) + 5});
  return cases;
}

// Multiples of 1/4 small enough that every partial sum is exact in float, whatever the order.
float exactValue(int rank, size_t i, int round) {
  return static_cast<float>((rank + 1 + round) * static_cast<int>(i % 251 + 1)) * 0.25f;
}

float exactSum(int n, size_t i, int round) {
  float sum = 0;
  for (int r = 0; r < n; ++r) sum += exactValue(r, i, round);
  return sum;
}

class AllreduceTest : public ::testing::TestWithParam<Case> {};

TEST_P(AllreduceTest, SumsEveryElementAcrossRanks) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  std::vector<std::vector<float>> data(c.n, std::vector<float>(c.count));
  for (int r = 0; r < c.n; ++r) {
    for (size_t i = 0; i < c.count; ++i) data[r][i] = exactValue(r, i, 0);
  }
  std::vector<core::Status> status(c.n);
  runRanks(c.n, [&](int r) {
    status[r] = comms[r]->allreduceSum(data[r].data(), c.count, {.timeout = {}, .tag = "bucket 0"});
  });
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r].message();
    size_t wrong = 0;
    size_t first_wrong = 0;
    for (size_t i = 0; i < c.count; ++i) {
      if (data[r][i] != exactSum(c.n, i, 0) && wrong++ == 0) first_wrong = i;
    }
    EXPECT_EQ(wrong, 0u) << "rank " << r << ", first wrong element " << first_wrong << ": "
                         << data[r][first_wrong] << " != " << exactSum(c.n, first_wrong, 0);
    EXPECT_EQ(comms[r]->stats().allreduce_calls, 1u);
    EXPECT_EQ(comms[r]->stats().allreduce_bytes, c.count * sizeof(float));
  }
}

TEST_P(AllreduceTest, GivesBitwiseIdenticalResultsOnEveryRank) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> data(c.n, std::vector<float>(c.count));
  std::vector<float> reference(c.count, 0.0f);
  for (int r = 0; r < c.n; ++r) {
    for (size_t i = 0; i < c.count; ++i) {
      data[r][i] = dist(gen);
      reference[i] += data[r][i];
    }
  }
  std::vector<core::Status> status(c.n);
  runRanks(c.n, [&](int r) { status[r] = comms[r]->allreduceSum(data[r].data(), c.count, {}); });
  for (int r = 0; r < c.n; ++r) ASSERT_TRUE(status[r].ok()) << status[r].message();
  for (int r = 1; r < c.n; ++r) {
    EXPECT_EQ(std::memcmp(data[0].data(), data[r].data(), c.count * sizeof(float)), 0)
        << "rank " << r << " differs from rank 0";
  }
  for (size_t i = 0; i < c.count; ++i) {
    ASSERT_NEAR(data[0][i], reference[i], 1e-5f) << "element " << i;
  }
}

TEST_P(AllreduceTest, ReusesBuffersAcrossRepeatedCalls) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  // Two buffers per rank, used alternately, refilled every round: a kept setup must not serve
  // stale contents or the wrong buffer.
  std::vector<std::vector<float>> a(c.n, std::vector<float>(c.count));
  std::vector<std::vector<float>> b(c.n, std::vector<float>(c.count / 2 + 2));
  constexpr int kRounds = 3;
  std::vector<core::Status> status(c.n);
  std::vector<int> bad_round(c.n, -1);
  runRanks(c.n, [&](int r) {
    for (int round = 0; round < kRounds && status[r].ok(); ++round) {
      for (size_t i = 0; i < a[r].size(); ++i) a[r][i] = exactValue(r, i, round);
      for (size_t i = 0; i < b[r].size(); ++i) b[r][i] = exactValue(r, i, round + 10);
      status[r] = comms[r]->allreduceSum(a[r].data(), a[r].size(), {});
      if (!status[r].ok()) break;
      status[r] = comms[r]->allreduceSum(b[r].data(), b[r].size(), {});
      for (size_t i = 0; i < a[r].size() && bad_round[r] < 0; ++i) {
        if (a[r][i] != exactSum(c.n, i, round)) bad_round[r] = round;
      }
      for (size_t i = 0; i < b[r].size() && bad_round[r] < 0; ++i) {
        if (b[r][i] != exactSum(c.n, i, round + 10)) bad_round[r] = round;
      }
    }
  });
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r].message();
    EXPECT_EQ(bad_round[r], -1) << "rank " << r << " got a wrong sum in round " << bad_round[r];
    EXPECT_EQ(comms[r]->stats().allreduce_calls, 2u * kRounds);
  }
  if (c.backend == "gloo") {
    for (int r = 0; r < c.n; ++r) {
      EXPECT_EQ(static_cast<GlooCommunicator&>(*comms[r]).cachedBufferCountForTesting(), 2u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, AllreduceTest, ::testing::ValuesIn(allCases()), caseName);

// Rank 0 keeps one buffer, rank 1 takes a new one every call: kept setups are per rank, so
// they must not need the same buffers everywhere (only the same sizes).
TEST(AllreduceTest, WorksWhenOneRankPassesANewBufferEveryCall) {
  for (const std::string& backend : testing::allBackends()) {
    auto comms = testing::makeCommunicators(backend, 2, std::chrono::seconds(20));
    ASSERT_EQ(comms.size(), 2u);
    std::vector<core::Status> status(2);
    std::vector<int> wrong(2, 0);
    runRanks(2, [&](int r) {
      std::vector<float> kept(100);
      std::vector<std::vector<float>> fresh;  // all alive, so every address is new
      for (int call = 0; call < 4 && status[r].ok(); ++call) {
        std::vector<float>* buffer = &kept;
        if (r == 1) buffer = &fresh.emplace_back(100);
        std::fill(buffer->begin(), buffer->end(), static_cast<float>(r + call));
        status[r] = comms[r]->allreduceSum(buffer->data(), buffer->size(), {});
        for (float v : *buffer) wrong[r] += v != static_cast<float>(1 + 2 * call);
      }
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(status[r].ok()) << backend << ": " << status[r].message();
      EXPECT_EQ(wrong[r], 0) << backend << " rank " << r;
    }
  }
}

TEST(AllreduceTest, EmptyBufferIsANoOpOnEveryBackend) {
  for (const std::string& backend : testing::allBackends()) {
    auto comms = testing::makeCommunicators(backend, 2);
    ASSERT_EQ(comms.size(), 2u);
    std::vector<core::Status> status(2);
    runRanks(2, [&](int r) { status[r] = comms[r]->allreduceSum(nullptr, 0, {}); });
    EXPECT_TRUE(status[0].ok()) << backend << ": " << status[0].message();
    EXPECT_TRUE(status[1].ok()) << backend << ": " << status[1].message();
  }
}

// The congestion control of every TCP socket this process has open, by name ("cubic").
std::vector<std::string> tcpCongestionControls() {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    char name[32] = {};
    socklen_t len = sizeof(name);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0) out.emplace_back(name);
  }
  return out;
}

// The tcp transport's connections, both ends, start under the unpaced congestion control
// (tcp_congestion.h), whatever the host's default.
TEST(AllreduceTest, TcpConnectionsRunCubicOrReno) {
  const std::vector<std::string> earlier = tcpCongestionControls();
  const auto unpaced = [](const std::vector<std::string>& names) {
    return std::count(names.begin(), names.end(), std::string("cubic")) +
           std::count(names.begin(), names.end(), std::string("reno"));
  };
  const auto before = unpaced(earlier);
  auto comms = testing::makeCommunicators("tcp", 3);
  ASSERT_EQ(comms.size(), 3u);
  // Three ranks in this process: 3 connections, both of whose ends are here.
  EXPECT_GE(unpaced(tcpCongestionControls()), before + 6);
}

// What the metrics label each call with is what runs. tcp: recursive doubling up to 16 KiB per
// rank, then halving-doubling up to 16 MiB from 4 ranks on, the ring above (and at 2-3 ranks);
// shm: one synchronization up to its direct limit (32 KiB by default), reduce-scatter +
// all-gather above.
TEST(AllreduceTest, TcpAndShmNameTheAlgorithmTheyRunBySize) {
  struct Row {
    std::string backend;
    int world;
    size_t bytes;
    std::string want;
  };
  const Row rows[] = {
      {"tcp", 2, 4, "recursive_doubling"},
      {"tcp", 2, 32 << 10, "recursive_doubling"},
      {"tcp", 2, (32 << 10) + 4, "ring"},
      {"tcp", 2, 256 << 20, "ring"},
      {"tcp", 3, (48 << 10) + 4, "ring"},
      {"tcp", 4, 64 << 10, "recursive_doubling"},
      {"tcp", 4, (64 << 10) + 4, "halving_doubling"},
      {"tcp", 4, 16 << 20, "halving_doubling"},
      {"tcp", 4, (16 << 20) + 4, "ring"},
      {"tcp", 8, 128 << 10, "recursive_doubling"},
      {"shm", 2, 4, "direct"},
      {"shm", 2, 32 << 10, "direct"},
      {"shm", 2, (32 << 10) + 4, "reduce_scatter_allgather"},
  };
  for (const Row& row : rows) {
    auto comms = testing::makeCommunicators(row.backend, row.world);
    ASSERT_EQ(comms.size(), static_cast<size_t>(row.world)) << row.backend;
    EXPECT_EQ(comms[0]->allreduceAlgorithm(row.bytes), row.want)
        << row.backend << " world " << row.world << ", " << row.bytes << " bytes";
  }
  EXPECT_EQ(tcpDoublingMaxBytes(64), size_t{256} << 10) << "doubling is capped";
}

// tcp's doubling threshold is a knob (autotune's): set on every rank, allreduces up to it take
// recursive doubling from the next call on, and sum alike either way; shm has none to set.
TEST(AllreduceTest, TcpDoublingThresholdCanBeSetAndStillSums) {
  auto comms = testing::makeCommunicators("tcp", 2);
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0]->doublingMaxBytes(), std::optional<size_t>(32 << 10));
  const size_t count = 64 << 10;  // 256 KiB: the ring by default
  EXPECT_EQ(comms[0]->allreduceAlgorithm(count * sizeof(float)), "ring");
  for (auto& c : comms) ASSERT_TRUE(c->setDoublingMaxBytes(1 << 20).ok());
  EXPECT_EQ(comms[1]->doublingMaxBytes(), std::optional<size_t>(1 << 20));
  EXPECT_EQ(comms[0]->allreduceAlgorithm(count * sizeof(float)), "recursive_doubling");
  std::vector<std::vector<float>> data(2, std::vector<float>(count));
  for (int r = 0; r < 2; ++r) {
    for (size_t i = 0; i < count; ++i)
      data[r][i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
  }
  std::vector<std::thread> threads;
  std::vector<core::Status> results(2);
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back(
        [&, r] { results[r] = comms[r]->allreduceSum(data[r].data(), count, {}); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].ok()) << results[r].toString();
    for (size_t i = 0; i < count; i += 997) EXPECT_EQ(data[r][i], 3.0f * static_cast<float>(i % 7));
  }
  auto shm = testing::makeCommunicators("shm", 2);
  ASSERT_EQ(shm.size(), 2u);
  EXPECT_EQ(shm[0]->doublingMaxBytes(), std::nullopt);
  EXPECT_EQ(shm[0]->setDoublingMaxBytes(1 << 20).code(), core::Code::kInvalidArgument);
}

}  // namespace
}  // namespace ringmaster::trainer::comm
