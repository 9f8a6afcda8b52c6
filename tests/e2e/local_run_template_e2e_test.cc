// e2e, spec.template on the user's path: `ringmaster local run` of a job whose pod template adds
// labels, an annotation, a toleration and a nodeSelector, an emptyDir that an init container
// fills and the worker reads, an env var of the worker, and a sidecar that never exits. Every
// rank's program checks what it was given and says so in its log; the job ends Succeeded although
// the sidecars still run (the worker's exit decides), and cleanPodPolicy Running then deletes
// those pods. The job's own label reaches its pods, Service and ConfigMap. Then the two ways a
// bad template is refused: by the API server's schema when kubectl applies it (a restartPolicy),
// and by the operator for what a schema cannot see (a sidecar on the rendezvous port): the job
// ends Failed naming the field. A job whose spec.managedBy names another controller gets no pods
// and no status, and cannot be handed over. Runs on both control planes: on envtest, a real API
// server also validates the pods the operator builds from the template. `kubectl explain` documents
// it. Last, spec.elastic's bounds and immutability, refused by the schema on both API servers.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
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
  name: tpl
  labels: {cost-center: research}
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  command: ["sh", "-c", "test \"$FROM_TEMPLATE\" = yes && test -s /var/tmp/rm-e2e-scratch/prepared && echo \"rank $RANK: template ok\" && sleep 3"]
  restartPolicy: Never
  template:
    metadata:
      labels: {team: vision}
      annotations: {example.com/owner: e2e}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{key: example.com/dedicated, operator: Exists, effect: NoSchedule}]
      volumes:
      - {name: scratch, emptyDir: {}}
      initContainers:
      - name: prepare
        image: busybox
        command: ["sh", "-c", "echo prepared > /var/tmp/rm-e2e-scratch/prepared"]
        volumeMounts: [{name: scratch, mountPath: /var/tmp/rm-e2e-scratch}]
      containers:
      - name: worker
        env: [{name: FROM_TEMPLATE, value: "yes"}]
        volumeMounts: [{name: scratch, mountPath: /var/tmp/rm-e2e-scratch}]
      - name: heartbeat
        image: busybox
        command: ["sh", "-c", "while true; do sleep 1; done"]
)";

class LocalRunTemplateE2e : public ::testing::TestWithParam<testutil::ControlPlane> {};

TEST_P(LocalRunTemplateE2e, TemplateReachesThePodsAndBadOnesAreRefused) {
  if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
    GTEST_SKIP() << why;
  const std::string kubectl = testutil::findKubectl();
  testutil::TempDir dir;
  const std::string manifest = dir.path() + "/tpl.yaml";
  std::ofstream(manifest) << kJob;
  const std::string kubeconfig = dir.path() + "/kubeconfig";
  const std::map<std::string, std::string> env{{"KUBECONFIG", kubeconfig}};
  std::vector<std::string> argv{
      testutil::binaryPath("bin/ringmaster"), "local", "run", manifest, "--data-dir", dir.path()};
  testutil::TempDir envtest_dir;
  testutil::Envtest envtest(envtest_dir.path());
  if (GetParam() == testutil::ControlPlane::kEnvtest) {
    ASSERT_EQ(envtest.start(), "");
    argv.insert(argv.end(), {"--cluster-kubeconfig", envtest.kubeconfig()});
  }

  testutil::LocalClusterStopper stop_cluster(dir.path());

  testutil::Process run(argv);
  run.start();
  // While it runs: the pods as the API server has them, and rank 0's log.
  nlohmann::json pods;
  std::string log0;
  while (run.running()) {
    if (fs::exists(kubeconfig)) {
      if (pods.empty()) {
        auto got =
            testutil::run({kubectl, "get", "pods", "-l", "team=vision", "-o", "json"}, env, 30s);
        auto list = nlohmann::json::parse(got.stdout_text, nullptr, false);
        if (got.exit_code == 0 && !list.is_discarded() && list["items"].size() == 2) pods = list;
      }
      if (log0.find("template ok") == std::string::npos) {
        log0 =
            testutil::run({kubectl, "logs", "tpl-worker-0", "-c", "worker"}, env, 30s).stdout_text;
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  testutil::ProcessResult result = run.wait(1s);
  const std::string outcome = result.stdout_text + result.stderr_text;
  ASSERT_EQ(result.exit_code, 0) << outcome;
  EXPECT_NE(result.stdout_text.find("Succeeded"), std::string::npos) << outcome;
  EXPECT_NE(log0.find("rank 0: template ok"), std::string::npos) << log0;

  ASSERT_EQ(pods["items"].size(), 2u) << pods.dump();
  for (const auto& pod : pods["items"]) {
    const auto& meta = pod["metadata"];
    EXPECT_EQ(meta["labels"].value("cost-center", ""), "research") << meta.dump();
    EXPECT_EQ(meta["labels"].value("ringmaster.dev/job-name", ""), "tpl");
    EXPECT_EQ(meta["annotations"].value("example.com/owner", ""), "e2e");
    const auto& spec = pod["spec"];
    EXPECT_EQ(spec["nodeSelector"].value("kubernetes.io/os", ""), "linux");
    bool tolerated = false;
    for (const auto& t : spec["tolerations"]) {
      if (t.value("key", "") == "example.com/dedicated") tolerated = true;
    }
    EXPECT_TRUE(tolerated) << spec["tolerations"].dump();
    ASSERT_EQ(spec["containers"].size(), 2u);
    EXPECT_EQ(spec["containers"][0]["name"], "worker");
    EXPECT_EQ(spec["containers"][1]["name"], "heartbeat");
    EXPECT_EQ(spec["initContainers"].size(), 1u);
  }

  // The sidecars kept the pods running past the job's end: cleanPodPolicy Running deletes them.
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    auto got = testutil::run(
        {kubectl, "get", "pods", "-l", "ringmaster.dev/job-name=tpl", "-o", "name"}, env, 30s);
    return got.exit_code == 0 && got.stdout_text.empty();
  })) << "the job's pods are still there";
  auto labelled = testutil::run(
      {kubectl, "get", "services,configmaps", "-l", "cost-center=research", "-o", "name"}, env,
      30s);
  EXPECT_NE(labelled.stdout_text.find("service/tpl"), std::string::npos) << labelled.stdout_text;
  EXPECT_NE(labelled.stdout_text.find("configmap/tpl-config"), std::string::npos)
      << labelled.stdout_text;

  // The template explains itself, down to a toleration's fields.
  auto explain =
      testutil::run({kubectl, "explain", "trainingjob.spec.template.spec.tolerations"}, env, 30s);
  EXPECT_EQ(explain.exit_code, 0) << explain.stderr_text;
  EXPECT_NE(explain.stdout_text.find("Taints the workers tolerate"), std::string::npos)
      << explain.stdout_text;
  EXPECT_NE(explain.stdout_text.find("enum: Exists, Equal"), std::string::npos)
      << explain.stdout_text;

  // A value the operator owns: the schema refuses it as kubectl applies it, naming the field.
  std::string owned = kJob;
  owned.replace(owned.find("name: tpl"), 9, "name: tpl-owned");
  owned.replace(owned.find("    spec:\n"), 10, "    spec:\n      restartPolicy: Always\n");
  std::ofstream(dir.path() + "/owned.yaml") << owned;
  auto refused = testutil::run({kubectl, "apply", "-f", dir.path() + "/owned.yaml"}, env, 30s);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("spec.template.spec.restartPolicy"), std::string::npos)
      << refused.stderr_text;

  // What only the operator sees: a sidecar on the worker's rendezvous port.
  std::string clash = kJob;
  clash.replace(clash.find("name: tpl"), 9, "name: tpl-clash");
  clash.replace(clash.find("        command: [\"sh\", \"-c\", \"while"), 0,
                "        ports: [{containerPort: 29500}]\n");
  std::ofstream(dir.path() + "/clash.yaml") << clash;
  auto applied = testutil::run({kubectl, "apply", "-f", dir.path() + "/clash.yaml"}, env, 30s);
  EXPECT_EQ(applied.exit_code, 0) << applied.stderr_text;
  std::string message;
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    auto got = testutil::run({kubectl, "get", "tj", "tpl-clash", "-o",
                              "jsonpath={.status.phase} {.status.conditions[?(@.type==\"Failed\")]"
                              ".message}"},
                             env, 30s);
    message = got.stdout_text;
    return message.rfind("Failed ", 0) == 0;
  })) << message;
  EXPECT_NE(message.find("spec.template.spec.containers[1].ports[0].containerPort"),
            std::string::npos)
      << message;
  auto clash_pods = testutil::run(
      {kubectl, "get", "pods", "-l", "ringmaster.dev/job-name=tpl-clash", "-o", "name"}, env, 30s);
  EXPECT_EQ(clash_pods.stdout_text, "") << "an invalid job created pods";

  // A job another controller manages (MultiKueue's copy on a management cluster) is left
  // alone, and who manages it cannot change.
  std::string elsewhere = kJob;
  elsewhere.replace(elsewhere.find("name: tpl"), 9, "name: tpl-elsewhere");
  elsewhere.replace(elsewhere.find("  replicas: 2\n"), 0,
                    "  managedBy: kueue.x-k8s.io/multikueue\n");
  std::ofstream(dir.path() + "/elsewhere.yaml") << elsewhere;
  auto queued = testutil::run({kubectl, "apply", "-f", dir.path() + "/elsewhere.yaml"}, env, 30s);
  EXPECT_EQ(queued.exit_code, 0) << queued.stderr_text;
  // The clash job above was reconciled meanwhile: the operator had its chance at this one too.
  std::this_thread::sleep_for(3s);
  auto untouched = testutil::run({kubectl, "get", "tj", "tpl-elsewhere", "-o",
                                  "jsonpath={.status.phase}|{.status.conditions}"},
                                 env, 30s);
  EXPECT_EQ(untouched.stdout_text, "|") << untouched.stderr_text;
  auto none = testutil::run(
      {kubectl, "get", "pods", "-l", "ringmaster.dev/job-name=tpl-elsewhere", "-o", "name"}, env,
      30s);
  EXPECT_EQ(none.stdout_text, "");
  auto moved = testutil::run({kubectl, "patch", "tj", "tpl-elsewhere", "--type=merge", "-p",
                              R"({"spec":{"managedBy":"ringmaster.dev/trainingjob-controller"}})"},
                             env, 30s);
  EXPECT_NE(moved.exit_code, 0);
  EXPECT_NE(moved.stderr_text.find("spec.managedBy is immutable"), std::string::npos)
      << moved.stderr_text;

  // spec.elastic's bounds are the schema's too (the same rules on both API servers), and an
  // elastic policy cannot be added to a job afterwards.
  auto explain_elastic = testutil::run({kubectl, "explain", "trainingjob.spec.elastic"}, env, 30s);
  EXPECT_EQ(explain_elastic.exit_code, 0) << explain_elastic.stderr_text;
  EXPECT_NE(explain_elastic.stdout_text.find("minReplicas"), std::string::npos)
      << explain_elastic.stdout_text;
  const std::vector<std::pair<std::string, std::string>> bad_elastic = {
      {"  elastic: {minReplicas: 3}\n", "minReplicas <= spec.replicas <= maxReplicas"},
      {"  elastic: {minReplicas: 0}\n", "spec.elastic.minReplicas"},
      {"  elastic: {minReplicas: 2, maxReplicas: 1}\n", "spec.elastic.minReplicas must be at most"},
  };
  for (const auto& [policy, wanted] : bad_elastic) {
    std::string bad = kJob;
    bad.replace(bad.find("name: tpl"), 9, "name: tpl-elastic");
    bad.replace(bad.find("  replicas: 2\n"), 0, policy);
    std::ofstream(dir.path() + "/elastic.yaml") << bad;
    auto r = testutil::run({kubectl, "apply", "-f", dir.path() + "/elastic.yaml"}, env, 30s);
    EXPECT_NE(r.exit_code, 0) << policy;
    EXPECT_NE(r.stderr_text.find(wanted), std::string::npos) << policy << r.stderr_text;
  }
  auto made_elastic = testutil::run({kubectl, "patch", "tj", "tpl-elsewhere", "--type=merge", "-p",
                                     R"({"spec":{"elastic":{"minReplicas":1}}})"},
                                    env, 30s);
  EXPECT_NE(made_elastic.exit_code, 0);
  EXPECT_NE(made_elastic.stderr_text.find("spec.elastic is immutable"), std::string::npos)
      << made_elastic.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, LocalRunTemplateE2e,
                         ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
