#pragma once
// `ringmaster local up|down|serve` (DESIGN §6):
//   serve  runs the API server in the foreground until SIGTERM/SIGINT; writes <data-dir>/pid
//          once it listens (removed on exit) and <data-dir>/kubeconfig.
//   up     starts `serve` as a detached child (new session, log in <data-dir>/apiserver.log),
//          waits until it listens and prints `export KUBECONFIG=<data-dir>/kubeconfig`.
//   down   SIGTERM to the pid in <data-dir>/pid, waits for it to exit (SIGKILL after 30 s).
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
