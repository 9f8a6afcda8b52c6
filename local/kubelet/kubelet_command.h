#pragma once
// `ringmaster local kubelet`: runs the local kubelet (kubelet.h) in the foreground against any
// API server until SIGTERM/SIGINT.
//
//   ringmaster local kubelet --kubeconfig FILE [--node-name NAME] [--root-dir DIR] [--cpu N]
//       [--memory QTY] [--gpus N] [--max-pods N] [--simulate] [--max-backoff-seconds S]
//       [--heartbeat-seconds S]
//
// Thread-safety: for main() only. Failure: usage errors are kUsage (exit 2); start-up errors
// (kubeconfig, node registration) are returned with context.

#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::local::kubelet {

// args: what follows `ringmaster local kubelet`.
core::Status runKubeletCommand(const std::vector<std::string>& args);

}  // namespace ringmaster::local::kubelet
