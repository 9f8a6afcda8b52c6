#pragma once
// `ringmaster local up|down|serve|run`:
//   serve  runs the API server in the foreground until SIGTERM/SIGINT; writes <data-dir>/pid
//          once it listens (removed on exit) and <data-dir>/kubeconfig.
//   up     starts `serve` as a detached child (new session, log in <data-dir>/apiserver.log),
//          waits until it listens, installs the TrainingJob CRD, starts the kubelet and the
//          operator the same way (<data-dir>/{kubelet,operator}.{pid,log}) and prints
//          `export KUBECONFIG=<data-dir>/kubeconfig`.
//   down   stops the operator, the kubelet, then the server (SIGTERM, SIGKILL after 30 s).
//   run    `up`, then local/run's runJob: apply a manifest and report the job until it ends.
// Default data dir: ~/.ringmaster/local.
//
// Thread-safety: for main() only. Failure: Status (usage errors are kUsage -> exit 2).

#include <string>
#include <vector>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

// args: what follows `ringmaster local`. Output goes to stdout; errors are returned.
core::Status runLocalCommand(const std::vector<std::string>& args);

}  // namespace ringmaster::local
