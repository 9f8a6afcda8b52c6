#pragma once
// How `ringmaster local run` reports a TrainingJob while it runs: one line per visible change
// (phase, world, epoch, restarts) and at most one progress line per `every` otherwise.
//
// Pure (no I/O): the caller feeds each observed job; testable without a cluster.

#include <chrono>
#include <filesystem>
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

// When the trainers resumed from a checkpoint, says so: "resumed from a checkpoint at step N".
// When that checkpoint was already the end of training, the run trained nothing, and the note
// says where the checkpoint lies (the PersistentVolumeClaim mounted at spec.trainer.checkpoint.path
// and its directory under `claims_dir`, <claims_dir>/<namespace>/<claim> on this cluster's
// kubelet) so that the user can start over. Lines are indented by two spaces, no final newline.
std::optional<std::string> resumeNote(const kube::TrainingJob& job,
                                      const std::filesystem::path& claims_dir);

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
