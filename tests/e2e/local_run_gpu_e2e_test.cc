// e2e on a GPU machine: `ringmaster local run examples/fashion-mnist-mlp-1gpu.yaml` (trained
// longer) on a CUDA build. The local kubelet advertises the machine's GPU, the pod asks for it, the
// trainer takes the CUDA path (its log says so), serves /metrics while it trains and reaches >= 88%
// test accuracy; the job ends Succeeded. Skipped without a GPU (CI); scripts/gpu-check runs it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "local_run_checks.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(LocalRunGpuE2e, OneGpuJobSucceedsOnTheGpuAndServesMetrics) {
  if (!fs::exists("/dev/nvidia0")) GTEST_SKIP() << "no NVIDIA GPU here (/dev/nvidia0 is absent)";
  if (!fs::exists(testutil::binaryPath("lib/ringmaster/libringmaster-trainer-cuda.so")))
    GTEST_SKIP() << "not a CUDA build (no libringmaster-trainer-cuda.so)";
  const std::string kubectl = testutil::findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  if (!testutil::haveFashionMnist()) GTEST_SKIP() << "Fashion-MNIST is not installed";
  testutil::TempDir dir;
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  // The example's 5 epochs take 0.3 s on an H200, less than one scrape through the API server
  // takes to come back: the job trains 100 epochs here so that a scrape lands while it trains.
  std::string manifest = testutil::readFile(std::string(std::getenv("RM_SOURCE_DIR")) +
                                            "/examples/fashion-mnist-mlp-1gpu.yaml");
  const std::string five_epochs = "epochs: 5";
  const size_t epochs = manifest.find(five_epochs + "\n");
  ASSERT_NE(epochs, std::string::npos) << "the example no longer trains 5 epochs:\n" << manifest;
  manifest.replace(epochs, five_epochs.size(), "epochs: 100");
  const std::string job = dir.path() + "/fashion-mnist-mlp-1gpu.yaml";
  std::ofstream(job) << manifest;
  testutil::Process run({testutil::binaryPath("bin/ringmaster"), "local", "run", job, "--data-dir",
                         dir.path(), "--timeout-seconds", "600"});
  run.start();
  std::string metrics;
  e2e::RankScraper rank0(kubectl, env, "fmnist-1gpu-worker-0");
  while (run.running()) {
    if (fs::exists(kubeconfig) && !e2e::tookSteps(metrics, 0)) {
      std::string scraped = rank0.scrape();
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
  EXPECT_TRUE(e2e::tookSteps(metrics, 0))
      << "rank 0 never served /metrics with steps taken; last scrape:\n"
      << metrics;
  EXPECT_GE(e2e::testAccuracy(logs.stdout_text), 0.88);
}

}  // namespace
}  // namespace ringmaster
