// e2e of an elastic job under `ringmaster local up`, driven with real kubectl: a TrainingJob with
// spec.elastic {minReplicas: 3} and 4 replicas of one nvidia.com/gpu each on a node with 4.
//   - Capacity goes: a pod that holds one GPU is created and worker 3 is deleted, so its rank
//     cannot come back. Its replacement stays unschedulable (whether or not the gang restarted
//     first, as its peers noticed the loss), and after scheduleTimeoutSeconds the job resizes to
//     3 (Resized/ScaledDown) and trains on from its checkpoint, with a standby pod waiting where
//     the fourth worker was.
//   - Capacity returns: the holding pod is deleted, the standby pod is scheduled, and the job
//     grows back to 4 (Resized/ScaledUp), resuming where the 3 stopped.
//   - The job Succeeds with the global batch it started with. Since the sample order depends on
//     the step and the global batch only, resizing changes what is learned by no more than
//     rounding does (the ranks sum in another order): its test accuracy is within 0.5 points of
//     the same trainer run in one process, and it took as many steps (nothing skipped, nothing
//     counted twice). Plain SGD, whose runs at different worlds agree to about 0.01 points; with
//     momentum they drift apart by a few tenths at any world, resized or not.
// On both control planes (on envtest, the local kubelet and operator join a real API server):
// the capacity that goes and comes back is one node's GPUs, as `ringmaster local` runs one node.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
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
    ASSERT_EQ(cluster_.start({"--kubelet-flags=--gpus=4"}), "");
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
};

TEST_P(ElasticE2e, LosesAWorkerShrinksTo3GrowsBackTo4AndLearnsWhatAnUnresizedRunLearns) {
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
  // Capacity goes once the first checkpoint is written.
  ASSERT_EQ(cluster_.waitForClaimFiles("elastic-ckpt", "elastic", 300s), "");
  apply(R"(apiVersion: v1
kind: Pod
metadata: {name: gpu-holder}
spec:
  containers:
  - name: hold
    image: busybox
    command: [sleep, "3600"]
    resources:
      limits: {nvidia.com/gpu: 1}
)");
  ASSERT_EQ(cluster_.kubectl({"delete", "pod", "elastic-worker-3", "--wait=false"}).exit_code, 0);

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

  // Capacity returns: the standby pod gets the GPU and the job grows back.
  ASSERT_EQ(cluster_.kubectl({"delete", "pod", "gpu-holder", "--wait=false"}).exit_code, 0);
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
