// e2e under `ringmaster local up`, and again on a real control plane (envtest) that the local
// kubelet and operator join, driven with real kubectl:
//   - a table of bad TrainingJobs, each rejected naming the field: by the CRD schema (kubectl
//     apply fails with the API server's 422) or by the operator (Failed, reason InvalidSpec);
//   - two operators at once: exactly one holds the Lease and reconciles, every rank gets exactly
//     one pod, and when the leader is SIGKILLed the other takes over and runs the next job;
//   - a job that cannot be read, a pod that cannot start, and (envtest only: quota is admission
//     the embedded server does not run) a pod the ResourceQuota refuses.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
using testutil::eventually;
using testutil::jobPhase;
using testutil::liveProcess;

constexpr char kLeading[] = "leading: starting the controller";

// The flags `local up` gives its operator (local/apiserver/local_command.cc startAgents).
std::vector<std::string> operatorArgv(const testutil::LocalCluster& cluster,
                                      std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{testutil::binaryPath("bin/ringmaster-operator"),
                                "--kubeconfig",
                                cluster.kubeconfig(),
                                "--bind-address",
                                "127.0.0.1",
                                "--metrics-port",
                                "0",
                                "--health-port",
                                "0",
                                "--leader-elect-lease-duration",
                                "4",
                                "--leader-elect-renew-deadline",
                                "3",
                                "--leader-elect-retry-period",
                                "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// "as <identity> (" from the operator's "leader election on Lease ns/name as <identity> (...)".
std::string identityIn(const std::string& log) {
  const std::string marker = "leader election on Lease ";
  size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  at = log.find(" as ", at);
  if (at == std::string::npos) return "";
  const size_t end = log.find(' ', at + 4);
  return log.substr(at + 4, end == std::string::npos ? std::string::npos : end - at - 4);
}

class OperatorE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }

  std::string localUpOperatorLog() const {
    return testutil::readFile(cluster_.dataDir() + "/operator.log");
  }
  pid_t localUpOperatorPid() const {
    std::ifstream in(cluster_.dataDir() + "/operator.pid");
    pid_t pid = 0;
    in >> pid;
    return pid;
  }
  // Stops the operator `local up` started (SIGTERM: it releases the Lease at once).
  void stopLocalUpOperator(int sig = SIGTERM) {
    const pid_t pid = localUpOperatorPid();
    ASSERT_GT(pid, 0) << "no operator.pid";
    ASSERT_EQ(kill(pid, sig), 0);
    ASSERT_TRUE(eventually(30s, [&] { return !liveProcess(pid); }));
    std::filesystem::remove(cluster_.dataDir() + "/operator.pid");  // never signal a reused pid
  }

  // Applies `yaml` with a pods watch running; returns every (pod name -> uids) the API server
  // announced for job `name` until it finished, and the job's last state.
  std::pair<std::map<std::string, std::set<std::string>>, nlohmann::json> runWatched(
      const std::string& name, const std::string& yaml) {
    testutil::Process watch({cluster_.kubectlPath(), "get", "pods", "-w", "-v=6", "--no-headers",
                             "-l", "ringmaster.dev/job-name=" + name, "-o",
                             "custom-columns=NAME:.metadata.name,UID:.metadata.uid"},
                            cluster_.env());
    watch.start();
    EXPECT_TRUE(eventually(
        30s, [&] { return watch.stderrSoFar().find("watch=true") != std::string::npos; }));
    testutil::ProcessResult applied = cluster_.apply(yaml);
    EXPECT_EQ(applied.exit_code, 0) << applied.stderr_text;
    nlohmann::json last = cluster_.waitForJob(name, 120s, testutil::jobFinished);
    watch.signal(SIGTERM);
    testutil::ProcessResult seen = watch.wait(10s);
    std::map<std::string, std::set<std::string>> uids = testutil::uidsByPod(seen.stdout_text);
    return {uids, last};
  }

  testutil::LocalCluster cluster_{GetParam()};
};

std::string sleeperJob(const std::string& name, int replicas) {
  return "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: " + name +
         "}\nspec:\n  replicas: " + std::to_string(replicas) +
         "\n  image: ringmaster/trainer:0.1.0\n  command: [\"sh\", \"-c\", \"sleep 1\"]\n"
         "  restartPolicy: Never\n";
}

// A spec the operator cannot run is refused with the field named.
TEST_P(OperatorE2e, BadSpecsAreRejectedNamingTheField) {
  // An operator without a default image, so that a job naming none is invalid.
  ASSERT_NO_FATAL_FAILURE(stopLocalUpOperator());
  testutil::Process op(operatorArgv(cluster_, {"--trainer-image="}));
  op.start();

  struct Case {
    std::string name;
    std::string spec;   // YAML lines under `spec:`
    bool by_schema;     // 422 from kubectl apply; else Failed/InvalidSpec from the operator
    std::string field;  // what the message must name
  };
  const std::string image = "  image: ringmaster/trainer:0.1.0\n";
  const std::vector<Case> cases = {
      {"zero", "  replicas: 0\n" + image, true, "spec.replicas"},
      {"negative", "  replicas: -1\n" + image, true, "spec.replicas"},
      {"huge", "  replicas: 1000000\n" + image, true, "spec.replicas"},
      {std::string(60, 'a'), "  replicas: 2\n" + image, true, "metadata.name is too long"},
      {"backend", "  replicas: 1\n  backend: infiniband\n" + image, true, "spec.backend"},
      {"deadline", "  replicas: 1\n  activeDeadlineSeconds: -5\n" + image, true,
       "spec.activeDeadlineSeconds"},
      {"unknown", "  replicas: 1\n  replicaz: 2\n" + image, true, "replicaz"},
      {"noimage", "  replicas: 1\n", false, "spec.image"},
      {"reserved", "  replicas: 1\n  env:\n  - {name: RANK, value: \"7\"}\n" + image, false,
       "spec.env[0].name"},
      {"ps-stale",
       "  replicas: 3\n  trainer:\n    parallelism:\n      parameterServer: {servers: 1, "
       "consistency: bounded, staleness: -1}\n" +
           image,
       true, "spec.trainer.parallelism.parameterServer.staleness"},
      {"ps-alone",
       "  replicas: 1\n  trainer:\n    parallelism:\n      parameterServer: {servers: 1}\n" + image,
       false, "spec.trainer.parallelism.parameterServer"},
      {"ps-mpi",
       "  replicas: 2\n  launcher: mpi\n  trainer:\n    parallelism:\n      parameterServer: "
       "{servers: 1}\n" +
           image,
       false, "spec.launcher"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("job " + c.name);
    const std::string yaml =
        "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
        "metadata: {name: " +
        c.name + "}\nspec:\n" + c.spec;
    testutil::ProcessResult applied = cluster_.apply(yaml);
    if (c.by_schema) {
      EXPECT_NE(applied.exit_code, 0) << yaml;
      EXPECT_NE(applied.stderr_text.find(c.field), std::string::npos) << applied.stderr_text;
      EXPECT_TRUE(cluster_.get("trainingjob", c.name).empty()) << "stored although invalid";
      continue;
    }
    ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
    nlohmann::json job = cluster_.waitForJob(
        c.name, 60s, [](const nlohmann::json& j) { return jobPhase(j) == "Failed"; });
    ASSERT_EQ(jobPhase(job), "Failed") << job.dump(2) << op.stderrSoFar();
    bool named = false;
    for (const auto& cond : job["status"]["conditions"]) {
      if (cond.value("type", "") == "Failed" && cond.value("reason", "") == "InvalidSpec" &&
          cond.value("message", "").find(c.field) != std::string::npos) {
        named = true;
      }
    }
    EXPECT_TRUE(named) << job.dump(2);
    testutil::ProcessResult pods =
        cluster_.kubectl({"get", "pods", "-o", "name", "-l", "ringmaster.dev/job-name=" + c.name});
    EXPECT_EQ(pods.stdout_text, "") << "an invalid job must create no pod";
  }
  op.signal(SIGTERM);
  EXPECT_EQ(op.wait(30s).exit_code, 0);
}

// Two operators at once never both reconcile.
TEST_P(OperatorE2e, TwoOperatorsNeverBothReconcileAndTheStandbyTakesOver) {
  // `local up` started one (it leads); start a second.
  ASSERT_TRUE(eventually(30s, [&] {
    return localUpOperatorLog().find(kLeading) != std::string::npos;
  })) << localUpOperatorLog();
  testutil::Process second(operatorArgv(cluster_));
  second.start();
  ASSERT_TRUE(eventually(30s, [&] { return !identityIn(second.stderrSoFar()).empty(); }))
      << second.stderrSoFar();
  const std::string first_id = identityIn(localUpOperatorLog());
  const std::string second_id = identityIn(second.stderrSoFar());
  ASSERT_FALSE(first_id.empty());
  ASSERT_NE(first_id, second_id);

  // A job while both run: exactly one pod per rank, one reconciler.
  auto [uids, last] = runWatched("pair", sleeperJob("pair", 3));
  ASSERT_EQ(jobPhase(last), "Succeeded") << last.dump(2);
  EXPECT_EQ(uids.size(), 3u);
  for (const auto& [pod, ids] : uids) {
    EXPECT_EQ(ids.size(), 1u) << pod << " was created " << ids.size() << " times";
  }
  EXPECT_EQ(second.stderrSoFar().find(kLeading), std::string::npos)
      << "the standby reconciled while the leader held the Lease:\n"
      << second.stderrSoFar();
  testutil::ProcessResult holder = cluster_.kubectl(
      {"get", "lease", "ringmaster-operator", "-o", "jsonpath={.spec.holderIdentity}"});
  EXPECT_EQ(holder.stdout_text, first_id);

  // The leader dies without releasing the Lease: the standby takes over once it expires.
  ASSERT_NO_FATAL_FAILURE(stopLocalUpOperator(SIGKILL));
  EXPECT_TRUE(eventually(30s, [&] {
    return second.stderrSoFar().find(kLeading) != std::string::npos;
  })) << second.stderrSoFar();
  holder = cluster_.kubectl(
      {"get", "lease", "ringmaster-operator", "-o", "jsonpath={.spec.holderIdentity}"});
  EXPECT_EQ(holder.stdout_text, second_id);
  auto [after_uids, after] = runWatched("after", sleeperJob("after", 2));
  EXPECT_EQ(jobPhase(after), "Succeeded") << after.dump(2) << second.stderrSoFar();
  EXPECT_EQ(after_uids.size(), 2u);
  second.signal(SIGTERM);
  EXPECT_EQ(second.wait(30s).exit_code, 0);
}

// What the schema lets through but the operator cannot read fails that job alone.
TEST_P(OperatorE2e, AJobTheOperatorCannotReadFailsAloneNamingTheField) {
  const std::string bad =
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: unreadable}\n"
      "spec:\n  replicas: 1\n  image: ringmaster/trainer:0.1.0\n"
      "  command: [\"sh\", \"-c\", \"sleep 1\"]\n  resources: {limits: {cpu: abc}}\n";
  // Today's schema refuses it, and an int32 past its range.
  testutil::ProcessResult refused = cluster_.apply(bad);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("spec.resources.limits.cpu"), std::string::npos)
      << refused.stderr_text;
  refused = cluster_.apply(
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: overflow}\n"
      "spec:\n  replicas: 1\n  image: ringmaster/trainer:0.1.0\n  trainer:\n"
      "    dataset: {name: fashion-mnist, path: /data}\n    checkpoint: {everySteps: "
      "3000000000}\n");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("spec.trainer.checkpoint.everySteps"), std::string::npos)
      << refused.stderr_text;

  // A server whose (older) schema had no quantity pattern stores it.
  nlohmann::json crd = cluster_.get("crd", "trainingjobs.ringmaster.dev");
  ASSERT_FALSE(crd.empty());
  crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
     ["resources"]["properties"]["limits"]["additionalProperties"]
         .erase("pattern");
  crd["metadata"].erase("resourceVersion");
  ASSERT_EQ(cluster_.apply(crd.dump()).exit_code, 0);
  ASSERT_TRUE(eventually(30s, [&] { return cluster_.apply(bad).exit_code == 0; }))
      << cluster_.apply(bad).stderr_text;

  // The other jobs run; that one fails, naming the field, with a Warning Event.
  auto [uids, last] = runWatched("readable", sleeperJob("readable", 2));
  EXPECT_EQ(jobPhase(last), "Succeeded") << last.dump(2) << localUpOperatorLog();
  nlohmann::json failed = cluster_.waitForJob(
      "unreadable", 60s, [](const nlohmann::json& j) { return jobPhase(j) == "Failed"; });
  ASSERT_EQ(jobPhase(failed), "Failed") << failed.dump(2) << localUpOperatorLog();
  bool named = false;
  for (const auto& cond : failed["status"]["conditions"]) {
    named |= cond.value("type", "") == "Failed" && cond.value("reason", "") == "InvalidSpec" &&
             cond.value("message", "").find("spec.resources.limits.cpu") != std::string::npos;
  }
  EXPECT_TRUE(named) << failed.dump(2);
  testutil::ProcessResult events = cluster_.kubectl(
      {"get", "events", "--field-selector", "involvedObject.name=unreadable,reason=InvalidSpec",
       "-o", "jsonpath={.items[*].type}"});
  EXPECT_NE(events.stdout_text.find("Warning"), std::string::npos)
      << events.stdout_text << events.stderr_text;
  testutil::ProcessResult pods =
      cluster_.kubectl({"get", "pods", "-o", "name", "-l", "ringmaster.dev/job-name=unreadable"});
  EXPECT_EQ(pods.stdout_text, "");
}

// A pod its kubelet cannot start: `kubectl get tj` says why, the condition and a Warning Event
// say the kubelet's words.
TEST_P(OperatorE2e, APodThatCannotStartShowsWhyOnTheJob) {
  testutil::ProcessResult applied = cluster_.apply(
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: stuck}\n"
      "spec:\n  replicas: 1\n  image: ringmaster/trainer:0.1.0\n"
      "  command: [\"sh\", \"-c\", \"sleep 1\"]\n  env:\n  - name: LR\n"
      "    valueFrom: {configMapKeyRef: {name: missing-settings, key: lr}}\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  auto reasonOf = [](const nlohmann::json& j) {
    const auto status = j.is_object() ? j.find("status") : j.end();
    return status != j.end() && status->is_object() ? status->value("reason", "") : "";
  };
  nlohmann::json job = cluster_.waitForJob("stuck", 60s, [&](const nlohmann::json& j) {
    return reasonOf(j) == "CreateContainerConfigError";
  });
  ASSERT_EQ(reasonOf(job), "CreateContainerConfigError") << job.dump(2) << localUpOperatorLog();
  EXPECT_EQ(jobPhase(job), "Pending");
  bool named = false;
  for (const auto& cond : job["status"]["conditions"]) {
    named |= cond.value("type", "") == "Running" &&
             cond.value("reason", "") == "CreateContainerConfigError" &&
             cond.value("message", "").find("missing-settings") != std::string::npos;
  }
  EXPECT_TRUE(named) << job.dump(2);
  testutil::ProcessResult row = cluster_.kubectl({"get", "tj", "stuck", "--no-headers"});
  EXPECT_NE(row.stdout_text.find("Pending   CreateContainerConfigError"), std::string::npos)
      << row.stdout_text;
  testutil::ProcessResult events =
      cluster_.kubectl({"get", "events", "--field-selector",
                        "involvedObject.kind=TrainingJob,involvedObject.name=stuck,reason="
                        "CreateContainerConfigError",
                        "-o", "jsonpath={.items[*].type}"});
  EXPECT_NE(events.stdout_text.find("Warning"), std::string::npos)
      << events.stdout_text << events.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, OperatorE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

// Quota is admission that only a real API server runs (the embedded one has none): envtest with
// ResourceQuota admission, the local kubelet and the operator.
class QuotaE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    const std::string why = cluster_.start();
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(why, "");
  }
  std::string localUpOperatorLog() const {
    return testutil::readFile(cluster_.dataDir() + "/operator.log");
  }
  testutil::LocalCluster cluster_{GetParam(), {{"ADMISSION", "ResourceQuota"}}};
};

// A pod the quota refuses shows on the job (condition, reason column, Warning Event); the
// operator retries with backoff, not in a loop; once the quota allows, the gang is created.
TEST_P(QuotaE2e, APodRefusedByQuotaShowsOnTheJobWithBackoffAndTheJobGoesOnWhenAllowed) {
  testutil::ProcessResult quota = cluster_.apply(
      "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: two-few, namespace: default}\n"
      "spec: {hard: {pods: \"1\"}}\n");
  ASSERT_EQ(quota.exit_code, 0) << quota.stderr_text;
  // Admission refuses every pod until the quota controller has filled in the status.
  ASSERT_TRUE(eventually(60s, [&] {
    return cluster_
               .kubectl({"get", "resourcequota", "two-few", "-o", "jsonpath={.status.hard.pods}"})
               .stdout_text == "1";
  }));
  const auto applied_at = std::chrono::steady_clock::now();
  testutil::ProcessResult applied = cluster_.apply(
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: quota}\n"
      "spec:\n  replicas: 2\n  image: ringmaster/trainer:0.1.0\n"
      "  command: [\"sh\", \"-c\", \"sleep 600\"]\n");
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  auto reasonOf = [](const nlohmann::json& j) {
    const auto status = j.is_object() ? j.find("status") : j.end();
    return status != j.end() && status->is_object() ? status->value("reason", "") : "";
  };
  nlohmann::json job = cluster_.waitForJob(
      "quota", 60s, [&](const nlohmann::json& j) { return reasonOf(j) == "FailedCreatePod"; });
  ASSERT_EQ(reasonOf(job), "FailedCreatePod") << job.dump(2) << localUpOperatorLog();
  bool named = false;
  for (const auto& cond : job["status"]["conditions"]) {
    named |= cond.value("type", "") == "Created" && cond.value("status", "") == "False" &&
             cond.value("message", "").find("exceeded quota: two-few") != std::string::npos;
  }
  EXPECT_TRUE(named) << job.dump(2);
  testutil::ProcessResult row = cluster_.kubectl({"get", "tj", "quota", "--no-headers"});
  EXPECT_NE(row.stdout_text.find("FailedCreatePod"), std::string::npos) << row.stdout_text;
  EXPECT_TRUE(eventually(30s, [&] {
    return cluster_
               .kubectl({"get", "events", "--field-selector",
                         "involvedObject.kind=TrainingJob,involvedObject.name=quota,reason="
                         "FailedCreatePod",
                         "-o", "jsonpath={.items[*].type}"})
               .stdout_text.find("Warning") != std::string::npos;
  }));

  // Backoff: ten seconds of exponential retries from 5 ms are about a dozen refused creates; a
  // retry loop would be hundreds.
  std::this_thread::sleep_until(applied_at + 10s);
  const int refused = testutil::countLines(localUpOperatorLog(), "exceeded quota: two-few");
  std::cout << "quota: " << refused << " refused pod creates in the job's first 10 s\n";
  EXPECT_GE(refused, 1);
  EXPECT_LE(refused, 20) << localUpOperatorLog();

  ASSERT_EQ(cluster_.kubectl({"delete", "resourcequota", "two-few"}).exit_code, 0);
  nlohmann::json running = cluster_.waitForJob(
      "quota", 90s, [&](const nlohmann::json& j) { return jobPhase(j) == "Running"; });
  EXPECT_EQ(jobPhase(running), "Running") << running.dump(2) << localUpOperatorLog();
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, QuotaE2e,
                         ::testing::Values(testutil::ControlPlane::kEnvtest),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
