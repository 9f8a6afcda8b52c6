#pragma once
// One pass over an Experiment, decided without an API server: from its trials as their
// TrainingJobs show them, the next status (counts, the best trial and its values, conditions,
// phase) and what to do (the trials to create; the trials to stop once the search ended early).
// lib/search's planTrials does the accounting; this turns it into the Experiment's status.
//
// Conditions: Running (True while trials run or are to come), Succeeded (TrialsCompleted,
// GoalReached) or Failed (MaxFailedTrialsExceeded, NoTrialSucceeded, InvalidSpec); the phase is
// the strongest true one.
//
// Thread-safety: pure functions. Failure: none.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "operator/search_settings.h"
#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/time.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/search/trials.h"

namespace ringmaster::op {

// Condition reasons of an Experiment.
namespace search_reason {
inline constexpr const char* kTrialsRunning = "TrialsRunning";
inline constexpr const char* kTrialsCompleted = "TrialsCompleted";
inline constexpr const char* kGoalReached = "GoalReached";
inline constexpr const char* kMaxFailedTrialsExceeded = "MaxFailedTrialsExceeded";
inline constexpr const char* kNoTrialSucceeded = "NoTrialSucceeded";
}  // namespace search_reason

// What a pass reads of one trial's TrainingJob.
struct TrialObservation {
  int64_t index = 0;
  std::string name;
  search::TrialState state = search::TrialState::kPending;
  std::optional<double> objective;
  // A pbt member's outcome (its TrainingJob's status.progress.pbt): the values it ended on and
  // its exploits; empty otherwise.
  std::map<std::string, nlohmann::json> final_parameters;
  std::vector<kube::PbtExploit> lineage;
  bool operator==(const TrialObservation&) const = default;
};

TrialObservation observeTrial(const kube::TrainingJob& trial, int64_t index,
                              ObjectiveMetric metric);

struct SearchPlan {
  kube::ExperimentStatus status;
  std::vector<int64_t> create;    // trial indices, ascending
  std::vector<std::string> stop;  // trial jobs still running when the search ended
  bool finished = false;          // this pass ended the search
};

SearchPlan decideSearch(const kube::Experiment& experiment, const SearchSettings& settings,
                        const std::vector<TrialObservation>& trials, kube::Time now);

// The status of an Experiment whose spec is refused: Failed, InvalidSpec, with the errors.
kube::ExperimentStatus invalidSearchStatus(const kube::Experiment& experiment,
                                           const std::string& message, kube::Time now);

// "Succeeded" / "Failed" once the search ended, else empty.
std::string finishedSearchPhase(const kube::ExperimentStatus& status);

}  // namespace ringmaster::op
