// Parameter-server training of the MLP on Fashion-MNIST, workers and servers as threads of one
// process: sync training matches 2-rank allreduce data parallelism (the trainer itself, ranks as
// threads over the in-process communicator); async and bounded-staleness runs train; a worker
// that leaves mid-run does not hold the other back. Skips without the data set. Waits have
// generous deadlines and nothing asserts how fast anything ran.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "trainer/comm/inproc_communicator.h"
#include "trainer/config.h"
#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_worker.h"
#include "trainer/ps/tests/ps_test_support.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer::ps {
namespace {

using namespace ::ringmaster::trainer::ps::test_support;  // NOLINT: the shared fixtures

// Rank 0's final parameters of 2-rank data parallelism over the in-process communicator.
const std::vector<float>& dataParallelReference() {
  static const std::vector<float> params = [] {
    auto comms = comm::makeInProcCommunicators(kWorkers);
    std::vector<std::vector<float>> out(kWorkers);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorkers; ++r) {
      ranks.emplace_back([&, r] {
        TrainerContext ctx;
        ctx.comm = comms[static_cast<size_t>(r)].get();
        ctx.train = &fashionMnist()->train;
        ctx.test = &fashionMnist()->test;
        Trainer trainer(settings(), ctx);
        auto summary = trainer.run();
        EXPECT_TRUE(summary.ok()) << summary.status().toString();
        if (summary.ok()) {
          EXPECT_EQ(summary->steps, kSteps);
        }
        out[static_cast<size_t>(r)] = trainer.parameters();
      });
    }
    for (auto& rank : ranks) rank.join();
    EXPECT_EQ(out[0], out[1]) << "the data-parallel ranks diverged";
    return out[0];
  }();
  return params;
}

double maxAbsDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
  }
  return worst;
}

double mean(const std::vector<float>& v, size_t first, size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(first),
                         v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0) /
         static_cast<double>(count);
}

template <typename T>
std::string caseName(const ::testing::TestParamInfo<T>& info) {
  return info.param.name;
}

// --- sync equals allreduce data parallelism ---

struct ExactCase {
  std::string name;
  int servers;
};
void PrintTo(const ExactCase& c, std::ostream* os) { *os << c.name; }

class SyncExactness : public ::testing::TestWithParam<ExactCase> {
 protected:
  void SetUp() override {
    if (!fashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
};

TEST_P(SyncExactness, MatchesTwoRankDataParallelism) {
  const ExactCase& c = GetParam();
  const std::vector<float>& reference = dataParallelReference();
  auto cluster = makeCluster(c.servers, Consistency::sync());
  ASSERT_TRUE(cluster);
  if (c.servers > 1) {
    const bool split = std::any_of(cluster->plan.by_tensor.begin(), cluster->plan.by_tensor.end(),
                                   [](const auto& pieces) { return pieces.size() > 1; });
    EXPECT_TRUE(split) << "the plan should cut a tensor across servers";
  }
  std::vector<core::Status> status(kWorkers);
  runWorkers(*cluster, [&](WorkerId w, WorkerKit& kit) {
    auto losses = kit.worker->run(0, kSteps, *kit.batches);
    status[static_cast<size_t>(w)] = losses.status();
  });
  for (const core::Status& s : status) ASSERT_TRUE(s.ok()) << s.toString();
  const double diff = maxAbsDifference(cluster->parameters(), reference);
  std::printf("sync, %d server(s), %zu pieces: max abs difference from data parallelism %.3g\n",
              c.servers,
              std::accumulate(cluster->plan.by_server.begin(), cluster->plan.by_server.end(),
                              size_t{0}, [](size_t n, const auto& p) { return n + p.size(); }),
              diff);
  RecordProperty("max_abs_difference", std::to_string(diff));
  EXPECT_LE(diff, 1e-5);
  for (const auto& server : cluster->servers) {
    const ServerCounters counters = server->counters();
    EXPECT_EQ(counters.updates, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(counters.pushes_applied, static_cast<uint64_t>(kSteps * kWorkers));
    EXPECT_EQ(counters.maxStaleness(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, SyncExactness,
                         ::testing::Values(ExactCase{"one_server", 1}, ExactCase{"two_servers", 2},
                                           ExactCase{"three_servers", 3}),
                         caseName<ExactCase>);

// --- async and bounded staleness train ---

struct LooseCase {
  std::string name;
  Consistency consistency;
};
void PrintTo(const LooseCase& c, std::ostream* os) { *os << c.name; }

class LooseConsistency : public ::testing::TestWithParam<LooseCase> {
 protected:
  void SetUp() override {
    if (!fashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
};

TEST_P(LooseConsistency, TwoWorkersTrainAndStayWithinTheBound) {
  const LooseCase& c = GetParam();
  auto cluster = makeCluster(2, c.consistency);
  ASSERT_TRUE(cluster);
  std::vector<core::Result<std::vector<float>>> losses(kWorkers, std::vector<float>{});
  runWorkers(*cluster, [&](WorkerId w, WorkerKit& kit) {
    std::vector<float> mine;
    for (int64_t step = 0; step < kSteps; ++step) {
      // Worker 1 dawdles, so worker 0 runs ahead as far as the model lets it.
      if (w == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      auto loss = kit.worker->step(step, *kit.batches);
      if (!loss.ok()) {
        losses[static_cast<size_t>(w)] = loss.status();
        return;
      }
      mine.push_back(*loss);
    }
    losses[static_cast<size_t>(w)] = std::move(mine);
  });
  std::vector<float> all(kSteps, 0.0f);
  for (const auto& l : losses) {
    ASSERT_TRUE(l.ok()) << l.status().toString();
    ASSERT_EQ(l->size(), static_cast<size_t>(kSteps));
    for (size_t i = 0; i < all.size(); ++i) all[i] += (*l)[i] / kWorkers;
  }
  EXPECT_LT(mean(all, kSteps - 5, 5), mean(all, 0, 5)) << "the loss should go down";
  std::printf("%s: mean loss of the first 5 steps %.4f, of the last 5 %.4f\n", c.name.c_str(),
              mean(all, 0, 5), mean(all, kSteps - 5, 5));
  for (const auto& server : cluster->servers) {
    const ServerCounters counters = server->counters();
    std::printf("  server %d: staleness of applied pushes:", server->id());
    for (const auto& [staleness, pushes] : counters.staleness) {
      std::printf(" %lld x%llu", static_cast<long long>(staleness),
                  static_cast<unsigned long long>(pushes));
    }
    std::printf("\n");
    EXPECT_EQ(counters.updates, static_cast<uint64_t>(kSteps * kWorkers));
    EXPECT_EQ(counters.pushes_applied, static_cast<uint64_t>(kSteps * kWorkers));
    if (c.consistency.max_staleness) {
      EXPECT_LE(counters.maxStaleness(), *c.consistency.max_staleness);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, LooseConsistency,
                         ::testing::Values(LooseCase{"async", Consistency::async()},
                                           LooseCase{"staleness_1", Consistency::bounded(1)}),
                         caseName<LooseCase>);

// --- a worker leaving mid-run does not block sync ---

struct LeaveCase {
  std::string name;
  bool pushes_its_last_step;  // false: dies between the pull and the push of step kLeaveAt
};
void PrintTo(const LeaveCase& c, std::ostream* os) { *os << c.name; }

class SyncLeave : public ::testing::TestWithParam<LeaveCase> {
 protected:
  void SetUp() override {
    if (!fashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  }
};

TEST_P(SyncLeave, TheOtherWorkerCompletesItsSteps) {
  const LeaveCase& c = GetParam();
  constexpr int64_t kLeaveAt = 5;
  auto cluster = makeCluster(2, Consistency::sync());
  ASSERT_TRUE(cluster);
  core::Result<std::vector<float>> survivor = core::internalError("did not run");
  runWorkers(*cluster, [&](WorkerId w, WorkerKit& kit) {
    if (w == 0) {
      survivor = kit.worker->run(0, kSteps, *kit.batches);
      return;
    }
    auto before = kit.worker->run(0, kLeaveAt, *kit.batches);
    EXPECT_TRUE(before.ok()) << before.status().toString();
    if (c.pushes_its_last_step) {
      auto last = kit.worker->step(kLeaveAt, *kit.batches);
      EXPECT_TRUE(last.ok()) << last.status().toString();
    } else {
      const core::Status pulled = kit.worker->pull(kLeaveAt);
      EXPECT_TRUE(pulled.ok()) << pulled.toString();
    }
    // What a failure detector does for a dead worker.
    for (auto& server : cluster->servers) {
      const core::Status removed = server->removeWorker(w);
      EXPECT_TRUE(removed.ok()) << removed.toString();
    }
    EXPECT_EQ(kit.worker->pull(kLeaveAt + 1).code(), core::Code::kNotFound);
  });
  ASSERT_TRUE(survivor.ok()) << survivor.status().toString();
  EXPECT_EQ(survivor->size(), static_cast<size_t>(kSteps));
  const uint64_t leaver_pushes = kLeaveAt + (c.pushes_its_last_step ? 1 : 0);
  for (const auto& server : cluster->servers) {
    const ServerCounters counters = server->counters();
    EXPECT_EQ(counters.updates, static_cast<uint64_t>(kSteps));
    EXPECT_EQ(counters.pushes_applied, static_cast<uint64_t>(kSteps) + leaver_pushes);
  }
}

INSTANTIATE_TEST_SUITE_P(Moments, SyncLeave,
                         ::testing::Values(LeaveCase{"between_pull_and_push", false},
                                           LeaveCase{"after_its_push", true}),
                         caseName<LeaveCase>);

}  // namespace
}  // namespace ringmaster::trainer::ps
