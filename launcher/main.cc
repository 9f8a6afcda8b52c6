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
//
// This file does the I/O (flags, signals, the probe server, processes, the store, the
// termination message) in that order; what it decides comes from pure functions: the command
// line (launcher/command_line.h), what the pod runs and for how long (launcher/launch_plan.h),
// and how it ends (launcher/pod_outcome.h).

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

#include "launcher/command_line.h"
#include "launcher/first_failure.h"
#include "launcher/hang_detector.h"
#include "launcher/launch_plan.h"
#include "launcher/mpi_mode.h"
#include "launcher/pbt_rounds.h"
#include "launcher/pod_outcome.h"
#include "launcher/rendezvous.h"
#include "launcher/supervisor.h"
#include "launcher/termination_message.h"
#include "ringmaster/contract/pod_environment.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/contract/store_secret.h"
#include "ringmaster/contract/tf_config.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/http/probe_server.h"

namespace ringmaster::launcher {
namespace {

using core::Status;
using std::chrono::milliseconds;
using std::chrono::seconds;

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

// Leaves the exit's termination message, if any, and returns its code. A path that does not
// exist (outside a pod) is expected.
int finish(const std::string& termination_message_path, const PodExit& pod_exit) {
  if (pod_exit.termination_message) {
    if (Status s = writeTerminationMessage(termination_message_path, *pod_exit.termination_message);
        !s.ok()) {
      RM_LOG(DEBUG, LAUNCH) << s.message();
    }
  }
  return pod_exit.exit_code;
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
  // Before a run, so that what read() finds afterwards is that run's.
  void clear() const {
    std::error_code ec;
    std::filesystem::remove(path(), ec);
  }
  core::Status write(const std::string& text) const {
    std::ofstream out(path(), std::ios::trunc);
    out << text;
    if (!out) return core::errnoError("writing " + path(), errno);
    return core::Status::Ok();
  }

 private:
  std::string dir_;
};

// A pbt member of a program of the user's own: the program run once per interval, the population
// met between the runs (pbt_rounds.h). Stops at the first run that fails, at a signal, or at a
// round that cannot be taken (which fails the pod, naming the interval); the last run's summary
// is left with the member's lineage for the termination message.
SupervisorOutcome runIntervals(PbtRounds& rounds, const LaunchPlan& plan,
                               const SummaryFile& summary, SignalRouter& signals,
                               FailureCause* cause) {
  SupervisorOutcome outcome;
  auto failed = [&](const Status& why) {
    RM_LOG(ERROR, LAUNCH) << why.message();
    *cause = FailureCause{};
    return SupervisorOutcome{1, why.message()};
  };
  core::Result<int32_t> first = rounds.resume(signals.stop());
  if (!first.ok()) return failed(first.status());
  for (int32_t interval = *first; interval <= rounds.intervals(); ++interval) {
    std::vector<ProcessSpec> processes = plan.processes;
    for (auto& [name, value] : rounds.runEnvironment(interval)) processes.front().env[name] = value;
    summary.clear();
    RM_LOG(INFO, LAUNCH) << "pbt member " << rounds.member() << ": interval " << interval << " of "
                         << rounds.intervals() << " (checkpoints in " << rounds.checkpointDir()
                         << ")";
    Supervisor::Options options;
    options.grace = plan.grace;
    options.capture_errors = true;
    auto started = Supervisor::start(std::move(processes), options);
    if (!started.ok()) return failed(started.status());
    signals.attach(started->get());
    outcome = (*started)->wait();
    *cause = (*started)->failureCause();
    signals.attach(nullptr);
    if (outcome.exit_code != 0 || signals.stop()->stopRequested()) return outcome;
    const std::optional<std::string> text = summary.read();
    const std::string what = "pbt interval " + std::to_string(interval) + ": ";
    if (!text) {
      return failed(core::invalidArgument(what + "the program wrote no summary to " +
                                          contract::rank_env::kSummaryFile));
    }
    if (interval == rounds.intervals()) {
      core::Result<std::string> last = rounds.finalSummary(*text);
      if (!last.ok()) return failed(last.status().withContext(what));
      if (Status s = summary.write(*last); !s.ok()) return failed(s);
      break;
    }
    core::Result<double> objective = rounds.objectiveOf(interval, *text);
    if (!objective.ok()) return failed(objective.status());
    if (Status s = rounds.meet(interval, *objective, signals.stop()); !s.ok()) {
      return failed(s.withContext(what));
    }
  }
  return outcome;
}

int run(int argc, char** argv) {
  // Before any thread exists, so that every thread inherits the mask and sigwait sees them.
  sigset_t stop_signals = SignalRouter::stopSignals();
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  core::log::initFromEnv();

  auto line = splitCommandLine(argc, argv);
  if (!line.ok()) {
    std::fprintf(stderr, "ringmaster-launcher: %s\n", line.status().message().c_str());
    return line.status().exitCode();
  }
  const std::vector<std::string>& command = line->command;
  LauncherFlags flags;
  core::FlagSet flag_set("ringmaster-launcher", kLauncherSummary);
  declareLauncherFlags(flag_set, &flags);
  bool help = false;
  if (Status s =
          flag_set.parse(static_cast<int>(line->own_args.size()), line->own_args.data(), &help);
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
    return finish(flags.termination_message_path, badInputExit(status));
  };
  if (Status s = checkFlagValues(flags); !s.ok()) return fail(s);

  auto env = contract::parsePodEnvironment(
      [](const char* name) -> const char* { return std::getenv(name); });
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
  // Programs resolve through PATH, then this binary's directory (a build tree's trainer).
  const char* path = std::getenv("PATH");
  const std::string path_env = path ? path : "";
  const std::string self_dir = selfDirectory();
  const char* tf_config = std::getenv(contract::kTfConfigEnv);
  auto plan =
      planLaunch(flags, *env, command, tf_config ? tf_config : "",
                 [&](const std::string& name) { return resolveProgram(name, path_env, self_dir); });
  if (!plan.ok()) return fail(plan.status());
  env->mode = plan->mode;
  std::unique_ptr<SummaryFile> summary;
  if (plan->wants_summary) {
    summary = std::make_unique<SummaryFile>();
    if (summary->ok()) addSummaryPath(*plan, summary->path());
  }
  // A pbt member of a program of the user's own: one run per interval (pbt_rounds.h).
  std::unique_ptr<PbtRounds> rounds;
  if (!env->pbt.empty()) {
    if (!plan->own_program || plan->processes.size() != 1 || summary == nullptr || !summary->ok()) {
      return fail(core::invalidArgument(
          std::string(contract::pod_env::kPbt) +
          ": a pbt member of a program of your own runs as one native process of a one-pod world"));
    }
    auto created = PbtRounds::create(
        env->pbt, [](const char* name) -> const char* { return std::getenv(name); });
    if (!created.ok()) return fail(created.status());
    rounds = std::move(created).value();
  }
  RM_LOG(INFO, CONFIG) << contract::launcherModeName(env->mode) << " mode, attempt " << env->attempt
                       << ", pod " << env->node_rank << " of " << env->nnodes << ", "
                       << env->local_world_size << " process(es) of " << env->world_size
                       << ", store " << env->master_addr << ":" << env->store_port << ", running "
                       << plan->program[0] << ", rendezvous timeout " << flags.rdzv_timeout_seconds
                       << " s, hang timeout " << flags.hang_timeout_seconds << " s";

  // MPI mode: sshd up before anything listens, so that bad input fails fast.
  std::unique_ptr<MpiPod> mpi;
  if (env->mode == contract::LauncherMode::kMpi) {
    auto options = mpiOptions(flags, *env, *plan);
    if (!options.ok()) return fail(options.status());
    auto started = MpiPod::start(*env, std::move(options).value());
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
    switch (classifyRendezvousFailure(status)) {
      case RendezvousFailure::kStopped:
        RM_LOG(WARN, RDZV) << status.message();
        break;
      case RendezvousFailure::kRetryable:
        RM_LOG(ERROR, RDZV) << status.message() << " (exit " << kHangExitCode << ", retryable)";
        break;
      case RendezvousFailure::kBadInput:
        RM_LOG(ERROR, LAUNCH) << status.message();
        break;
    }
    return finish(flags.termination_message_path, rendezvousExit(status, signals.exitCode()));
  };
  const milliseconds rdzv_timeout = plan->rendezvous_timeout;
  const auto rdzv_start = std::chrono::steady_clock::now();
  auto store = AttemptStore::open(*env, rdzv_timeout, signals.stop());
  if (!store.ok()) return rdzv_failed(store.status());
  NodeInfo me{env->node_rank, env->pod_name.empty() ? hostName() : env->pod_name, env->pod_ip,
              env->firstRank(), env->local_world_size};
  const milliseconds left =
      std::max(milliseconds(1), rdzv_timeout - std::chrono::duration_cast<milliseconds>(
                                                   std::chrono::steady_clock::now() - rdzv_start));
  auto nodes = joinGang((*store)->store(), me, env->nnodes, left, signals.stop(), env->emptyPods());
  if (!nodes.ok()) return rdzv_failed(nodes.status());
  const auto rdzv_deadline = rdzv_start + rdzv_timeout;
  if (mpi != nullptr) {
    if (Status s = mpi->waitUntilServing(rdzv_deadline, signals.stop()); !s.ok())
      return rdzv_failed(s);
  }
  joined = true;
  RM_LOG(INFO, RDZV) << "rendezvous complete: " << nodes->size() << " pod(s) joined "
                     << env->attemptPrefix() << ", world of " << env->world_size;

  // What a hang verdict stops: the local processes, or (MPI mode) mpirun / this pod's serving.
  std::unique_ptr<Supervisor> supervisor;
  std::function<void(int, const std::string&)> stop_for_hang;
  if (mpi == nullptr && rounds == nullptr) {
    Supervisor::Options options;
    options.grace = plan->grace;
    options.capture_errors = true;
    auto started = Supervisor::start(std::move(plan->processes), options);
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
  if (plan->hang_timeout > milliseconds(0) && rounds == nullptr) {
    auto client = (*store)->connectAnother(seconds(10));
    if (!client.ok()) {
      RM_LOG(WARN, LAUNCH) << "hang detection off: " << client.status().message();
    } else {
      monitor = std::make_unique<HangMonitor>(
          std::move(client).value(), env->attemptPrefix(),
          HangJudge(env->world_size, env->local_world_size, plan->hang_timeout), plan->hang_poll,
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
  } else if (rounds != nullptr) {
    outcome = runIntervals(*rounds, *plan, *summary, signals, &cause);
  } else {
    outcome = supervisor->wait();
    cause = supervisor->failureCause();
    signals.attach(nullptr);
  }
  monitor.reset();
  mpi.reset();  // MPI mode: sshd stopped, what its sessions left behind killed
  // A failure may be another pod's hang seen from here (it stopped the gang, or the operator's
  // restart deleted this pod first): the verdict then names the hung rank too.
  PodVerdict verdict = podVerdict(outcome, cause, own_verdict, signals.stop()->stopRequested(),
                                  [&store] { return publishedHang((*store)->store()); });
  if (verdict.published_hang) {
    RM_LOG(ERROR, LAUNCH) << *verdict.published_hang << " (published by another pod; "
                          << outcome.reason << ")";
  }
  std::string failure = verdict.failure;
  if (verdict.report_to_gang) {
    // This pod's own process failed: the gang's first failure is the one to report.
    failure = failureMessage(reportFailure((*store)->store(), env->node_rank, env->nnodes, failure,
                                           cause.unix_ms, seconds(2)),
                             "");
  }
  finishGang((*store)->store(), env->node_rank, env->nnodes, rdzv_timeout, plan->grace,
             signals.stop());
  const std::optional<std::string> summary_json =
      summary && summary->ok() ? summary->read() : std::nullopt;
  const PodExit pod_exit = processesExit(verdict.outcome, failure, summary_json);
  if (pod_exit.exit_code == 0) {
    RM_LOG(INFO, LAUNCH) << verdict.outcome.reason << "; exiting 0";
    if (summary_json && !pod_exit.termination_message)
      RM_LOG(WARN, LAUNCH) << "rank 0's summary is not a small JSON object";
  } else {
    RM_LOG(WARN, LAUNCH) << verdict.outcome.reason << "; exiting " << pod_exit.exit_code;
  }
  return finish(flags.termination_message_path, pod_exit);
}

}  // namespace
}  // namespace ringmaster::launcher

int main(int argc, char** argv) { return ringmaster::launcher::run(argc, argv); }
