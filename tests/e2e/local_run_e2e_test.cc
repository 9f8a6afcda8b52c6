// e2e, the README's main job: `ringmaster local run examples/fashion-mnist-mlp.yaml` brings up
// the embedded cluster (API server, kubelet, operator), the operator runs 2 worker pods whose
// launchers rendezvous and train; the job ends Succeeded with >= 88% test accuracy. Meanwhile
// real `kubectl get tj` must have shown the job Running with every rank, a running rank must
// have served its Prometheus metrics at its pod address, and at the end kubectl shows the
// final epoch and loss. scripts/test runs it on the tree scripts/run-main builds; it runs again on
// a real control plane (envtest) that `local run --cluster-kubeconfig` joins. On a machine with
// an NVIDIA GPU and a CUDA build, the one-GPU example runs the same way (skipped elsewhere).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control_plane.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testutil::findKubectl;

// The words of the row for `name` in `kubectl get` output ("" when absent).
std::vector<std::string> rowFor(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (!words.empty() && words[0] == name) return words;
  }
  return {};
}

// GET /metrics from a running rank of pod `pod`, at its pod IP and its `metrics` container
// port ("" while the pod has no IP or the trainer does not serve yet).
std::string scrapeRank(const std::string& kubectl, const std::map<std::string, std::string>& env,
                       const std::string& pod) {
  testutil::ProcessResult get = testutil::run({kubectl, "get", "pod", pod, "-o", "json"}, env, 30s);
  if (get.exit_code != 0) return "";
  const nlohmann::json p = nlohmann::json::parse(get.stdout_text, nullptr, false);
  if (p.is_discarded()) return "";
  const std::string ip = p.value("/status/podIP"_json_pointer, std::string());
  int port = 0;
  for (const auto& c : p.value("/spec/containers"_json_pointer, nlohmann::json::array()))
    for (const auto& cp : c.value("ports", nlohmann::json::array()))
      if (cp.value("name", "") == "metrics") port = cp.value("containerPort", 0);
  if (ip.empty() || port == 0) return "";
  return testutil::httpGet(ip, port, "/metrics");
}

// "... test accuracy 88.7%, ..." -> 0.887 (-1 when absent).
double testAccuracy(const std::string& log) {
  const std::string key = "test accuracy ";
  size_t at = log.rfind("done: ");
  if (at == std::string::npos) return -1;
  at = log.find(key, at);
  if (at == std::string::npos) return -1;
  return std::atof(log.c_str() + at + key.size()) / 100.0;
}

class LocalRunE2e : public ::testing::TestWithParam<testutil::ControlPlane> {};

TEST_P(LocalRunE2e, FashionMnistMlpSucceedsAndKubectlSawEveryRankRunning) {
  if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
    GTEST_SKIP() << why;
  const std::string kubectl = findKubectl();
  testutil::TempDir dir;
  const std::string manifest =
      std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/fashion-mnist-mlp.yaml";
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  std::vector<std::string> argv{
      testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()};
  // On envtest, `local run` joins it with the kubelet and operator instead of serving its own.
  testutil::TempDir envtest_dir;
  testutil::Envtest envtest(envtest_dir.path());
  if (GetParam() == testutil::ControlPlane::kEnvtest) {
    ASSERT_EQ(envtest.start(), "");
    argv.insert(argv.end(), {"--cluster-kubeconfig", envtest.kubeconfig()});
  }

  testutil::Process run(argv);
  run.start();

  // Watch the job as a user would, with kubectl, until `run` ends; scrape rank 1's /metrics
  // (the rank the operator does not read) until it has counted training steps.
  std::vector<std::vector<std::string>> rows;
  std::string metrics;
  auto tookSteps = [&] {
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("ringmaster_trainer_steps_total{", 0) != 0) continue;
      if (line.find("rank=\"1\"") == std::string::npos) continue;
      return std::atof(line.c_str() + line.rfind(' ') + 1) > 0;
    }
    return false;
  };
  while (run.running()) {
    if (fs::exists(kubeconfig)) {
      testutil::ProcessResult get = testutil::run({kubectl, "get", "tj", "fmnist"}, env, 30s);
      if (get.exit_code == 0) {
        auto row = rowFor(get.stdout_text, "fmnist");
        if (!row.empty()) rows.push_back(row);
      }
      if (!tookSteps()) {
        std::string scraped = scrapeRank(kubectl, env, "fmnist-worker-1");
        if (!scraped.empty()) metrics = std::move(scraped);
      }
    }
    std::this_thread::sleep_for(tookSteps() ? 500ms : 100ms);  // faster until rank 1 answered
  }
  testutil::ProcessResult result = run.wait(1s);
  const std::string outcome = result.stdout_text + result.stderr_text;
  testutil::ProcessResult final_get = testutil::run({kubectl, "get", "tj", "fmnist"}, env, 30s);
  testutil::ProcessResult logs = testutil::run({kubectl, "logs", "fmnist-worker-0"}, env, 30s);
  (void)testutil::run(
      {testutil::binaryPath("bin/ringmaster"), "local", "down", "--data-dir", dir.path()}, {},
      120s);

  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_NE(result.stdout_text.find("Succeeded"), std::string::npos) << outcome;

  // Columns: NAME PHASE WORLD EPOCH LOSS SAMPLES/S RESTARTS AGE.
  bool saw_running_all_ranks = false;
  for (const auto& row : rows) {
    if (row.size() >= 3 && row[1] == "Running" && row[2] == "2/2") saw_running_all_ranks = true;
  }
  EXPECT_TRUE(saw_running_all_ranks)
      << "kubectl get tj never showed Running 2/2 in " << rows.size() << " looks";
  auto last = rowFor(final_get.stdout_text, "fmnist");
  ASSERT_GE(last.size(), 5u) << final_get.stdout_text << final_get.stderr_text;
  EXPECT_EQ(last[1], "Succeeded");
  EXPECT_EQ(last[3], "5") << "final epoch";
  EXPECT_GT(std::atof(last[4].c_str()), 0.0) << "final loss";
  EXPECT_LT(std::atof(last[4].c_str()), 1.0) << "final loss";

  EXPECT_TRUE(tookSteps()) << "rank 1 never served /metrics with steps taken; last scrape:\n"
                           << metrics;
  EXPECT_NE(metrics.find("ringmaster_trainer_samples_total"), std::string::npos) << metrics;

  ASSERT_EQ(logs.exit_code, 0) << logs.stderr_text;
  EXPECT_GE(testAccuracy(logs.stdout_text), 0.88) << logs.stdout_text.substr(
      logs.stdout_text.size() > 2000 ? logs.stdout_text.size() - 2000 : 0);
}

// The one-GPU example through the same path: the kubelet advertises the machine's GPU, the pod
// asks for it, the trainer takes the CUDA path (its log says so) and serves /metrics meanwhile.
TEST(LocalRunGpuE2e, OneGpuJobSucceedsOnTheGpuAndServesMetrics) {
  if (!fs::exists("/dev/nvidia0")) GTEST_SKIP() << "no NVIDIA GPU here (/dev/nvidia0 is absent)";
  if (!fs::exists(testutil::binaryPath("lib/ringmaster/libringmaster-trainer-cuda.so")))
    GTEST_SKIP() << "not a CUDA build (no libringmaster-trainer-cuda.so)";
  const std::string kubectl = findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "Fashion-MNIST is not installed";
  testutil::TempDir dir;
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  testutil::Process run(
      {testutil::binaryPath("bin/ringmaster"), "local", "run",
       std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/fashion-mnist-mlp-1gpu.yaml",
       "--data-dir", dir.path(), "--timeout-seconds", "600"});
  run.start();
  std::string metrics;
  auto tookSteps = [&] {
    std::istringstream lines(metrics);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("ringmaster_trainer_steps_total{", 0) == 0)
        return std::atof(line.c_str() + line.rfind(' ') + 1) > 0;
    }
    return false;
  };
  while (run.running()) {
    if (fs::exists(kubeconfig) && !tookSteps()) {
      std::string scraped = scrapeRank(kubectl, env, "fmnist-1gpu-worker-0");
      if (!scraped.empty()) metrics = std::move(scraped);
    }
    std::this_thread::sleep_for(100ms);
  }
  testutil::ProcessResult result = run.wait(1s);
  const std::string outcome = result.stdout_text + result.stderr_text;
  testutil::ProcessResult logs = testutil::run({kubectl, "logs", "fmnist-1gpu-worker-0"}, env, 30s);
  (void)testutil::run(
      {testutil::binaryPath("bin/ringmaster"), "local", "down", "--data-dir", dir.path()}, {},
      120s);
  std::cout << outcome << "\n--- rank 0's log ---\n" << logs.stdout_text << std::endl;

  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_NE(result.stdout_text.find("Succeeded"), std::string::npos) << outcome;
  EXPECT_NE(logs.stdout_text.find("device: cuda"), std::string::npos)
      << "the trainer did not take the CUDA path";
  EXPECT_TRUE(tookSteps()) << "rank 0 never served /metrics with steps taken; last scrape:\n"
                           << metrics;
  EXPECT_GE(testAccuracy(logs.stdout_text), 0.88);
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, LocalRunE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
