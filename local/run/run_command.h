#pragma once
// `ringmaster local run JOB.yaml`: brings up the embedded cluster (through `ensure_up`, which
// local_command.cc provides), installs the CRDs built into this binary, applies the manifest's
// documents, prints the progress of its one TrainingJob (or Experiment) until it ends, then the
// outcome and where the logs are (an Experiment's: its trials, best first). The cluster stays up
// afterwards (KUBECONFIG printed) so kubectl can look around.
//
// Failure: Status with context; a job or search that ends Failed is an error (exit 1) whose message
// is the job's final condition; a timeout is a Timeout status.

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

struct RunOptions {
  std::filesystem::path manifest;
  std::string data_dir;
  std::chrono::seconds timeout{3600};
  std::chrono::milliseconds report_every{5000};
  // The command that stops the cluster, shown at the end ("ringmaster local down" when empty).
  std::string stop_command;
};

// The CRDs of crds/ (TrainingJob, Experiment), embedded at build time.
const std::string& builtInCrdsYaml();

// Creates or replaces the built-in CRDs through the API server of `kubeconfig` and
// waits until it is Established.
core::Status installBuiltInCrds(const std::filesystem::path& kubeconfig);

// ensure_up(data_dir): the cluster (API server, kubelet, operator) is running afterwards and
// its kubeconfig is at <data_dir>/kubeconfig.
core::Status runJob(const RunOptions& options,
                    const std::function<core::Status(const std::string&)>& ensure_up);

}  // namespace ringmaster::local
