// e2e, installing as users do: the official helm installs the chart (helm/ringmaster) into
// `ringmaster local up --no-operator`, and everything a cluster would do for it happens locally.
// helm validates the manifests against /openapi/v2 (protobuf), creates the ServiceAccount, RBAC
// objects, Service (which gets a cluster IP) and the operator Deployment; `--wait` returns once
// the Deployment is Available, which takes the local controllers (Deployment -> ReplicaSet ->
// pods) and the kubelet running both operator pods from the chart's image (its entrypoint),
// in-cluster: KUBERNETES_SERVICE_HOST and a ServiceAccount token from the TokenRequest API. The
// server authorizes that token by the chart's RBAC objects: what the chart grants works, the rest
// is 403 in RBAC's words. A TrainingJob applied then runs to Succeeded under that operator, `helm
// test` passes (its pod runs kubectl in-cluster under its own ServiceAccount) and, with a data set
// path its job cannot read, fails as soon as that job fails, naming why; `helm upgrade` rolls
// the Deployment to a new ReplicaSet, `helm rollback` back to the first, and `helm uninstall`
// leaves nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "local_cluster.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* kNamespace = "ringmaster-system";
constexpr const char* kDeployment = "rm-ringmaster";

std::string jobYaml() {
  return std::string(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata:
  name: under-helm
spec:
  replicas: 2
  image: ringmaster/trainer:0.1.0
  backend: tcp
  trainer:
    model: {type: mlp, hidden: [32]}
    dataset: {name: fashion-mnist, path: )") +
         testutil::kFashionMnistDir + R"(}
    epochs: 1
    maxSteps: 60
    batchSize: 64
  restartPolicy: Never
)";
}

class HelmLocalE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = cluster_.missing(); !why.empty()) GTEST_SKIP() << why;
    if (!testutil::haveFashionMnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
    helm_ = testutil::findHelm();
    ASSERT_FALSE(helm_.empty()) << "helm is not installed (scripts/install-helm installs it)";
    const std::string why = cluster_.start({"--no-operator"});
    ASSERT_EQ(why, "") << why;
    chart_ = std::string(std::getenv("RM_SOURCE_DIR")) + "/helm/ringmaster";
  }

  testutil::ProcessResult helm(std::vector<std::string> args,
                               std::chrono::seconds limit = std::chrono::seconds(300)) {
    args.insert(args.begin(), helm_);
    args.push_back("--namespace=" + std::string(kNamespace));
    return testutil::run(
        args, {{"KUBECONFIG", cluster_.kubeconfig()}, {"HOME", cluster_.dataDir()}}, limit);
  }

  json getJson(std::vector<std::string> args) {
    args.push_back("-o");
    args.push_back("json");
    auto got = cluster_.kubectl(args);
    auto parsed = json::parse(got.stdout_text, nullptr, false);
    if (got.exit_code != 0 || parsed.is_discarded()) {
      ADD_FAILURE() << "kubectl exit " << got.exit_code << ": " << got.stderr_text;
      return json::object();
    }
    return parsed;
  }

  json deployment() { return getJson({"get", "deployment", kDeployment, "-n", kNamespace}); }

  // The operator's ReplicaSets with their replicas, by name.
  std::map<std::string, int> replicaSets() {
    std::map<std::string, int> out;
    const json list = getJson({"get", "replicasets", "-n", kNamespace});
    for (const auto& rs : list["items"]) {
      out[rs["metadata"]["name"]] = rs["spec"].value("replicas", -1);
    }
    return out;
  }

  // Names of the running operator pods, and the ReplicaSet each belongs to.
  std::map<std::string, std::string> runningPods() {
    std::map<std::string, std::string> out;
    const json list =
        getJson({"get", "pods", "-n", kNamespace, "-l", "app.kubernetes.io/component=operator"});
    for (const auto& p : list["items"]) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      if (p["status"].value("phase", "") != "Running") continue;
      out[p["metadata"]["name"]] = p["metadata"]["ownerReferences"][0].value("name", "");
    }
    return out;
  }

  // A token of the chart's ServiceAccount, from the TokenRequest API (as the admin).
  std::string operatorToken() {
    const std::string body = cluster_.dataDir() + "/token-request.json";
    std::ofstream(body) << R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",)"
                        << R"("spec":{"expirationSeconds":600}})";
    auto got = cluster_.kubectl(
        {"create", "--raw",
         "/api/v1/namespaces/" + std::string(kNamespace) + "/serviceaccounts/rm-ringmaster/token",
         "-f", body});
    auto parsed = json::parse(got.stdout_text, nullptr, false);
    if (got.exit_code != 0 || parsed.is_discarded()) {
      ADD_FAILURE() << "TokenRequest: " << got.stderr_text;
      return "";
    }
    return parsed["status"].value("token", "");
  }

  // The chart grants nothing the operator does not call: the API server logs the first time a
  // user is allowed each verb on each resource, and every denial. The operator's account was
  // denied nothing but what this test asked for with its token, and each verb the chart grants
  // it was used in this run or is one of the calls on paths this run does not take.
  void checkGrantsAgainstCalls() {
    const std::string user = "system:serviceaccount:" + std::string(kNamespace) + ":rm-ringmaster";
    std::set<std::string> used;
    std::vector<std::string> denied;
    std::istringstream log(testutil::readFile(cluster_.dataDir() + "/apiserver.log"));
    for (std::string line; std::getline(log, line);) {
      const auto allowed_at = line.find("rbac: allowed " + user + " ");
      if (allowed_at != std::string::npos) {
        std::istringstream words(line.substr(allowed_at + 15 + user.size()));
        std::string verb, resource;
        words >> verb >> resource;
        used.insert(resource + " " + verb);
      }
      if (line.find("rbac: denied " + user + " ") != std::string::npos) denied.push_back(line);
    }
    for (const auto& line : denied) {
      const bool asked =
          line.find("list core/secrets in namespace kube-system") != std::string::npos ||
          line.find("delete coordination.k8s.io/leases in namespace default") != std::string::npos;
      EXPECT_TRUE(asked) << "the chart does not grant what the operator called: " << line;
    }
    EXPECT_TRUE(used.count("core/pods create")) << "the log shows no operator calls";
    // Paths this run does not take: ttlSecondsAfterFinished, a status the operator cannot decode
    // back, an MPI job's Secret, an event repeated, a pod or Service or ConfigMap left by someone
    // else or a gang's second start (read after AlreadyExists), and the admission check behind
    // blockOwnerDeletion; an Experiment's trials and status (no search runs here: the search e2e
    // test runs one).
    const std::set<std::string> elsewhere = {"ringmaster.dev/trainingjobs delete",
                                             "ringmaster.dev/trainingjobs create",
                                             "ringmaster.dev/experiments/status update",
                                             "ringmaster.dev/experiments/finalizers update",
                                             "ringmaster.dev/trainingjobs/status patch",
                                             "ringmaster.dev/trainingjobs/finalizers update",
                                             "core/secrets create",
                                             "core/events patch",
                                             "core/pods get",
                                             "core/services get",
                                             "core/configmaps get",
                                             "networking.k8s.io/networkpolicies get"};
    std::set<std::string> granted;
    for (const auto& [kind, name, ns] :
         {std::tuple<std::string, std::string, std::string>{"clusterrole", "rm-ringmaster", ""},
          {"role", "rm-ringmaster-leader-election", kNamespace}}) {
      std::vector<std::string> args = {"get", kind, name};
      if (!ns.empty()) args.insert(args.end(), {"-n", ns});
      const json role = getJson(args);
      ASSERT_TRUE(role.contains("rules")) << kind << " " << name;
      for (const auto& rule : role["rules"]) {
        for (const auto& group : rule["apiGroups"]) {
          for (const auto& resource : rule["resources"]) {
            for (const auto& verb : rule["verbs"]) {
              const std::string g =
                  group.get<std::string>().empty() ? "core" : group.get<std::string>();
              granted.insert(g + "/" + resource.get<std::string>() + " " + verb.get<std::string>());
            }
          }
        }
      }
    }
    for (const auto& grant : granted) {
      EXPECT_TRUE(used.count(grant) || elsewhere.count(grant))
          << "the chart grants " << grant << ", which the operator never called";
    }
    std::string seen;
    for (const auto& u : used) seen += " [" + u + "]";
    std::cout << "operator calls seen:" << seen << std::endl;
  }

  bool available(int generation) {
    const json d = deployment();
    const json& s = d.value("status", json::object());
    return s.value("observedGeneration", 0) >= generation && s.value("availableReplicas", 0) == 2 &&
           s.value("updatedReplicas", 0) == 2 && s.value("replicas", 0) == 2;
  }

  testutil::LocalCluster cluster_;
  std::string helm_;
  std::string chart_;
};

TEST_F(HelmLocalE2e, InstallRunTestUpgradeRollbackUninstall) {
  const std::string dataset = "--set=helmTest.datasetPath=" + testutil::kFashionMnistDir;
  auto install =
      helm({"install", "rm", chart_, "--create-namespace", "--wait", "--timeout=240s", dataset});
  ASSERT_EQ(install.exit_code, 0) << install.stdout_text << install.stderr_text;

  // --wait meant something. Helm waited for the Deployment's newest ReplicaSet to have both its
  // pods ready, which it must show now; the Deployment's own status follows from the ReplicaSet's
  // (its controller's next pass, driven by the ReplicaSet's change), so that one is waited for.
  const json sets = getJson({"get", "replicasets", "-n", kNamespace});
  ASSERT_EQ(sets["items"].size(), 1u) << sets.dump();
  EXPECT_EQ(sets["items"][0]["status"].value("readyReplicas", 0), 2) << sets.dump();
  EXPECT_TRUE(testutil::eventually(30s, [&] { return available(1); })) << deployment().dump();
  const auto pods = runningPods();
  ASSERT_EQ(pods.size(), 2u) << cluster_.kubectl({"get", "pods", "-A", "-o", "wide"}).stdout_text;
  const auto first_sets = replicaSets();
  ASSERT_EQ(first_sets.size(), 1u);
  const std::string first_rs = first_sets.begin()->first;
  for (const auto& [pod, owner] : pods) EXPECT_EQ(owner, first_rs) << pod;
  const auto log = cluster_.kubectl({"logs", "-n", kNamespace, pods.begin()->first});
  EXPECT_NE(log.stdout_text.find("(in-cluster)"), std::string::npos) << log.stdout_text;
  const json service = getJson({"get", "service", "rm-ringmaster-metrics", "-n", kNamespace});
  EXPECT_FALSE(service["spec"].value("clusterIP", "").empty()) << service.dump();

  // RBAC holds: the operator's ServiceAccount may do what the chart grants and nothing else.
  const std::string token = operatorToken();
  ASSERT_FALSE(token.empty());
  auto granted = cluster_.kubectl({"--token=" + token, "get", "trainingjobs", "-A"});
  EXPECT_EQ(granted.exit_code, 0) << granted.stderr_text;
  auto refused = cluster_.kubectl({"--token=" + token, "get", "secrets", "-n", "kube-system"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find(
                "secrets is forbidden: User \"system:serviceaccount:" + std::string(kNamespace) +
                ":rm-ringmaster\" cannot list resource \"secrets\""),
            std::string::npos)
      << refused.stderr_text;
  auto not_here = cluster_.kubectl(
      {"--token=" + token, "delete", "lease", "anything", "-n", "default", "--ignore-not-found"});
  EXPECT_NE(not_here.stderr_text.find("forbidden"), std::string::npos)
      << "the leader-election Role is for the release namespace only: " << not_here.stderr_text;

  // A job runs to Succeeded under the chart's operator (no other runs: --no-operator).
  ASSERT_EQ(cluster_.apply(jobYaml()).exit_code, 0);
  const json job = cluster_.waitForJob("under-helm", 300s, testutil::jobFinished);
  ASSERT_EQ(testutil::jobPhase(job), "Succeeded") << job.dump();

  auto test = helm({"test", "rm", "--timeout=300s"});
  EXPECT_EQ(test.exit_code, 0) << test.stdout_text << test.stderr_text;

  // A test job that fails fails `helm test` when it ends, not at the timeout, and is kept with
  // its reason. (An upgrade of the test's values only: the operator's pods stay as they are.)
  auto no_data =
      helm({"upgrade", "rm", chart_, "--reuse-values",
            "--set=helmTest.datasetPath=/nonexistent/fashion-mnist", "--wait", "--timeout=240s"});
  ASSERT_EQ(no_data.exit_code, 0) << no_data.stdout_text << no_data.stderr_text;
  const auto test_start = std::chrono::steady_clock::now();
  auto failing = helm({"test", "rm", "--timeout=300s"});
  const auto test_took = std::chrono::steady_clock::now() - test_start;
  EXPECT_NE(failing.exit_code, 0) << failing.stdout_text << failing.stderr_text;
  EXPECT_LT(test_took, 240s) << "helm test waited for its timeout: " << failing.stderr_text;
  auto why = cluster_.kubectl({"get", "tj", "rm-ringmaster-test", "-n", kNamespace, "-o",
                               "jsonpath={.status.conditions[?(@.type==\"Failed\")].message}"});
  EXPECT_NE(why.stdout_text.find("/nonexistent/fashion-mnist"), std::string::npos)
      << why.stdout_text << why.stderr_text;
  // Helm keeps a failed test's hooks for the user to read; having read them, the user removes
  // them (uninstall does not).
  auto removed =
      cluster_.kubectl({"delete", "trainingjob,pod,role,rolebinding,serviceaccount", "-n",
                        kNamespace, "-l", "app.kubernetes.io/component=test", "--wait=true"});
  EXPECT_EQ(removed.exit_code, 0) << removed.stderr_text;

  // An upgrade that changes the pod template rolls to a second ReplicaSet.
  auto upgrade = helm({"upgrade", "rm", chart_, "--reuse-values", "--set=logLevel=debug", "--wait",
                       "--timeout=240s"});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.stdout_text << upgrade.stderr_text;
  ASSERT_TRUE(testutil::eventually(120s, [&] {
    const auto sets = replicaSets();
    const auto now = runningPods();
    return available(2) && sets.size() == 2 && sets.at(first_rs) == 0 && now.size() == 2 &&
           now.begin()->second != first_rs;
  })) << deployment().dump();

  // Rollback: the first template again, so its ReplicaSet again.
  auto rollback = helm({"rollback", "rm", "1", "--wait", "--timeout=240s"});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.stdout_text << rollback.stderr_text;
  ASSERT_TRUE(testutil::eventually(120s, [&] {
    const auto now = runningPods();
    return available(3) && replicaSets().at(first_rs) == 2 && now.size() == 2 &&
           now.begin()->second == first_rs && now.rbegin()->second == first_rs;
  })) << deployment().dump();

  checkGrantsAgainstCalls();

  auto uninstall = helm({"uninstall", "rm", "--wait", "--timeout=240s"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.stdout_text << uninstall.stderr_text;
  EXPECT_TRUE(testutil::eventually(
      60s,
      [&] {
        const auto left = cluster_.kubectl(
            {"get", "deployments,replicasets,pods,services,roles,rolebindings,secrets", "-n",
             kNamespace, "-o", "name"});
        return left.exit_code == 0 && left.stdout_text.empty();
      }))
      << cluster_
             .kubectl({"get", "deployments,replicasets,pods,services,roles,rolebindings,secrets",
                       "-n", kNamespace, "-o", "name"})
             .stdout_text;
  const auto cluster_scoped = cluster_.kubectl({"get", "clusterroles,clusterrolebindings", "-l",
                                                "app.kubernetes.io/instance=rm", "-o", "name"});
  EXPECT_EQ(cluster_scoped.stdout_text, "");
}

}  // namespace
}  // namespace ringmaster
