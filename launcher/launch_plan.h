#pragma once
// What this pod runs, decided from the flags and the pod's environment before anything starts:
//   mode        --mode, else RINGMASTER_LAUNCHER_MODE (native when neither says)
//   program     the user's `-- PROGRAM ARGS...`, else the trainer with --config FILE (and
//               --backend mpi in MPI mode); argv[0] resolved to an absolute path, since in MPI
//               mode it starts through sshd's PATH
//   processes   native mode: one per local rank (rank_processes.h), each with its own task of
//               the pod's TF_CONFIG; MPI mode: none here, mpirun starts the ranks (pod 0's
//               MpiPod runs mpirun, the others serve sshd: mpi_mode.h)
//   summary     whether rank 0 runs on this pod: it is then asked for its summary, the
//               termination message on success. The built-in trainer by its --summary-json flag
//               (under mpirun every rank has one command line, so all get the flag and only
//               rank 0 writes; mpirun places rank 0 on pod 0, the first of the hostfile); a
//               program of the user's own, in native mode, by RINGMASTER_SUMMARY_FILE in the
//               environment of the pod's first process (rank 0, or torchrun, whose ranks
//               inherit it).
//   timing      the rendezvous, hang and grace timeouts, and the heartbeat and hang-monitor
//               intervals: many per hang timeout, since a verdict's step lags by one interval
// and, in MPI mode, the options MpiPod::start gets.
//
// Thread-safety: pure functions (the resolver is the caller's). Failure: kInvalidArgument naming
// the flag or variable (--mode, TF_CONFIG, --ssh-port), or the resolver's error.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/command_line.h"
#include "launcher/mpi_mode.h"
#include "launcher/supervisor.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

// A program's name to an absolute path: resolveProgram over PATH and the launcher's directory
// in production.
using ProgramResolver = std::function<core::Result<std::string>(const std::string& name)>;

struct LaunchPlan {
  contract::LauncherMode mode = contract::LauncherMode::kNative;
  std::vector<std::string> program;    // argv[0] absolute; in MPI mode what mpirun runs
  std::vector<ProcessSpec> processes;  // native mode's, for the supervisor; empty in MPI mode
  bool wants_summary = false;          // rank 0 runs on this pod and can be asked for a summary
  bool own_program = false;            // the user's program, not the built-in trainer
  int64_t heartbeat_ms = 250;          // RINGMASTER_HEARTBEAT_MS of every rank
  std::chrono::milliseconds rendezvous_timeout{0};
  std::chrono::milliseconds hang_timeout{0};  // 0: no hang detection
  std::chrono::milliseconds hang_poll{0};     // how often the hang monitor reads the heartbeats
  std::chrono::milliseconds grace{0};         // SIGTERM to SIGKILL
};

// How often ranks heartbeat for a hang timeout of `hang_timeout_seconds`: an eighth of it,
// within [50, 250] ms.
int64_t heartbeatMs(int64_t hang_timeout_seconds);

// `env` is the pod's environment as parsed (its store secret already set), `command` the user's
// (empty: the trainer), `tf_config` the pod's TF_CONFIG ("" when unset). Errors come in the order
// --mode, the program, TF_CONFIG.
core::Result<LaunchPlan> planLaunch(const LauncherFlags& flags, const contract::PodEnvironment& env,
                                    const std::vector<std::string>& command,
                                    std::string_view tf_config, const ProgramResolver& resolve);

// Asks rank 0 for its summary at `path`: the trainer through mpirun's command line in MPI mode,
// else through rank 0's own; a program of the user's own through its environment. Nothing when
// the plan wants no summary.
void addSummaryPath(LaunchPlan& plan, const std::string& path);

// MPI mode's options for MpiPod::start; the work dir is --work-dir, else RINGMASTER_WORK_DIR.
core::Result<MpiOptions> mpiOptions(const LauncherFlags& flags, const contract::PodEnvironment& env,
                                    const LaunchPlan& plan);

}  // namespace ringmaster::launcher
