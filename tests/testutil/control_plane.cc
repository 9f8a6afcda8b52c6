#include "control_plane.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

extern char** environ;

namespace ringmaster::testutil {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {
const char* envtestDir() {
  const char* dir = std::getenv("RINGMASTER_ENVTEST");
  return dir != nullptr && *dir != '\0' ? dir : nullptr;
}

// `start` unpacks kube-apiserver and kube-controller-manager (about 100 MB each, from xz) into
// RUN_DIR/bin unless they are there: the tests of one machine share one unpacked copy.
fs::path envtestBinaryCache() {
  return fs::temp_directory_path() / ("ringmaster-envtest-bin-" + std::to_string(getuid()));
}
constexpr const char* kEnvtestBinaries[] = {"kube-apiserver", "kube-controller-manager"};

void seedEnvtestBinaries(const fs::path& run_bin) {
  std::error_code ec;
  fs::create_directories(run_bin, ec);
  for (const char* b : kEnvtestBinaries) {
    if (access((envtestBinaryCache() / b).c_str(), X_OK) == 0) {
      fs::create_symlink(envtestBinaryCache() / b, run_bin / b, ec);
    }
  }
}

// `start` makes a PKI (five 2048-bit RSA keys: about 2 s of CPU) unless RUN_DIR/pki has one:
// the control planes of one machine's tests share one, made by the first.
fs::path envtestPkiCache() {
  return fs::temp_directory_path() / ("ringmaster-envtest-pki-" + std::to_string(getuid()));
}

void seedEnvtestPki(const fs::path& run_pki) {
  std::error_code ec;
  if (!fs::exists(envtestPkiCache() / "admin.crt", ec)) return;
  fs::create_directories(run_pki, ec);
  fs::copy(envtestPkiCache(), run_pki,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
}

void keepEnvtestPki(const fs::path& run_pki) {
  std::error_code ec;
  if (fs::exists(envtestPkiCache() / "admin.crt", ec)) return;
  // Copied whole under a private name, then renamed: a reader sees all of it or none.
  const fs::path tmp = envtestPkiCache().string() + "." + std::to_string(getpid());
  fs::copy(run_pki, tmp, fs::copy_options::recursive, ec);
  if (!ec) fs::rename(tmp, envtestPkiCache(), ec);
  fs::remove_all(tmp, ec);
}

// `start` calls `kubectl` about 20 times and `python3` three times by PATH. Where PATH finds a
// dispatcher first (google-cloud-sdk's kubectl: ~70 ms of CPU a call; pyenv's shim), a start
// costs seconds of CPU more: `start` gets a PATH that finds the binaries the tests use first.
std::string envtestPath() {
  const fs::path dir =
      fs::temp_directory_path() / ("ringmaster-envtest-path-" + std::to_string(getuid()));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::pair<const char*, std::string> tools[] = {{"kubectl", findKubectl()},
                                                       {"python3", "/usr/bin/python3"}};
  for (const auto& [name, target] : tools) {
    if (target.empty() || access(target.c_str(), X_OK) != 0) continue;
    if (fs::is_symlink(dir / name, ec)) continue;
    // Linked under a private name, then renamed: a reader finds the link whole or not at all.
    const fs::path tmp = dir / (std::string(name) + "." + std::to_string(getpid()));
    fs::create_symlink(target, tmp, ec);
    if (!ec) fs::rename(tmp, dir / name, ec);
    fs::remove(tmp, ec);
  }
  const char* path = std::getenv("PATH");
  return dir.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin");
}

void keepEnvtestBinaries(const fs::path& run_bin) {
  std::error_code ec;
  fs::create_directories(envtestBinaryCache(), ec);
  for (const char* b : kEnvtestBinaries) {
    const fs::path cached = envtestBinaryCache() / b;
    if (fs::exists(cached, ec) || fs::is_symlink(run_bin / b, ec)) continue;
    const fs::path tmp = cached.string() + "." + std::to_string(getpid());
    if (fs::copy_file(run_bin / b, tmp, ec)) fs::rename(tmp, cached, ec);
  }
}
}  // namespace

std::string controlPlaneName(ControlPlane plane) {
  return plane == ControlPlane::kEnvtest ? "envtest" : "local";
}

std::string controlPlaneMissing(ControlPlane plane) {
  if (findKubectl().empty()) return "kubectl is not installed";
  if (plane == ControlPlane::kEnvtest && envtestDir() == nullptr) {
    return "RINGMASTER_ENVTEST is not set (the directory of a real control plane for tests: "
           "kube-apiserver, kube-controller-manager and etcd, started by its `start` script)";
  }
  return "";
}

// One run of `start RUN_DIR` and the daemons it leaves running, all in the process group of a
// guardian shell: it runs `start`, reports its exit code, then blocks reading a pipe that only
// the test process can write to. EOF there (the test process is gone, however it ended) makes
// it SIGKILL its group, because `start`'s daemons outlive their parent and no death signal
// reaches them through its `&`.
class EnvtestLaunch {
 public:
  // Forks the guardian; `nice`: the launch runs at the test's niceness + 10 until unnice().
  EnvtestLaunch(std::string from, std::string run_dir, std::map<std::string, std::string> env,
                bool nice, std::unique_ptr<TempDir> own_dir);
  ~EnvtestLaunch();
  EnvtestLaunch(const EnvtestLaunch&) = delete;
  EnvtestLaunch& operator=(const EnvtestLaunch&) = delete;

  // Waits up to `limit` for `start` to exit; "" when the plane is up, else why not.
  std::string wait(std::chrono::seconds limit);
  // The test's niceness again, for every thread of the group (the daemons run on in the test).
  void unnice();
  // SIGKILLs the group and tidies up as `stop` does; the launch's own directory goes too.
  void end();

  const std::string& from() const { return from_; }
  const std::map<std::string, std::string>& env() const { return env_; }
  const std::string& runDir() const { return run_dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }

 private:
  std::string from_;  // the envtest directory
  std::string run_dir_;
  std::map<std::string, std::string> env_;  // `start`'s, KCM_CONTROLLERS included
  std::unique_ptr<TempDir> own_dir_;        // a spare's, removed after the daemons
  pid_t owner_ = getpid();                  // a forked child of the test ends nothing
  pid_t guardian_ = -1;                     // also the id of the group
  int life_fd_ = -1;                        // the guardian's stdin, never written
  int status_fd_ = -1;                      // the guardian's stdout: `start`'s exit code
  int base_nice_ = 0;
  bool niced_ = false;
  bool waited_ = false;
  std::string why_;
  std::string kubeconfig_;
};

namespace {
// $1: the start script, $2: RUN_DIR. `start` runs in a subshell that reports its exit code, so
// that the guardian watches its stdin from the first moment: `read` returns at EOF only (nothing
// writes to it). SIGPIPE is ignored only after `start` (its daemons keep the default): a report
// to a test process that is gone must not end the subshell before `start` is killed with it.
constexpr const char* kGuardian =
    "(\"$1\" \"$2\" </dev/null >\"$2/start.out\" 2>\"$2/start.err\"; rc=$?; trap '' PIPE; "
    "echo $rc 2>/dev/null) & exec >&-; read -r _; kill -KILL -- -$$";

// Lowering niceness again needs CAP_SYS_NICE or an RLIMIT_NICE that allows it.
bool mayUnnice(int base) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NICE, &limit) == 0 &&
      (limit.rlim_cur == RLIM_INFINITY || 20 - static_cast<long>(limit.rlim_cur) <= base)) {
    return true;
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("CapEff:", 0) == 0) {
      return (std::strtoull(line.c_str() + 7, nullptr, 16) >> 23) & 1;  // CAP_SYS_NICE
    }
  }
  return false;
}
}  // namespace

EnvtestLaunch::EnvtestLaunch(std::string from, std::string run_dir,
                             std::map<std::string, std::string> env, bool nice,
                             std::unique_ptr<TempDir> own_dir)
    : from_(std::move(from)),
      run_dir_(std::move(run_dir)),
      env_(std::move(env)),
      own_dir_(std::move(own_dir)) {
  seedEnvtestBinaries(run_dir_ + "/bin");  // creates RUN_DIR, where `start`'s output goes
  seedEnvtestPki(run_dir_ + "/pki");
  errno = 0;
  base_nice_ = getpriority(PRIO_PROCESS, 0);
  if (errno != 0) base_nice_ = 0;
  niced_ = nice && mayUnnice(base_nice_);
  // Everything the child needs is made before fork: the test process may have threads.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!env_.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [key, value] : env_) {
    if (!value.empty()) env_strings.push_back(key + "=" + value);
  }
  std::vector<std::string> argv_strings{"/bin/bash",      "-c",    kGuardian, "envtest-guardian",
                                        from_ + "/start", run_dir_};
  std::vector<char*> envp, argv;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  // Its stderr is not the test's: ctest reads that to EOF, and the guardian may outlive the test.
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  int life[2], status[2];
  if (null_fd < 0) return;
  if (pipe2(life, O_CLOEXEC) != 0) {
    close(null_fd);
    return;
  }
  if (pipe2(status, O_CLOEXEC) != 0) {
    close(null_fd);
    close(life[0]);
    close(life[1]);
    return;
  }
  const int niceness = base_nice_ + 10;
  const bool niced = niced_;
  guardian_ = fork();
  if (guardian_ == 0) {
    setpgid(0, 0);
    if (niced) setpriority(PRIO_PROCESS, 0, niceness);
    dup2(life[0], STDIN_FILENO);  // dup2 clears close-on-exec: only these ends are inherited
    dup2(status[1], STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    close_range(3, ~0U, 0);  // nor anything else the test process has open
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  // Both sides set the group: whichever runs first, a kill of it never misses the child.
  if (guardian_ > 0) setpgid(guardian_, guardian_);
  close(null_fd);
  close(life[0]);
  close(status[1]);
  if (guardian_ < 0) {
    close(life[1]);
    close(status[0]);
    return;
  }
  life_fd_ = life[1];
  status_fd_ = status[0];
}

std::string EnvtestLaunch::wait(std::chrono::seconds limit) {
  if (waited_) return why_;
  waited_ = true;
  if (guardian_ < 0) return why_ = "could not fork the guardian of " + from_ + "/start";
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::string code;
  while (code.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return why_ = from_ + "/start did not finish in " + std::to_string(limit.count()) +
                    " s: " + readFile(run_dir_ + "/start.err");
    }
    pollfd fd{status_fd_, POLLIN, 0};
    if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;  // timeout or EINTR
    char buffer[64];
    const ssize_t n = read(status_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return why_ = "the guardian of " + from_ +
                    "/start exited before it: " + readFile(run_dir_ + "/start.err");
    }
    code.append(buffer, static_cast<size_t>(n));
  }
  if (const int exit_code = std::atoi(code.c_str()); exit_code != 0) {
    return why_ = from_ + "/start exited " + std::to_string(exit_code) + ": " +
                  readFile(run_dir_ + "/start.err");
  }
  std::istringstream lines(readFile(run_dir_ + "/start.out"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) kubeconfig_ = line;
  }
  if (kubeconfig_.empty()) why_ = from_ + "/start printed no kubeconfig";
  return why_;
}

void EnvtestLaunch::unnice() {
  // PRIO_PGRP reaches every thread of every process in the group.
  if (niced_ && guardian_ > 0) setpriority(PRIO_PGRP, guardian_, base_nice_);
  niced_ = false;
}

EnvtestLaunch::~EnvtestLaunch() {
  // A forked child of the test that exits through exit() leaves the parent's spare alone.
  if (getpid() != owner_) (void)own_dir_.release();
  end();
}

void EnvtestLaunch::end() {
  if (guardian_ <= 0 || getpid() != owner_) return;
  // A test's control plane is thrown away with its data: SIGKILL ends it at once, where `stop`'s
  // SIGTERM waits about 6 s for the API server's graceful shutdown. `stop` then finds no pid
  // files and only tidies up. The guardian is not reaped before: its id stays the group's.
  kill(-guardian_, SIGKILL);
  for (const char* daemon : {"kcm", "apiserver", "etcd"}) {
    const std::string pid_file = run_dir_ + "/" + daemon + ".pid";
    std::ifstream in(pid_file);
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    kill(pid, SIGKILL);  // the group's, unless something moved it to another
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (liveProcess(pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    std::error_code ec;
    fs::remove(pid_file, ec);
  }
  waitpid(guardian_, nullptr, 0);
  guardian_ = -1;
  close(life_fd_);
  close(status_fd_);
  (void)run({from_ + "/stop", run_dir_}, {}, 120s);
  own_dir_.reset();
}

namespace {
// The next cases' control planes, oldest first; the destructor at exit ends those no case adopted.
std::deque<std::unique_ptr<EnvtestLaunch>>& spares() {
  static std::deque<std::unique_ptr<EnvtestLaunch>> launches;
  return launches;
}
// Two: a start takes longer than many cases, so one spare still made the next case wait.
constexpr size_t kSpares = 2;

// How many envtest cases (names ending in "/envtest") are still to run in this process.
size_t envtestCasesLeft() {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  const ::testing::TestInfo* current = unit.current_test_info();
  const std::string suffix = std::string("/").append(controlPlaneName(ControlPlane::kEnvtest));
  size_t left = 0;
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& test = *suite.GetTestInfo(j);
      if (&test == current || !test.should_run() || test.result()->start_timestamp() != 0) {
        continue;  // this one, filtered out, or already run
      }
      if (std::string_view(test.name()).ends_with(suffix)) ++left;
    }
  }
  return left;
}

// The oldest spare started from `from` with `env`. Others are killed: the cases left are more
// likely to want what this one wants.
std::unique_ptr<EnvtestLaunch> adoptSpare(const std::string& from,
                                          const std::map<std::string, std::string>& env) {
  std::unique_ptr<EnvtestLaunch> adopted;
  std::deque<std::unique_ptr<EnvtestLaunch>> kept;
  for (std::unique_ptr<EnvtestLaunch>& launch : spares()) {
    if (launch->from() != from || launch->env() != env) continue;  // dropped: killed below
    if (!adopted) {
      adopted = std::move(launch);
    } else {
      kept.push_back(std::move(launch));
    }
  }
  spares() = std::move(kept);
  return adopted;
}
}  // namespace

Envtest::Envtest(std::string run_dir) : run_dir_(std::move(run_dir)) {}

Envtest::~Envtest() { stop(); }

std::string Envtest::runDir() const { return launch_ ? launch_->runDir() : run_dir_; }

std::string Envtest::start(const std::map<std::string, std::string>& env, PlaneUse use) {
  const char* dir = envtestDir();
  if (dir == nullptr) return controlPlaneMissing(ControlPlane::kEnvtest);
  stop();  // a second start begins anew, as `start` on its own run dir does
  std::map<std::string, std::string> start_env = env;
  start_env.emplace("KCM_CONTROLLERS", "*,-nodelifecycle");
  start_env.emplace("PATH", envtestPath());
  std::error_code ec;
  if (linked_run_dir_) fs::remove(run_dir_, ec);  // the link to a spare stopped before
  linked_run_dir_ = false;
  if (std::unique_ptr<EnvtestLaunch> adopted = adoptSpare(dir, start_env)) {
    adopted->unnice();
    // One that did not come up is dropped: a fresh start says why, if it fails too.
    if (adopted->wait(180s).empty()) launch_ = std::move(adopted);
  }
  if (launch_) {
    // Where a kept data dir (RM_KEEP_TEMP) shows the plane's logs.
    if (!fs::exists(fs::symlink_status(run_dir_, ec))) {
      fs::create_directory_symlink(launch_->runDir(), run_dir_, ec);
      linked_run_dir_ = !ec;
    }
  } else {
    // Whatever `start` managed to start, stop() ends.
    launch_ = std::make_unique<EnvtestLaunch>(dir, run_dir_, start_env, false, nullptr);
    if (std::string why = launch_->wait(180s); !why.empty()) return why;
    keepEnvtestBinaries(run_dir_ + "/bin");
    keepEnvtestPki(run_dir_ + "/pki");
  }
  kubeconfig_ = launch_->kubeconfig();
  // Started after this one is up, not to slow it down.
  const size_t left = use == PlaneUse::kOneCase ? envtestCasesLeft() : 0;
  while (spares().size() < std::min(kSpares, left)) {
    auto own_dir = std::make_unique<TempDir>();
    const std::string spare_dir = own_dir->path();
    spares().push_back(
        std::make_unique<EnvtestLaunch>(dir, spare_dir, start_env, true, std::move(own_dir)));
  }
  return "";
}

void Envtest::stop() { launch_.reset(); }

ApiServer::~ApiServer() { (void)stop(); }

std::string ApiServer::dataDir() const {
  return plane_ == ControlPlane::kLocal ? dir_.path() + "/data" : "";
}

std::string ApiServer::start() {
  if (std::string why = controlPlaneMissing(plane_); !why.empty()) return why;
  if (plane_ == ControlPlane::kLocal) return serveLocal();
  envtest_ = std::make_unique<Envtest>(dir_.path() + "/envtest");
  std::string why = envtest_->start({}, use_);
  kubeconfig_ = envtest_->kubeconfig();
  return why;
}

std::string ApiServer::serveLocal() {
  local_ = std::make_unique<Process>(std::vector<std::string>{
      binaryPath("bin/ringmaster"), "local", "serve", "--data-dir", dataDir(), "--port", "0"});
  local_->start();
  // Ready when the pid file appears (written after the listener and the kubeconfig).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!fs::exists(dataDir() + "/pid")) {
    if (!local_->running()) return "ringmaster local serve exited: " + local_->stderrSoFar();
    if (std::chrono::steady_clock::now() > deadline) return "ringmaster local serve: no pid file";
    std::this_thread::sleep_for(20ms);
  }
  kubeconfig_ = dataDir() + "/kubeconfig";
  return "";
}

std::string ApiServer::stop() {
  envtest_.reset();
  if (!local_) return "";
  local_->signal(SIGTERM);
  ProcessResult stopped = local_->wait(30s);
  local_.reset();
  if (stopped.signaled || stopped.exit_code != 0) {
    return "ringmaster local serve did not stop cleanly on SIGTERM: " + stopped.stderr_text;
  }
  if (fs::exists(dataDir() + "/pid")) return "ringmaster local serve left its pid file";
  return "";
}

std::string ApiServer::restart() {
  if (plane_ != ControlPlane::kLocal || !local_) return "restart: no local server runs";
  if (std::string why = stop(); !why.empty()) return why;
  return serveLocal();
}

}  // namespace ringmaster::testutil
