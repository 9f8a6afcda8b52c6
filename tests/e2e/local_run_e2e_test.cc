// e2e (issue 4, must-show 1): `ringmaster local run examples/fashion-mnist-mlp.yaml` brings up the
// embedded cluster (API server, kubelet, operator), the operator runs 2 worker pods whose
// launchers rendezvous and train; the job ends Succeeded with >= 88% test accuracy. Meanwhile
// real `kubectl get tj` must have shown the job Running with every rank, and at the end the
// final epoch and loss.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

// "... test accuracy 88.7%, ..." -> 0.887 (-1 when absent).
double testAccuracy(const std::string& log) {
  const std::string key = "test accuracy ";
  size_t at = log.rfind("done: ");
  if (at == std::string::npos) return -1;
  at = log.find(key, at);
  if (at == std::string::npos) return -1;
  return std::atof(log.c_str() + at + key.size()) / 100.0;
}

TEST(LocalRunE2e, FashionMnistMlpSucceedsAndKubectlSawEveryRankRunning) {
  const std::string kubectl = findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  testutil::TempDir dir;
  const std::string manifest =
      std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/fashion-mnist-mlp.yaml";
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};

  testutil::Process run(
      {testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()});
  run.start();

  // Watch the job as a user would, with kubectl, until `run` ends.
  std::vector<std::vector<std::string>> rows;
  while (run.running()) {
    if (fs::exists(kubeconfig)) {
      testutil::ProcessResult get = testutil::run({kubectl, "get", "tj", "fmnist"}, env, 30s);
      if (get.exit_code == 0) {
        auto row = rowFor(get.stdout_text, "fmnist");
        if (!row.empty()) rows.push_back(row);
      }
    }
    std::this_thread::sleep_for(500ms);
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

  ASSERT_EQ(logs.exit_code, 0) << logs.stderr_text;
  EXPECT_GE(testAccuracy(logs.stdout_text), 0.88) << logs.stdout_text.substr(
      logs.stdout_text.size() > 2000 ? logs.stdout_text.size() - 2000 : 0);
}

}  // namespace
}  // namespace ringmaster
