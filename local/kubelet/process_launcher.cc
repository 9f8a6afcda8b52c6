#include "local/kubelet/process_launcher.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

// What the child reports through the pipe when it fails before execve.
struct ChildError {
  int step = 0;  // index into kSteps
  int err = 0;
  int mount = -1;  // which mount, for mount steps
};

constexpr const char* kSteps[] = {"setsid",
                                  "unshare(CLONE_NEWNS)",
                                  "make / rprivate",
                                  "mkdir mountpoint",
                                  "bind mount",
                                  "remount read-only",
                                  "chdir",
                                  "dup2",
                                  "execve",
                                  "shadow directory",
                                  "write session file",
                                  "setns(CLONE_NEWNET)",
                                  "unshare(CLONE_NEWUTS)",
                                  "sethostname"};
constexpr int kShadowStep = 9;
constexpr int kSessionFileStep = 10;
constexpr int kNetnsStep = 11;
constexpr int kUtsStep = 12;
constexpr int kHostnameStep = 13;

[[noreturn]] void childFail(int fd, int step, int mount = -1) {
  ChildError e{step, errno, mount};
  ssize_t ignored = write(fd, &e, sizeof(e));
  (void)ignored;
  _exit(127);
}

// Writes "<pid>\n" to `path` with only async-signal-safe calls (the child, between fork and exec).
bool writePidFile(const char* path, pid_t pid) {
  char text[24];
  size_t at = sizeof(text);
  text[--at] = '\n';
  do {
    text[--at] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const ssize_t n = write(fd, text + at, sizeof(text) - at);
  return close(fd) == 0 && n == static_cast<ssize_t>(sizeof(text) - at);
}

void closeFrom(int first, int keep) {
  // close_range(2) when the kernel has it; else a bounded loop.
  if (keep > first) syscall(SYS_close_range, first, keep - 1, 0);
  if (syscall(SYS_close_range, keep + 1, ~0U, 0) == 0) return;
  for (int fd = first; fd < 4096; ++fd) {
    if (fd != keep) close(fd);
  }
}

// A directory covered by a tmpfs that re-exposes its entries (see process_launcher.h).
struct Shadow {
  std::string dir, staging;
  struct Entry {
    std::string original, copy;  // staging/<name>, dir/<name>
    std::string link_target;     // symlinks
    enum Kind { kDir, kFile, kLink } kind = kFile;
  };
  std::vector<Entry> entries;
};

core::Result<Shadow> planShadow(const std::string& dir, const std::string& scratch_dir,
                                size_t index) {
  if (scratch_dir.empty()) return core::invalidArgument("no scratch directory to shadow " + dir);
  Shadow s;
  s.dir = dir;
  s.staging = (fs::path(scratch_dir) / (".shadow-" + std::to_string(index))).string();
  std::error_code ec;
  fs::create_directories(s.staging, ec);
  if (ec) return core::internalError("create " + s.staging + ": " + ec.message());
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    Shadow::Entry entry;
    entry.original = (fs::path(s.staging) / e.path().filename()).string();
    entry.copy = e.path().string();
    std::error_code type_ec;
    if (e.is_symlink(type_ec)) {
      entry.kind = Shadow::Entry::kLink;
      entry.link_target = fs::read_symlink(e.path(), type_ec).string();
      if (type_ec) continue;
    } else if (e.is_directory(type_ec)) {
      entry.kind = Shadow::Entry::kDir;
    }
    s.entries.push_back(std::move(entry));
  }
  if (ec) return core::internalError("list " + dir + ": " + ec.message());
  return s;
}

// In the child (async-signal-safe calls only): covers s.dir with a tmpfs holding its entries.
// An entry that cannot be re-exposed (a socket the kernel refuses to bind, ...) is left out
// rather than failing the container.
bool applyShadow(const Shadow& s) {
  if (mount(s.dir.c_str(), s.staging.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return false;
  }
  if (mount("tmpfs", s.dir.c_str(), "tmpfs", MS_NOSUID, "mode=755") != 0) return false;
  for (const auto& e : s.entries) {
    if (e.kind == Shadow::Entry::kLink) {
      (void)symlink(e.link_target.c_str(), e.copy.c_str());
      continue;
    }
    if (e.kind == Shadow::Entry::kDir) {
      if (mkdir(e.copy.c_str(), 0755) != 0) continue;
    } else {
      int fd = open(e.copy.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) continue;
      close(fd);
    }
    if (mount(e.original.c_str(), e.copy.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      unlink(e.copy.c_str());
      rmdir(e.copy.c_str());
    }
  }
  return umount2(s.staging.c_str(), MNT_DETACH) == 0;
}

// Everything the child needs, built before fork (no allocation after it).
struct Prepared {
  std::vector<char*> argv, envp;
  std::vector<std::string> env_text;
  std::vector<std::vector<std::string>>
      mkdirs;                                  // per mount: directories to create, outermost first
  std::vector<bool> file_target;               // per mount: the source is a file
  std::vector<std::optional<Shadow>> shadows;  // per mount: the parent to shadow first
};

bool isUnder(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

}  // namespace

core::Result<pid_t> launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) return core::invalidArgument("no command to run");
  Prepared p;
  for (const auto& a : spec.argv) p.argv.push_back(const_cast<char*>(a.c_str()));
  p.argv.push_back(nullptr);
  for (const auto& [k, v] : spec.env) p.env_text.push_back(k + "=" + v);
  for (auto& e : p.env_text) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  for (const auto& m : spec.mounts) {
    std::vector<std::string> dirs;
    fs::path target(m.target);
    struct stat st {};
    const bool is_file = stat(m.source.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
    fs::path dir = is_file ? target.parent_path() : target;
    for (fs::path acc = "/"; const auto& part : dir.relative_path()) {
      acc /= part;
      dirs.push_back(acc.string());
    }
    p.mkdirs.push_back(std::move(dirs));
    p.file_target.push_back(is_file);
    // A file mountpoint that does not exist, outside every earlier mount: shadow its parent.
    std::optional<Shadow> shadow;
    if (is_file && !fs::exists(target) && fs::is_directory(target.parent_path()) &&
        target.parent_path() != target.root_path()) {
      const size_t i = p.shadows.size();
      const bool inside_earlier = std::any_of(
          spec.mounts.begin(), spec.mounts.begin() + static_cast<std::ptrdiff_t>(i),
          [&](const Mount& earlier) { return isUnder(target, fs::path(earlier.target)); });
      if (!inside_earlier) {
        RM_ASSIGN_OR_RETURN(shadow, planShadow(target.parent_path().string(), spec.scratch_dir, i));
      }
    }
    p.shadows.push_back(std::move(shadow));
  }

  int netns_fd = -1;
  if (!spec.netns.empty()) {
    netns_fd = open(spec.netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) return core::errnoError("open network namespace " + spec.netns, errno);
  }
  // Closed in the parent once the child has it (or the launch failed).
  struct NetnsCloser {
    int fd;
    ~NetnsCloser() {
      if (fd >= 0) close(fd);
    }
  } netns_closer{netns_fd};
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return core::errnoError("open /dev/null", errno);
  int log_fd = spec.log_path.empty()
                   ? fcntl(null_fd, F_DUPFD_CLOEXEC, 3)
                   : open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    int err = errno;
    close(null_fd);
    return core::errnoError("open log " + spec.log_path, err);
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int err = errno;
    close(null_fd);
    close(log_fd);
    return core::errnoError("pipe2", err);
  }

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(null_fd);
    close(log_fd);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return core::errnoError("fork", err);
  }
  if (pid == 0) {
    const int efd = pipe_fds[1];
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (setsid() < 0) childFail(efd, 0);
    if (!spec.session_file.empty() && !writePidFile(spec.session_file.c_str(), getpid())) {
      childFail(efd, kSessionFileStep);
    }
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) childFail(efd, kNetnsStep);
    if (!spec.hostname.empty()) {
      if (unshare(CLONE_NEWUTS) != 0) childFail(efd, kUtsStep);
      if (sethostname(spec.hostname.data(), spec.hostname.size()) != 0) {
        childFail(efd, kHostnameStep);
      }
    }
    if (!spec.mounts.empty()) {
      if (unshare(CLONE_NEWNS) != 0) childFail(efd, 1);
      if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) childFail(efd, 2);
      for (size_t i = 0; i < spec.mounts.size(); ++i) {
        const Mount& m = spec.mounts[i];
        if (p.shadows[i] && !applyShadow(*p.shadows[i])) childFail(efd, kShadowStep, int(i));
        for (const auto& d : p.mkdirs[i]) {
          if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) childFail(efd, 3, int(i));
        }
        if (p.file_target[i]) {
          int fd = open(m.target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
          if (fd < 0) childFail(efd, 3, int(i));
          close(fd);
        }
        if (mount(m.source.c_str(), m.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
          childFail(efd, 4, int(i));
        }
        if (m.read_only && mount("none", m.target.c_str(), nullptr,
                                 MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, nullptr) != 0) {
          childFail(efd, 5, int(i));
        }
      }
    }
    if (!spec.working_dir.empty() && chdir(spec.working_dir.c_str()) != 0) childFail(efd, 6);
    if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) childFail(efd, 7);
    closeFrom(3, efd);
    execve(spec.executable.c_str(), p.argv.data(), p.envp.data());
    childFail(efd, 8);
  }
  // No setpgid here: it would make the child a group leader, and setsid would then fail. Nobody
  // signals the child before launch() returns, which is after its exec.
  close(null_fd);
  close(log_fd);
  close(pipe_fds[1]);
  ChildError e;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &e, sizeof(e));
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof(e))) {
    waitpid(pid, nullptr, 0);
    std::string what = kSteps[e.step];
    if (e.mount >= 0) {
      const Mount& m = spec.mounts[static_cast<size_t>(e.mount)];
      what += " " + m.source + " -> " + m.target;
    } else if (e.step == 8) {
      what += " " + spec.executable;
    } else if (e.step == 6) {
      what += " " + spec.working_dir;
    } else if (e.step == kSessionFileStep) {
      what += " " + spec.session_file;
    } else if (e.step == kHostnameStep) {
      what += " " + spec.hostname;
    }
    return core::errnoError(what, e.err);
  }
  return pid;
}

std::optional<ExitInfo> reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) return ExitInfo{128 + SIGKILL, SIGKILL};  // not our child anymore: treat as lost
  if (WIFEXITED(status)) return ExitInfo{WEXITSTATUS(status), std::nullopt};
  if (WIFSIGNALED(status)) return ExitInfo{128 + WTERMSIG(status), WTERMSIG(status)};
  return std::nullopt;  // stopped/continued
}

bool canMountFileAt(const std::string& target) {
  const fs::path path(target);
  std::error_code ec;
  if (fs::exists(path, ec)) return !fs::is_directory(path, ec);
  return path.is_absolute() && path.parent_path() != path.root_path() &&
         fs::is_directory(path.parent_path(), ec);
}

void signalGroup(pid_t pgid, int sig) {
  if (pgid > 0) kill(-pgid, sig);
}

bool mountNamespacesAvailable() {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) != 0) _exit(1);
    if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(2);
    _exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace ringmaster::local::kubelet
