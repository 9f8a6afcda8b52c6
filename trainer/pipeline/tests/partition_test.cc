// The balanced cut: the smallest possible bottleneck (checked against every cut by brute force),
// and the checks on a user's own cut.

#include "trainer/pipeline/partition.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <vector>

namespace ringmaster::trainer::pipeline {
namespace {

// The best bottleneck over every cut of `costs` into `stages`, by enumeration.
double bruteForceBest(const std::vector<double>& costs, int stages) {
  double best = std::numeric_limits<double>::infinity();
  StageStarts starts = {0};
  std::function<void(int)> extend = [&](int from) {
    if (static_cast<int>(starts.size()) == stages) {
      best = std::min(best, bottleneckCost(costs, starts));
      return;
    }
    for (int i = from; i < static_cast<int>(costs.size()); ++i) {
      starts.push_back(i);
      extend(i + 1);
      starts.pop_back();
    }
  };
  extend(1);
  return best;
}

struct Case {
  std::vector<double> costs;
  int stages;
  StageStarts want;
};

class BalancedPartition : public ::testing::TestWithParam<Case> {};

TEST_P(BalancedPartition, FindsTheSmallestBottleneck) {
  const Case& c = GetParam();
  auto starts = balancedPartition(c.costs, c.stages);
  ASSERT_TRUE(starts.ok()) << starts.status().toString();
  EXPECT_EQ(*starts, c.want);
  EXPECT_TRUE(checkPartition(*starts, static_cast<int>(c.costs.size())).ok());
  EXPECT_DOUBLE_EQ(bottleneckCost(c.costs, *starts), bruteForceBest(c.costs, c.stages));
}

INSTANTIATE_TEST_SUITE_P(
    Costs, BalancedPartition,
    ::testing::Values(Case{{1, 1, 1, 1}, 2, {0, 2}}, Case{{1, 1, 1, 1}, 4, {0, 1, 2, 3}},
                      Case{{5}, 1, {0}},
                      // A heavy first layer gets a stage of its own.
                      Case{{8, 1, 1, 1, 1, 1, 1, 1}, 2, {0, 1}},
                      // 784-512-512-10 as parameters: fc1 401k, fc2 262k, fc3 5k.
                      Case{{401920, 262656, 5130}, 2, {0, 1}},
                      Case{{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, 3, {0, 5, 7}},
                      Case{{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, 4, {0, 3, 5, 7}}));

TEST(Partition, RejectsMoreStagesThanLayers) {
  auto starts = balancedPartition(std::vector<double>{1, 2, 3}, 4);
  ASSERT_FALSE(starts.ok());
  EXPECT_NE(starts.status().message().find("parallelism.pipeline.stages: 4 stages cannot split "
                                           "a network of 3 layers"),
            std::string::npos)
      << starts.status().message();
}

TEST(Partition, ChecksAUsersCutNamingTheEntry) {
  EXPECT_TRUE(checkPartition({0, 2, 3}, 4).ok());
  EXPECT_NE(checkPartition({1, 2}, 4).message().find("partition: must start with 0"),
            std::string::npos);
  EXPECT_NE(checkPartition({0, 2, 2}, 4).message().find("partition[2]: 2 must be above 2"),
            std::string::npos);
  EXPECT_NE(checkPartition({0, 4}, 4).message().find("partition[1]: 4 must be above 0 and below 4"),
            std::string::npos);
}

}  // namespace
}  // namespace ringmaster::trainer::pipeline
