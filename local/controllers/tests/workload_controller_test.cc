#include "local/controllers/workload_controller.h"

#include <gtest/gtest.h>

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;

ResourceType type(std::string group, std::string resource, std::string kind, bool generation) {
  ResourceType t;
  t.group = std::move(group);
  t.version = "v1";
  t.resource = std::move(resource);
  t.kind = std::move(kind);
  t.builtin = true;
  t.has_status_subresource = true;
  t.tracks_generation = generation;
  return t;
}

class WorkloadControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.registerType(type("", "pods", "Pod", false));
    store_.registerType(type("apps", "deployments", "Deployment", true));
    store_.registerType(type("apps", "replicasets", "ReplicaSet", true));
  }

  void createDeployment(int replicas, const std::string& image) {
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", "web"}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", {{"app", "web"}}}}},
                {"strategy", {{"type", "RollingUpdate"}}},
                {"template",
                 {{"metadata", {{"labels", {{"app", "web"}}}}},
                  {"spec", {{"containers", json::array({{{"name", "c"}, {"image", image}}})}}}}}}}};
    ASSERT_TRUE(store_.create(deployments_, "ns", d).ok());
  }

  void setImage(const std::string& image) {
    ASSERT_TRUE(store_
                    .mutate(deployments_, "ns", "web",
                            [&](json& d) -> std::optional<StatusError> {
                              d["spec"]["template"]["spec"]["containers"][0]["image"] = image;
                              return std::nullopt;
                            })
                    .ok());
  }

  std::vector<json> items(const ResourceKey& key) {
    std::vector<json> out;
    const auto list = store_.list(key, "ns", {});
    for (const auto& i : list.value().items) out.push_back(i->object);
    return out;
  }

  // What a kubelet would write: every pod of `image` Running and Ready.
  void markReady(const std::string& image) {
    for (const auto& pod : items(pods_)) {
      if (pod["spec"]["containers"][0]["image"] != image) continue;
      ASSERT_TRUE(
          store_
              .mutate(pods_, "ns", pod["metadata"]["name"],
                      [](json& p) -> std::optional<StatusError> {
                        p["spec"]["nodeName"] = "local";
                        p["status"] = {
                            {"phase", "Running"},
                            {"conditions",
                             json::array({{{"type", "Ready"},
                                           {"status", "True"},
                                           {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})}};
                        return std::nullopt;
                      })
              .ok());
    }
  }

  json deploymentStatus() {
    return store_.get(deployments_, "ns", "web").value()->object["status"];
  }

  void syncUntilQuiet() {
    for (int i = 0; i < 10 && controller_.sync() > 0; ++i) {
    }
    EXPECT_EQ(controller_.sync(), 0u) << "a pass with nothing to do still wrote";
  }

  const ResourceKey pods_{"", "pods"};
  const ResourceKey deployments_{"apps", "deployments"};
  const ResourceKey replica_sets_{"apps", "replicasets"};
  ObjectStore store_;
  WorkloadController controller_{store_};
};

TEST_F(WorkloadControllerTest, ADeploymentBecomesAvailableWhenItsPodsAreReady) {
  createDeployment(2, "img:1");
  syncUntilQuiet();
  ASSERT_EQ(items(replica_sets_).size(), 1u);
  const auto pods = items(pods_);
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    EXPECT_EQ(p["metadata"]["labels"]["app"], "web");
    EXPECT_TRUE(p["metadata"]["labels"].contains(kPodTemplateHashLabel));
  }
  EXPECT_EQ(deploymentStatus()["conditions"][0]["status"], "False");
  EXPECT_EQ(deploymentStatus()["replicas"], 2);
  EXPECT_EQ(deploymentStatus()["availableReplicas"], 0);

  markReady("img:1");
  syncUntilQuiet();
  const json status = deploymentStatus();
  EXPECT_EQ(status["availableReplicas"], 2);
  EXPECT_EQ(status["readyReplicas"], 2);
  EXPECT_EQ(status["updatedReplicas"], 2);
  EXPECT_EQ(status["observedGeneration"], 1);
  EXPECT_EQ(status["conditions"][0]["status"], "True");
  EXPECT_EQ(status["conditions"][1]["reason"], "NewReplicaSetAvailable");
  EXPECT_FALSE(status.contains("unavailableReplicas"));
}

TEST_F(WorkloadControllerTest, ANewTemplateReplacesThePodsOnceTheNewOnesAreReady) {
  createDeployment(1, "img:1");
  syncUntilQuiet();
  markReady("img:1");
  syncUntilQuiet();

  setImage("img:2");
  syncUntilQuiet();
  ASSERT_EQ(items(replica_sets_).size(), 2u);
  ASSERT_EQ(items(pods_).size(), 2u) << "the old pod serves until the new one is ready";
  EXPECT_EQ(deploymentStatus()["observedGeneration"], 2);

  markReady("img:2");
  syncUntilQuiet();
  const auto pods = items(pods_);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0]["spec"]["containers"][0]["image"], "img:2");
  EXPECT_EQ(deploymentStatus()["conditions"][1]["reason"], "NewReplicaSetAvailable");
  int revision_two = 0;
  for (const auto& rs : items(replica_sets_)) {
    if (rs["spec"]["replicas"] == 1)
      revision_two += rs["metadata"]["annotations"][kRevisionAnnotation] == "2";
  }
  EXPECT_EQ(revision_two, 1);
}

TEST_F(WorkloadControllerTest, ATerminatingReplicaSetCreatesNoPods) {
  createDeployment(1, "img:1");
  syncUntilQuiet();
  const std::string rs = items(replica_sets_)[0]["metadata"]["name"];
  ASSERT_TRUE(store_.remove(pods_, "ns", items(pods_)[0]["metadata"]["name"]).ok());
  ASSERT_TRUE(store_
                  .mutate(replica_sets_, "ns", rs,
                          [](json& r) -> std::optional<StatusError> {
                            r["metadata"]["finalizers"] = json::array({"test/hold"});
                            return std::nullopt;
                          })
                  .ok());
  ASSERT_TRUE(store_.remove(replica_sets_, "ns", rs).ok());
  controller_.sync();
  EXPECT_TRUE(items(pods_).empty());
}

}  // namespace
}  // namespace ringmaster::local::controllers
