// e2e, the README's main job: `ringmaster local run examples/fashion-mnist-mlp.yaml` brings up
// the embedded cluster (API server, kubelet, operator), the operator runs 2 worker pods whose
// launchers rendezvous and train; the job ends Succeeded with >= 88% test accuracy. Meanwhile
// real `kubectl get tj` must have shown the job Running with every rank, a running rank must
// have served its Prometheus metrics at its pod address, and at the end kubectl shows the
// final epoch and loss. scripts/test runs it on the tree scripts/run-main builds; it runs again on
// a real control plane (envtest) that `local run --cluster-kubeconfig` joins. That half checks
// the control plane, not the accuracy again: it trains the same job for one epoch instead of five
// (about two core-minutes less in CI) and expects what one epoch reaches. Both halves then run
// the same command again, as a user would: the job resumes from its checkpoint at the end of
// training and must report the restored model (same accuracy, final epoch) and say why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control_plane.h"
#include "local_run_checks.h"
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

class LocalRunE2e : public ::testing::TestWithParam<testutil::ControlPlane> {};

TEST_P(LocalRunE2e, FashionMnistMlpSucceedsAndKubectlSawEveryRankRunning) {
  if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
    GTEST_SKIP() << why;
  const std::string kubectl = findKubectl();
  testutil::TempDir dir;
  const bool on_envtest = GetParam() == testutil::ControlPlane::kEnvtest;
  std::string manifest =
      std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/fashion-mnist-mlp.yaml";
  const std::string epochs = on_envtest ? "1" : "5";
  testutil::TempDir manifest_dir;
  if (on_envtest) {
    std::string yaml = testutil::readFile(manifest);
    const size_t at = yaml.find("epochs: 5\n");
    ASSERT_NE(at, std::string::npos) << manifest << " no longer says `epochs: 5`";
    yaml.replace(at, 9, "epochs: " + epochs);
    manifest = manifest_dir.path() + "/fashion-mnist-mlp-1-epoch.yaml";
    std::ofstream(manifest) << yaml;
  }
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  std::vector<std::string> argv{
      testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()};
  // On envtest, `local run` joins it with the kubelet and operator instead of serving its own.
  testutil::TempDir envtest_dir;
  testutil::Envtest envtest(envtest_dir.path());
  if (on_envtest) {
    ASSERT_EQ(envtest.start(), "");
    argv.insert(argv.end(), {"--cluster-kubeconfig", envtest.kubeconfig()});
  }

  testutil::Process run(argv);
  run.start();

  // Watch the job as a user would, with `kubectl get tj --watch` (a row each time its status
  // changes), until `run` ends; scrape rank 1's /metrics (the rank the operator does not read)
  // until it has counted training steps.
  std::vector<std::vector<std::string>> rows;
  std::vector<std::unique_ptr<testutil::Process>> watches;  // another if one ends early
  std::string metrics;
  auto tookSteps = [&] { return e2e::tookSteps(metrics, 1); };
  e2e::RankScraper rank1(kubectl, env, "fmnist-worker-1");
  auto next_watch = std::chrono::steady_clock::now();
  while (run.running()) {
    if (fs::exists(kubeconfig)) {
      // Until the CRD is there a watch ends at once: at most one start a second.
      if ((watches.empty() || !watches.back()->running()) &&
          std::chrono::steady_clock::now() >= next_watch) {
        next_watch = std::chrono::steady_clock::now() + 1s;
        watches.push_back(std::make_unique<testutil::Process>(
            std::vector<std::string>{kubectl, "get", "tj", "--field-selector=metadata.name=fmnist",
                                     "--watch"},
            env));
        watches.back()->start();
      }
      if (!tookSteps()) {
        std::string scraped = rank1.scrape();
        if (!scraped.empty()) metrics = std::move(scraped);
      }
    }
    std::this_thread::sleep_for(tookSteps() ? 500ms : 100ms);  // faster until rank 1 answered
  }
  testutil::ProcessResult result = run.wait(1s);
  for (const auto& watch : watches) {
    std::istringstream lines(watch->stdoutSoFar());
    for (std::string line; std::getline(lines, line);) {
      auto row = rowFor(line, "fmnist");
      if (!row.empty()) rows.push_back(row);
    }
  }
  watches.clear();  // kills them
  const std::string outcome = result.stdout_text + result.stderr_text;
  testutil::ProcessResult final_get = testutil::run({kubectl, "get", "tj", "fmnist"}, env, 30s);
  testutil::ProcessResult logs = testutil::run({kubectl, "logs", "fmnist-worker-0"}, env, 30s);
  // The user runs the same command again: the checkpoint claim outlived the job, so the new job
  // resumes where the first one ended. It must say so and report the restored model, not an
  // empty run.
  testutil::ProcessResult again = testutil::run(argv, {}, 300s);
  testutil::ProcessResult again_get = testutil::run({kubectl, "get", "tj", "fmnist"}, env, 30s);
  // The user stops the cluster with the command `run` printed, word for word.
  std::string stop_command;
  if (size_t at = result.stdout_text.find("Stop it:  "); at != std::string::npos) {
    at += std::string("Stop it:  ").size();
    stop_command = result.stdout_text.substr(at, result.stdout_text.find('\n', at) - at);
  }
  testutil::ProcessResult down = testutil::run(
      {"/bin/sh", "-c",
       stop_command.empty()
           ? testutil::binaryPath("bin/ringmaster") + " local down --data-dir " + dir.path()
           : stop_command},
      {}, 120s);

  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_NE(stop_command.find(" local down --data-dir " + dir.path()), std::string::npos)
      << outcome;
  EXPECT_EQ(down.exit_code, 0) << stop_command << ": " << down.stdout_text << down.stderr_text;
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
  EXPECT_EQ(last[3], epochs) << "final epoch";
  EXPECT_GT(std::atof(last[4].c_str()), 0.0) << "final loss";
  EXPECT_LT(std::atof(last[4].c_str()), 1.0) << "final loss";

  EXPECT_TRUE(tookSteps()) << "rank 1 never served /metrics with steps taken; last scrape:\n"
                           << metrics;
  EXPECT_NE(metrics.find("ringmaster_trainer_samples_total"), std::string::npos) << metrics;

  // The rerun: Succeeded at the same epoch and step, the same accuracy line, and the note.
  const std::string rerun = again.stdout_text + again.stderr_text;
  ASSERT_EQ(again.exit_code, 0) << rerun;
  auto accuracyLine = [](const std::string& text) {
    const size_t at = text.find("  test accuracy ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_NE(accuracyLine(result.stdout_text), "") << outcome;
  EXPECT_EQ(accuracyLine(again.stdout_text), accuracyLine(result.stdout_text)) << rerun;
  EXPECT_NE(again.stdout_text.find("epoch " + epochs + "/" + epochs + "  step "), std::string::npos)
      << rerun;
  EXPECT_NE(again.stdout_text.find(", already the end of training: this run trained nothing"),
            std::string::npos)
      << rerun;
  EXPECT_NE(again.stdout_text.find("To train from scratch, remove the checkpoints in /ckpt "
                                   "(claim fmnist-ckpt"),
            std::string::npos)
      << rerun;
  auto again_row = rowFor(again_get.stdout_text, "fmnist");
  ASSERT_GE(again_row.size(), 4u) << again_get.stdout_text << again_get.stderr_text;
  EXPECT_EQ(again_row[1], "Succeeded");
  EXPECT_EQ(again_row[3], epochs) << "final epoch of the rerun";

  ASSERT_EQ(logs.exit_code, 0) << logs.stderr_text;
  // One epoch of the cosine schedule ends near 85%; five reach the README's 88%.
  EXPECT_GE(e2e::testAccuracy(logs.stdout_text), on_envtest ? 0.80 : 0.88)
      << logs.stdout_text.substr(logs.stdout_text.size() > 2000 ? logs.stdout_text.size() - 2000
                                                                : 0);
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, LocalRunE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
