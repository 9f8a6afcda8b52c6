// e2e: a rank's own words reach the user through Kubernetes' termination message.
//   - A job whose trainer fails on bad input (a dataset directory that does not exist): the
//     trainer's own error line, as its pod log shows it, is in `ringmaster local run`'s final
//     line and in `kubectl describe tj` (the Failed condition and its Event).
//   - A job that succeeds: its final status.progress is rank 0's summary, which the launcher left
//     as the worker-0 container's termination message (`kubectl get pod -o json`).
// Both run on the embedded API server and on a real control plane (envtest) that the local
// kubelet and operator join.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "local_cluster.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string job(const std::string& name, const std::string& data_path, int replicas) {
  return "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  image: ringmaster/trainer:0.1.0\n  trainer:\n"
         "    model: {type: mlp, hidden: [64]}\n"
         "    dataset: {name: fashion-mnist, path: " +
         data_path +
         "}\n    epochs: 1\n    batchSize: 256\n"
         "    optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}\n"
         "  restartPolicy: Never\n";
}

// The text of the last "E <SUBSYSTEM> [prefix] text" line in `log` (after the prefix), "" if none.
std::string lastErrorText(const std::string& log) {
  std::istringstream lines(log);
  std::string found;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string stamp, level;
    if (!(words >> stamp >> level) || level != "E") continue;
    const size_t close = line.find("] ");
    if (close != std::string::npos) found = line.substr(close + 2);
  }
  return found;
}

class TerminationMessageE2e : public ::testing::TestWithParam<testutil::ControlPlane> {};

TEST_P(TerminationMessageE2e, ATrainersBadInputErrorLineReachesLocalRunAndDescribe) {
  if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
    GTEST_SKIP() << why;
  const std::string kubectl = testutil::findKubectl();
  testutil::TempDir dir;
  const std::string manifest = dir.path() + "/bad-data.yaml";
  std::ofstream(manifest) << job("baddata", "/nonexistent/ringmaster-no-data", 2);
  const std::map<std::string, std::string> env{{"KUBECONFIG", dir.path() + "/kubeconfig"}};
  std::vector<std::string> argv{
      testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()};
  testutil::TempDir envtest_dir;
  testutil::Envtest envtest(envtest_dir.path());
  if (GetParam() == testutil::ControlPlane::kEnvtest) {
    ASSERT_EQ(envtest.start(), "");
    argv.insert(argv.end(), {"--cluster-kubeconfig", envtest.kubeconfig()});
  }

  testutil::ProcessResult run = testutil::run(argv, {}, 300s);
  testutil::ProcessResult describe =
      testutil::run({kubectl, "describe", "tj", "baddata"}, env, 30s);
  testutil::ProcessResult log0 = testutil::run({kubectl, "logs", "baddata-worker-0"}, env, 30s);
  testutil::ProcessResult log1 = testutil::run({kubectl, "logs", "baddata-worker-1"}, env, 30s);
  (void)testutil::run(
      {testutil::binaryPath("bin/ringmaster"), "local", "down", "--data-dir", dir.path()}, {},
      120s);

  const std::string outcome = run.stdout_text + run.stderr_text;
  EXPECT_EQ(run.exit_code, 1) << outcome;
  // Both ranks fail alike; the condition names the first pod that failed.
  const std::string error0 = lastErrorText(log0.stdout_text + log0.stderr_text);
  const std::string error1 = lastErrorText(log1.stdout_text + log1.stderr_text);
  ASSERT_FALSE(error0.empty() && error1.empty()) << log0.stdout_text << log0.stderr_text;
  auto shows = [&](const std::string& text) {
    return (!error0.empty() && text.find(error0) != std::string::npos) ||
           (!error1.empty() && text.find(error1) != std::string::npos);
  };
  // A rank stopped because its peer failed first logs no error of its own: either may be it.
  EXPECT_TRUE(error0.find("/nonexistent/ringmaster-no-data") != std::string::npos ||
              error1.find("/nonexistent/ringmaster-no-data") != std::string::npos)
      << "rank 0: " << error0 << "\nrank 1: " << error1;

  // `local run`'s final line: "baddata: Failed (RankFailed): pod ... failed with exit code 1:
  // rank 0 exited with code 1: E CORE [baddata rank 0/2] <the trainer's error>; ...".
  std::string final_line;
  std::istringstream lines(run.stdout_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("baddata: Failed", 0) == 0) final_line = line;
  }
  EXPECT_TRUE(shows(final_line)) << "final line: " << final_line << "\nerror: " << error0 << "\n"
                                 << outcome;
  EXPECT_NE(final_line.find("E CORE"), std::string::npos) << final_line;

  ASSERT_EQ(describe.exit_code, 0) << describe.stderr_text;
  EXPECT_TRUE(shows(describe.stdout_text)) << describe.stdout_text << "\nerror: " << error0;
  // In the Events too, not only in the condition.
  const size_t events = describe.stdout_text.find("Events:");
  ASSERT_NE(events, std::string::npos) << describe.stdout_text;
  EXPECT_TRUE(shows(describe.stdout_text.substr(events))) << describe.stdout_text;
}

TEST_P(TerminationMessageE2e, TheFinalStatusIsRankZerosSummary) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::LocalCluster cluster(GetParam());
  if (std::string why = cluster.start(); !why.empty()) {
    if (!cluster.missing().empty()) GTEST_SKIP() << cluster.missing();
    FAIL() << why;
  }
  testutil::ProcessResult applied = cluster.apply(job("summary", testutil::kFashionMnistDir, 2));
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  nlohmann::json last = cluster.waitForJob("summary", 600s, [](const nlohmann::json& j) {
    return testutil::jobPhase(j) == "Succeeded" || testutil::jobPhase(j) == "Failed";
  });
  ASSERT_EQ(testutil::jobPhase(last), "Succeeded") << last.dump(2);

  nlohmann::json pod = cluster.get("pod", "summary-worker-0");
  nlohmann::json terminated;
  for (const auto& cs : pod["status"].value("containerStatuses", nlohmann::json::array())) {
    if (cs.value("name", "") == "worker") terminated = cs["state"]["terminated"];
  }
  ASSERT_TRUE(terminated.is_object()) << pod.dump(2);
  EXPECT_EQ(terminated.value("exitCode", -1), 0);
  ASSERT_TRUE(terminated.contains("message")) << terminated.dump(2);
  nlohmann::json summary = nlohmann::json::parse(terminated["message"].get<std::string>());
  nlohmann::json progress = cluster.get("tj", "summary")["status"]["progress"];
  ASSERT_TRUE(progress.is_object()) << last.dump(2);

  // Equal up to the status's rounding (4 significant digits, whole samples per second).
  auto close = [](double status, double summary_value) {
    return std::fabs(status - summary_value) <= 5e-4 * std::fabs(summary_value) + 0.5e-12;
  };
  EXPECT_EQ(progress.value("epoch", -1), summary.value("epochs", -2)) << summary.dump();
  EXPECT_EQ(progress.value("step", int64_t{-1}), summary.value("steps", int64_t{-2}));
  EXPECT_TRUE(close(progress.value("loss", -1.0), summary.value("finalTrainLoss", -2.0)))
      << progress.dump() << " vs " << summary.dump();
  EXPECT_TRUE(close(progress.value("testAccuracy", -1.0), summary.value("testAccuracy", -2.0)))
      << progress.dump() << " vs " << summary.dump();
  EXPECT_EQ(progress.value("samplesPerSecond", -1.0),
            std::round(summary.value("samplesPerSecond", -2.0)))
      << progress.dump() << " vs " << summary.dump();
  // And the log's closing line says the same.
  const std::string log = cluster.podLog("summary-worker-0");
  EXPECT_NE(log.find("done: " + std::to_string(summary.value("epochs", 0)) + " epochs, " +
                     std::to_string(summary.value("steps", 0)) + " steps"),
            std::string::npos)
      << log.substr(log.size() > 2000 ? log.size() - 2000 : 0);
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, TerminationMessageE2e,
                         ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
