#pragma once
// The launcher's command line: its flags (each with the environment variable it falls back to),
// the split between its own arguments and the user's `-- PROGRAM ARGS...`, and the checks of the
// flags' values that need no environment.
//
// Thread-safety: value types and pure functions. Failure: splitCommandLine returns kUsage (exit
// 2), checkFlagValues kInvalidArgument (exit 1), each naming the argument.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/core/flags.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::launcher {

struct LauncherFlags {
  std::string trainer_config;
  std::string trainer = "ringmaster-trainer";
  int64_t health_port = 8080;
  int64_t rdzv_timeout_seconds = 300;
  int64_t hang_timeout_seconds = 120;
  int64_t grace_seconds = 30;
  bool gpus = false;
  std::string log_level;
  std::string mode;  // overrides RINGMASTER_LAUNCHER_MODE
  std::string termination_message_path{kube::kDefaultTerminationMessagePath};
  // MPI mode
  int64_t ssh_port = 2222;
  std::string ssh_dir = "/etc/ringmaster-ssh";
  std::string hostfile = "/etc/ringmaster/hostfile";
  std::string work_dir;
  std::string sshd = "/usr/sbin/sshd";
  std::string mpirun = "mpirun";
  bool standby = false;
};

// --help's text above the flags.
inline constexpr char kLauncherSummary[] =
    "Runs LOCAL_WORLD_SIZE training processes in this pod after every pod of the job joined the "
    "rendezvous.\nUsage: ringmaster-launcher [flags] [-- PROGRAM ARGS...]\nEnvironment: NODE_RANK, "
    "NNODES, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RINGMASTER_JOB, "
    "RINGMASTER_ATTEMPT, RINGMASTER_STORE_SECRET, RINGMASTER_LAUNCHER_MODE, POD_IP, "
    "POD_NAME.\nExit "
    "codes: 0 ok, 1 bad "
    "input, 2 usage, the first failing process's code, 142 hang or rendezvous timeout, 143 "
    "SIGTERM.";

void declareLauncherFlags(core::FlagSet& flag_set, LauncherFlags* flags);

struct CommandLine {
  std::vector<const char*> own_args;  // argv[0] and the launcher's flags, for FlagSet::parse
  std::vector<std::string> command;   // the user's program and its arguments; empty: the trainer
};

// Splits at the first "--" after argv[0]: what follows is the user's command, untouched by flag
// parsing. A "--" with nothing after it is a usage error.
core::Result<CommandLine> splitCommandLine(int argc, const char* const* argv);

// The flags' values that are wrong whatever the environment says: ports and timeouts. The SSH
// port is MPI mode's alone (launch_plan.h checks it).
core::Status checkFlagValues(const LauncherFlags& flags);

}  // namespace ringmaster::launcher
