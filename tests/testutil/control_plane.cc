#include "control_plane.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

std::string Envtest::start(const std::map<std::string, std::string>& env) {
  const char* dir = envtestDir();
  if (dir == nullptr) return controlPlaneMissing(ControlPlane::kEnvtest);
  started_from_ = dir;  // whatever `start` managed to start, `stop` ends
  seedEnvtestBinaries(run_dir_ + "/bin");
  seedEnvtestPki(run_dir_ + "/pki");
  std::map<std::string, std::string> start_env = env;
  start_env.emplace("KCM_CONTROLLERS", "*,-nodelifecycle");
  ProcessResult started = run({started_from_ + "/start", run_dir_}, start_env, 180s);
  if (started.exit_code != 0) {
    return started_from_ + "/start exited " + std::to_string(started.exit_code) + ": " +
           started.stderr_text;
  }
  std::istringstream lines(started.stdout_text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) kubeconfig_ = line;
  }
  if (kubeconfig_.empty()) return started_from_ + "/start printed no kubeconfig";
  keepEnvtestBinaries(run_dir_ + "/bin");
  keepEnvtestPki(run_dir_ + "/pki");
  return "";
}

void Envtest::stop() {
  if (started_from_.empty()) return;
  // A test's control plane is thrown away with its data: SIGKILL ends it at once, where `stop`'s
  // SIGTERM waits about 6 s for the API server's graceful shutdown. `stop` then finds no pid
  // files and only tidies up.
  for (const char* daemon : {"kcm", "apiserver", "etcd"}) {
    const std::string pid_file = run_dir_ + "/" + daemon + ".pid";
    std::ifstream in(pid_file);
    pid_t pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    if (kill(pid, SIGKILL) == 0) {
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      while (liveProcess(pid) && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
      }
    }
    std::error_code ec;
    fs::remove(pid_file, ec);
  }
  (void)run({started_from_ + "/stop", run_dir_}, {}, 120s);
  started_from_.clear();
}

ApiServer::~ApiServer() { (void)stop(); }

std::string ApiServer::dataDir() const {
  return plane_ == ControlPlane::kLocal ? dir_.path() + "/data" : "";
}

std::string ApiServer::start() {
  if (std::string why = controlPlaneMissing(plane_); !why.empty()) return why;
  if (plane_ == ControlPlane::kLocal) return serveLocal();
  envtest_ = std::make_unique<Envtest>(dir_.path() + "/envtest");
  std::string why = envtest_->start();
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
