// The schedules as data: every micro-batch's forward and backward once and in order, the
// activations each stage keeps (gpipe M, 1f1b at most S - s), no deadlock when the stages play
// against each other, and the bubble fraction (S - 1) / (M + S - 1) with equal pass costs.

#include "trainer/pipeline/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace ringmaster::trainer::pipeline {
namespace {

using Op = PipelineOp;
constexpr auto F = PipelineOp::kForward;
constexpr auto B = PipelineOp::kBackward;

std::vector<std::vector<Op>> allStages(ScheduleKind kind, int stages, int micro) {
  std::vector<std::vector<Op>> out;
  for (int s = 0; s < stages; ++s) out.push_back(*stageSchedule(kind, s, stages, micro));
  return out;
}

TEST(Schedule, OneFOneBOnFourStagesMatchesTheTextbookOrder) {
  // Stage 0 of 4 with 6 micro-batches: 3 warm-up forwards, 3 pairs, 3 drained backwards.
  EXPECT_EQ(*stageSchedule(ScheduleKind::kOneFOneB, 0, 4, 6), (std::vector<Op>{{F, 0},
                                                                               {F, 1},
                                                                               {F, 2},
                                                                               {F, 3},
                                                                               {B, 0},
                                                                               {F, 4},
                                                                               {B, 1},
                                                                               {F, 5},
                                                                               {B, 2},
                                                                               {B, 3},
                                                                               {B, 4},
                                                                               {B, 5}}));
  // The last stage alternates from the start.
  EXPECT_EQ(*stageSchedule(ScheduleKind::kOneFOneB, 3, 4, 3),
            (std::vector<Op>{{F, 0}, {B, 0}, {F, 1}, {B, 1}, {F, 2}, {B, 2}}));
  EXPECT_EQ(*stageSchedule(ScheduleKind::kGPipe, 1, 2, 3),
            (std::vector<Op>{{F, 0}, {F, 1}, {F, 2}, {B, 0}, {B, 1}, {B, 2}}));
}

struct Case {
  int stages, micro;
};

class ScheduleTable : public ::testing::TestWithParam<std::tuple<ScheduleKind, Case>> {};

TEST_P(ScheduleTable, EveryPassOnceInOrderWithBoundedActivationsNoDeadlockAndTheIdealBubble) {
  const auto [kind, c] = GetParam();
  const auto stages = allStages(kind, c.stages, c.micro);
  for (int s = 0; s < c.stages; ++s) {
    const std::vector<Op>& ops = stages[s];
    ASSERT_EQ(ops.size(), 2u * c.micro);
    std::vector<int> forwards, backwards;
    for (size_t i = 0; i < ops.size(); ++i) {
      (ops[i].kind == F ? forwards : backwards).push_back(ops[i].micro);
      if (ops[i].kind == B) {
        // Its forward came earlier on this stage.
        EXPECT_NE(std::find(ops.begin(), ops.begin() + i, Op{F, ops[i].micro}), ops.begin() + i);
      }
    }
    std::vector<int> in_order(c.micro);
    for (int m = 0; m < c.micro; ++m) in_order[m] = m;
    EXPECT_EQ(forwards, in_order) << "stage " << s;
    EXPECT_EQ(backwards, in_order) << "stage " << s;
    const int expected_peak =
        kind == ScheduleKind::kGPipe ? c.micro : std::min(c.micro, c.stages - s);
    EXPECT_EQ(peakInFlight(ops), expected_peak) << "stage " << s;
  }
  for (auto [f, b] : {std::pair{1.0, 1.0}, std::pair{1.0, 2.0}}) {
    const SimulatedRun run = simulate(stages, f, b);
    ASSERT_FALSE(run.deadlocked);
    EXPECT_NEAR(run.makespan, (c.micro + c.stages - 1) * (f + b), 1e-9);
    EXPECT_NEAR(run.bubbleFraction(), idealBubbleFraction(c.stages, c.micro), 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(
    KindsStagesMicroBatches, ScheduleTable,
    ::testing::Combine(::testing::Values(ScheduleKind::kGPipe, ScheduleKind::kOneFOneB),
                       ::testing::Values(Case{1, 1}, Case{1, 4}, Case{2, 1}, Case{2, 4}, Case{2, 8},
                                         Case{4, 1}, Case{4, 2}, Case{4, 4}, Case{4, 8},
                                         Case{4, 16}, Case{8, 3})),
    [](const auto& info) {
      const Case& c = std::get<1>(info.param);
      const std::string kind =
          std::get<0>(info.param) == ScheduleKind::kGPipe ? "gpipe" : "onefoneb";
      return kind + "_S" + std::to_string(c.stages) + "_M" + std::to_string(c.micro);
    });

TEST(Schedule, AnUnbalancedCutIdlesTheFastStage) {
  // Two stages, the second twice as slow: the first waits on it in every backward.
  const auto stages = allStages(ScheduleKind::kOneFOneB, 2, 4);
  const SimulatedRun balanced = simulate(stages, {1, 1}, {2, 2});
  const SimulatedRun skewed = simulate(stages, {1, 2}, {2, 4});
  ASSERT_FALSE(skewed.deadlocked);
  EXPECT_NEAR(balanced.bubbleFraction(), idealBubbleFraction(2, 4), 1e-9);
  EXPECT_GT(skewed.bubbleFraction(), balanced.bubbleFraction() + 0.1);
  // The slow stage is busy 4 x 6 of a makespan of 1 + 4 x 6 + 2: stage 0 idles the rest.
  EXPECT_NEAR(skewed.makespan, 27, 1e-9);
}

TEST(Schedule, TheSimulatorFindsADeadlock) {
  // Stage 1 wants micro-batch 1's forward before stage 0 sends it: stage 0 waits for the
  // backward of micro-batch 0 first.
  std::vector<std::vector<Op>> stages = {{{F, 0}, {B, 0}, {F, 1}, {B, 1}},
                                         {{F, 0}, {F, 1}, {B, 0}, {B, 1}}};
  EXPECT_TRUE(simulate(stages, 1, 1).deadlocked);
}

TEST(Schedule, RejectsNamesAndShapesNamingThem) {
  EXPECT_EQ(*parseScheduleKind("1f1b"), ScheduleKind::kOneFOneB);
  EXPECT_EQ(*parseScheduleKind("gpipe"), ScheduleKind::kGPipe);
  auto bad = parseScheduleKind("zero-bubble");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"zero-bubble\""), std::string::npos);
  EXPECT_FALSE(stageSchedule(ScheduleKind::kGPipe, 2, 2, 4).ok());
  EXPECT_FALSE(stageSchedule(ScheduleKind::kGPipe, 0, 2, 0).ok());
}

}  // namespace
}  // namespace ringmaster::trainer::pipeline
