#include "local_cluster.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ringmaster/kube/kubeconfig.h"

namespace ringmaster::testutil {

using namespace std::chrono_literals;

std::string LocalCluster::missing() const { return controlPlaneMissing(plane_); }

std::string LocalCluster::start(const std::vector<std::string>& up_flags) {
  if (std::string why = missing(); !why.empty()) return why;
  kubectl_ = findKubectl();
  std::vector<std::string> argv{binaryPath("bin/ringmaster"), "local", "up", "--data-dir",
                                dir_.path()};
  if (plane_ == ControlPlane::kEnvtest) {
    // `start` again (a test bringing back a killed daemon) joins the control plane that runs.
    if (!envtest_) {
      envtest_ = std::make_unique<Envtest>(dir_.path() + "/envtest");
      if (std::string why = envtest_->start(envtest_env_, use_); !why.empty()) {
        return why;
      }
    }
    argv.push_back("--cluster-kubeconfig");
    argv.push_back(envtest_->kubeconfig());
  }
  argv.insert(argv.end(), up_flags.begin(), up_flags.end());
  ProcessResult up = run(argv, {}, 120s);
  up_ = true;  // whatever `up` managed to start, `down` stops
  if (up.exit_code != 0) {
    return "ringmaster local up exited " + std::to_string(up.exit_code) + ": " + up.stdout_text +
           up.stderr_text;
  }
  env_ = {{"KUBECONFIG", kubeconfig()}};
  return "";
}

std::string LocalCluster::startOnce(const std::vector<std::string>& up_flags) {
  if (!started_) started_ = start(up_flags);
  return *started_;
}

namespace {
// Ends the shared clusters after the last test, while GoogleTest still reports failures.
class SharedClusters : public ::testing::Environment {
 public:
  void TearDown() override {
    for (auto& [plane, cluster] : clusters) {
      if (!cluster->up()) continue;
      ProcessResult down = cluster->stop();
      EXPECT_EQ(down.exit_code, 0)
          << "ringmaster local down of the shared " << controlPlaneName(plane)
          << " cluster: " << down.stdout_text << down.stderr_text;
    }
    clusters.clear();
  }
  std::map<ControlPlane, std::unique_ptr<LocalCluster>> clusters;
};
// Registered before main(): GoogleTest tears environments down after the last test.
SharedClusters* const shared_clusters = static_cast<SharedClusters*>(
    ::testing::AddGlobalTestEnvironment(new SharedClusters));  // GoogleTest owns it
}  // namespace

LocalCluster& sharedCluster(ControlPlane plane) {
  std::unique_ptr<LocalCluster>& cluster = shared_clusters->clusters[plane];
  if (!cluster) cluster = std::make_unique<LocalCluster>(plane, PlaneUse::kSharedByCases);
  return *cluster;
}

ProcessResult LocalCluster::stop() {
  up_ = false;
  ProcessResult down =
      run({binaryPath("bin/ringmaster"), "local", "down", "--data-dir", dir_.path()}, {}, 120s);
  envtest_.reset();
  return down;
}

std::string LocalCluster::killOperator() {
  const std::string pid_path = dir_.path() + "/operator.pid";
  const pid_t pid = static_cast<pid_t>(readNumberFile(pid_path));
  if (pid <= 0) return "no operator pid in " + pid_path;
  if (kill(pid, SIGKILL) != 0) return "kill " + std::to_string(pid) + " failed";
  if (!eventually(30s, [&] { return !liveProcess(pid); })) {
    return "the operator (pid " + std::to_string(pid) + ") outlived SIGKILL for 30 s";
  }
  std::remove(pid_path.c_str());
  return "";
}

LocalCluster::~LocalCluster() {
  if (up_ || envtest_) (void)stop();
}

ProcessResult LocalCluster::kubectl(std::vector<std::string> args,
                                    std::chrono::seconds limit) const {
  args.insert(args.begin(), kubectl_);
  return run(args, env_, limit);
}

ProcessResult LocalCluster::apply(const std::string& yaml) const {
  const std::string path = dir_.path() + "/applied.yaml";
  std::ofstream(path) << yaml;
  return kubectl({"apply", "-f", path});
}

nlohmann::json LocalCluster::get(const std::string& resource, const std::string& name) const {
  ProcessResult r = kubectl({"get", resource, name, "-o", "json"});
  if (r.exit_code != 0) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(r.stdout_text, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

nlohmann::json LocalCluster::waitForJob(
    const std::string& name, std::chrono::seconds limit,
    const std::function<bool(const nlohmann::json&)>& done) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  nlohmann::json last;
  // kubectl's watch lists the job as it is, then prints it on every change: one compact JSON
  // line each. A watch that ends (the API server closed it, or restarted) is started again.
  const std::vector<std::string> argv{
      kubectl_,  "get", "trainingjobs",         "--field-selector=metadata.name=" + name,
      "--watch", "-o",  "jsonpath={@}{\"\\n\"}"};
  while (std::chrono::steady_clock::now() < deadline) {
    Process watch(argv, env_);
    watch.start();
    size_t read = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      const bool ended = !watch.running();  // then its last lines are all written below
      const std::string out = watch.stdoutSoFar();
      for (size_t eol; (eol = out.find('\n', read)) != std::string::npos; read = eol + 1) {
        nlohmann::json j = nlohmann::json::parse(out.substr(read, eol - read), nullptr, false);
        if (!j.is_object()) continue;
        last = std::move(j);
        if (done(last)) return last;
      }
      if (ended) break;
      std::this_thread::sleep_for(100ms);
    }
    if (std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1s);
  }
  return last;
}

std::string LocalCluster::podLog(const std::string& pod) const {
  ProcessResult r = kubectl({"logs", pod});
  return r.stdout_text + r.stderr_text;
}

std::string LocalCluster::waitForClaimFiles(const std::string& claim, const std::string& job,
                                            std::chrono::seconds limit) const {
  const std::filesystem::path dir =
      std::filesystem::path(dataDir()) / "kubelet/volumes/default" / claim;
  const bool filled = eventually(
      limit,
      [&] {
        std::error_code ec;
        return std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec);
      },
      kPromptly);
  return filled ? "" : "no file in " + dir.string() + "\n" + get("trainingjob", job).dump(2);
}

std::string jobPhase(const nlohmann::json& job) {
  return job.contains("status") ? job["status"].value("phase", "") : "";
}

bool jobFinished(const nlohmann::json& job) {
  return jobPhase(job) == "Succeeded" || jobPhase(job) == "Failed";
}

bool hasCondition(const nlohmann::json& job, const std::string& type, const std::string& status,
                  const std::string& reason) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return false;
  for (const auto& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type && c.value("status", "") == status &&
        (reason.empty() || c.value("reason", "") == reason)) {
      return true;
    }
  }
  return false;
}

long readNumberFile(const std::string& path) {
  std::ifstream in(path);
  long n = 0;
  in >> n;
  return n;
}

std::map<std::string, std::set<std::string>> uidsByPod(const std::string& rows) {
  std::map<std::string, std::set<std::string>> uids;
  std::istringstream in(rows);
  for (std::string row; std::getline(in, row);) {
    std::istringstream words(row);
    std::string pod, uid;
    if (words >> pod >> uid) uids[pod].insert(uid);
  }
  return uids;
}

LocalClusterStopper::~LocalClusterStopper() {
  ProcessResult down =
      run({binaryPath("bin/ringmaster"), "local", "down", "--data-dir", data_dir_}, {}, 120s);
  if (down.exit_code != 0) {
    std::fprintf(stderr, "ringmaster local down --data-dir %s exited %d: %s%s\n", data_dir_.c_str(),
                 down.exit_code, down.stdout_text.c_str(), down.stderr_text.c_str());
  }
}

bool eventually(std::chrono::seconds limit, const std::function<bool()>& done,
                std::chrono::milliseconds longest_pause) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  // 200 ms apart at first, then further apart up to a second: many conditions run kubectl
  // (~90 ms of CPU each), and a long wait polled 5 times a second costs half a core.
  for (std::chrono::milliseconds pause = std::min(200ms, longest_pause);
       std::chrono::steady_clock::now() < deadline;
       pause = std::max(std::min(pause * 3 / 2, longest_pause), 1ms)) {
    if (done()) return true;
    std::this_thread::sleep_for(pause);
  }
  return done();
}

std::map<std::string, std::string> environOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::map<std::string, std::string> env;
  for (std::string entry; std::getline(in, entry, '\0');) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::vector<pid_t> findProcesses(const std::string& program,
                                 const std::map<std::string, std::string>& env) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (!proc) return found;
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || !liveProcess(pid)) continue;
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv0;
    std::getline(cmd, argv0, '\0');
    if (argv0.find(program) == std::string::npos) continue;
    std::map<std::string, std::string> have = environOf(pid);
    bool match = true;
    for (const auto& [key, value] : env) match = match && have.count(key) && have[key] == value;
    if (match) found.push_back(pid);
  }
  closedir(proc);
  std::sort(found.begin(), found.end());
  return found;
}

pid_t findProcess(const std::string& program, const std::map<std::string, std::string>& env) {
  std::vector<pid_t> found = findProcesses(program, env);
  return found.empty() ? 0 : found.back();
}

long residentKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

std::map<std::string, std::string> LocalCluster::ownPodsEnv(
    std::map<std::string, std::string> env) const {
  // Where the pods reach the API server: the port of this cluster's (the twin's differs).
  if (core::Result<kube::KubeConfig> config = kube::loadKubeConfigFile(kubeconfig()); config.ok()) {
    const std::string& server = config->server;  // "https://127.0.0.1:46575"
    env["KUBERNETES_SERVICE_PORT"] = server.substr(server.rfind(':') + 1);
  }
  return env;
}

std::vector<pid_t> LocalCluster::findProcesses(const std::string& program,
                                               std::map<std::string, std::string> env) const {
  return testutil::findProcesses(program, ownPodsEnv(std::move(env)));
}

pid_t LocalCluster::findProcess(const std::string& program,
                                std::map<std::string, std::string> env) const {
  return testutil::findProcess(program, ownPodsEnv(std::move(env)));
}

}  // namespace ringmaster::testutil
