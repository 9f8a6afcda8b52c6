// One pass over an Experiment as a table: which trials it creates, which it stops, and the
// status it writes (counts, best trial, conditions), from its trials as their TrainingJobs show
// them; and a trial's state as its TrainingJob shows it.

#include "operator/search_decide.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "operator/conditions.h"
#include "operator/status.h"

namespace ringmaster::op {
namespace {

using search::TrialState;
constexpr auto P = TrialState::kPending;
constexpr auto R = TrialState::kRunning;
constexpr auto S = TrialState::kSucceeded;
constexpr auto F = TrialState::kFailed;

const kube::Time kNow = kube::Time::fromUnixSeconds(1'800'000'000);

kube::Experiment experiment() {
  kube::Experiment e;
  kube::setTypeMeta(e);
  e.metadata.name = "exp";
  e.metadata.namespace_name = "default";
  e.metadata.uid = "uid";
  e.metadata.generation = 1;
  return e;
}

SearchSettings settings(int32_t max_trials = 8, int32_t parallelism = 4) {
  SearchSettings s;
  s.seed = 1;
  search::Parameter lr;
  lr.path = "optimizer.learningRate";
  lr.min = 0.001;
  lr.max = 0.1;
  lr.scale = search::Scale::kLog;
  s.space = {lr};
  s.max_trials = max_trials;
  s.parallelism = parallelism;
  s.max_failed_trials = 1;
  return s;
}

TrialObservation trial(int64_t index, TrialState state, std::optional<double> objective = {}) {
  TrialObservation t;
  t.index = index;
  t.name = trialName("exp", index);
  t.state = state;
  t.objective = objective;
  return t;
}

struct Case {
  std::string name;
  std::vector<TrialObservation> trials;
  SearchSettings settings;
  int32_t created_before = 0;  // status.trialsCreated of the last pass
  std::vector<int64_t> create;
  std::vector<std::string> stop;
  std::string phase;
  std::string reason;  // of the condition the phase stands on
  std::optional<std::string> best;
  std::string progress;
  int32_t running = 0;
};

TEST(DecideSearch, Table) {
  SearchSettings goal = settings();
  goal.target = 0.85;
  SearchSettings loss = settings(3, 3);
  loss.metric = ObjectiveMetric::kLoss;
  loss.maximize = false;
  const std::vector<Case> cases = {
      {"first_pass_fills_the_parallelism",
       {},
       settings(),
       0,
       {0, 1, 2, 3},
       {},
       "Running",
       "TrialsRunning",
       {},
       "0/8",
       4},
      {"a_finished_trial_is_replaced",
       {trial(0, S, 0.8), trial(1, R), trial(2, R), trial(3, P)},
       settings(),
       4,
       {4},
       {},
       "Running",
       "TrialsRunning",
       "exp-trial-0",
       "1/8",
       4},
      {"a_failed_trial_counts_and_is_replaced",
       {trial(0, S, 0.8), trial(1, F), trial(2, R), trial(3, R)},
       settings(),
       4,
       {4, 5},
       {},
       "Running",
       "TrialsRunning",
       "exp-trial-0",
       "2/8",
       4},
      // An operator that restarts before its trials reach its cache, or a trial deleted by
      // hand: the record of trials made keeps them counted, so none is made twice.
      {"trials_made_are_never_made_again",
       {trial(0, S, 0.8)},
       settings(),
       4,
       {4, 5, 6, 7},
       {},
       "Running",
       "TrialsRunning",
       "exp-trial-0",
       "1/8",
       4},
      {"the_last_trials_end_the_search",
       {trial(0, S, 0.8), trial(1, S, 0.9), trial(2, S, 0.7), trial(3, F)},
       settings(4, 4),
       4,
       {},
       {},
       "Succeeded",
       "TrialsCompleted",
       "exp-trial-1",
       "4/4",
       0},
      {"goal_reached_stops_the_running_trials",
       {trial(0, S, 0.86), trial(1, R), trial(2, P), trial(3, S, 0.5)},
       goal,
       4,
       {},
       {"exp-trial-1", "exp-trial-2"},
       "Succeeded",
       "GoalReached",
       "exp-trial-0",
       "2/8",
       0},
      {"too_many_failures_fail_it_and_stop_the_rest",
       {trial(0, F), trial(1, F), trial(2, R)},
       settings(),
       3,
       {},
       {"exp-trial-2"},
       "Failed",
       "MaxFailedTrialsExceeded",
       {},
       "2/8",
       0},
      {"no_trial_with_an_objective",
       {trial(0, S), trial(1, F)},
       settings(2, 2),
       2,
       {},
       {},
       "Failed",
       "NoTrialSucceeded",
       {},
       "2/2",
       0},
      {"a_loss_is_minimized",
       {trial(0, S, 0.5), trial(1, S, 0.2), trial(2, S, 0.3)},
       loss,
       3,
       {},
       {},
       "Succeeded",
       "TrialsCompleted",
       "exp-trial-1",
       "3/3",
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    kube::Experiment e = experiment();
    if (c.created_before > 0) e.status.trials_created = c.created_before;
    const SearchPlan plan = decideSearch(e, c.settings, c.trials, kNow);
    EXPECT_EQ(plan.create, c.create);
    EXPECT_EQ(plan.stop, c.stop);
    EXPECT_EQ(plan.status.phase, c.phase);
    const kube::Condition* cond =
        findCondition(plan.status.conditions, c.phase == "Running" ? kRunning : c.phase.c_str());
    ASSERT_NE(cond, nullptr);
    EXPECT_EQ(cond->status, "True");
    EXPECT_EQ(cond->reason, c.reason) << cond->message.value_or("");
    EXPECT_EQ(plan.finished, c.phase != "Running");
    EXPECT_EQ(plan.status.progress, c.progress);
    EXPECT_EQ(plan.status.trials_running, c.running);
    EXPECT_EQ(plan.status.trials_created,
              std::max<int64_t>(c.created_before, static_cast<int64_t>(c.trials.size())) +
                  static_cast<int64_t>(c.create.size()));
    if (c.best) {
      ASSERT_TRUE(plan.status.best_trial.has_value());
      EXPECT_EQ(plan.status.best_trial->name, *c.best);
    } else {
      EXPECT_FALSE(plan.status.best_trial.has_value());
    }
    if (plan.finished) {
      EXPECT_EQ(plan.status.completion_time, kNow);
      EXPECT_EQ(plan.status.reason, c.reason);
    }
  }
}

TEST(DecideSearch, TheBestTrialCarriesItsValuesAndObjective) {
  const SearchSettings s = settings();
  const SearchPlan plan =
      decideSearch(experiment(), s, {trial(0, S, 0.81), trial(1, S, 0.84), trial(2, R)}, kNow);
  ASSERT_TRUE(plan.status.best_trial.has_value());
  EXPECT_EQ(plan.status.best_trial->index, 1);
  EXPECT_EQ(plan.status.best_trial->objective, 0.84);
  const search::Assignment values = trialAssignment(s, 1);
  ASSERT_EQ(plan.status.best_trial->parameters.size(), 1u);
  EXPECT_EQ(plan.status.best_trial->parameters.at("optimizer.learningRate"), values[0].second);
  EXPECT_EQ(plan.status.trials_succeeded, 2);
  EXPECT_EQ(plan.status.trials, 8);
  EXPECT_EQ(plan.status.start_time, kNow);
  EXPECT_EQ(plan.status.observed_generation, 1);
}

TEST(DecideSearch, APbtBestTrialEndsOnItsExploitedValuesWithItsLineage) {
  const SearchSettings s = settings(2, 2);
  TrialObservation winner = trial(1, S, 0.86);
  winner.final_parameters = {{"optimizer.learningRate", 0.0042}};
  kube::PbtExploit exploit;
  exploit.round = 2;
  exploit.step = 938;
  exploit.source = "exp-trial-0";
  exploit.source_objective = 0.83;
  exploit.objective = 0.81;
  exploit.parameters = winner.final_parameters;
  winner.lineage = {exploit};
  const SearchPlan plan = decideSearch(experiment(), s, {trial(0, S, 0.84), winner}, kNow);
  ASSERT_TRUE(plan.status.best_trial.has_value());
  EXPECT_EQ(plan.status.best_trial->name, "exp-trial-1");
  EXPECT_EQ(plan.status.best_trial->parameters.at("optimizer.learningRate"), 0.0042)
      << "the values it ended on, not its first draw";
  EXPECT_EQ(plan.status.best_trial->lineage, std::vector<kube::PbtExploit>{exploit});
}

TEST(DecideSearch, AnEndedSearchStaysEndedAndStopsWhatStillRuns) {
  kube::Experiment e = experiment();
  SearchSettings s = settings();
  s.target = 0.8;
  e.status = decideSearch(e, s, {trial(0, S, 0.9), trial(1, R)}, kNow).status;
  ASSERT_EQ(e.status.phase, "Succeeded");
  // A later pass: the stopped trial still shows, another trial finished late.
  const SearchPlan later = decideSearch(e, s, {trial(0, S, 0.9), trial(1, R), trial(2, S, 0.95)},
                                        kube::Time::fromUnixSeconds(1'800'000'100));
  EXPECT_TRUE(later.create.empty());
  EXPECT_EQ(later.stop, std::vector<std::string>{"exp-trial-1"});
  EXPECT_EQ(later.status, e.status) << "nothing of the ended search changes";
  EXPECT_FALSE(later.finished) << "its end was reported once";
}

TEST(DecideSearch, AnInvalidSpecFailsTheSearch) {
  const kube::ExperimentStatus status =
      invalidSearchStatus(experiment(), "spec.parallelism: must be at least 1, got 0", kNow);
  EXPECT_EQ(status.phase, "Failed");
  EXPECT_EQ(status.reason, reason::kInvalidSpec);
  EXPECT_EQ(finishedSearchPhase(status), "Failed");
  const kube::Condition* failed = findCondition(status.conditions, kFailed);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->message, "spec.parallelism: must be at least 1, got 0");
}

TEST(ObserveTrial, StateAndObjectiveFromItsTrainingJob) {
  kube::TrainingJob job;
  job.metadata.name = "exp-trial-3";
  EXPECT_EQ(observeTrial(job, 3, ObjectiveMetric::kTestAccuracy).state, P);
  setCondition(job.status, kRunning, true, "AllRanksJoined", "", 1, kNow);
  EXPECT_EQ(observeTrial(job, 3, ObjectiveMetric::kTestAccuracy).state, R);
  job.status.progress = kube::TrainingProgress{};
  job.status.progress->test_accuracy = 0.87;
  job.status.progress->loss = 0.35;
  setCondition(job.status, kRunning, false, "JobSucceeded", "", 1, kNow);
  setCondition(job.status, kSucceeded, true, "AllRanksSucceeded", "", 1, kNow);
  job.status.progress->pbt = kube::PbtProgress{};
  job.status.progress->pbt->parameters = {{"optimizer.momentum", 0.5}};
  const TrialObservation done = observeTrial(job, 3, ObjectiveMetric::kTestAccuracy);
  EXPECT_EQ(done.state, S);
  EXPECT_EQ(done.objective, 0.87);
  EXPECT_EQ(done.final_parameters,
            (std::map<std::string, nlohmann::json>{{"optimizer.momentum", 0.5}}));
  EXPECT_EQ(observeTrial(job, 3, ObjectiveMetric::kLoss).objective, 0.35);
  setCondition(job.status, kSucceeded, false, "", "", 1, kNow);
  setCondition(job.status, kFailed, true, "BackoffLimitExceeded", "", 1, kNow);
  EXPECT_EQ(observeTrial(job, 3, ObjectiveMetric::kTestAccuracy).state, F);
  EXPECT_EQ(observeTrial(job, 3, ObjectiveMetric::kTestAccuracy).objective, std::nullopt);
}

}  // namespace
}  // namespace ringmaster::op
