// What keeps strangers away from a job's workers: the rendezvous store secret new worker pods
// get (their attempt's, copied from a sibling), and the job's NetworkPolicy.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "operator/builders.h"
#include "operator/tests/test_jobs.h"

namespace ringmaster::op {
namespace {

std::shared_ptr<const WorkerPod> pod(int attempt, const std::string& secret) {
  return std::make_shared<const WorkerPod>(workerPodOf(
      buildWorkerPod(testing::defaulted(testing::makeJob("j", 2)), 0, attempt, secret)));
}

TEST(StoreSecret, NewPodsTakeTheSecretOfTheirAttemptsPods) {
  struct Case {
    std::string name;
    std::vector<std::shared_ptr<const WorkerPod>> pods;
    int attempt;
    std::optional<std::string> want;
  };
  const std::vector<Case> cases = {
      {"no pods: a new secret", {}, 0, std::nullopt},
      {"a sibling of the same attempt", {pod(3, "s3")}, 3, "s3"},
      {"only pods of an earlier attempt", {pod(2, "s2")}, 3, std::nullopt},
      {"the attempt's pod among older ones", {pod(2, "s2"), nullptr, pod(3, "s3")}, 3, "s3"},
      {"a pod without a secret is skipped", {pod(3, ""), pod(3, "s3")}, 3, "s3"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(storeSecretForAttempt(c.pods, c.attempt), c.want) << c.name;
  }
}

TEST(StoreSecret, NewSecretsAreLongAndUnpredictable) {
  core::Result<std::string> a = newStoreSecret();
  core::Result<std::string> b = newStoreSecret();
  ASSERT_TRUE(a.ok()) << a.status().toString();
  ASSERT_TRUE(b.ok()) << b.status().toString();
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

TEST(StoreSecret, TheWorkerPodCarriesItInItsEnvironment) {
  const kube::Pod p = buildWorkerPod(testing::defaulted(testing::makeJob("j", 2)), 0, 0, "abc");
  EXPECT_EQ(storeSecretOf(p), "abc");
  EXPECT_EQ(workerPodOf(p).store_secret, "abc");
  bool found = false;
  for (const kube::EnvVar& e : p.spec.containers[0].env) {
    found |= e.name == "RINGMASTER_STORE_SECRET" && e.value == "abc";
  }
  EXPECT_TRUE(found);
}

TEST(NetworkPolicy, AdmitsTheJobsOwnPodsAndTheMetricsPortOnly) {
  kube::TrainingJob job = testing::defaulted(testing::makeJob("fmnist", 2));
  const nlohmann::json np = kube::encode(buildNetworkPolicy(job));
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["kind"], "NetworkPolicy");
  EXPECT_EQ(np["metadata"]["name"], "fmnist-workers");
  EXPECT_EQ(np["metadata"]["namespace"], "default");
  EXPECT_EQ(np["metadata"]["ownerReferences"][0]["uid"], job.metadata.uid);
  const nlohmann::json job_pods = {{"matchLabels", {{"ringmaster.dev/job-name", "fmnist"}}}};
  EXPECT_EQ(np["spec"]["podSelector"], job_pods);
  // The selector matches the job's worker pods.
  const kube::Pod worker = buildWorkerPod(job, 1, 0, "s");
  EXPECT_EQ(worker.metadata.labels.at("ringmaster.dev/job-name"), "fmnist");
  EXPECT_EQ(np["spec"]["policyTypes"], nlohmann::json::array({"Ingress"}));
  const nlohmann::json want_ingress =
      nlohmann::json::array({{{"from", {{{"podSelector", job_pods}}}}},
                             {{"ports", {{{"protocol", "TCP"}, {"port", metricsPort(job)}}}}}});
  EXPECT_EQ(np["spec"]["ingress"], want_ingress) << np["spec"]["ingress"].dump();
}

}  // namespace
}  // namespace ringmaster::op
