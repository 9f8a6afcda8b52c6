// e2e of an elastic job on a cluster of two nodes, driven with real kubectl: `ringmaster local up`
// with its node advertising 3 nvidia.com/gpu, and a second local kubelet as node "node-b" with 1
// (the claims of both nodes in one directory, as nodes sharing a network filesystem). A
// TrainingJob with spec.elastic {minReplicas: 3} runs 4 replicas of one GPU each: 3 on the first
// node, 1 on node-b.
//   - node-b goes away: its kubelet is stopped with a shutdown grace period, as a node that is
//     shut down (NotReady; its pod ends Failed, reason Terminated). The rank cannot come back:
//     the gang restarts, its fourth pod stays unschedulable, and after scheduleTimeoutSeconds the
//     job resizes to 3 (Resized/ScaledDown) and trains on from its checkpoint, with a standby pod
//     waiting where the fourth worker was.
//   - node-b comes back: its kubelet starts again, the standby pod is scheduled there, and the
//     job grows back to 4 (Resized/ScaledUp), resuming where the 3 stopped.
//   - The job Succeeds with the global batch it started with. Since the sample order depends on
//     the step and the global batch only, resizing changes what is learned by no more than
//     rounding does (the ranks sum in another order): its test accuracy is within 0.5 points of
//     the same trainer run in one process, and it took as many steps (nothing skipped, nothing
//     counted twice). Plain SGD, whose runs at different worlds agree to about 0.01 points; with
//     momentum they drift apart by a few tenths at any world, resized or not.
// On both control planes (on envtest, the local kubelets and operator join a real API server).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testutil::jobPhase;

// Long enough that the job is still training when capacity returns.
constexpr int kEpochs = 3;

// spec.trainer of the job, and the whole of the one-process baseline's config.
std::string trainerYaml(const std::string& indent) {
  const std::vector<std::string> lines = {
      "model: {type: mlp, hidden: [512, 512]}",
      "dataset: {name: fashion-mnist, path: " + testutil::kFashionMnistDir + "}",
      "epochs: " + std::to_string(kEpochs),
      "globalBatchSize: 120",  // splits among 3 and 4 ranks
      "optimizer: {type: sgd, learningRate: 0.1, momentum: 0}",
      "device: cpu",
      "commTimeoutSeconds: 30",
  };
  std::string out;
  for (const auto& line : lines) out += indent + line + "\n";
  return out;
}

int64_t stepsOf(int epochs, int global_batch) {
  constexpr int64_t kTrainSamples = 60000;
  return epochs * ((kTrainSamples + global_batch - 1) / global_batch);
}

class ElasticE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    if (!fs::exists(testutil::kFashionMnistDir))
      GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    ASSERT_EQ(cluster_.start({"--kubelet-flags=--gpus=3"}), "");
  }

  // Starts node-b's kubelet and waits for its Node to be Ready.
  void startNodeB() {
    std::vector<std::string> argv = {testutil::binaryPath("bin/ringmaster"),
                                     "local",
                                     "kubelet",
                                     "--kubeconfig",
                                     cluster_.kubeconfig(),
                                     "--node-name",
                                     "node-b",
                                     "--root-dir",
                                     cluster_.dataDir() + "/node-b",
                                     "--claims-dir",
                                     cluster_.dataDir() + "/kubelet/volumes",
                                     "--gpus",
                                     "1",
                                     "--shutdown-grace-period",
                                     "5",
                                     "--heartbeat-seconds",
                                     "1"};
    // A real API server reads pod logs from a kubelet's endpoint; the embedded one reads files.
    if (GetParam() == testutil::ControlPlane::kEnvtest) argv.push_back("--log-port=0");
    node_b_ = std::make_unique<testutil::Process>(argv);
    node_b_->start();
    ASSERT_TRUE(testutil::eventually(60s, [&] { return nodeReady("node-b") == "True"; }))
        << node_b_->stderrSoFar();
  }

  // The Node's Ready condition status ("" when there is none).
  std::string nodeReady(const std::string& node) {
    const nlohmann::json n = cluster_.get("node", node);
    if (!n.contains("status")) return "";
    for (const auto& c : n["status"].value("conditions", nlohmann::json::array())) {
      if (c.value("type", "") == "Ready") return c.value("status", "");
    }
    return "";
  }

  void TearDown() override {
    if (node_b_) {
      node_b_->signal(SIGTERM);
      (void)node_b_->wait(60s);
    }
  }

  void apply(const std::string& yaml) {
    testutil::ProcessResult r = cluster_.apply(yaml);
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text << yaml;
  }

  // "<reason>: <message>" of the job's Events, oldest first.
  std::vector<std::string> jobEvents(const std::string& job) {
    testutil::ProcessResult r = cluster_.kubectl(
        {"get", "events", "--field-selector", "involvedObject.name=" + job, "-o", "json"});
    std::vector<std::string> out;
    if (r.exit_code != 0) return {"kubectl get events: " + r.stderr_text};
    nlohmann::json items = nlohmann::json::parse(r.stdout_text)["items"];
    std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
      return a.value("lastTimestamp", "") < b.value("lastTimestamp", "");
    });
    for (const auto& e : items)
      out.push_back(e.value("reason", "") + ": " + e.value("message", ""));
    return out;
  }

  testutil::LocalCluster cluster_{GetParam()};
  std::unique_ptr<testutil::Process> node_b_;
};

TEST_P(ElasticE2e, LosesANodeShrinksTo3GrowsBackTo4AndLearnsWhatAnUnresizedRunLearns) {
  startNodeB();
  apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: elastic}
spec:
  replicas: 4
  elastic: {minReplicas: 3}
  image: ringmaster/trainer:0.1.0
  resources:
    limits: {nvidia.com/gpu: 1}
  trainer:
)" + trainerYaml("    ") +
        R"(    checkpoint: {path: /ckpt, everySteps: 50}
  volumes:
  - name: ckpt
    persistentVolumeClaim: {claimName: elastic-ckpt}
  volumeMounts:
  - {name: ckpt, mountPath: /ckpt}
  schedulingPolicy: {scheduleTimeoutSeconds: 5}
  backoffLimit: 3
)");
  // node-b goes away once the first checkpoint is written.
  ASSERT_EQ(cluster_.waitForClaimFiles("elastic-ckpt", "elastic", 300s), "");
  std::string on_b;
  for (int i = 0; i < 4; ++i) {
    const std::string pod = "elastic-worker-" + std::to_string(i);
    if (cluster_.get("pod", pod)["spec"].value("nodeName", "") == "node-b") on_b = pod;
  }
  ASSERT_NE(on_b, "") << "no worker on node-b";
  node_b_->signal(SIGTERM);
  testutil::ProcessResult stopped = node_b_->wait(60s);
  ASSERT_FALSE(stopped.timed_out) << stopped.stderr_text;
  EXPECT_EQ(nodeReady("node-b"), "False");
  nlohmann::json shrunk = cluster_.waitForJob("elastic", 300s, [](const nlohmann::json& j) {
    return testutil::jobFinished(j) || (j["status"].value("currentReplicas", 0) == 3 &&
                                        j["status"].value("world", "") == "3/3");
  });
  ASSERT_EQ(shrunk["status"].value("currentReplicas", 0), 3)
      << shrunk.dump(2) << testing::PrintToString(jobEvents("elastic"));
  EXPECT_EQ(shrunk["status"]["replicas"].value("active", 0), 3) << shrunk.dump(2);
  const nlohmann::json standby = cluster_.get("pod", "elastic-worker-3");
  EXPECT_EQ(standby["metadata"]["labels"].value("ringmaster.dev/standby", ""), "true")
      << standby.dump(2);
  EXPECT_EQ(standby["status"].value("phase", ""), "Pending") << standby.dump(2);

  // node-b comes back: the standby pod is scheduled there, and the job grows back.
  startNodeB();
  nlohmann::json last = cluster_.waitForJob("elastic", 600s, testutil::jobFinished);
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << cluster_.podLog("elastic-worker-0");
  EXPECT_EQ(last["status"].value("currentReplicas", 0), 4) << last.dump(2);
  EXPECT_EQ(last["status"].value("worldSize", 0), 4) << last.dump(2);
  // The lost rank's peers may fail before the operator resizes (one gang restart) or not;
  // resizes are not counted.
  EXPECT_LE(last["status"].value("restarts", 0), 1) << last.dump(2);
  std::vector<std::string> resizes;
  for (const std::string& e : jobEvents("elastic")) {
    if (e.rfind("Scaled", 0) == 0) resizes.push_back(e);
  }
  ASSERT_EQ(resizes.size(), 2u) << testing::PrintToString(jobEvents("elastic"));
  EXPECT_NE(resizes[0].find("ScaledDown: 4 -> 3 worker pods"), std::string::npos) << resizes[0];
  EXPECT_NE(resizes[1].find("ScaledUp: 3 -> 4 worker pods"), std::string::npos) << resizes[1];
  const std::string log0 = cluster_.podLog("elastic-worker-0");
  EXPECT_NE(log0.find("resumed from checkpoint"), std::string::npos) << log0;

  // The same training in one process, never resized.
  const std::string config = cluster_.dataDir() + "/baseline.yaml";
  std::ofstream(config) << trainerYaml("");
  const std::string summary_path = cluster_.dataDir() + "/baseline.json";
  testutil::ProcessResult baseline =
      testutil::run({testutil::binaryPath("bin/ringmaster-trainer"), "--config", config,
                     "--backend", "shm", "--summary-json", summary_path},
                    {{"WORLD_SIZE", "1"}, {"RANK", "0"}}, 600s);
  ASSERT_EQ(baseline.exit_code, 0) << baseline.stderr_text;
  std::ifstream summary_in(summary_path);
  const nlohmann::json summary = nlohmann::json::parse(summary_in);

  const nlohmann::json& progress = last["status"]["progress"];
  const double resized = progress.value("testAccuracy", 0.0);
  const double unresized = summary.value("testAccuracy", 0.0);
  EXPECT_GT(unresized, 0.80) << summary.dump();
  EXPECT_LE(std::abs(resized - unresized), 0.005)
      << "resized " << resized << " vs unresized " << unresized;
  EXPECT_EQ(progress.value("step", int64_t{0}), stepsOf(kEpochs, 120)) << progress.dump();
  EXPECT_EQ(summary.value("steps", int64_t{0}), stepsOf(kEpochs, 120)) << summary.dump();
  std::cout << "elastic (" << testutil::controlPlaneName(GetParam())
            << "): 4 -> 3 -> 4 ranks, test accuracy " << resized << " vs one unresized process "
            << unresized << " (difference " << std::abs(resized - unresized) * 100 << " points), "
            << progress.value("step", 0) << " steps of 120 samples; restarts "
            << last["status"].value("restarts", 0)
            << "; events: " << testing::PrintToString(jobEvents("elastic")) << std::endl;
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, ElasticE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
