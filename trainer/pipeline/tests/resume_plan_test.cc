// Where a pipeline resumes, for every mix of stage directories: none, all, some with checkpoints,
// marked by one run, by two, or not at all.

#include "trainer/pipeline/resume_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace ringmaster::trainer::pipeline {
namespace {

constexpr uint64_t kRunA = 41, kRunB = 42;

StageCheckpoints stage(int index, std::optional<int64_t> step, std::optional<uint64_t> run) {
  return {"stage " + std::to_string(index) + " of 3", step, run};
}

struct Case {
  const char* what;
  std::vector<StageCheckpoints> stages;
  ResumeAction action;
  int64_t step;
  std::string without;
  std::string error;  // a part of the message when planning fails
};

class PlanResume : public ::testing::TestWithParam<Case> {};

TEST_P(PlanResume, Decides) {
  const Case& c = GetParam();
  const core::Result<ResumePlan> plan = planResume(c.stages, "/ckpt");
  if (!c.error.empty()) {
    ASSERT_FALSE(plan.ok()) << c.what;
    EXPECT_EQ(plan.status().code(), core::Code::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.error), std::string::npos)
        << c.what << ": " << plan.status().message();
    return;
  }
  ASSERT_TRUE(plan.ok()) << c.what << ": " << plan.status().toString();
  EXPECT_EQ(plan->action, c.action) << c.what;
  EXPECT_EQ(plan->step, c.step) << c.what;
  EXPECT_EQ(plan->without, c.without) << c.what;
}

const auto kStartFresh = ResumeAction::kStartFresh;
const auto kResume = ResumeAction::kResume;
const auto kStartOver = ResumeAction::kStartOver;

INSTANTIATE_TEST_SUITE_P(
    Table, PlanResume,
    ::testing::Values(
        Case{"empty directories",
             {stage(0, {}, {}), stage(1, {}, {}), stage(2, {}, {})},
             kStartFresh,
             0,
             "",
             ""},
        Case{"marked, nothing saved yet",
             {stage(0, {}, kRunA), stage(1, {}, kRunA), stage(2, {}, kRunA)},
             kStartFresh,
             0,
             "",
             ""},
        Case{"every stage at one step",
             {stage(0, 30, kRunA), stage(1, 30, kRunA), stage(2, 30, kRunA)},
             kResume,
             30,
             "",
             ""},
        Case{"one stage a checkpoint ahead: the newest step all hold",
             {stage(0, 40, kRunA), stage(1, 30, kRunA), stage(2, 40, kRunA)},
             kResume,
             30,
             "",
             ""},
        Case{"unmarked directories resume on their checkpoints",
             {stage(0, 30, {}), stage(1, 30, {}), stage(2, 20, {})},
             kResume,
             20,
             "",
             ""},
        Case{"one run, a stage killed before its first checkpoint",
             {stage(0, 10, kRunA), stage(1, {}, kRunA), stage(2, 10, kRunA)},
             kStartOver,
             0,
             "stage 1 of 3",
             ""},
        Case{"one run, only the last stage saved",
             {stage(0, {}, kRunA), stage(1, {}, kRunA), stage(2, 10, kRunA)},
             kStartOver,
             0,
             "stage 0 of 3",
             ""},
        Case{"a stage's directory removed",
             {stage(0, 10, kRunA), stage(1, {}, {}), stage(2, 10, kRunA)},
             kStartFresh,
             0,
             "",
             "stage 1 of 3 has no checkpoint under /ckpt while stage 0 of 3 has one at step 10"},
        Case{"unmarked, a stage without checkpoints",
             {stage(0, 10, {}), stage(1, 20, {}), stage(2, {}, {})},
             kStartFresh,
             0,
             "",
             "stage 2 of 3 has no checkpoint under /ckpt while stage 1 of 3 has one at step 20"},
        Case{"two runs' checkpoints",
             {stage(0, 10, kRunA), stage(1, 10, kRunB), stage(2, 10, kRunA)},
             kStartFresh,
             0,
             "",
             "stage 0 of 3 and stage 1 of 3 under /ckpt hold checkpoints of different runs"},
        Case{"two runs, one of them never saved",
             {stage(0, 10, kRunA), stage(1, {}, kRunB), stage(2, 10, kRunA)},
             kStartFresh,
             0,
             "",
             "hold checkpoints of different runs"}));

}  // namespace
}  // namespace ringmaster::trainer::pipeline
