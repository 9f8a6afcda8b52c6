#pragma once
// How `ringmaster local run` reports an Experiment while it runs: a line whenever its trial
// counts, phase or best trial change; and at the end, a table of its trials (name, state,
// objective, values), the best first.
//
// Pure (no I/O): the caller feeds each observed Experiment and its trials.

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::local {

// "Running  trials 3/8 finished, 4 running, 0 failed  best testAccuracy 0.8412 (exp-trial-1)"
std::string formatSearchProgress(const kube::Experiment& experiment);

// "Succeeded" / "Failed" once the search ended, else empty.
std::string finishedSearch(const kube::Experiment& experiment);

// The reason and message of the condition that ended the search.
std::string searchOutcome(const kube::Experiment& experiment);

// One line per trial, ordered by objective (best first; the experiment's goal decides), then
// the unfinished and failed ones by index, under a header; the best trial marked with '*'. A
// pbt member's values are those it ended on, with its count of exploits.
std::string trialTable(const kube::Experiment& experiment,
                       const std::vector<kube::TrainingJob>& trials);

class SearchReporter {
 public:
  // The line to print for this observation, or nullopt when nothing changed.
  std::optional<std::string> observe(const kube::Experiment& experiment);

 private:
  std::string last_line_;
};

}  // namespace ringmaster::local
