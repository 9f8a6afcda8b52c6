#include "launcher/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "launcher/termination_message.h"
#include "ringmaster/core/log.h"

extern char** environ;

namespace ringmaster::launcher {
namespace {

using Clock = std::chrono::steady_clock;

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// The launcher's environment with `overrides` applied, as "K=V" strings.
std::vector<std::string> mergedEnvironment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string key = entry.substr(0, entry.find('='));
    if (overrides.count(key) == 0) out.push_back(entry);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

int exitCodeOf(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 1;
}

std::string describeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           strsignal(WTERMSIG(wait_status)) + ")";
  }
  return "exited with code " + std::to_string(exitCodeOf(wait_status));
}

core::Result<std::string> resolveProgram(const std::string& name, const std::string& path_env,
                                         const std::string& fallback_dir) {
  if (name.empty()) return core::invalidArgument("no program to run");
  if (name.find('/') != std::string::npos) {
    if (isExecutableFile(name)) return name;
    return core::notFound("program '" + name + "' is not an executable file");
  }
  std::vector<std::string> dirs;
  std::stringstream in(path_env);
  std::string dir;
  while (std::getline(in, dir, ':')) dirs.push_back(dir.empty() ? "." : dir);
  if (!fallback_dir.empty()) dirs.push_back(fallback_dir);
  for (const auto& d : dirs) {
    if (isExecutableFile(d + "/" + name)) return d + "/" + name;
  }
  return core::notFound("program '" + name + "' not found on PATH (" + path_env + ") nor in " +
                        (fallback_dir.empty() ? "-" : fallback_dir));
}

Supervisor::Supervisor(Options options, int wake_read, int wake_write)
    : options_(options), wake_read_(wake_read), wake_write_(wake_write) {}

core::Result<std::unique_ptr<Supervisor>> Supervisor::start(std::vector<ProcessSpec> specs,
                                                            Options options) {
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) return core::errnoError("supervisor: pipe", errno);
  auto sup = std::unique_ptr<Supervisor>(new Supervisor(options, wake[0], wake[1]));
  sup->children_.reserve(specs.size());
  if (options.capture_errors) {
    if (pipe2(sup->relay_wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      return core::errnoError("supervisor: relay pipe", errno);
  }
  const pid_t parent = getpid();
  for (auto& spec : specs) {
    int err_pipe[2] = {-1, -1};
    if (options.capture_errors && pipe2(err_pipe, O_CLOEXEC) != 0) {
      const int err = errno;
      sup->requestStop(1, "pipe failed");
      sup->wait();
      return core::errnoError("supervisor: stderr pipe for " + spec.name, err);
    }
    // Everything the child needs is built before fork: after it, only async-signal-safe calls.
    std::vector<std::string> env = mergedEnvironment(spec.env);
    std::vector<char*> envp = pointers(env);
    std::vector<char*> argv = pointers(spec.argv);
    const pid_t pid = fork();
    if (pid != 0 && err_pipe[1] >= 0) close(err_pipe[1]);  // the parent's copy
    if (pid < 0) {
      const int err = errno;
      if (err_pipe[0] >= 0) close(err_pipe[0]);
      sup->requestStop(1, "fork failed");
      sup->wait();
      return core::errnoError("supervisor: fork for " + spec.name, err);
    }
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(137);  // the launcher died before prctl took hold
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGCHLD}) sigaction(sig, &dfl, nullptr);
      if (err_pipe[1] >= 0 && dup2(err_pipe[1], STDERR_FILENO) < 0) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      execve(argv[0], argv.data(), envp.data());
      const char* msg = "ringmaster-launcher: exec failed: ";
      ssize_t ignored = write(STDERR_FILENO, msg, strlen(msg));
      ignored = write(STDERR_FILENO, argv[0], strlen(argv[0]));
      ignored = write(STDERR_FILENO, "\n", 1);
      (void)ignored;
      _exit(127);
    }
    setpgid(pid, pid);  // also in the parent: no signal may race the child's own setpgid
    Child child;
    child.name = spec.name;
    child.pid = pid;
    child.pidfd = pidfdOpen(pid);
    RM_LOG(INFO, LAUNCH) << "started " << spec.name << " (pid " << pid << "): " << spec.argv[0];
    if (err_pipe[0] >= 0) {
      fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
      sup->streams_.push_back(Stream{err_pipe[0], {}, {}});
    }
    std::lock_guard lock(sup->mu_);
    sup->children_.push_back(std::move(child));
  }
  if (options.capture_errors) {
    Supervisor* raw = sup.get();
    sup->relay_thread_ = std::thread([raw] { raw->relay(); });
  }
  return sup;
}

namespace {

int64_t unixMillisNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void writeAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Forwards each complete line of `s.partial` (all of it at end of stream, or when one line grows
// past 64 KiB) and feeds each to `errors`.
void forwardLines(std::string& partial, ErrorLines& errors, bool flush_all) {
  const int64_t now_ms = unixMillisNow();
  size_t start = 0;
  for (;;) {
    size_t nl = partial.find('\n', start);
    if (nl == std::string::npos) {
      if (!flush_all && partial.size() - start <= (64u << 10)) break;
      if (start == partial.size()) break;
      nl = partial.size() - 1;
    }
    std::string_view line(partial.data() + start, nl + 1 - start);
    writeAll(STDERR_FILENO, line);  // one write per line: lines of ranks never interleave
    errors.feed(line, now_ms);
    start = nl + 1;
  }
  partial.erase(0, start);
}

}  // namespace

void Supervisor::relay() {
  char buf[16384];
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (streams_[i].fd < 0) continue;
      fds.push_back({streams_[i].fd, POLLIN, 0});
      index.push_back(i);
    }
    // Every stream ended, or wait() is done: drain without blocking, then leave.
    const bool last_round = fds.empty() || relay_stop_.load();
    fds.push_back({relay_wake_[0], POLLIN, 0});
    if (!last_round && poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      RM_LOG(ERROR, LAUNCH) << "supervisor: relay poll: " << strerror(errno);
      return;
    }
    for (size_t k = 0; k < index.size(); ++k) {
      Stream& s = streams_[index[k]];
      if (!last_round && fds[k].revents == 0) continue;
      for (;;) {
        const ssize_t n = read(s.fd, buf, sizeof(buf));
        if (n > 0) {
          s.partial.append(buf, static_cast<size_t>(n));
          forwardLines(s.partial, s.errors, false);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (n < 0 && errno != EAGAIN) || last_round) {
          forwardLines(s.partial, s.errors, n == 0 || last_round);
        }
        if (n == 0 || (n < 0 && errno != EAGAIN)) {
          close(s.fd);
          s.fd = -1;
        }
        break;
      }
    }
    if (last_round) return;
    char drain[64];
    while (read(relay_wake_[0], drain, sizeof(drain)) > 0) {
    }
  }
}

void Supervisor::stopRelay() {
  if (!relay_thread_.joinable()) return;
  relay_stop_ = true;
  const char byte = 1;
  ssize_t ignored = write(relay_wake_[1], &byte, 1);
  (void)ignored;
  relay_thread_.join();
}

Supervisor::~Supervisor() {
  bool any_running = false;
  struct RelayCloser {  // after wait() below: the streams and the wake pipe go last
    Supervisor* s;
    ~RelayCloser() {
      s->stopRelay();
      for (auto& stream : s->streams_) {
        if (stream.fd >= 0) close(stream.fd);
      }
      for (int fd : s->relay_wake_) {
        if (fd >= 0) close(fd);
      }
    }
  } relay_closer{this};
  {
    std::lock_guard lock(mu_);
    for (const auto& c : children_) any_running |= !c.reaped;
  }
  if (any_running) {
    {
      std::lock_guard lock(mu_);
      signalAll(SIGKILL);
    }
    wait();
  }
  for (auto& c : children_) {
    if (c.pidfd >= 0) close(c.pidfd);
  }
  close(wake_read_);
  close(wake_write_);
}

void Supervisor::signalAll(int sig) {
  for (const auto& c : children_) {
    if (!c.reaped) kill(-c.pid, sig);
  }
}

void Supervisor::requestStop(int exit_code, std::string reason) {
  {
    std::lock_guard lock(mu_);
    if (stop_requested_) return;
    stop_requested_ = true;
    stop_code_ = exit_code;
    stop_reason_ = std::move(reason);
  }
  const char byte = 1;
  ssize_t ignored = write(wake_write_, &byte, 1);
  (void)ignored;
}

bool Supervisor::running(size_t index) const {
  std::lock_guard lock(mu_);
  return index < children_.size() && !children_[index].reaped;
}

void Supervisor::reap(Child& child, int wait_status) {
  child.reaped = true;
  child.wait_status = wait_status;
  const int code = exitCodeOf(wait_status);
  if (code == 0) {
    RM_LOG(INFO, LAUNCH) << child.name << " (pid " << child.pid << ") succeeded";
    return;
  }
  RM_LOG(WARN, LAUNCH) << child.name << " (pid " << child.pid << ") "
                       << describeWaitStatus(wait_status);
  if (!first_failure_seen_) {
    first_failure_seen_ = true;
    first_failure_index_ = static_cast<size_t>(&child - children_.data());
    first_failure_unix_ms_ = unixMillisNow();
    first_failure_ = {code, child.name + " " + describeWaitStatus(wait_status)};
  }
}

SupervisorOutcome Supervisor::wait() {
  bool terms_sent = false, kills_sent = false;
  Clock::time_point kill_at{};
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    bool need_polling = false;
    {
      std::unique_lock lock(mu_);
      // Reap whatever has exited (pidfds only say "maybe"; waitpid decides).
      for (auto& c : children_) {
        if (c.reaped) continue;
        int status = 0;
        const pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid) {
          reap(c, status);
        } else if (r < 0 && errno == ECHILD) {
          reap(c, 1 << 8);  // someone else reaped it: count it as a failure, never hang on it
        }
      }
      size_t alive = 0;
      for (const auto& c : children_) alive += c.reaped ? 0 : 1;
      if (alive == 0) break;
      // A failure stops the rest; so does an outside request.
      if (!terms_sent && (stop_requested_ || first_failure_seen_)) {
        RM_LOG(INFO, LAUNCH) << "stopping " << alive << " process(es) ("
                             << (stop_requested_ ? stop_reason_ : first_failure_.reason)
                             << "): SIGTERM, SIGKILL after " << options_.grace.count() / 1000.0
                             << " s";
        signalAll(SIGTERM);
        signalAll(SIGCONT);
        terms_sent = true;
        kill_at = Clock::now() + options_.grace;
      }
      if (terms_sent && !kills_sent && Clock::now() >= kill_at) {
        RM_LOG(WARN, LAUNCH) << alive << " process(es) still running after the grace period: "
                             << "SIGKILL";
        signalAll(SIGKILL);
        kills_sent = true;
      }
      for (size_t i = 0; i < children_.size(); ++i) {
        if (children_[i].reaped) continue;
        if (children_[i].pidfd < 0) {
          need_polling = true;
        } else {
          fds.push_back({children_[i].pidfd, POLLIN, 0});
          index.push_back(i);
        }
      }
    }
    fds.push_back({wake_read_, POLLIN, 0});
    int timeout_ms = need_polling ? 100 : -1;
    if (terms_sent && !kills_sent) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now());
      const int left_ms = static_cast<int>(std::max<int64_t>(left.count(), 0)) + 1;
      timeout_ms = timeout_ms < 0 ? left_ms : std::min(timeout_ms, left_ms);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      RM_LOG(ERROR, LAUNCH) << "supervisor: poll: " << strerror(errno);
      need_polling = true;
    }
    char drain[64];
    while (read(wake_read_, drain, sizeof(drain)) > 0) {
    }
  }
  stopRelay();
  std::lock_guard lock(mu_);
  if (stop_requested_) return {stop_code_, stop_reason_};
  if (first_failure_seen_) return first_failure_;
  return {0, "all " + std::to_string(children_.size()) + " process(es) succeeded"};
}

FailureCause Supervisor::failureCause() const {
  std::lock_guard lock(mu_);
  if (stop_requested_ || !first_failure_seen_ || relay_thread_.joinable()) return {};
  if (first_failure_index_ >= streams_.size()) return {};
  size_t cause = first_failure_index_;
  int64_t earliest = streams_[cause].errors.firstErrorUnixMs();  // 0: no error line
  for (size_t i = 0; i < children_.size() && i < streams_.size(); ++i) {
    const int64_t at = streams_[i].errors.firstErrorUnixMs();
    const bool failed = children_[i].reaped && children_[i].wait_status != 0;
    if (failed && at != 0 && (earliest == 0 || at < earliest)) {
      cause = i;
      earliest = at;
    }
  }
  return {children_[cause].name, streams_[cause].errors.best(),
          earliest != 0 ? earliest : first_failure_unix_ms_, cause == first_failure_index_};
}

}  // namespace ringmaster::launcher
