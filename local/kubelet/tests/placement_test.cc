// Which pods the local node takes before resources are counted: taints against tolerations,
// labels against nodeSelector and required node affinity, as kube-scheduler's filters decide.
#include "local/kubelet/placement.h"

#include <gtest/gtest.h>

namespace ringmaster::local::kubelet {
namespace {

using nlohmann::json;

kube::Node node(std::vector<kube::Taint> taints = {}) {
  kube::Node n;
  n.metadata.name = "local";
  n.metadata.labels = {
      {"kubernetes.io/hostname", "local"}, {"kubernetes.io/os", "linux"}, {"gpu.count", "8"}};
  n.spec.taints = std::move(taints);
  return n;
}

kube::Taint taint(std::string key, std::string value, std::string effect) {
  kube::Taint t;
  t.key = std::move(key);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

kube::PodSpec tolerating(const json& tolerations) {
  auto spec = kube::decode<kube::PodSpec>(json{{"tolerations", tolerations}});
  EXPECT_TRUE(spec.ok()) << spec.status().toString();
  return *spec;
}

TEST(Taints, NoScheduleAndNoExecuteNeedAToleration) {
  const kube::Node gpu = node({taint("nvidia.com/gpu", "present", "NoSchedule")});
  EXPECT_EQ(untoleratedTaint(kube::PodSpec{}, gpu), "{nvidia.com/gpu: present}");
  EXPECT_EQ(placementProblem(kube::PodSpec{}, gpu),
            "node(s) had untolerated taint {nvidia.com/gpu: present}");
  EXPECT_EQ(untoleratedTaint(kube::PodSpec{}, node({taint("k", "", "NoExecute")})), "{k: }");
  // PreferNoSchedule only prefers: it never keeps a pod off the one node there is.
  EXPECT_EQ(untoleratedTaint(kube::PodSpec{}, node({taint("k", "v", "PreferNoSchedule")})),
            std::nullopt);
}

// The node is Ready by its own report whenever it schedules: the lifecycle controller's taints
// for a node it has not seen Ready yet do not keep pods off it.
TEST(Taints, ConditionTaintsOfANodeThatReportsReadyDoNotCount) {
  const kube::Node fresh = node({taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
                                 taint("node.kubernetes.io/unreachable", "", "NoExecute")});
  EXPECT_EQ(untoleratedTaint(kube::PodSpec{}, fresh), std::nullopt);
  EXPECT_EQ(untoleratedTaint(kube::PodSpec{},
                             node({taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
                                   taint("dedicated", "gpu", "NoSchedule")})),
            "{dedicated: gpu}");
}

TEST(Taints, TolerationsMatchAsKubernetesMatchesThem) {
  const kube::Node gpu = node({taint("nvidia.com/gpu", "present", "NoSchedule")});
  struct Row {
    const char* what;
    json toleration;
    bool tolerated;
  };
  const Row rows[] = {
      {"Exists on the key", {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}, true},
      {"Exists on the key and effect",
       {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
       true},
      {"another effect",
       {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoExecute"}},
       false},
      {"Equal with the value", {{"key", "nvidia.com/gpu"}, {"value", "present"}}, true},
      {"Equal with another value", {{"key", "nvidia.com/gpu"}, {"value", "absent"}}, false},
      {"another key", {{"key", "dedicated"}, {"operator", "Exists"}}, false},
      {"Exists with no key: everything", {{"operator", "Exists"}}, true},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(untoleratedTaint(tolerating(json::array({row.toleration})), gpu) == std::nullopt,
              row.tolerated)
        << row.what;
  }
}

kube::PodSpec requiring(const json& terms) {
  kube::PodSpec spec;
  spec.affinity = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
  return spec;
}

json expression(const std::string& key, const std::string& op, std::vector<std::string> values) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

TEST(NodeSelector, EveryLabelMustMatch) {
  kube::PodSpec spec;
  spec.node_selector = {{"kubernetes.io/os", "linux"}};
  EXPECT_TRUE(matchesNodeSelectorAndAffinity(spec, node()));
  spec.node_selector["nvidia.com/gpu.product"] = "H100";
  EXPECT_FALSE(matchesNodeSelectorAndAffinity(spec, node()));
  EXPECT_EQ(placementProblem(spec, node()), "node(s) didn't match Pod's node affinity/selector");
}

TEST(NodeAffinity, RequiredTermsWithEveryOperator) {
  struct Row {
    json expr;
    bool matches;
  };
  const Row rows[] = {
      {expression("kubernetes.io/os", "In", {"linux", "windows"}), true},
      {expression("kubernetes.io/os", "In", {"windows"}), false},
      {expression("kubernetes.io/os", "NotIn", {"windows"}), true},
      {expression("zone", "NotIn", {"a"}), true},  // no label is not in any list
      {expression("kubernetes.io/hostname", "Exists", {}), true},
      {expression("zone", "Exists", {}), false},
      {expression("zone", "DoesNotExist", {}), true},
      {expression("gpu.count", "Gt", {"4"}), true},
      {expression("gpu.count", "Lt", {"4"}), false},
      {expression("gpu.count", "Gt", {"four"}), false},
      {expression("kubernetes.io/os", "Matches", {"linux"}), false},
  };
  for (const Row& row : rows) {
    const json terms = json::array({{{"matchExpressions", json::array({row.expr})}}});
    EXPECT_EQ(matchesNodeSelectorAndAffinity(requiring(terms), node()), row.matches)
        << row.expr.dump();
  }
}

TEST(NodeAffinity, AnyTermMayMatchAndFieldsNameTheNode) {
  const json no = {{"matchExpressions", json::array({expression("zone", "Exists", {})})}};
  const json by_name = {
      {"matchFields", json::array({expression("metadata.name", "In", {"local"})})}};
  EXPECT_TRUE(matchesNodeSelectorAndAffinity(requiring(json::array({no, by_name})), node()));
  EXPECT_FALSE(matchesNodeSelectorAndAffinity(requiring(json::array({no})), node()));
  // An empty term matches nothing; preferred terms never filter.
  EXPECT_FALSE(matchesNodeSelectorAndAffinity(requiring(json::array({json::object()})), node()));
  kube::PodSpec preferred;
  preferred.affinity = {{"nodeAffinity",
                         {{"preferredDuringSchedulingIgnoredDuringExecution",
                           json::array({{{"weight", 1}, {"preference", no}}})}}}};
  EXPECT_TRUE(matchesNodeSelectorAndAffinity(preferred, node()));
}

TEST(Placement, TaintsAreNamedBeforeSelectors) {
  kube::PodSpec spec;
  spec.node_selector = {{"zone", "a"}};
  EXPECT_EQ(placementProblem(spec, node({taint("dedicated", "gpu", "NoSchedule")})),
            "node(s) had untolerated taint {dedicated: gpu}");
}

// Which Node updates send unschedulable pods back to the scheduler: what placement reads, not a
// heartbeat.
TEST(Placement, OnlyChangesToWhatPlacementReadsCount) {
  const kube::Node base = node({taint("dedicated", "gpu", "NoSchedule")});
  struct Case {
    const char* what;
    void (*change)(kube::Node&);
    bool counts;
  };
  const Case cases[] = {
      {"nothing", [](kube::Node&) {}, false},
      {"a heartbeat: conditions and their times",
       [](kube::Node& n) {
         kube::Condition ready;
         ready.type = "Ready";
         ready.status = "True";
         ready.last_heartbeat_time = kube::Time();
         n.status.conditions.push_back(ready);
       },
       false},
      {"a resourceVersion", [](kube::Node& n) { n.metadata.resource_version = "42"; }, false},
      {"an annotation", [](kube::Node& n) { n.metadata.annotations["note"] = "x"; }, false},
      {"a taint removed", [](kube::Node& n) { n.spec.taints.clear(); }, true},
      {"a taint's effect", [](kube::Node& n) { n.spec.taints[0].effect = "PreferNoSchedule"; },
       true},
      {"cordoned", [](kube::Node& n) { n.spec.unschedulable = true; }, true},
      {"a label added",
       [](kube::Node& n) { n.metadata.labels["topology.kubernetes.io/zone"] = "a"; }, true},
      {"a label removed", [](kube::Node& n) { n.metadata.labels.erase("gpu.count"); }, true},
      {"allocatable",
       [](kube::Node& n) { n.status.allocatable["example.com/fpga"] = kube::Quantity(1); }, true},
  };
  for (const Case& c : cases) {
    kube::Node after = base;
    c.change(after);
    EXPECT_EQ(placementInputsChanged(base, after), c.counts) << c.what;
  }
}

}  // namespace
}  // namespace ringmaster::local::kubelet
