// The trials' accounting as a table: what a search creates next, when it is over, which trial is
// best, and that every trial counts once whatever state it ended in.

#include "ringmaster/search/trials.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringmaster::search {
namespace {

constexpr auto P = TrialState::kPending;
constexpr auto R = TrialState::kRunning;
constexpr auto S = TrialState::kSucceeded;
constexpr auto F = TrialState::kFailed;

struct Case {
  std::string name;
  std::vector<TrialView> trials;
  TrialBudget budget;
  std::vector<int64_t> create;
  SearchOutcome outcome;
  std::optional<int64_t> best;
  std::string reason;
  int64_t created_before = 0;  // status.trialsCreated
};

TEST(PlanTrials, Table) {
  const TrialBudget eight_by_four{.max_trials = 8, .parallelism = 4, .max_failed = 2};
  const std::vector<Case> cases = {
      {"first_pass", {}, eight_by_four, {0, 1, 2, 3}, SearchOutcome::kRunning, {}, ""},
      {"refill_as_trials_end",
       {{0, S, 0.8}, {1, R, {}}, {2, F, {}}, {3, P, {}}},
       eight_by_four,
       {4, 5},
       SearchOutcome::kRunning,
       0,
       ""},
      {"last_trials_running",
       {{0, S, 0.8},
        {1, S, 0.9},
        {2, S, 0.7},
        {3, S, 0.6},
        {4, S, 0.5},
        {5, S, 0.4},
        {6, R, {}},
        {7, R, {}}},
       eight_by_four,
       {},
       SearchOutcome::kRunning,
       1,
       ""},
      {"all_done",
       {{0, S, 0.8},
        {1, S, 0.9},
        {2, F, {}},
        {3, S, 0.6},
        {4, S, 0.5},
        {5, S, 0.4},
        {6, S, 0.91},
        {7, S, 0.3}},
       eight_by_four,
       {},
       SearchOutcome::kSucceeded,
       6,
       "TrialsCompleted"},
      {"too_many_failed",
       {{0, F, {}}, {1, F, {}}, {2, F, {}}, {3, R, {}}},
       eight_by_four,
       {},
       SearchOutcome::kFailed,
       {},
       "MaxFailedTrialsExceeded"},
      {"none_succeeded",
       {{0, F, {}}, {1, S, {}}},
       {.max_trials = 2, .parallelism = 2, .max_failed = 5},
       {},
       SearchOutcome::kFailed,
       {},
       "NoTrialSucceeded"},
      // A grid smaller than max_trials ends with the grid.
      {"grid_smaller_than_max",
       {{0, S, 0.5}, {1, R, {}}},
       {.max_trials = 10, .parallelism = 4, .max_failed = 0, .candidates = 3},
       {2},
       SearchOutcome::kRunning,
       0,
       ""},
      // A trial deleted by hand (index 1) stays counted: the next one is 3, not 1.
      {"deleted_trial_counted",
       {{0, S, 0.5}, {2, R, {}}},
       {.max_trials = 4, .parallelism = 3, .max_failed = 0},
       {3},
       SearchOutcome::kRunning,
       0,
       ""},
      {"minimize_a_loss",
       {{0, S, 0.5}, {1, S, 0.2}, {2, S, 0.2}},
       {.max_trials = 3, .parallelism = 1, .max_failed = 0, .maximize = false},
       {},
       SearchOutcome::kSucceeded,
       1,
       "TrialsCompleted"},
      // The last trial made was deleted by hand before the next: the record keeps it counted.
      {"deleted_last_trial_counted_by_the_record",
       {{0, S, 0.5}},
       {.max_trials = 4, .parallelism = 3, .max_failed = 0},
       {2, 3},
       SearchOutcome::kRunning,
       0,
       "",
       2},
      {"goal_reached_stops_the_search",
       {{0, S, 0.5}, {1, S, 0.86}, {2, R, {}}},
       {.max_trials = 8, .parallelism = 3, .max_failed = 0, .target = 0.85},
       {},
       SearchOutcome::kSucceeded,
       1,
       "GoalReached"},
      {"goal_not_yet_reached",
       {{0, S, 0.5}, {1, S, 0.84}, {2, R, {}}},
       {.max_trials = 8, .parallelism = 3, .max_failed = 0, .target = 0.85},
       {3, 4},
       SearchOutcome::kRunning,
       1,
       ""},
      {"goal_of_a_loss_reached_below",
       {{0, S, 0.31}, {1, S, 0.29}},
       {.max_trials = 8, .parallelism = 1, .max_failed = 0, .maximize = false, .target = 0.3},
       {},
       SearchOutcome::kSucceeded,
       1,
       "GoalReached"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const TrialPlan plan = planTrials(c.trials, c.budget, c.created_before);
    EXPECT_EQ(plan.create, c.create);
    EXPECT_EQ(plan.outcome, c.outcome);
    EXPECT_EQ(plan.best, c.best);
    EXPECT_EQ(plan.reason, c.reason) << plan.message;
  }
}

TEST(PlanTrials, CountsEachStateOnce) {
  const TrialPlan plan = planTrials({{0, S, 0.5}, {1, F, {}}, {2, R, {}}, {3, P, {}}},
                                    {.max_trials = 10, .parallelism = 2, .max_failed = 3});
  EXPECT_EQ(plan.succeeded, 1);
  EXPECT_EQ(plan.failed, 1);
  EXPECT_EQ(plan.active, 2);
  EXPECT_EQ(plan.total, 10);
  EXPECT_EQ(plan.created, 4);
  EXPECT_TRUE(plan.create.empty());
}

}  // namespace
}  // namespace ringmaster::search
