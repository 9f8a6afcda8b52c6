// e2e, pipeline parallelism on the user's path: `ringmaster local run
// examples/fashion-mnist-pipeline.yaml` runs 2 worker pods, one stage each, that pass
// activations and gradients to each other over gloo between the pods' network namespaces; the
// job ends Succeeded with the accuracy two epochs reach. Meanwhile stage 1 serves its pipeline
// metrics (bytes received from stage 0, its bubble), and each pod's log says which layers its
// stage holds. Only the embedded control plane: the envtest twins of the data-parallel tests
// already cover the control plane's side, which a pipeline does not change.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "local_run_checks.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// The value of the first sample of `name` in a /metrics page (-1 when absent).
double sample(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + "{", 0) == 0 || line.rfind(name + " ", 0) == 0) {
      return std::atof(line.c_str() + line.rfind(' ') + 1);
    }
  }
  return -1;
}

TEST(LocalRunPipelineE2e, TwoStagesInTwoPodsTrainToSucceeded) {
  const std::string kubectl = testutil::findKubectl();
  testutil::TempDir dir;
  const std::string manifest =
      std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/fashion-mnist-pipeline.yaml";
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  testutil::Process run(
      {testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()});
  run.start();
  // Scrape stage 1 until it has received activations for a while.
  std::string metrics;
  auto received = [&] {
    return sample(metrics, "ringmaster_trainer_pipeline_recv_bytes_total") > 0 &&
           e2e::tookSteps(metrics, 1);
  };
  while (run.running()) {
    if (fs::exists(kubeconfig) && !received()) {
      std::string scraped = e2e::scrapeRank(kubectl, env, "fmnist-pipeline-worker-1");
      if (!scraped.empty()) metrics = std::move(scraped);
    }
    std::this_thread::sleep_for(received() ? 500ms : 100ms);
  }
  testutil::ProcessResult result = run.wait(1s);
  const std::string outcome = result.stdout_text + result.stderr_text;
  testutil::ProcessResult logs0 =
      testutil::run({kubectl, "logs", "fmnist-pipeline-worker-0"}, env, 30s);
  testutil::ProcessResult logs1 =
      testutil::run({kubectl, "logs", "fmnist-pipeline-worker-1"}, env, 30s);
  testutil::ProcessResult down = testutil::run(
      {testutil::binaryPath("bin/ringmaster"), "local", "down", "--data-dir", dir.path()}, {},
      120s);

  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_EQ(down.exit_code, 0) << down.stdout_text << down.stderr_text;
  EXPECT_NE(result.stdout_text.find("Succeeded"), std::string::npos) << outcome;
  EXPECT_TRUE(received()) << "stage 1 never reported received activations; last scrape:\n"
                          << metrics;
  EXPECT_GE(sample(metrics, "ringmaster_trainer_pipeline_activation_bytes"), 0) << metrics;

  ASSERT_EQ(logs0.exit_code, 0) << logs0.stderr_text;
  ASSERT_EQ(logs1.exit_code, 0) << logs1.stderr_text;
  EXPECT_NE(logs0.stdout_text.find("pipeline stage 0 of 2: layers [0, "), std::string::npos)
      << logs0.stdout_text;
  EXPECT_NE(logs1.stdout_text.find("pipeline stage 1 of 2: layers ["), std::string::npos)
      << logs1.stdout_text;
  EXPECT_NE(logs0.stdout_text.find("pipeline partition: layer costs"), std::string::npos)
      << "rank 0 measures the layers and chooses the cut";
  EXPECT_NE(logs0.stdout_text.find("backend gloo"), std::string::npos)
      << "auto must pick a backend with point-to-point messages";
  // Two epochs of a 784-512-512-10 MLP at batch 128 (the cosine schedule) reach about 86-87%.
  EXPECT_GE(e2e::testAccuracy(logs0.stdout_text), 0.84) << logs0.stdout_text.substr(
      logs0.stdout_text.size() > 2000 ? logs0.stdout_text.size() - 2000 : 0);
}

}  // namespace
}  // namespace ringmaster
