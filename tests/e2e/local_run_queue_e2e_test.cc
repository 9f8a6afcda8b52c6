// e2e, admission by a queue on the user's path: `ringmaster local run` of a job labelled
// kueue.x-k8s.io/queue-name. Its pods are created as one gated Kueue pod group (group label,
// total-count annotation, scheduling gate kueue.x-k8s.io/admission) and none starts: the local
// kubelet, as kube-scheduler, leaves gated pods alone, and the operator neither counts the gang's
// scheduleTimeoutSeconds (2 s here) against them nor restarts anything while `kubectl get tj`
// shows Pending SchedulingGated. A stand-in for Kueue then does what Kueue does once quota
// admits a complete group, removing the gate from every pod, and the job runs to Succeeded.
// Kueue itself is not installed here (its webhook and controllers need a real cluster of
// Kubernetes 1.27 or later, where scheduling gates are on): this tests our side of its protocol
// against a stand-in that acts on the objects as Kueue documents, on the embedded API server.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control_plane.h"
#include "local_cluster.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kJob = R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata:
  name: queued
  labels: {kueue.x-k8s.io/queue-name: team-a}
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "echo \"rank $RANK admitted\""]
  restartPolicy: Never
  schedulingPolicy: {scheduleTimeoutSeconds: 2}
)";

TEST(LocalRunQueueE2e, AGatedGangWaitsForItsQueueThenRuns) {
  const std::string kubectl = testutil::findKubectl();
  testutil::TempDir dir;
  const std::string manifest = dir.path() + "/queued.yaml";
  std::ofstream(manifest) << kJob;
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  testutil::LocalClusterStopper stop_cluster(dir.path());
  testutil::Process run(
      {testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()});
  run.start();

  // The stand-in waits, as Kueue does, for the whole group: total-count pods of one group name.
  auto groupPods = [&] {
    auto got = testutil::run(
        {kubectl, "get", "pods", "-l", "kueue.x-k8s.io/pod-group-name=queued-0", "-o", "json"}, env,
        30s);
    auto list = nlohmann::json::parse(got.stdout_text, nullptr, false);
    return got.exit_code == 0 && !list.is_discarded() ? list["items"] : nlohmann::json::array();
  };
  nlohmann::json pods;
  ASSERT_TRUE(testutil::eventually(120s, [&] {
    if (!fs::exists(kubeconfig)) return false;
    pods = groupPods();
    return pods.size() == 2;
  })) << run.stdoutSoFar();
  for (const auto& pod : pods) {
    EXPECT_EQ(pod["metadata"]["annotations"].value("kueue.x-k8s.io/pod-group-total-count", ""),
              "2");
    ASSERT_EQ(pod["spec"]["schedulingGates"].size(), 1u) << pod.dump();
    EXPECT_EQ(pod["spec"]["schedulingGates"][0]["name"], "kueue.x-k8s.io/admission");
  }
  // Held past the gang's timeout: nothing runs, nothing restarts, and kubectl says why.
  std::this_thread::sleep_for(5s);
  pods = groupPods();
  for (const auto& pod : pods) {
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "") << pod.dump();
    bool gated = false;
    for (const auto& c : pod["status"]["conditions"]) {
      if (c.value("type", "") == "PodScheduled" && c.value("reason", "") == "SchedulingGated") {
        gated = true;
      }
    }
    EXPECT_TRUE(gated) << pod["status"].dump();
  }
  auto job = testutil::run({kubectl, "get", "tj", "queued", "-o",
                            "jsonpath={.status.phase} {.status.reason} {.status.restarts}"},
                           env, 30s);
  EXPECT_EQ(job.stdout_text, "Pending SchedulingGated 0") << job.stderr_text;

  // Admission: the gate comes off every pod of the group.
  for (const auto& pod : pods) {
    auto ungated =
        testutil::run({kubectl, "patch", "pod", pod["metadata"]["name"].get<std::string>(),
                       "--type=json", "-p", R"([{"op":"remove","path":"/spec/schedulingGates"}])"},
                      env, 30s);
    EXPECT_EQ(ungated.exit_code, 0) << ungated.stderr_text;
  }
  testutil::ProcessResult result = run.wait(300s);
  const std::string outcome = result.stdout_text + result.stderr_text;
  EXPECT_EQ(result.exit_code, 0) << outcome;
  EXPECT_NE(result.stdout_text.find("Succeeded"), std::string::npos) << outcome;
  // What the user watching `local run` read while the queue held the job.
  EXPECT_NE(result.stdout_text.find("queued  Pending (SchedulingGated)  world 0/2"),
            std::string::npos)
      << outcome;
  auto restarts = testutil::run(
      {kubectl, "get", "tj", "queued", "-o", "jsonpath={.status.restarts}"}, env, 30s);
  EXPECT_EQ(restarts.stdout_text, "0");
}

}  // namespace
}  // namespace ringmaster
