#pragma once
// A search's trial accounting: from its trials as their TrainingJobs show them, which trials to
// create now, which one is best, and whether the search is over. Trials are numbered from 0 and
// named by their number, so an operator that restarts counts what exists and creates exactly
// what is missing: every trial is counted once, whether it succeeded or failed, and a failed
// trial is one of max_trials (as Katib counts them).
//
// Thread-safety: pure functions. Failure: none; the plan's outcome says how the search ends.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::search {

enum class TrialState { kPending, kRunning, kSucceeded, kFailed };

struct TrialView {
  int64_t index = 0;
  TrialState state = TrialState::kPending;
  std::optional<double> objective;  // a succeeded trial's, from its final summary
};

struct TrialBudget {
  int64_t max_trials = 0;   // in all, >= 1
  int32_t parallelism = 1;  // at once, >= 1
  int64_t max_failed = 0;   // failed trials tolerated; one more fails the search
  int64_t candidates = 0;   // a grid's size (the search is over when all were tried); 0: unbounded
  bool maximize = true;     // objective direction
  // The search's goal: it ends (Succeeded, GoalReached) once a trial's objective reaches this,
  // and the trials still running are stopped.
  std::optional<double> target;
};

enum class SearchOutcome { kRunning, kSucceeded, kFailed };

struct TrialPlan {
  std::vector<int64_t> create;  // trial indices to create now, ascending
  std::optional<int64_t> best;  // the best succeeded trial with an objective
  SearchOutcome outcome = SearchOutcome::kRunning;
  std::string reason;  // CamelCase, for the condition, when the search ended
  std::string message;
  int64_t total = 0;    // trials the search will have run in all: min(max_trials, candidates)
  int64_t created = 0;  // trials made so far, these included
  int64_t active = 0, succeeded = 0, failed = 0;
  bool operator==(const TrialPlan&) const = default;
};

// `created_before`: trials the search made by its own record (status.trialsCreated), so that a
// trial deleted by hand before its successor was made still counts.
TrialPlan planTrials(const std::vector<TrialView>& trials, const TrialBudget& budget,
                     int64_t created_before = 0);

}  // namespace ringmaster::search
