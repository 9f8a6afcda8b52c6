// ringmaster-launcher: the entrypoint of every worker pod.
//
//   ringmaster-launcher [flags] [--trainer-config=FILE]      runs ringmaster-trainer --config FILE
//   ringmaster-launcher [flags] -- PROGRAM [ARGS...]          runs a user's program instead
//
// MPI mode (RINGMASTER_LAUNCHER_MODE=mpi or --mode=mpi; launcher/mpi_mode.h): every pod runs
// sshd instead of the processes, and pod 0 runs them all through mpirun over the hostfile.
//
// Reads the pod environment (ringmaster/contract/pod_environment.h), serves /healthz and /readyz,
// joins the attempt's rendezvous (launcher/rendezvous.h; /readyz turns 200 once every pod joined),
// starts LOCAL_WORLD_SIZE processes with torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, plus RINGMASTER_USE_AGENT_STORE=1 and, on GPU pods,
// CUDA_VISIBLE_DEVICES=<local rank>; ringmaster/contract/rank_environment.h), watches every rank
// for hangs (launcher/hang_detector.h), and exits with the pod's outcome:
//   0     every process succeeded
//   1     bad input (environment, flags' values, a program that cannot be found)
//   2     usage error
//   N     the first failing process's code (128+N when it was killed by signal N)
//   142   128+SIGALRM: a hang was detected, or the rendezvous did not complete in time
//         (retryable: the operator restarts the gang)
//   143   stopped by SIGTERM (130 for SIGINT), forwarded to the processes first

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <thread>

#include "launcher/first_failure.h"
#include "launcher/hang_detector.h"
#include "launcher/mpi_mode.h"
#include "launcher/rank_processes.h"
#include "launcher/rendezvous.h"
#include "launcher/supervisor.h"
#include "launcher/termination_message.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/store_secret.h"
#include "ringmaster/contract/tf_config.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/http/probe_server.h"
#include "ringmaster/kube/termination_message.h"

namespace ringmaster::launcher {
namespace {

using core::Status;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Flags {
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

constexpr char kSummary[] =
    "Runs LOCAL_WORLD_SIZE training processes in this pod after every pod of the job joined the "
    "rendezvous.\nUsage: ringmaster-launcher [flags] [-- PROGRAM ARGS...]\nEnvironment: NODE_RANK, "
    "NNODES, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RINGMASTER_JOB, "
    "RINGMASTER_ATTEMPT, RINGMASTER_STORE_SECRET, RINGMASTER_LAUNCHER_MODE, POD_IP, "
    "POD_NAME.\nExit "
    "codes: 0 ok, 1 bad "
    "input, 2 usage, the first failing process's code, 142 hang or rendezvous timeout, 143 "
    "SIGTERM.";

void declareFlags(core::FlagSet& f, Flags* fl) {
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

// SIGTERM/SIGINT arrive here (they are blocked in every thread, read by sigwait) and go to
// whatever runs now: the rendezvous (through `stop`) or the supervisor.
class SignalRouter {
 public:
  SignalRouter() {
    std::thread([this] {
      sigset_t set = stopSignals();
      for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        RM_LOG(INFO, LAUNCH) << "received " << strsignal(sig) << ": stopping";
        std::lock_guard lock(mu_);
        if (signal_ == 0) signal_ = sig;
        stop_.requestStop(std::string("received ") + strsignal(sig));
        if (supervisor_ != nullptr) {
          supervisor_->requestStop(128 + sig, std::string("received ") + strsignal(sig));
        }
      }
    }).detach();  // lives until exit, blocked in sigwait
  }
  static sigset_t stopSignals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    return set;
  }
  const core::StopSource* stop() const { return &stop_; }
  int exitCode() {
    std::lock_guard lock(mu_);
    return 128 + (signal_ == 0 ? SIGTERM : signal_);
  }
  void attach(Supervisor* supervisor) {
    std::lock_guard lock(mu_);
    supervisor_ = supervisor;
    if (supervisor_ != nullptr && signal_ != 0) {
      supervisor_->requestStop(128 + signal_, std::string("received ") + strsignal(signal_));
    }
  }

 private:
  std::mutex mu_;
  int signal_ = 0;                    // guarded by mu_: the first signal received
  Supervisor* supervisor_ = nullptr;  // guarded by mu_
  core::StopSource stop_;
};

std::string selfDirectory() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

std::string hostName() {
  char buf[HOST_NAME_MAX + 1] = {};
  return gethostname(buf, sizeof(buf)) == 0 ? buf : "unknown";
}

// Heartbeats many times per hang timeout: the step a verdict names lags by one interval.
int64_t heartbeatMs(const Flags& flags) {
  return std::clamp<int64_t>(flags.hang_timeout_seconds * 1000 / 8, 50, 250);
}

// What every process runs: the user's command, or the trainer (with the MPI backend under
// mpirun). argv[0] resolved to an absolute path: in MPI mode it starts through sshd's PATH.
core::Result<std::vector<std::string>> programArgv(const contract::PodEnvironment& env,
                                                   const Flags& flags,
                                                   const std::vector<std::string>& command) {
  std::vector<std::string> argv = command;
  if (argv.empty()) {
    argv = {flags.trainer};
    if (!flags.trainer_config.empty()) argv.insert(argv.end(), {"--config", flags.trainer_config});
    if (env.mode == contract::LauncherMode::kMpi) argv.insert(argv.end(), {"--backend", "mpi"});
  }
  const char* path = std::getenv("PATH");
  RM_ASSIGN_OR_RETURN(argv[0], resolveProgram(argv[0], path ? path : "", selfDirectory()));
  return argv;
}

// Leaves `message` at the termination message path; a path that does not exist (outside a pod)
// is expected.
void leaveTerminationMessage(const std::string& path, std::string_view message) {
  if (Status s = writeTerminationMessage(path, message); !s.ok()) {
    RM_LOG(DEBUG, LAUNCH) << s.message();
  }
}

// Rank 0's trainer writes its summary into a directory of its own, which the launcher removes.
class SummaryFile {
 public:
  SummaryFile() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ringmaster-summary-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      RM_LOG(WARN, LAUNCH) << "no summary for the termination message: mkdtemp " << tmpl << ": "
                           << strerror(errno);
      return;
    }
    dir_ = tmpl;
  }
  ~SummaryFile() {
    if (dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SummaryFile(const SummaryFile&) = delete;
  SummaryFile& operator=(const SummaryFile&) = delete;
  bool ok() const { return !dir_.empty(); }
  std::string path() const { return dir_ + "/summary.json"; }
  std::optional<std::string> read() const {
    std::ifstream in(path());
    if (!in) return std::nullopt;
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text;
  }

 private:
  std::string dir_;
};

int run(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits the mask and sigwait sees them.
  sigset_t stop_signals = SignalRouter::stopSignals();
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  core::log::initFromEnv();

  // Everything after the first "--" is the user's command, untouched by flag parsing.
  std::vector<const char*> own_args;
  std::vector<std::string> command;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--") {
      command.assign(argv + i + 1, argv + argc);
      if (command.empty()) {
        std::fprintf(stderr, "ringmaster-launcher: '--' must be followed by a program\n");
        return 2;
      }
      break;
    }
    own_args.push_back(argv[i]);
  }
  Flags flags;
  core::FlagSet flag_set("ringmaster-launcher", kSummary);
  declareFlags(flag_set, &flags);
  bool help = false;
  if (Status s = flag_set.parse(static_cast<int>(own_args.size()), own_args.data(), &help);
      !s.ok()) {
    std::fprintf(stderr, "ringmaster-launcher: %s\n", s.message().c_str());
    return 2;
  }
  if (help) {
    std::fputs(flag_set.help().c_str(), stdout);
    return 0;
  }
  if (!flags.log_level.empty()) {
    core::log::Level level;
    if (!core::log::parseLevel(flags.log_level, &level)) {
      std::fprintf(stderr, "ringmaster-launcher: flag --log-level: unknown level '%s'\n",
                   flags.log_level.c_str());
      return 2;
    }
    core::log::setLevel(level);
  }
  if (flags.standby) {
    // The operator reads a standby pod's scheduling, nothing else: no rank, no rendezvous.
    RM_LOG(INFO, LAUNCH) << "standby: holding a place for the job's world to grow into";
    sigset_t set = SignalRouter::stopSignals();
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    RM_LOG(INFO, LAUNCH) << "standby: received " << strsignal(sig) << ", leaving";
    return 0;
  }
  auto fail = [&flags](const Status& status) {
    RM_LOG(ERROR, LAUNCH) << status.message();
    leaveTerminationMessage(flags.termination_message_path,
                            failureMessage("launcher: " + status.message(), ""));
    return status.exitCode();
  };
  if (flags.health_port < 0 || flags.health_port > 65535)
    return fail(core::invalidArgument("--health-port=" + std::to_string(flags.health_port) +
                                      " is not a TCP port"));
  if (flags.rdzv_timeout_seconds < 1 || flags.hang_timeout_seconds < 0 || flags.grace_seconds < 0)
    return fail(core::invalidArgument(
        "--rendezvous-timeout-seconds must be positive, --hang-timeout-seconds and "
        "--grace-seconds not negative"));

  auto env = contract::parsePodEnvironment([](const char* name) { return std::getenv(name); });
  if (!env.ok()) return fail(env.status());
  if (env->store_secret.empty()) {
    // A one-pod world (parsePodEnvironment insists otherwise): only our own processes connect.
    auto secret = rendezvous::generateSecret();
    if (!secret.ok()) return fail(secret.status());
    env->store_secret = std::move(secret).value();
    // In our environment too: mpirun forwards it by name, keeping it off its command line.
    ::setenv(contract::store_secret::kEnv, env->store_secret.c_str(), 1);
  }
  core::log::setDefaultPrefix(env->job + " " + env->describePod());
  if (!flags.mode.empty()) {
    std::optional<contract::LauncherMode> mode = contract::parseLauncherMode(flags.mode);
    if (!mode)
      return fail(core::invalidArgument("--mode=" + flags.mode + " must be native or mpi"));
    env->mode = *mode;
  }
  const bool mpi_mode = env->mode == contract::LauncherMode::kMpi;
  auto program = programArgv(*env, flags, command);
  if (!program.ok()) return fail(program.status());
  // The pod's TF_CONFIG (the operator's, for a user's program): each process gets its own task.
  std::optional<contract::TfConfig> tf_config;
  if (const char* tf = std::getenv(contract::kTfConfigEnv); tf != nullptr && *tf != '\0') {
    auto parsed = contract::parseTfConfig(tf);
    if (!parsed.ok()) return fail(parsed.status());
    tf_config = std::move(parsed).value();
  }
  std::vector<ProcessSpec> specs =
      rankProcesses(*env, *program, heartbeatMs(flags), flags.gpus || env->has_gpus, tf_config);
  // Rank 0 of the built-in trainer writes its summary: the termination message on success.
  // Under mpirun every rank has one command line, so all get the flag and only rank 0 writes;
  // mpirun places rank 0 on this pod, the first of the hostfile.
  std::unique_ptr<SummaryFile> summary;
  if (command.empty() && env->firstRank() == 0 && (mpi_mode || !specs.empty())) {
    summary = std::make_unique<SummaryFile>();
    if (summary->ok()) {
      std::vector<std::string>& argv = mpi_mode ? *program : specs.front().argv;
      argv.insert(argv.end(), {"--summary-json", summary->path()});
    }
  }
  RM_LOG(INFO, CONFIG) << contract::launcherModeName(env->mode) << " mode, attempt " << env->attempt
                       << ", pod " << env->node_rank << " of " << env->nnodes << ", "
                       << env->local_world_size << " process(es) of " << env->world_size
                       << ", store " << env->master_addr << ":" << env->store_port << ", running "
                       << (*program)[0] << ", rendezvous timeout " << flags.rdzv_timeout_seconds
                       << " s, hang timeout " << flags.hang_timeout_seconds << " s";

  // MPI mode: sshd up before anything listens, so that bad input fails fast.
  std::unique_ptr<MpiPod> mpi;
  if (mpi_mode) {
    if (flags.ssh_port < 1 || flags.ssh_port > 65535)
      return fail(core::invalidArgument("--ssh-port=" + std::to_string(flags.ssh_port) +
                                        " is not a TCP port"));
    MpiOptions options;
    options.work_dir = flags.work_dir.empty() ? env->work_dir : flags.work_dir;
    options.ssh_dir = flags.ssh_dir;
    options.hostfile = flags.hostfile;
    options.ssh_port = static_cast<int>(flags.ssh_port);
    options.sshd = flags.sshd;
    options.mpirun = flags.mpirun;
    options.program = *program;
    options.grace = seconds(flags.grace_seconds);
    // Ranks heartbeat into this attempt's store, as in native mode (hang detection).
    options.heartbeat_ms = heartbeatMs(flags);
    auto started = MpiPod::start(*env, std::move(options));
    if (!started.ok()) return fail(started.status());
    mpi = std::move(started).value();
  }

  // Leaked: its thread may still wake on a late signal while the process exits.
  SignalRouter& signals = *new SignalRouter();
  // /readyz: every pod of the attempt joined the rendezvous; the operator's readinessProbe turns
  // that into "every rank joined".
  std::atomic<bool> joined{false};
  auto health = http::ProbeServer::start(
      env->bindHost(), static_cast<int>(flags.health_port),
      {{"/healthz",
        [] {
          return http::Answer{200, "ok\n"};
        }},
       {"/readyz", [&joined] {
          return joined ? http::Answer{200, "ok\n"}
                        : http::Answer{503,
                                       "not ready: waiting for every pod to join the "
                                       "rendezvous\n"};
        }}});
  if (!health.ok()) return fail(health.status());
  RM_LOG(INFO, LAUNCH) << "serving /healthz and /readyz on " << env->bindHost() << ":"
                       << (*health)->port();

  // The rendezvous: a deadline that runs out is retryable (the gang restarts), bad input not.
  auto rdzv_failed = [&](const Status& status) {
    if (status.code() == core::Code::kCancelled) {
      RM_LOG(WARN, RDZV) << status.message();
      return signals.exitCode();
    }
    if (status.code() == core::Code::kTimeout || status.code() == core::Code::kUnavailable) {
      RM_LOG(ERROR, RDZV) << status.message() << " (exit " << kHangExitCode << ", retryable)";
      leaveTerminationMessage(flags.termination_message_path,
                              failureMessage("rendezvous: " + status.message(), ""));
      return kHangExitCode;
    }
    return fail(status);
  };
  const milliseconds rdzv_timeout = seconds(flags.rdzv_timeout_seconds);
  const auto rdzv_start = std::chrono::steady_clock::now();
  auto store = AttemptStore::open(*env, rdzv_timeout, signals.stop());
  if (!store.ok()) return rdzv_failed(store.status());
  NodeInfo me{env->node_rank, env->pod_name.empty() ? hostName() : env->pod_name, env->pod_ip,
              env->firstRank(), env->local_world_size};
  const milliseconds left =
      std::max(milliseconds(1), rdzv_timeout - std::chrono::duration_cast<milliseconds>(
                                                   std::chrono::steady_clock::now() - rdzv_start));
  auto nodes = joinGang((*store)->store(), me, env->nnodes, left, signals.stop());
  if (!nodes.ok()) return rdzv_failed(nodes.status());
  const auto rdzv_deadline = rdzv_start + rdzv_timeout;
  if (mpi != nullptr) {
    if (Status s = mpi->waitUntilServing(rdzv_deadline, signals.stop()); !s.ok())
      return rdzv_failed(s);
  }
  joined = true;
  RM_LOG(INFO, RDZV) << "rendezvous complete: " << env->nnodes << " pod(s) joined "
                     << env->attemptPrefix() << ", world of " << env->world_size;

  // What a hang verdict stops: the local processes, or (MPI mode) mpirun / this pod's serving.
  std::unique_ptr<Supervisor> supervisor;
  std::function<void(int, const std::string&)> stop_for_hang;
  if (mpi == nullptr) {
    Supervisor::Options options;
    options.grace = seconds(flags.grace_seconds);
    options.capture_errors = true;
    auto started = Supervisor::start(std::move(specs), options);
    if (!started.ok()) return fail(started.status());
    supervisor = std::move(started).value();
    signals.attach(supervisor.get());
    Supervisor* sup = supervisor.get();
    stop_for_hang = [sup](int code, const std::string& why) { sup->requestStop(code, why); };
  } else {
    MpiPod* pod = mpi.get();
    stop_for_hang = [pod](int code, const std::string& why) { pod->requestStop(code, why); };
  }

  std::unique_ptr<HangMonitor> monitor;
  std::atomic<bool> own_verdict{false};  // this pod's monitor judged a hang (outlives monitor)
  if (flags.hang_timeout_seconds > 0) {
    auto client = (*store)->connectAnother(seconds(10));
    if (!client.ok()) {
      RM_LOG(WARN, LAUNCH) << "hang detection off: " << client.status().message();
    } else {
      const milliseconds timeout = seconds(flags.hang_timeout_seconds);
      monitor = std::make_unique<HangMonitor>(
          std::move(client).value(), env->attemptPrefix(),
          HangJudge(env->world_size, env->local_world_size, timeout),
          std::clamp(timeout / 8, milliseconds(50), milliseconds(250)),
          [stop_for_hang, &own_verdict](const Hang& hang) {
            own_verdict = true;
            RM_LOG(ERROR, LAUNCH) << hang.message() << "; stopping this pod (exit " << kHangExitCode
                                  << ", retryable)";
            stop_for_hang(kHangExitCode, "hang: " + hang.message());
          });
    }
  }
  SupervisorOutcome outcome;
  FailureCause cause;  // what the failing ranks' stderr says
  if (mpi != nullptr) {
    StopHooks hooks;
    hooks.stop = signals.stop();
    hooks.attach = [&signals](Supervisor* s) { signals.attach(s); };
    hooks.exit_code = [&signals] { return signals.exitCode(); };
    outcome = mpi->run((*store)->store(), rdzv_deadline, hooks);
  } else {
    outcome = supervisor->wait();
    cause = supervisor->failureCause();
    signals.attach(nullptr);
  }
  monitor.reset();
  mpi.reset();  // MPI mode: sshd stopped, what its sessions left behind killed
  // Processes that failed because another pod stopped a hung gang (they exit 142 themselves when
  // their peers vanish), or this pod deleted by the operator's gang restart before its own
  // monitor reached the verdict: name the hung rank too.
  bool hang_reported = own_verdict;
  if (outcome.exit_code != 0 && !own_verdict) {
    if (std::optional<std::string> hang = publishedHang((*store)->store())) {
      RM_LOG(ERROR, LAUNCH) << *hang << " (published by another pod; " << outcome.reason << ")";
      hang_reported = true;
      // A signal's exit code stays: it says how this pod ended.
      if (!signals.stop()->stopRequested()) outcome = {kHangExitCode, "hang: " + *hang};
    }
  }
  // The rank whose error came first, when it is not the one that exited first.
  std::string reason = outcome.reason;
  if (!cause.exited_first) reason += "; " + cause.name + "'s error came first";
  std::string failure = failureMessage(reason, cause.error_line);
  if (outcome.exit_code != 0 && !hang_reported && !signals.stop()->stopRequested()) {
    // This pod's own process failed: the gang's first failure is the one to report.
    failure = failureMessage(reportFailure((*store)->store(), env->node_rank, env->nnodes, failure,
                                           cause.unix_ms, seconds(2)),
                             "");
  }
  finishGang((*store)->store(), env->node_rank, env->nnodes, rdzv_timeout,
             seconds(flags.grace_seconds), signals.stop());
  if (outcome.exit_code == 0) {
    RM_LOG(INFO, LAUNCH) << outcome.reason << "; exiting 0";
    std::optional<std::string> text = summary && summary->ok() ? summary->read() : std::nullopt;
    std::optional<std::string> message = text ? summaryMessage(*text) : std::nullopt;
    if (text && !message) RM_LOG(WARN, LAUNCH) << "rank 0's summary is not a small JSON object";
    if (message) leaveTerminationMessage(flags.termination_message_path, *message);
  } else {
    RM_LOG(WARN, LAUNCH) << outcome.reason << "; exiting " << outcome.exit_code;
    leaveTerminationMessage(flags.termination_message_path, failure);
  }
  return outcome.exit_code;
}

}  // namespace
}  // namespace ringmaster::launcher

int main(int argc, char** argv) { return ringmaster::launcher::run(argc, argv); }
