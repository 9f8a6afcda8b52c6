// e2e under `ringmaster local up`, and but for the last again on a real control plane (envtest)
// that the local kubelet and operator join, driven with real kubectl:
//   - a worker's trainer SIGKILLed mid-training restarts the gang once; it resumes from its
//     checkpoint and the job Succeeds;
//   - a parameter-server job's worker trainer SIGKILLed mid-run, the operator killed too: that
//     one pod is replaced, the others train on, and the job Succeeds without a restart;
//   - a parameter-server job's server SIGKILLed, the operator too: the gang restarts once and
//     resumes from the servers' checkpoint;
//   - the operator SIGKILLed at seeded points while it creates a job's pods, and started again,
//     never creates a second pod for a rank, and every job Succeeds;
//   - a job asking for more nvidia.com/gpu than the node has holds no pod after
//     scheduleTimeoutSeconds and says Unschedulable; deleting a job removes its pods, Service
//     and ConfigMap; a suspended job creates no pods until resumed;
//   - the embedded API server SIGKILLed and brought back by `local up` keeps its port, and the
//     kubelet and operator that outlived it carry on.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

using testutil::eventually;
using testutil::hasCondition;
using testutil::jobPhase;
using testutil::liveProcess;

// A Fashion-MNIST MLP job named `name` of `replicas` pods, restarted OnFailure. `trainer` adds
// lines under spec.trainer, `spec` under spec; `claim` (when set) mounts that claim at /ckpt.
std::string fmnistJob(const std::string& name, int replicas, const std::string& hidden, int epochs,
                      const std::string& trainer, const std::string& spec,
                      const std::string& claim = "") {
  std::string yaml =
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
      "}\nspec:\n  replicas: " + std::to_string(replicas) +
      "\n  image: ringmaster/trainer:0.1.0\n  trainer:\n    model: {type: mlp, "
      "hidden: [" +
      hidden + "]}\n    dataset: {name: fashion-mnist, path: " + testutil::kFashionMnistDir +
      "}\n    epochs: " + std::to_string(epochs) +
      "\n    batchSize: 128\n    optimizer: {type: sgd, learningRate: 0.05, "
      "momentum: 0.9}\n" +
      trainer + "  restartPolicy: OnFailure\n" + spec;
  if (!claim.empty()) {
    yaml += "  volumes:\n  - name: ckpt\n    persistentVolumeClaim: {claimName: " + claim +
            "}\n  volumeMounts:\n  - {name: ckpt, mountPath: /ckpt}\n";
  }
  return yaml;
}

class OperatorFaultE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }
  void TearDown() override {
    operator_.reset();  // our own operator (the kill test's), if any, before `local down`
  }

  void apply(const std::string& yaml) {
    testutil::ProcessResult r = cluster_.apply(yaml);
    ASSERT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text << yaml;
  }

  // Names of the objects of `kind` labelled with job `name` (or, with by_name, named `name`).
  std::vector<std::string> objects(const std::string& kind, const std::string& name,
                                   bool by_name = false) {
    std::vector<std::string> args{"get", kind, "-o", "name", "--ignore-not-found"};
    if (by_name) {
      args.push_back(name);
    } else {
      args.push_back("-l");
      args.push_back("ringmaster.dev/job-name=" + name);
    }
    auto r = cluster_.kubectl(args);
    std::vector<std::string> out;
    std::istringstream in(r.stdout_text);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(line);
    }
    return out;
  }

  // SIGKILLs the running operator (the one `local up` started, or ours) and starts a new one
  // with the flags `local up` gives it (local/apiserver/local_command.cc startAgents), but a
  // shorter Lease.
  void killAndRestartOperator() {
    if (operator_) {
      operator_->signal(SIGKILL);
      (void)operator_->wait(30s);
    } else {
      ASSERT_EQ(cluster_.killOperator(), "");
    }
    const std::string kubeconfig = cluster_.dataDir() + "/kubeconfig";
    operator_ = std::make_unique<testutil::Process>(std::vector<std::string>{
        testutil::binaryPath("bin/ringmaster-operator"), "--kubeconfig", kubeconfig,
        "--bind-address", "127.0.0.1", "--metrics-port", "0", "--health-port", "0",
        // Shorter than `local up`'s 4 s: each round waits out the killed one's lease.
        "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2",
        "--leader-elect-retry-period", "0.5"});
    operator_->start();
  }

  // Starts `kubectl get -w -v=6` and returns once its watch request was answered (-v=6 logs it
  // on stderr): from then on it reports every change after its first list.
  void startWatch(testutil::Process& watch) {
    watch.start();
    EXPECT_TRUE(eventually(
        30s, [&] { return watch.stderrSoFar().find("watch=true") != std::string::npos; }))
        << "kubectl get -w did not start: " << watch.stderrSoFar();
  }

  testutil::LocalCluster cluster_{GetParam()};
  std::unique_ptr<testutil::Process> operator_;
};

INSTANTIATE_TEST_SUITE_P(ControlPlanes, OperatorFaultE2e,
                         ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// Faults of the embedded API server itself: on the local control plane only.
class EmbeddedApiServerFaultE2e : public OperatorFaultE2e {};
INSTANTIATE_TEST_SUITE_P(ControlPlanes, EmbeddedApiServerFaultE2e,
                         ::testing::Values(testutil::ControlPlane::kLocal),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// A rank killed mid-training -> Restarting, one gang restart, resume, Succeeded.
TEST_P(OperatorFaultE2e, KilledTrainerRestartsTheGangOnceWhichResumesFromCheckpointAndSucceeds) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  // Every change of the job as `kubectl get tj -w` prints it (PHASE is the second column).
  testutil::Process watch({cluster_.kubectlPath(), "get", "tj", "-w", "-v=6", "--no-headers"},
                          cluster_.env());
  startWatch(watch);
  apply(fmnistJob("fmnist", 2, "128", 3, "    checkpoint: {path: /ckpt, everySteps: 50}\n",
                  "  backoffLimit: 3\n", "fmnist-ckpt"));
  // Kill once the first checkpoint is on the claim's volume.
  ASSERT_EQ(cluster_.waitForClaimFiles("fmnist-ckpt", "fmnist", 240s), "");
  const pid_t victim = cluster_.findProcess("ringmaster-trainer",
                                            {{"RINGMASTER_JOB", "fmnist"}, {"NODE_RANK", "1"}});
  ASSERT_GT(victim, 0) << "no trainer of fmnist-worker-1";
  ASSERT_EQ(kill(victim, SIGKILL), 0);

  nlohmann::json last = cluster_.waitForJob("fmnist", 300s, testutil::jobFinished);
  watch.signal(SIGTERM);
  testutil::ProcessResult seen = watch.wait(10s);
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << cluster_.podLog("fmnist-worker-0");
  EXPECT_EQ(last["status"].value("restarts", 0), 1) << last.dump(2);
  bool saw_restarting = false;
  std::istringstream rows(seen.stdout_text);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream words(row);
    std::string name, job_phase;
    words >> name >> job_phase;
    if (name == "fmnist" && job_phase == "Restarting") saw_restarting = true;
  }
  EXPECT_TRUE(saw_restarting) << "kubectl get tj -w never showed Restarting:\n" << seen.stdout_text;
  const std::string log0 = cluster_.podLog("fmnist-worker-0");
  EXPECT_NE(log0.find("resumed from checkpoint"), std::string::npos) << log0;
}

// A parameter-server job's worker whose trainer is SIGKILLed mid-run, with the operator killed
// right after: the operator replaces that one pod (no gang restart, nothing counted against
// backoffLimit, the job Running throughout), the new pod's trainer rejoins the server where the
// others are, and the job Succeeds with the other pods the ones it started with. The server runs
// in a pod of its own (spec.roles.ps), with its own resources.
TEST_P(OperatorFaultE2e, KilledParameterServerWorkerIsReplacedAloneWhileTheOthersTrainOn) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  testutil::Process watch({cluster_.kubectlPath(), "get", "tj", "-w", "-v=6", "--no-headers"},
                          cluster_.env());
  startWatch(watch);
  apply(fmnistJob("fmnist-ps", 2, "512, 512", 8,
                  "    parallelism:\n      parameterServer: {consistency: sync}\n",
                  "  backoffLimit: 1\n  roles:\n    ps:\n      replicas: 1\n"
                  "      resources: {requests: {memory: 256Mi}}\n"));
  // Kill once worker 0 reports training steps (its progress reaches the status).
  nlohmann::json running = cluster_.waitForJob("fmnist-ps", 240s, [](const nlohmann::json& j) {
    return j.contains("status") && j["status"].contains("progress") &&
           j["status"]["progress"].value("step", 0) >= 50;
  });
  ASSERT_GE(running["status"]["progress"].value("step", 0), 50) << running.dump(2);
  auto uids = [&] {
    std::map<std::string, std::string> out;
    auto r = cluster_.kubectl({"get", "pods", "-l", "ringmaster.dev/job-name=fmnist-ps", "-o",
                               "jsonpath={range .items[*]}{.metadata.name}={.metadata.uid} {end}"});
    std::istringstream in(r.stdout_text);
    for (std::string word; in >> word;) {
      out[word.substr(0, word.find('='))] = word.substr(word.find('=') + 1);
    }
    return out;
  };
  const std::map<std::string, std::string> before = uids();
  ASSERT_EQ(before.size(), 3u) << "pods: " << before.size();
  ASSERT_EQ(before.count("fmnist-ps-ps-0"), 1u) << "no pod fmnist-ps-ps-0 of role ps";
  // The ps pod is labelled with its role and carries its own resources, not the workers'.
  auto ps_pod = cluster_.kubectl({"get", "pod", "fmnist-ps-ps-0", "-o",
                                  "jsonpath={.metadata.labels.ringmaster\\.dev/role} "
                                  "{.spec.containers[0].resources.requests.memory}"});
  EXPECT_EQ(ps_pod.stdout_text, "ps 256Mi") << ps_pod.stderr_text;
  auto worker_pod = cluster_.kubectl({"get", "pod", "fmnist-ps-worker-1", "-o",
                                      "jsonpath={.metadata.labels.ringmaster\\.dev/role} "
                                      "{.spec.containers[0].resources.requests.memory}"});
  EXPECT_EQ(worker_pod.stdout_text, "worker ") << worker_pod.stderr_text;
  const pid_t victim = cluster_.findProcess("ringmaster-trainer",
                                            {{"RINGMASTER_JOB", "fmnist-ps"}, {"NODE_RANK", "1"}});
  ASSERT_GT(victim, 0) << "no trainer of fmnist-ps-worker-1";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(killAndRestartOperator());
  // The new pod of worker 1 Ready (its rank joined), made by the new operator.
  EXPECT_TRUE(eventually(180s, [&] {
    auto r = cluster_.kubectl({"get", "pod", "fmnist-ps-worker-1", "--ignore-not-found", "-o",
                               "jsonpath={.metadata.uid} "
                               "{.status.conditions[?(@.type==\"Ready\")].status}"});
    std::istringstream words(r.stdout_text);
    std::string uid, ready;
    words >> uid >> ready;
    return !uid.empty() && uid != before.at("fmnist-ps-worker-1") && ready == "True";
  })) << "worker 1's pod was not replaced";
  const double rejoined =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();

  nlohmann::json last = cluster_.waitForJob("fmnist-ps", 420s, testutil::jobFinished);
  watch.signal(SIGTERM);
  testutil::ProcessResult seen = watch.wait(10s);
  const std::string log0 = cluster_.podLog("fmnist-ps-worker-0");
  const std::string log1 = cluster_.podLog("fmnist-ps-worker-1");
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << log0 << log1;
  EXPECT_EQ(last["status"].value("restarts", -1), 0) << last.dump(2);
  EXPECT_EQ(last["status"].value("replacedPods", 0), 1) << last.dump(2);
  ASSERT_EQ(last["status"]["replacements"].size(), 1u) << last.dump(2);
  const nlohmann::json& record = last["status"]["replacements"][0];
  EXPECT_EQ(record.value("pod", ""), "fmnist-ps-worker-1");
  EXPECT_EQ(record.value("uid", ""), before.at("fmnist-ps-worker-1"));
  EXPECT_NE(record.value("reason", "").find("failed with exit code"), std::string::npos)
      << record.dump();
  EXPECT_TRUE(hasCondition(last, "Replaced", "True", "ReplacedWorkerPod")) << last.dump(2);
  // Each role counted on its own: 2 worker pods, 1 ps pod, all succeeded; 3 ranks in the world.
  EXPECT_EQ(last["status"]["replicas"].value("succeeded", 0), 2) << last.dump(2);
  EXPECT_EQ(last["status"]["roles"]["ps"].value("succeeded", 0), 1) << last.dump(2);
  EXPECT_EQ(last["status"].value("worldSize", 0), 3) << last.dump(2);
  auto wide = cluster_.kubectl({"get", "tj", "fmnist-ps", "-o", "wide"});
  EXPECT_NE(wide.stdout_text.find("PS-READY"), std::string::npos) << wide.stdout_text;
  // One pod replaced: worker 0's and the server's are the pods the job started with.
  const std::map<std::string, std::string> after = uids();
  EXPECT_EQ(after.at("fmnist-ps-worker-0"), before.at("fmnist-ps-worker-0"));
  EXPECT_EQ(after.at("fmnist-ps-ps-0"), before.at("fmnist-ps-ps-0"));
  EXPECT_NE(after.at("fmnist-ps-worker-1"), before.at("fmnist-ps-worker-1"));
  auto events =
      cluster_.kubectl({"get", "events", "--field-selector",
                        "involvedObject.name=fmnist-ps,reason=ReplacedWorkerPod", "-o", "json"});
  ASSERT_EQ(events.exit_code, 0) << events.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(events.stdout_text)["items"].size(), 1u) << events.stdout_text;
  std::istringstream rows(seen.stdout_text);
  for (std::string row; std::getline(rows, row);) {
    std::istringstream words(row);
    std::string name, job_phase;
    words >> name >> job_phase;
    if (name != "fmnist-ps") continue;
    // (A row before the first status has no PHASE: the AGE comes second.)
    EXPECT_TRUE(job_phase != "Restarting" && job_phase != "Failed")
        << "kubectl get tj -w showed " << row << ":\n"
        << seen.stdout_text;
  }
  EXPECT_NE(log1.find("rejoined 1 parameter server(s)"), std::string::npos) << log1;
  // Sync training with a worker lost and rejoined ends where sync training ends (~88%).
  EXPECT_GE(last["status"]["progress"].value("testAccuracy", 0.0), 0.85) << last.dump(2);
  std::printf(
      "worker trainer killed (and the operator): one pod replaced, every rank back %.1f s "
      "later; test accuracy %.2f%%\n",
      rejoined, 100 * last["status"]["progress"].value("testAccuracy", 0.0));
}

// A parameter-server job's server trainer SIGKILLed mid-run, the operator right after: the gang
// restarts once (a server's state cannot be rebuilt by the workers), every server of the new
// attempt resumes from the servers' checkpoint on the claim, and the run goes on from there to
// Succeeded. Prints how long the job took from the kill to Running again.
TEST_P(OperatorFaultE2e, KilledParameterServerResumesTheRestartedGangFromItsCheckpoint) {
  if (!fs::exists(testutil::kFashionMnistDir))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  apply(fmnistJob("ps-ckpt", 3, "256", 6,
                  "    checkpoint: {path: /ckpt, everySteps: 100}\n    parallelism:\n"
                  "      parameterServer: {servers: 1, consistency: sync}\n",
                  "  backoffLimit: 2\n", "ps-ckpt"));
  const fs::path saved = fs::path(cluster_.dataDir()) / "kubelet/volumes/default/ps-ckpt" /
                         "ps-server-0-of-1" / "ckpt-000000000200.rmck";
  ASSERT_TRUE(eventually(240s, [&] { return fs::exists(saved); }))
      << "no " << saved << "\n"
      << cluster_.get("trainingjob", "ps-ckpt").dump(2);
  const pid_t server = cluster_.findProcess("ringmaster-trainer",
                                            {{"RINGMASTER_JOB", "ps-ckpt"}, {"NODE_RANK", "2"}});
  ASSERT_GT(server, 0) << "no trainer of ps-ckpt-worker-2";
  ASSERT_EQ(kill(server, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_NO_FATAL_FAILURE(killAndRestartOperator());  // and the operator with it
  nlohmann::json again = cluster_.waitForJob("ps-ckpt", 180s, [](const nlohmann::json& j) {
    return j["status"].value("restarts", 0) == 1 &&
           (jobPhase(j) == "Running" || testutil::jobFinished(j));
  });
  const double recovery =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  ASSERT_EQ(again["status"].value("restarts", 0), 1) << again.dump(2);

  nlohmann::json last = cluster_.waitForJob("ps-ckpt", 300s, testutil::jobFinished);
  const std::string log0 = cluster_.podLog("ps-ckpt-worker-0");
  const std::string log2 = cluster_.podLog("ps-ckpt-worker-2");
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << log0 << log2;
  EXPECT_EQ(last["status"].value("restarts", -1), 1) << last.dump(2);
  const int64_t resumed = last["status"]["progress"].value("resumedFromStep", int64_t{-1});
  EXPECT_GE(resumed, 200) << last.dump(2);
  EXPECT_EQ(resumed % 100, 0) << "a checkpoint's step: " << resumed;
  EXPECT_NE(log2.find("resuming from its checkpoint at step " + std::to_string(resumed)),
            std::string::npos)
      << log2;
  EXPECT_NE(log0.find("resumed from the parameter servers' checkpoint at step " +
                      std::to_string(resumed)),
            std::string::npos)
      << log0;
  EXPECT_GE(last["status"]["progress"].value("testAccuracy", 0.0), 0.84) << last.dump(2);
  std::printf(
      "server killed after its checkpoint of step 200: Running again (attempt 1) %.1f s "
      "later, resumed at step %lld\n",
      recovery, static_cast<long long>(resumed));
}

// The operator killed between pod creations never duplicates a rank, here across the hand-over
// of its Lease: each round waits out the killed leader's Lease (3 s), so a few rounds cover it;
// abuse_e2e_test kills an operator without leader election a hundred times for the same check.
TEST_P(OperatorFaultE2e, OperatorKilledWhileCreatingPodsNeverCreatesASecondPodForARank) {
  std::mt19937 random(20261122);  // seeded: the same kill points on every run
  std::uniform_int_distribution<int> delay_ms(0, 400);
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string name = "kill-" + std::to_string(round);
    // Every pod of this job as the API server announces it: name and uid.
    testutil::Process watch({cluster_.kubectlPath(), "get", "pods", "-w", "-v=6", "--no-headers",
                             "-l", "ringmaster.dev/job-name=" + name, "-o",
                             "custom-columns=NAME:.metadata.name,UID:.metadata.uid"},
                            cluster_.env());
    startWatch(watch);
    apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: )" +
          name + R"(}
spec:
  replicas: 4
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "sleep 1"]
  restartPolicy: Never
)");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(random)));  // the kill point
    ASSERT_NO_FATAL_FAILURE(killAndRestartOperator());

    nlohmann::json last = cluster_.waitForJob(name, 120s, testutil::jobFinished);
    std::vector<std::string> pods = objects("pods", name);
    watch.signal(SIGTERM);
    testutil::ProcessResult seen = watch.wait(10s);
    ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2);
    EXPECT_EQ(last["status"].value("restarts", -1), 0);

    std::map<std::string, std::set<std::string>> uids = testutil::uidsByPod(seen.stdout_text);
    std::set<std::string> expected;
    for (int i = 0; i < 4; ++i) expected.insert(name + "-worker-" + std::to_string(i));
    std::set<std::string> names;
    for (const auto& [pod, ids] : uids) {
      names.insert(pod);
      EXPECT_EQ(ids.size(), 1u) << pod << " was created " << ids.size() << " times";
    }
    EXPECT_EQ(names, expected) << seen.stdout_text;
    EXPECT_EQ(pods.size(), 4u);
    (void)cluster_.kubectl({"delete", "tj", name, "--wait=false"});
  }
}

// Gang scheduling without fitting resources, deletion, suspension.
TEST_P(OperatorFaultE2e, UnschedulableGangHoldsNoPodsDeletionCleansUpAndSuspendHoldsPods) {
  // The local node advertises no nvidia.com/gpu (kubelet --gpus defaults to 0).
  apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: greedy}
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "true"]
  resources:
    limits: {nvidia.com/gpu: 1}
  schedulingPolicy: {scheduleTimeoutSeconds: 3}
)");
  apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: doomed}
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  launcher: mpi  # so that it has an SSH Secret to clean up too
  command: ["sleep", "600"]
)");
  apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: held}
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "true"]
  suspend: true
)");

  // greedy: pods are created, never bound, released after the timeout.
  nlohmann::json greedy = cluster_.waitForJob("greedy", 60s, [](const nlohmann::json& j) {
    return hasCondition(j, "Restarting", "True", "Unschedulable");
  });
  ASSERT_TRUE(hasCondition(greedy, "Restarting", "True", "Unschedulable")) << greedy.dump(2);
  EXPECT_TRUE(eventually(30s, [&] { return objects("pods", "greedy").empty(); }))
      << "an unschedulable gang must hold no pod";

  // doomed fits: it runs; deleting it takes its pods, Service, ConfigMap and Secret along.
  nlohmann::json doomed = cluster_.waitForJob(
      "doomed", 120s, [](const nlohmann::json& j) { return jobPhase(j) == "Running"; });
  ASSERT_EQ(jobPhase(doomed), "Running") << doomed.dump(2);
  EXPECT_EQ(objects("pods", "doomed").size(), 2u);
  EXPECT_EQ(objects("service", "doomed", true).size(), 1u);
  EXPECT_EQ(objects("configmap", "doomed-config", true).size(), 1u);
  EXPECT_EQ(objects("secret", "doomed-ssh", true).size(), 1u);
  auto del = cluster_.kubectl({"delete", "tj", "doomed"});
  ASSERT_EQ(del.exit_code, 0) << del.stderr_text;
  EXPECT_TRUE(eventually(60s, [&] { return objects("pods", "doomed").empty(); }));
  EXPECT_TRUE(eventually(30s, [&] { return objects("service", "doomed", true).empty(); }));
  EXPECT_TRUE(eventually(30s, [&] { return objects("configmap", "doomed-config", true).empty(); }));
  EXPECT_TRUE(eventually(30s, [&] { return objects("secret", "doomed-ssh", true).empty(); }));

  // held: suspended, no pods (it was seen long before now), then resumed to Succeeded.
  nlohmann::json held = cluster_.waitForJob(
      "held", 30s, [](const nlohmann::json& j) { return hasCondition(j, "Suspended", "True"); });
  ASSERT_TRUE(hasCondition(held, "Suspended", "True")) << held.dump(2);
  EXPECT_TRUE(objects("pods", "held").empty());
  auto patch = cluster_.kubectl(
      {"patch", "tj", "held", "--type", "merge", "-p", R"({"spec":{"suspend":false}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.stderr_text;
  held = cluster_.waitForJob("held", 120s, testutil::jobFinished);
  EXPECT_EQ(jobPhase(held), "Succeeded") << held.dump(2);
}

}  // namespace
}  // namespace ringmaster

namespace ringmaster {
namespace {

// The API server SIGKILLed and brought back with `local up`: it takes its old port again, so the
// kubelet and operator that outlived it (same pids) reconnect, and a new job runs to the end.
TEST_P(EmbeddedApiServerFaultE2e, ApiServerKilledAndBroughtBackKeepsItsPortAndTheAgentsCarryOn) {
  const std::string dir = cluster_.dataDir();
  const long port = testutil::readNumberFile(dir + "/port");
  const pid_t server = static_cast<pid_t>(testutil::readNumberFile(dir + "/pid"));
  const pid_t kubelet = static_cast<pid_t>(testutil::readNumberFile(dir + "/kubelet.pid"));
  const pid_t op = static_cast<pid_t>(testutil::readNumberFile(dir + "/operator.pid"));
  ASSERT_GT(port, 0) << "`local serve` records its port in <data-dir>/port";
  ASSERT_GT(server, 0);
  // The agents are at work: a job runs to the end before the server goes.
  auto runJob = [&](const std::string& name) {
    apply("apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
          "}\nspec:\n  replicas: 2\n  image: ringmaster/trainer:0.1.0\n"
          "  command: [\"sh\", \"-c\", \"true\"]\n");
    nlohmann::json job = cluster_.waitForJob(name, 120s, testutil::jobFinished);
    EXPECT_EQ(jobPhase(job), "Succeeded")
        << job.dump(2) << testutil::readFile(dir + "/operator.log")
        << testutil::readFile(dir + "/kubelet.log");
  };
  runJob("before-restart");
  ASSERT_EQ(kill(server, SIGKILL), 0);
  ASSERT_TRUE(eventually(30s, [&] { return !liveProcess(server); }));

  ASSERT_EQ(cluster_.start(), "");  // `ringmaster local up` again
  EXPECT_EQ(testutil::readNumberFile(dir + "/port"), port);
  EXPECT_NE(testutil::readNumberFile(dir + "/pid"), server);
  EXPECT_TRUE(liveProcess(kubelet)) << testutil::readFile(dir + "/kubelet.log");
  EXPECT_TRUE(liveProcess(op)) << testutil::readFile(dir + "/operator.log");
  EXPECT_EQ(testutil::readNumberFile(dir + "/kubelet.pid"), kubelet)
      << "the kubelet was not replaced";
  EXPECT_EQ(testutil::readNumberFile(dir + "/operator.pid"), op) << "the operator was not replaced";

  runJob("after-restart");
}

}  // namespace
}  // namespace ringmaster
