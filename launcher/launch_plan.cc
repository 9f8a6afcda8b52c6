#include "launcher/launch_plan.h"

#include <algorithm>
#include <optional>

#include "launcher/rank_processes.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/contract/tf_config.h"

namespace ringmaster::launcher {

using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t heartbeatMs(int64_t hang_timeout_seconds) {
  return std::clamp<int64_t>(hang_timeout_seconds * 1000 / 8, 50, 250);
}

core::Result<LaunchPlan> planLaunch(const LauncherFlags& flags, const contract::PodEnvironment& env,
                                    const std::vector<std::string>& command,
                                    std::string_view tf_config, const ProgramResolver& resolve) {
  LaunchPlan plan;
  plan.mode = env.mode;
  if (!flags.mode.empty()) {
    std::optional<contract::LauncherMode> mode = contract::parseLauncherMode(flags.mode);
    if (!mode) return core::invalidArgument("--mode=" + flags.mode + " must be native or mpi");
    plan.mode = *mode;
  }
  const bool mpi = plan.mode == contract::LauncherMode::kMpi;

  plan.program = command;
  if (plan.program.empty()) {
    plan.program = {flags.trainer};
    if (!flags.trainer_config.empty())
      plan.program.insert(plan.program.end(), {"--config", flags.trainer_config});
    if (mpi) plan.program.insert(plan.program.end(), {"--backend", "mpi"});
  }
  RM_ASSIGN_OR_RETURN(plan.program[0], resolve(plan.program[0]));

  // The pod's TF_CONFIG (the operator's, for a user's program): each process gets its own task.
  // Checked in MPI mode too, where nothing reads it, so that a bad one fails either way.
  std::optional<contract::TfConfig> tf;
  if (!tf_config.empty()) {
    RM_ASSIGN_OR_RETURN(tf, contract::parseTfConfig(tf_config));
  }

  plan.heartbeat_ms = heartbeatMs(flags.hang_timeout_seconds);
  if (!mpi) {
    plan.processes =
        rankProcesses(env, plan.program, plan.heartbeat_ms, flags.gpus || env.has_gpus, tf);
  }
  plan.own_program = !command.empty();
  // A user's program under mpirun gets no summary file: mpirun passes on only the variables
  // named on its command line, and which rank writes is the program's business.
  plan.wants_summary = env.firstRank() == 0 && (plan.own_program ? !mpi && !plan.processes.empty()
                                                                 : mpi || !plan.processes.empty());

  plan.rendezvous_timeout = seconds(flags.rdzv_timeout_seconds);
  plan.hang_timeout = seconds(flags.hang_timeout_seconds);
  plan.hang_poll = std::clamp(plan.hang_timeout / 8, milliseconds(50), milliseconds(250));
  plan.grace = seconds(flags.grace_seconds);
  return plan;
}

void addSummaryPath(LaunchPlan& plan, const std::string& path) {
  if (!plan.wants_summary) return;
  if (plan.own_program) {
    plan.processes.front().env[contract::rank_env::kSummaryFile] = path;
    return;
  }
  std::vector<std::string>& argv =
      plan.mode == contract::LauncherMode::kMpi ? plan.program : plan.processes.front().argv;
  argv.insert(argv.end(), {"--summary-json", path});
}

core::Result<MpiOptions> mpiOptions(const LauncherFlags& flags, const contract::PodEnvironment& env,
                                    const LaunchPlan& plan) {
  if (flags.ssh_port < 1 || flags.ssh_port > 65535)
    return core::invalidArgument("--ssh-port=" + std::to_string(flags.ssh_port) +
                                 " is not a TCP port");
  MpiOptions options;
  options.work_dir = flags.work_dir.empty() ? env.work_dir : flags.work_dir;
  options.ssh_dir = flags.ssh_dir;
  options.hostfile = flags.hostfile;
  options.ssh_port = static_cast<int>(flags.ssh_port);
  options.sshd = flags.sshd;
  options.mpirun = flags.mpirun;
  options.program = plan.program;
  options.grace = plan.grace;
  // Ranks heartbeat into this attempt's store, as in native mode (hang detection).
  options.heartbeat_ms = plan.heartbeat_ms;
  return options;
}

}  // namespace ringmaster::launcher
