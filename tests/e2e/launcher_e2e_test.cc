// e2e under `ringmaster local`, and again on a real control plane (envtest) that the local
// kubelet and operator join: the operator's pods run the launcher, which rendezvouses and
// supervises the trainers; `kubectl logs` reads them through the API server either way.
//   - 2 pods x 2 processes = 4 ranks train to Succeeded, and kubectl showed WORLD 4/4.
//   - A rank frozen with SIGSTOP is named by every launcher (hang detection), the gang restarts
//     and the job still Succeeds, resuming from its checkpoint.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testutil::jobPhase;
constexpr int kPodZeroDelaySeconds = 4;

class LauncherE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    // Pod 0 (the store's host) of job "four" starts last.
    ASSERT_EQ(cluster_.startOnce({"--kubelet-flags=--start-delay=four-worker-0=" +
                                  std::to_string(kPodZeroDelaySeconds)}),
              "");
  }

  void apply(const std::string& yaml) {
    testutil::ProcessResult r = cluster_.apply(yaml);
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  }

  // One per plane for the binary: the cases name their jobs apart and leave its daemons be.
  testutil::LocalCluster& cluster_ = testutil::sharedCluster(GetParam());
};

// The kubelet holds pod 0 back (--start-delay), so pod 1's launcher starts
// first and retries the store until pod 0 comes up.
TEST_P(LauncherE2e, FourRanksOnTwoPodsTrainToSucceeded) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  apply(std::string(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: four}
spec:
  replicas: 2
  procsPerReplica: 2
  image: ringmaster/trainer:0.1.0
  trainer:
    model: {type: mlp, hidden: [64]}
    dataset: {name: fashion-mnist, path: )") +
        testutil::kFashionMnistDir + R"(}
    epochs: 1
    batchSize: 64
    maxSteps: 120
    optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}
)");
  nlohmann::json last = cluster_.waitForJob("four", 300s, [&](const nlohmann::json& j) {
    return jobPhase(j) == "Succeeded" || jobPhase(j) == "Failed";
  });
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << cluster_.podLog("four-worker-0");
  // The world as the ranks saw it. (The run is over in about a second, often before the
  // operator sees every pod Ready, so the live WORLD column is local_run_e2e_test's to check,
  // on a run long enough to show it.)
  EXPECT_EQ(last["status"].value("worldSize", 0), 4);
  const std::string log0 = cluster_.podLog("four-worker-0");
  EXPECT_NE(log0.find("world size 4"), std::string::npos) << log0;
  auto startedAt = [&](const std::string& pod) {
    auto r =
        cluster_.kubectl({"get", "pod", pod, "-o",
                          "jsonpath={.status.containerStatuses[0].state.terminated.startedAt}"});
    return r.stdout_text;  // RFC 3339 in UTC: compares as text
  };
  const std::string started0 = startedAt("four-worker-0"), started1 = startedAt("four-worker-1");
  ASSERT_FALSE(started0.empty());
  ASSERT_FALSE(started1.empty());
  EXPECT_GT(started0, started1) << "pod 0 must start last";
}

// A user program (spec.command) instead of the built-in trainer sees
// torchrun's variables with the right values in every pod and process.
TEST_P(LauncherE2e, UserCommandSeesTheWorldInEveryPod) {
  apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: cmd}
spec:
  replicas: 2
  procsPerReplica: 2
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "echo rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE node=$NODE_RANK master=$MASTER_ADDR:$MASTER_PORT"]
)");
  nlohmann::json last = cluster_.waitForJob("cmd", 180s, testutil::jobFinished);
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << cluster_.podLog("cmd-worker-0");
  const std::string master = " master=cmd-worker-0.cmd.default.svc:29500";
  const std::string pod0 = cluster_.podLog("cmd-worker-0"), pod1 = cluster_.podLog("cmd-worker-1");
  for (const std::string line : {"rank=0 local=0 world=4 node=0", "rank=1 local=1 world=4 node=0"})
    EXPECT_NE(pod0.find(line + master), std::string::npos) << line << "\n" << pod0;
  for (const std::string line : {"rank=2 local=0 world=4 node=1", "rank=3 local=1 world=4 node=1"})
    EXPECT_NE(pod1.find(line + master), std::string::npos) << line << "\n" << pod1;
}

// MPI mode with the MPI Operator's shapes (hostfile ConfigMap key, SSH
// Secret), sshd per pod, mpirun from pod 0, the trainer on its MPI communicator.
TEST_P(LauncherE2e, MpiModeJobTrainsToSucceeded) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  if (access("/usr/sbin/sshd", X_OK) != 0) GTEST_SKIP() << "openssh-server is not installed";
  apply(std::string(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: mpijob}
spec:
  replicas: 2
  launcher: mpi
  image: ringmaster/trainer:0.1.0
  trainer:
    model: {type: mlp, hidden: [64]}
    dataset: {name: fashion-mnist, path: )") +
        testutil::kFashionMnistDir + R"(}
    epochs: 1
    batchSize: 64
    maxSteps: 100
)");
  nlohmann::json last = cluster_.waitForJob("mpijob", 300s, testutil::jobFinished);
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << cluster_.podLog("mpijob-worker-0");
  EXPECT_NE(cluster_.podLog("mpijob-worker-0").find("world size 2, backend mpi"),
            std::string::npos);
  // mpirun's rank 0 wrote the run's summary, which the launcher left as the termination
  // message: the job's final progress has a test accuracy, as in native mode.
  auto message =
      cluster_.kubectl({"get", "pod", "mpijob-worker-0", "-o",
                        "jsonpath={.status.containerStatuses[0].state.terminated.message}"});
  ASSERT_EQ(message.exit_code, 0) << message.stderr_text;
  nlohmann::json summary = nlohmann::json::parse(message.stdout_text, nullptr, false);
  ASSERT_TRUE(summary.is_object()) << message.stdout_text;
  EXPECT_GT(summary.value("testAccuracy", -1.0), 0.5) << message.stdout_text;
  auto hostfile =
      cluster_.kubectl({"get", "configmap", "mpijob-config", "-o", "jsonpath={.data.hostfile}"});
  EXPECT_EQ(hostfile.stdout_text,
            "mpijob-worker-0.mpijob.default.svc slots=1\nmpijob-worker-1.mpijob.default.svc "
            "slots=1\n");
  auto secret = cluster_.kubectl({"get", "secret", "mpijob-ssh", "-o", "json"});
  ASSERT_EQ(secret.exit_code, 0) << secret.stderr_text;
  auto s = nlohmann::json::parse(secret.stdout_text, nullptr, false);
  EXPECT_EQ(s.value("type", ""), "kubernetes.io/ssh-auth");
  EXPECT_TRUE(s["data"].contains("ssh-privatekey"));
  EXPECT_TRUE(s["data"].contains("ssh-publickey"));
}

TEST_P(LauncherE2e, FrozenRankIsNamedByEveryLauncherAndTheGangRestartsToSucceed) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  apply(std::string(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: frozen}
spec:
  replicas: 2
  procsPerReplica: 2
  image: ringmaster/trainer:0.1.0
  env:
  - {name: RINGMASTER_HANG_TIMEOUT_SECONDS, value: "6"}
  trainer:
    model: {type: mlp, hidden: [256, 256]}
    dataset: {name: fashion-mnist, path: )") +
        testutil::kFashionMnistDir + R"(}
    epochs: 3
    batchSize: 32
    optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}
    checkpoint: {path: /ckpt, everySteps: 20}
  volumes:
  - name: ckpt
    persistentVolumeClaim: {claimName: frozen-ckpt}
  volumeMounts:
  - {name: ckpt, mountPath: /ckpt}
  restartPolicy: OnFailure
  backoffLimit: 2
)");
  // Freeze rank 3 (pod 1's second process) once the first checkpoint is on the claim's volume:
  // status.progress comes from a periodic scrape, and this small job can finish its steps
  // before a scrape shows 20 of them.
  const fs::path claim = fs::path(cluster_.dataDir()) / "kubelet/volumes/default/frozen-ckpt";
  ASSERT_TRUE(testutil::eventually(
      240s,
      [&] {
        std::error_code ec;
        return fs::exists(claim, ec) && !fs::is_empty(claim, ec);
      },
      testutil::kPromptly))
      << "no checkpoint in " << claim << "\n"
      << cluster_.get("trainingjob", "frozen").dump(2);
  pid_t victim =
      cluster_.findProcess("ringmaster-trainer", {{"RINGMASTER_JOB", "frozen"}, {"RANK", "3"}});
  ASSERT_GT(victim, 0) << "no trainer with RANK=3";
  ASSERT_EQ(kill(victim, SIGSTOP), 0);

  nlohmann::json last = cluster_.waitForJob("frozen", 300s, testutil::jobFinished);
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2);
  EXPECT_EQ(last["status"].value("restarts", 0), 1);

  // Every launcher of the first attempt named the frozen rank (their logs are the attempt-0
  // pods' files; `kubectl logs` shows only the current pods).
  int naming = 0;
  std::string launcher_lines;  // what each launcher said, shown when the check fails
  const fs::path pods = fs::path(cluster_.dataDir()) / "kubelet" / "pods" / "default";
  for (const auto& entry : fs::directory_iterator(pods)) {
    std::ifstream in(entry.path() / "worker.log");
    std::string line;
    bool named = false;
    while (std::getline(in, line)) {
      if (line.find("rank 3 (pod 1) stuck") != std::string::npos) named = true;
      if (line.find("launcher") != std::string::npos || line.find("LAUNCH") != std::string::npos ||
          line.find("RDZV") != std::string::npos) {
        launcher_lines += entry.path().filename().string() + ": " + line + "\n";
      }
    }
    if (named) ++naming;
  }
  EXPECT_GE(naming, 2) << "both launchers of the frozen attempt must name rank 3\n"
                       << launcher_lines;
  EXPECT_NE(cluster_.podLog("frozen-worker-0").find("resumed from checkpoint"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, LauncherE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
