#include "launcher/command_line.h"

namespace ringmaster::launcher {

void declareLauncherFlags(core::FlagSet& f, LauncherFlags* fl) {
  f.addString("trainer-config", &fl->trainer_config,
              "trainer YAML passed as --config to ringmaster-trainer (spec.trainer)");
  f.addString("trainer", &fl->trainer, "trainer program, resolved through PATH",
              "RINGMASTER_TRAINER");
  f.addInt("health-port", &fl->health_port, "port of /healthz and /readyz (0: any)",
           "RINGMASTER_HEALTH_PORT");
  f.addInt("rendezvous-timeout-seconds", &fl->rdzv_timeout_seconds,
           "how long to wait for the store and every pod to join",
           "RINGMASTER_RDZV_TIMEOUT_SECONDS");
  f.addInt("hang-timeout-seconds", &fl->hang_timeout_seconds,
           "a rank without progress this long is a hang (0: off); keep it below the trainer's "
           "comm timeout (300 s)",
           "RINGMASTER_HANG_TIMEOUT_SECONDS");
  f.addInt("grace-seconds", &fl->grace_seconds, "SIGTERM to SIGKILL delay for the processes",
           "RINGMASTER_GRACE_SECONDS");
  f.addBool("gpus", &fl->gpus,
            "give each process one GPU (CUDA_VISIBLE_DEVICES=<local rank>); implied by "
            "NVIDIA_VISIBLE_DEVICES");
  f.addString("log-level", &fl->log_level, "error | warn | info | debug | trace");
  f.addString("mode", &fl->mode, "native | mpi (default: RINGMASTER_LAUNCHER_MODE, else native)");
  f.addString("termination-message-path", &fl->termination_message_path,
              "where the outcome goes for Kubernetes (the container's terminationMessagePath; "
              "an existing file, else nothing is written)",
              "RINGMASTER_TERMINATION_MESSAGE_PATH");
  f.addInt("ssh-port", &fl->ssh_port, "MPI mode: port of this pod's sshd", "RINGMASTER_SSH_PORT");
  f.addString("ssh-dir", &fl->ssh_dir,
              "MPI mode: the job's SSH Secret (authorized_keys; id_ecdsa on pod 0)",
              "RINGMASTER_SSH_DIR");
  f.addString("hostfile", &fl->hostfile, "MPI mode: Open MPI hostfile (\"HOST slots=N\" lines)",
              "RINGMASTER_HOSTFILE");
  f.addString("work-dir", &fl->work_dir,
              "MPI mode: where sshd's config and host key go (default: RINGMASTER_WORK_DIR, else "
              "a new directory in /tmp)");
  f.addString("sshd", &fl->sshd, "MPI mode: sshd, an absolute path", "RINGMASTER_SSHD");
  f.addString("mpirun", &fl->mpirun, "MPI mode: mpirun, resolved through PATH",
              "RINGMASTER_MPIRUN");
  f.addBool("standby", &fl->standby,
            "hold an elastic job's place on a node without a rank: wait for SIGTERM, exit 0");
}

core::Result<CommandLine> splitCommandLine(int argc, const char* const* argv) {
  CommandLine line;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--") {
      line.command.assign(argv + i + 1, argv + argc);
      if (line.command.empty()) return core::usageError("'--' must be followed by a program");
      break;
    }
    line.own_args.push_back(argv[i]);
  }
  return line;
}

core::Status checkFlagValues(const LauncherFlags& flags) {
  if (flags.health_port < 0 || flags.health_port > 65535)
    return core::invalidArgument("--health-port=" + std::to_string(flags.health_port) +
                                 " is not a TCP port");
  if (flags.rdzv_timeout_seconds < 1 || flags.hang_timeout_seconds < 0 || flags.grace_seconds < 0)
    return core::invalidArgument(
        "--rendezvous-timeout-seconds must be positive, --hang-timeout-seconds and "
        "--grace-seconds not negative");
  return core::Status::Ok();
}

}  // namespace ringmaster::launcher
