#include "launcher/mpi_mode.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "launcher/hang_detector.h"
#include "launcher/mpi_commands.h"
#include "launcher/ssh_probe.h"
#include "ringmaster/contract/rank_environment.h"
#include "ringmaster/core/backoff.h"
#include "ringmaster/core/deadline.h"
#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"

extern char** environ;

namespace ringmaster::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using core::Result;
using core::Status;
using std::chrono::milliseconds;

// Where Debian's sshd, started as root, wants its privilege-separation chroot.
constexpr char kPrivsepDir[] = "/run/sshd";

Result<std::string> readText(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) return core::errnoError(what + ": cannot read " + path, errno);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Status writeText(const std::string& path, const std::string& text, mode_t mode,
                 const std::string& what) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out.flush()) return core::errnoError(what + ": cannot write " + path, errno);
  }
  if (chmod(path.c_str(), mode) != 0) return core::errnoError(what + ": chmod " + path, errno);
  return Status::Ok();
}

// Runs one short program to completion (ssh-keygen, sshd -t); its output goes to our stderr.
Status runToCompletion(const std::string& name, std::vector<std::string> argv) {
  ProcessSpec spec;
  spec.name = name;
  spec.argv = std::move(argv);
  RM_ASSIGN_OR_RETURN(std::unique_ptr<Supervisor> sup,
                      Supervisor::start({std::move(spec)}, Supervisor::Options{}));
  SupervisorOutcome outcome = sup->wait();
  if (outcome.exit_code != 0) return core::internalError(outcome.reason);
  return Status::Ok();
}

// The launcher's environment as sshd's SetEnv for every login (see forwardToSshSession).
std::vector<std::pair<std::string, std::string>> sessionEnvironment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
    if (forwardToSshSession(name, value)) {
      out.emplace_back(std::move(name), std::move(value));
    } else if (name.rfind("SSH_", 0) != 0 && name != "_" && name != "PWD" && name != "SHLVL") {
      RM_LOG(DEBUG, LAUNCH) << "not passing " << name << " to sshd logins";
    }
  }
  return out;
}

// SIGKILLs every live descendant of this process (orted and ranks that sshd's sessions left
// behind: they were reparented here, the launcher being their subreaper) and reaps the direct
// children among them. Only called once the launcher's own children are all reaped, so that
// nothing here takes a status a Supervisor waits for.
void killDescendants() {
  struct Proc {
    pid_t ppid = 0;
    char state = 0;
  };
  std::map<pid_t, Proc> procs;
  if (DIR* dir = opendir("/proc")) {
    while (dirent* d = readdir(dir)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(d->d_name));
      if (pid <= 0) continue;
      std::ifstream stat("/proc/" + std::string(d->d_name) + "/stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses; skip to the last ')'.
      const size_t close_paren = line.rfind(')');
      if (close_paren == std::string::npos) continue;
      std::istringstream rest(line.substr(close_paren + 1));
      Proc p;
      if (rest >> p.state >> p.ppid) procs[pid] = p;
    }
    closedir(dir);
  }
  const pid_t self = getpid();
  int killed = 0;
  for (const auto& [pid, proc] : procs) {
    pid_t p = proc.ppid;
    for (int depth = 0; p > 1 && p != self && depth < 64; ++depth) {
      auto it = procs.find(p);
      p = it == procs.end() ? 0 : it->second.ppid;
    }
    if (p != self) continue;
    if (proc.state != 'Z' && kill(pid, SIGKILL) == 0) ++killed;
    if (proc.ppid == self) waitpid(pid, nullptr, 0);
  }
  if (killed > 0) RM_LOG(INFO, LAUNCH) << "killed " << killed << " leftover process(es) of sshd";
}

}  // namespace

std::string interfaceFor(const std::string& ip) {
  in_addr target{};
  if (inet_pton(AF_INET, ip.c_str(), &target) != 1) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || i->ifa_addr->sa_family != AF_INET)
      continue;
    const uint32_t addr = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    const uint32_t mask = reinterpret_cast<sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr;
    if ((addr & mask) == (target.s_addr & mask)) found = i->ifa_name;
  }
  freeifaddrs(list);
  return found;
}

Result<std::string> findIdentity(const std::string& ssh_dir) {
  for (const char* name : {"id_ecdsa", "id_ed25519", "id_rsa"}) {
    const std::string path = ssh_dir + "/" + name;
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return core::notFound("no SSH private key (id_ecdsa, id_ed25519 or id_rsa) readable in " +
                        ssh_dir + " (the job's ssh-auth Secret; flag --ssh-dir)");
}

MpiPod::MpiPod(const contract::PodEnvironment& env, MpiOptions options)
    : env_(env), options_(std::move(options)) {}

Result<std::unique_ptr<MpiPod>> MpiPod::start(const contract::PodEnvironment& env,
                                              MpiOptions options) {
  auto pod = std::unique_ptr<MpiPod>(new MpiPod(env, std::move(options)));
  RM_RETURN_IF_ERROR_CTX(pod->prepare(), "MPI mode");
  return pod;
}

Status MpiPod::prepare() {
  // Adopt what sshd's sessions leave behind, so that killDescendants() finds it.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (options_.ssh_port < 1 || options_.ssh_port > 65535) {
    return core::invalidArgument("--ssh-port=" + std::to_string(options_.ssh_port) +
                                 " is not a TCP port");
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "/usr/bin:/bin";
  RM_ASSIGN_OR_RETURN(options_.ssh_keygen, resolveProgram(options_.ssh_keygen, path, ""));
  if (options_.sshd.empty() || options_.sshd[0] != '/') {
    return core::invalidArgument("--sshd='" + options_.sshd +
                                 "' must be an absolute path (sshd re-executes itself)");
  }
  RM_ASSIGN_OR_RETURN(options_.sshd, resolveProgram(options_.sshd, path, ""));
  const std::string authorized_keys = options_.ssh_dir + "/authorized_keys";
  if (access(authorized_keys.c_str(), R_OK) != 0) {
    return core::errnoError(
        "authorized keys " + authorized_keys + " (the job's ssh-auth Secret; flag --ssh-dir)",
        errno);
  }

  if (options_.work_dir.empty()) {
    std::string templ = "/tmp/ringmaster-mpi-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) return core::errnoError("mkdtemp " + templ, errno);
    work_dir_ = templ;
    remove_work_dir_ = true;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(options_.work_dir, ec);
    if (ec) return core::invalidArgument("--work-dir=" + options_.work_dir + ": " + ec.message());
    work_dir_ = std::filesystem::absolute(options_.work_dir).string();
  }
  if (geteuid() == 0 && mkdir(kPrivsepDir, 0755) != 0 && errno != EEXIST) {
    return core::errnoError(std::string("sshd's privilege separation directory ") + kPrivsepDir,
                            errno);
  }

  // A host key per pod: clients skip host key checks (the key is new every start anyway).
  const std::string host_key = work_dir_ + "/ssh_host_ed25519_key";
  std::filesystem::remove(host_key);
  std::filesystem::remove(host_key + ".pub");
  RM_RETURN_IF_ERROR(
      runToCompletion("ssh-keygen", {options_.ssh_keygen, "-q", "-t", "ed25519", "-N", "", "-C",
                                     env_.describePod(), "-f", host_key}));
  if (env_.node_rank == 0) {
    // ssh refuses keys that others may read; a kubelet may not honour the Secret's mode.
    RM_ASSIGN_OR_RETURN(std::string key_path, findIdentity(options_.ssh_dir));
    RM_ASSIGN_OR_RETURN(std::string key, readText(key_path, "SSH private key"));
    identity_ = work_dir_ + "/ssh_identity";
    RM_RETURN_IF_ERROR(writeText(identity_, key, 0600, "SSH private key"));
  }

  SshdSettings settings;
  listen_address_ = env_.pod_ip.empty() ? "127.0.0.1" : env_.pod_ip;
  settings.listen_address = listen_address_;
  settings.port = options_.ssh_port;
  settings.host_key = host_key;
  settings.authorized_keys = std::filesystem::absolute(authorized_keys).string();
  settings.session_env = sessionEnvironment();
  RM_RETURN_IF_ERROR(validateSshdSettings(settings));
  const std::string config = work_dir_ + "/sshd_config";
  RM_RETURN_IF_ERROR(writeText(config, sshdConfig(settings), 0600, "sshd_config"));
  RM_RETURN_IF_ERROR_CTX(runToCompletion("sshd -t", {options_.sshd, "-t", "-f", config}),
                         "sshd rejects " + config);

  ProcessSpec spec;
  spec.name = "sshd";
  spec.argv = {options_.sshd, "-D", "-e", "-f", config};
  Supervisor::Options sup_options;
  sup_options.grace = std::chrono::seconds(5);
  RM_ASSIGN_OR_RETURN(sshd_, Supervisor::start({std::move(spec)}, sup_options));
  RM_LOG(INFO, LAUNCH) << "sshd serving on " << listen_address_ << ":" << options_.ssh_port
                       << " (config " << config << ")";
  Supervisor* sup = sshd_.get();
  sshd_waiter_ = std::thread([this, sup] {
    SupervisorOutcome outcome = sup->wait();
    std::lock_guard lock(mu_);
    sshd_exit_ = outcome;
    cv_.notify_all();
  });
  return Status::Ok();
}

MpiPod::~MpiPod() {
  stopSshd();
  killDescendants();
  if (remove_work_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(work_dir_, ec);
  }
}

void MpiPod::stopSshd() {
  if (sshd_ == nullptr) return;
  sshd_->requestStop(0, "MPI job done");
  if (sshd_waiter_.joinable()) sshd_waiter_.join();
  sshd_.reset();
}

void MpiPod::requestStop(int exit_code, std::string reason) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  stop_ = SupervisorOutcome{exit_code, std::move(reason)};
  if (mpirun_ != nullptr) mpirun_->requestStop(stop_->exit_code, stop_->reason);
  cv_.notify_all();
}

std::optional<SupervisorOutcome> MpiPod::sshdExit() {
  std::lock_guard lock(mu_);
  return sshd_exit_;
}

Status MpiPod::waitUntilServing(Clock::time_point deadline, const core::StopSource* stop) {
  core::Backoff backoff({milliseconds(50), milliseconds(1000), 0.5});
  for (;;) {
    if (std::optional<SupervisorOutcome> exit = sshdExit()) {
      return core::unavailable("sshd " + exit->reason.substr(exit->reason.find(' ') + 1) +
                               " (its log is above)");
    }
    if (stop != nullptr && stop->stopRequested()) {
      return core::cancelled("waiting for this pod's sshd: " + stop->reason());
    }
    Result<std::string> banner = probeSsh(
        listen_address_, options_.ssh_port,
        std::min(milliseconds(1000), std::max(core::millisecondsUntil(deadline), milliseconds(1))));
    if (banner.ok()) {
      RM_LOG(INFO, LAUNCH) << "this pod's sshd answers: " << *banner;
      return Status::Ok();
    }
    if (core::millisecondsUntil(deadline).count() == 0) {
      return core::timeoutError("this pod's sshd did not answer in time: " +
                                banner.status().message());
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::min(backoff.next(), core::millisecondsUntil(deadline)),
                 [&] { return sshd_exit_.has_value(); });
  }
}

SupervisorOutcome MpiPod::run(rendezvous::Store& attempt_store, Clock::time_point deadline,
                              const StopHooks& hooks) {
  SupervisorOutcome outcome = env_.node_rank == 0 ? runMpirun(attempt_store, deadline, hooks)
                                                  : serveUntilDone(attempt_store, hooks);
  stopSshd();
  return outcome;
}

SupervisorOutcome MpiPod::runMpirun(rendezvous::Store& attempt_store, Clock::time_point deadline,
                                    const StopHooks& hooks) {
  auto attempt = [&]() -> SupervisorOutcome {
    Result<std::string> text = readText(options_.hostfile, "hostfile");
    Result<std::vector<HostfileEntry>> hosts =
        text.ok() ? parseHostfile(*text) : Result<std::vector<HostfileEntry>>(text.status());
    if (!hosts.ok()) return {1, hosts.status().message() + " (" + options_.hostfile + ")"};
    int slots = 0;
    for (const HostfileEntry& h : *hosts) slots += h.slots;
    if (static_cast<int>(hosts->size()) != env_.nnodes || slots != env_.world_size) {
      return {1, "hostfile " + options_.hostfile + " lists " + std::to_string(hosts->size()) +
                     " host(s) with " + std::to_string(slots) + " slot(s); the job has " +
                     std::to_string(env_.nnodes) +
                     " pod(s) and WORLD_SIZE=" + std::to_string(env_.world_size)};
    }
    // mpirun's ssh fails at once on a peer whose sshd is not up yet: wait for every one.
    for (const HostfileEntry& h : *hosts) {
      Result<std::string> banner = waitForSsh(h.host, options_.ssh_port, deadline, hooks.stop);
      if (!banner.ok()) {
        if (banner.status().code() == core::Code::kCancelled) {
          return {hooks.exit_code(), banner.status().message()};
        }
        return {kHangExitCode, banner.status().message() + " (retryable)"};
      }
      RM_LOG(INFO, LAUNCH) << "sshd of " << h.host << " answers";
    }
    const char* path_env = std::getenv("PATH");
    Result<std::string> mpirun =
        resolveProgram(options_.mpirun, path_env ? path_env : "/usr/bin:/bin", "");
    if (!mpirun.ok()) return {1, mpirun.status().message()};
    MpirunSettings settings;
    settings.mpirun = *mpirun;
    settings.hostfile = options_.hostfile;
    settings.np = env_.world_size;
    settings.ssh_port = options_.ssh_port;
    settings.identity = identity_;
    settings.iface = interfaceFor(listen_address_);
    settings.allow_run_as_root = geteuid() == 0;
    // mpirun places the ranks: encodeForMpirun leaves out the per-rank variables (local rank 0
    // here is a placeholder) and the store secret, forwarded by name below.
    contract::RankEnvironment ranks = contract::launchedRank(env_, 0, options_.heartbeat_ms);
    ranks.backend = "mpi";
    settings.env = contract::encodeForMpirun(ranks);
    // Ranks authenticate to the attempt's store (heartbeats) with the secret this launcher
    // has in its environment.
    settings.forward_env = {contract::rank_env::kStoreSecret};
    settings.program = options_.program;
    Result<std::vector<std::string>> argv = mpirunArgv(settings);
    if (!argv.ok()) return {1, argv.status().message()};
    std::string line;
    for (const std::string& a : *argv) line += (line.empty() ? "" : " ") + a;
    RM_LOG(INFO, LAUNCH) << "running " << line;
    ProcessSpec spec;
    spec.name = "mpirun";
    spec.argv = std::move(argv).value();
    Supervisor::Options sup_options;
    sup_options.grace = options_.grace;
    Result<std::unique_ptr<Supervisor>> sup = Supervisor::start({std::move(spec)}, sup_options);
    if (!sup.ok()) return {1, sup.status().message()};
    hooks.attach(sup->get());
    {
      std::lock_guard lock(mu_);
      mpirun_ = sup->get();
      if (stop_) mpirun_->requestStop(stop_->exit_code, stop_->reason);
    }
    SupervisorOutcome outcome = (*sup)->wait();
    {
      std::lock_guard lock(mu_);
      mpirun_ = nullptr;
    }
    hooks.attach(nullptr);
    if (outcome.exit_code == 0) outcome.reason = "mpirun succeeded";
    return outcome;
  };
  SupervisorOutcome outcome = attempt();
  // Ranks that failed because another pod judged the gang hung: report the hang.
  if (outcome.exit_code != 0 && outcome.exit_code != kHangExitCode &&
      !(hooks.stop != nullptr && hooks.stop->stopRequested())) {
    if (std::optional<std::string> hang = publishedHang(attempt_store)) {
      RM_LOG(ERROR, LAUNCH) << *hang << " (published by another pod; " << outcome.reason << ")";
      outcome = {kHangExitCode, "hang: " + *hang};
    }
  }
  // The other pods wait for this key to end: publish it on every path.
  Status st =
      attempt_store.set(kMpiDoneKey, rendezvous::toBytes(std::to_string(outcome.exit_code)));
  if (!st.ok())
    RM_LOG(WARN, LAUNCH) << "could not tell the other pods mpirun ended: " << st.message();
  return outcome;
}

SupervisorOutcome MpiPod::serveUntilDone(rendezvous::Store& attempt_store, const StopHooks& hooks) {
  RM_LOG(INFO, LAUNCH) << "serving sshd until pod 0's mpirun ends";
  for (;;) {
    if (hooks.stop != nullptr && hooks.stop->stopRequested()) {
      return {hooks.exit_code(), hooks.stop->reason()};
    }
    if (std::optional<SupervisorOutcome> exit = sshdExit()) {
      return {exit->exit_code == 0 ? 1 : exit->exit_code, "sshd ended: " + exit->reason};
    }
    {
      std::lock_guard lock(mu_);
      if (stop_) return *stop_;
    }
    Status st = attempt_store.wait({kMpiDoneKey}, milliseconds(500));
    if (st.code() == core::Code::kTimeout) continue;
    if (!st.ok()) {
      return {kHangExitCode, "lost the rendezvous store before pod 0's mpirun ended (" +
                                 st.message() + "); retryable"};
    }
    Result<rendezvous::Bytes> bytes = attempt_store.get(kMpiDoneKey, milliseconds(500));
    Result<int64_t> code =
        bytes.ok() ? core::parseInt(rendezvous::toString(*bytes)) : Result<int64_t>(bytes.status());
    if (!code.ok() || *code < 0 || *code > 255) {
      return {1, "pod 0 published a bad " + std::string(kMpiDoneKey) + ": " +
                     (code.ok() ? std::to_string(*code) : code.status().message())};
    }
    const int c = static_cast<int>(*code);
    if (c == 0) return {0, "pod 0's mpirun succeeded"};
    const std::string reason = "pod 0's mpirun exited with code " + std::to_string(c);
    // Pod 0 may have judged a hang before this pod's monitor did: name the rank here too.
    if (std::optional<std::string> hang = publishedHang(attempt_store)) {
      RM_LOG(ERROR, LAUNCH) << *hang << " (published by another pod; " << reason << ")";
      return {c, "hang: " + *hang + "; " + reason};
    }
    return {c, reason};
  }
}

}  // namespace ringmaster::launcher
