#pragma once
// How `ringmaster local run` reports a TrainingJob while it runs: one line per visible change
// (phase, world, epoch, restarts) and at most one progress line per `every` otherwise.
//
// Pure (no I/O): the caller feeds each observed job; testable without a cluster.

#include <chrono>
#include <optional>
#include <string>

#include "ringmaster/kube/training_job.h"

namespace ringmaster::local {

// "Running  world 2/2  epoch 3/5  step 1400  loss 0.4123  samples/s 48210  restarts 0"
std::string formatProgress(const kube::TrainingJob& job);

// "Succeeded" / "Failed" once the job finished, else empty.
std::string finishedPhase(const kube::TrainingJob& job);

// The reason and message of the condition that ended the job (or the newest condition).
std::string finalReason(const kube::TrainingJob& job);

class ProgressReporter {
 public:
  explicit ProgressReporter(std::chrono::milliseconds every) : every_(every) {}
  // The line to print for this observation, or nullopt when nothing worth saying changed.
  std::optional<std::string> observe(const kube::TrainingJob& job,
                                     std::chrono::steady_clock::time_point now);

 private:
  std::chrono::milliseconds every_;
  std::string last_key_;  // phase, world, epoch, restarts
  std::string last_line_;
  std::chrono::steady_clock::time_point last_time_{};
};

}  // namespace ringmaster::local
