#include "local/controllers/workload_plan.h"

#include <gtest/gtest.h>

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;
using std::chrono::seconds;

const TimePoint kNow = std::chrono::system_clock::time_point(seconds(1'800'000'000));

json readyPod(const std::string& name, bool ready,
              const std::string& created = "2026-01-01T00:00:00Z",
              const std::string& ready_since = "2026-01-01T00:00:00Z") {
  return {
      {"metadata", {{"name", name}, {"creationTimestamp", created}, {"labels", {{"app", "x"}}}}},
      {"spec", {{"nodeName", "local"}}},
      {"status",
       {{"phase", "Running"},
        {"conditions", json::array({{{"type", "Ready"},
                                     {"status", ready ? "True" : "False"},
                                     {"lastTransitionTime", ready_since}}})}}}};
}

json replicaSet(int replicas, int min_ready = 0) {
  return {{"metadata",
           {{"name", "web-abc"}, {"namespace", "ns"}, {"uid", "rs-uid"}, {"generation", 3}}},
          {"kind", "ReplicaSet"},
          {"spec",
           {{"replicas", replicas},
            {"minReadySeconds", min_ready},
            {"template",
             {{"metadata", {{"labels", {{"app", "x"}}}}},
              {"spec", {{"containers", json::array()}}}}}}}};
}

TEST(ResolveIntOrPercent, RoundsAsTheDeploymentControllerDoes) {
  struct Case {
    json value;
    int total;
    bool up;
    int want;
  };
  const Case cases[] = {
      {"25%", 1, false, 0}, {"25%", 1, true, 1}, {"25%", 8, false, 2}, {"50%", 3, true, 2},
      {2, 10, false, 2},    {"3", 10, false, 3}, {"x%", 4, false, 7},  {json(), 4, true, 7},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(resolveIntOrPercent(c.value, c.total, c.up, 7), c.want)
        << c.value << " of " << c.total;
  }
}

TEST(MaxUnavailable, FollowsTheStrategy) {
  struct Case {
    json strategy;
    int replicas;
    int want;
  };
  const Case cases[] = {
      {{{"type", "RollingUpdate"},
        {"rollingUpdate", {{"maxUnavailable", "25%"}, {"maxSurge", "25%"}}}},
       4,
       1},
      {{{"type", "RollingUpdate"},
        {"rollingUpdate", {{"maxUnavailable", "25%"}, {"maxSurge", "25%"}}}},
       2,
       0},
      {{{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 0}, {"maxSurge", 0}}}},
       2,
       1},
      {{{"type", "Recreate"}}, 4, 0},
  };
  for (const auto& c : cases) {
    json d = {{"spec", {{"replicas", c.replicas}, {"strategy", c.strategy}}}};
    EXPECT_EQ(maxUnavailable(d), c.want) << c.strategy;
  }
}

TEST(PodTemplateHash, IgnoresItsOwnLabelAndChangesWithTheTemplateAndCollisions) {
  json t = {{"metadata", {{"labels", {{"app", "x"}}}}}, {"spec", {{"containers", json::array()}}}};
  json labelled = t;
  labelled["metadata"]["labels"][kPodTemplateHashLabel] = "abc";
  EXPECT_EQ(podTemplateHash(t, 0), podTemplateHash(labelled, 0));
  EXPECT_NE(podTemplateHash(t, 0), podTemplateHash(t, 1));
  json other = t;
  other["spec"]["containers"].push_back({{"name", "c"}});
  EXPECT_NE(podTemplateHash(t, 0), podTemplateHash(other, 0));
  for (char c : podTemplateHash(t, 0)) EXPECT_EQ(std::string("aeiou").find(c), std::string::npos);
}

TEST(PlanReplicaSet, CreatesRemovesAndCounts) {
  struct Case {
    const char* name;
    int replicas;
    std::vector<json> pods;
    int create;
    std::vector<std::string> remove;
    int ready;
    int available;
  };
  json terminating = readyPod("gone", true);
  terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  json failed = readyPod("failed", false);
  failed["status"]["phase"] = "Failed";
  json unscheduled = readyPod("unscheduled", false);
  unscheduled["spec"].erase("nodeName");
  const Case cases[] = {
      {"empty", 2, {}, 2, {}, 0, 0},
      {"terminating and failed pods do not count",
       2,
       {terminating, failed, readyPod("a", true)},
       1,
       {},
       1,
       1},
      {"surplus: unscheduled first, then not ready, then the younger ready",
       2,
       {readyPod("old", true, "2026-01-01T00:00:00Z"),
        readyPod("young", true, "2026-01-02T00:00:00Z"), readyPod("notready", false), unscheduled},
       0,
       {"unscheduled", "notready"},
       2,
       2},
      {"scale to zero", 0, {readyPod("a", true), readyPod("b", false)}, 0, {"b", "a"}, 1, 1},
  };
  for (const auto& c : cases) {
    const auto plan = planReplicaSet(replicaSet(c.replicas), c.pods, kNow);
    EXPECT_EQ(plan.create, c.create) << c.name;
    EXPECT_EQ(plan.remove, c.remove) << c.name;
    EXPECT_EQ(plan.status["readyReplicas"], c.ready) << c.name;
    EXPECT_EQ(plan.status["availableReplicas"], c.available) << c.name;
    EXPECT_EQ(plan.status["observedGeneration"], 3) << c.name;
  }
}

TEST(PlanReplicaSet, MinReadySecondsDelaysAvailability) {
  // Ready 10 s before kNow: available with minReadySeconds 5, not with 60.
  const std::string since = "2027-01-15T07:59:50Z";
  ASSERT_EQ(std::chrono::system_clock::to_time_t(kNow), 1'800'000'000);
  const std::vector<json> pods = {readyPod("a", true, "2027-01-15T07:00:00Z", since)};
  EXPECT_EQ(planReplicaSet(replicaSet(1, 5), pods, kNow).status["availableReplicas"], 1);
  EXPECT_EQ(planReplicaSet(replicaSet(1, 60), pods, kNow).status["availableReplicas"], 0);
  EXPECT_EQ(planReplicaSet(replicaSet(1, 60), pods, kNow).status["readyReplicas"], 1);
}

TEST(PodFor, IsTheTemplateOwnedByTheReplicaSet) {
  json rs = replicaSet(1);
  const json pod = podFor(rs);
  EXPECT_EQ(pod["metadata"]["generateName"], "web-abc-");
  EXPECT_EQ(pod["metadata"]["namespace"], "ns");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "x");
  ASSERT_EQ(pod["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
  EXPECT_TRUE(pod["metadata"]["ownerReferences"][0]["controller"].get<bool>());
  EXPECT_EQ(pod["spec"], rs["spec"]["template"]["spec"]);
}

json deployment(int replicas, const std::string& image,
                const std::string& strategy = "RollingUpdate") {
  return {
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}, {"namespace", "ns"}, {"uid", "d-uid"}, {"generation", 2}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{"app", "x"}}}}},
        {"strategy",
         {{"type", strategy}, {"rollingUpdate", {{"maxUnavailable", "25%"}, {"maxSurge", "25%"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "x"}}}}},
          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", image}}})}}}}}}}};
}

// The ReplicaSet planDeployment would create for `d`, with `replicas` and a status.
json ownedReplicaSet(const json& d, int replicas, int available, int revision) {
  json rs = *planDeployment(d, {}, kNow).create;
  rs["metadata"]["uid"] = rs["metadata"]["name"];
  rs["metadata"]["generation"] = 1;
  rs["metadata"]["annotations"][kRevisionAnnotation] = std::to_string(revision);
  rs["spec"]["replicas"] = replicas;
  rs["status"] = {{"replicas", replicas},
                  {"readyReplicas", available},
                  {"availableReplicas", available},
                  {"observedGeneration", 1}};
  return rs;
}

TEST(PlanDeployment, CreatesAReplicaSetForANewTemplate) {
  const json d = deployment(2, "img:1");
  const auto plan = planDeployment(d, {}, kNow);
  ASSERT_TRUE(plan.create.has_value());
  const json& rs = *plan.create;
  const std::string hash = rs["metadata"]["labels"][kPodTemplateHashLabel];
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["spec"]["replicas"], 2);
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"][kPodTemplateHashLabel], hash);
  EXPECT_EQ(rs["spec"]["template"]["metadata"]["labels"][kPodTemplateHashLabel], hash);
  EXPECT_EQ(rs["metadata"]["annotations"][kRevisionAnnotation], "1");
  EXPECT_EQ(rs["metadata"]["ownerReferences"][0]["uid"], "d-uid");
  EXPECT_EQ(plan.status["conditions"][0]["type"], "Available");
  EXPECT_EQ(plan.status["conditions"][0]["status"], "False");
  EXPECT_EQ(plan.status["observedGeneration"], 2);
}

TEST(PlanDeployment, RollsToANewTemplateOnceItIsAvailable) {
  const json v1 = deployment(2, "img:1");
  const json v2 = deployment(2, "img:2");
  struct Case {
    const char* name;
    json deployment;
    std::vector<json> replica_sets;
    bool creates;
    std::vector<std::pair<std::string, int>> scale;
    std::string available;
    std::string progressing_reason;
  };
  const json old_full = ownedReplicaSet(v1, 2, 2, 1);
  const json new_starting = ownedReplicaSet(v2, 2, 0, 2);
  const json new_ready = ownedReplicaSet(v2, 2, 2, 2);
  const std::string old_name = old_full["metadata"]["name"];
  const Case cases[] = {
      {"steady", v1, {old_full}, false, {}, "True", "NewReplicaSetAvailable"},
      {"template changed: a new ReplicaSet, the old keeps serving",
       v2,
       {old_full},
       true,
       {},
       "True",
       "NewReplicaSetCreated"},
      {"new not yet available: old untouched",
       v2,
       {old_full, new_starting},
       false,
       {},
       "True",
       "ReplicaSetUpdated"},
      {"new available: old scaled to zero",
       v2,
       {old_full, new_ready},
       false,
       {{old_name, 0}},
       "True",
       "ReplicaSetUpdated"},
      {"Recreate: old scaled down at once",
       deployment(2, "img:2", "Recreate"),
       {old_full, new_starting},
       false,
       {{old_name, 0}},
       "True",
       "ReplicaSetUpdated"},
      {"scaled up",
       deployment(3, "img:1"),
       {old_full},
       false,
       {{old_name, 3}},
       "False",
       "ReplicaSetUpdated"},
  };
  for (const auto& c : cases) {
    const auto plan = planDeployment(c.deployment, c.replica_sets, kNow);
    EXPECT_EQ(plan.create.has_value(), c.creates) << c.name;
    EXPECT_EQ(plan.scale, c.scale) << c.name;
    EXPECT_EQ(plan.status["conditions"][0]["status"], c.available) << c.name;
    EXPECT_EQ(plan.status["conditions"][1]["reason"], c.progressing_reason) << c.name;
  }
}

TEST(PlanDeployment, KeepsRevisionHistoryLimitEmptyReplicaSets) {
  json d = deployment(1, "img:9");
  d["spec"]["revisionHistoryLimit"] = 1;
  std::vector<json> sets;
  for (int i = 1; i <= 3; ++i)
    sets.push_back(ownedReplicaSet(deployment(1, "img:" + std::to_string(i)), 0, 0, i));
  sets.push_back(ownedReplicaSet(d, 1, 1, 4));
  const auto plan = planDeployment(d, sets, kNow);
  ASSERT_EQ(plan.remove.size(), 2u);
  EXPECT_EQ(plan.remove[0], sets[0]["metadata"]["name"]);
  EXPECT_EQ(plan.remove[1], sets[1]["metadata"]["name"]);
}

TEST(PlanDeployment, ConditionTimesStayWhileTheStatusHolds) {
  const json d = deployment(1, "img:1");
  const std::vector<json> sets = {ownedReplicaSet(d, 1, 1, 1)};
  json with_status = d;
  with_status["status"] = planDeployment(d, sets, kNow).status;
  const auto later = planDeployment(with_status, sets, kNow + seconds(30));
  EXPECT_EQ(later.status, with_status["status"]);
}

}  // namespace
}  // namespace ringmaster::local::controllers
