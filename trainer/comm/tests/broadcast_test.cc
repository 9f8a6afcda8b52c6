// broadcast and barrier on every backend, ranks as threads.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/comm/tests/rank_threads.h"

namespace ringmaster::trainer::comm {
namespace {

using testing::runRanks;

struct Case {
  std::string backend;
  int n;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string backend = info.param.backend;
  for (char& c : backend) {
    if (c == '-') c = '_';
  }
  return backend + "_N" + std::to_string(info.param.n);
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const std::string& backend : testing::allBackends()) {
    for (int n : {2, 3, 4}) cases.push_back({backend, n});
  }
  return cases;
}

class BroadcastTest : public ::testing::TestWithParam<Case> {};

TEST_P(BroadcastTest, CopiesTheRootBytesToEveryRank) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  for (size_t bytes : {size_t{1}, size_t{10000}, (size_t{3} << 20) + 5}) {
    for (int root : {0, c.n - 1}) {
      std::vector<std::vector<unsigned char>> data(c.n, std::vector<unsigned char>(bytes));
      for (int r = 0; r < c.n; ++r) {
        for (size_t i = 0; i < bytes; ++i) data[r][i] = static_cast<unsigned char>(r * 31 + i * 7);
      }
      const std::vector<unsigned char> expected = data[root];
      std::vector<core::Status> status(c.n);
      runRanks(c.n, [&](int r) { status[r] = comms[r]->broadcast(data[r].data(), bytes, root); });
      for (int r = 0; r < c.n; ++r) {
        ASSERT_TRUE(status[r].ok()) << status[r].message();
        EXPECT_TRUE(data[r] == expected)
            << "rank " << r << ", " << bytes << " bytes from root " << root;
      }
    }
  }
}

TEST_P(BroadcastTest, BarrierReturnsOnEveryRankAndKeepsTheGroupUsable) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  std::vector<core::Status> status(c.n);
  std::vector<float> sums(c.n);
  runRanks(c.n, [&](int r) {
    for (int i = 0; i < 5 && status[r].ok(); ++i) status[r] = comms[r]->barrier();
    float v = 1.0f;
    if (status[r].ok()) status[r] = comms[r]->allreduceSum(&v, 1, {});
    sums[r] = v;
  });
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r].message();
    EXPECT_EQ(sums[r], static_cast<float>(c.n));
  }
}

TEST_P(BroadcastTest, RejectsARootOutsideTheWorld) {
  const Case& c = GetParam();
  auto comms = testing::makeCommunicators(c.backend, c.n);
  ASSERT_EQ(comms.size(), static_cast<size_t>(c.n));
  char byte = 0;
  core::Status s = comms[0]->broadcast(&byte, 1, c.n);
  EXPECT_EQ(s.code(), core::Code::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Backends, BroadcastTest, ::testing::ValuesIn(allCases()), caseName);

}  // namespace
}  // namespace ringmaster::trainer::comm
