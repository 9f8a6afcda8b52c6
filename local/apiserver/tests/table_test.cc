#include "local/apiserver/table.h"

#include <gtest/gtest.h>

#include "local/apiserver/crd.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

TEST(HumanDuration, RendersAgesLikeKubectl) {
  using std::chrono::seconds;
  EXPECT_EQ(humanDuration(seconds(26)), "26s");
  EXPECT_EQ(humanDuration(seconds(119)), "119s");
  EXPECT_EQ(humanDuration(seconds(8 * 60 + 7)), "8m7s");
  EXPECT_EQ(humanDuration(seconds(6 * 60)), "6m");
  EXPECT_EQ(humanDuration(seconds(3 * 3600 + 5 * 60)), "3h5m");
  EXPECT_EQ(humanDuration(seconds(3 * 86400)), "3d");
  EXPECT_EQ(humanDuration(seconds(-5)), "<invalid>");
}

TEST(EvalJsonPath, FollowsFieldsAndIndexes) {
  json obj = json::parse(R"({"spec":{"replicas":4,"list":[{"a":"x"}]}})");
  EXPECT_EQ(evalJsonPath(obj, ".spec.replicas"), 4);
  EXPECT_EQ(evalJsonPath(obj, ".spec.list[0].a"), "x");
  EXPECT_TRUE(evalJsonPath(obj, ".status.phase").is_null());
  EXPECT_TRUE(evalJsonPath(obj, ".spec.list[3].a").is_null());
}

json widgetCrd() {
  return json::parse(R"({
    "apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"widgets.example.dev"},
    "spec":{"group":"example.dev","scope":"Namespaced",
      "names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"]},
      "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
        "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},
        "additionalPrinterColumns":[
          {"name":"Size","type":"integer","jsonPath":".spec.size"},
          {"name":"Phase","type":"string","jsonPath":".status.phase","description":"the phase"},
          {"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]}]}})");
}

TEST(Table, CustomResourceRowsUsePrinterColumns) {
  auto resources = resourcesFromCrd(widgetCrd());
  ASSERT_TRUE(resources.ok());
  ASSERT_EQ(resources->served.size(), 1u);
  const ApiResource& r = resources->served[0];
  EXPECT_TRUE(r.type.has_status_subresource);
  json obj = json::parse(
      R"({"metadata":{"name":"w1","creationTimestamp":"2026-11-22T01:55:51Z"},"spec":{"size":3}})");
  auto now = std::chrono::system_clock::from_time_t(1795312551 + 26);  // 26 s later
  auto row = tableRow(r, obj, IncludeObject::kMetadata, now);
  EXPECT_EQ(row["cells"].dump(), R"(["w1",3,null,"26s"])");
  EXPECT_EQ(row["object"]["kind"], "PartialObjectMetadata");
  auto cols = tableColumns(r);
  EXPECT_EQ(cols[0]["format"], "name");
  EXPECT_EQ(cols[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.size");
  EXPECT_EQ(cols[2]["description"], "the phase");
}

TEST(Table, PodRowsShowReadyStatusRestarts) {
  ApiResource pods;
  pods.printer = TablePrinter::kPod;
  json pod = json::parse(R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c"}]},
    "status":{"phase":"Running","containerStatuses":[{"ready":true,"restartCount":2}]}})");
  auto row = tableRow(pods, pod, IncludeObject::kNone, std::chrono::system_clock::now());
  EXPECT_EQ(row["cells"][1], "1/1");
  EXPECT_EQ(row["cells"][2], "Running");
  EXPECT_EQ(row["cells"][3], "2");
  EXPECT_FALSE(row.contains("object"));

  json gated = json::parse(R"({"metadata":{"name":"g"},"spec":{"containers":[{"name":"c"}]},
    "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False",
    "reason":"SchedulingGated"}]}})");
  EXPECT_EQ(
      tableRow(pods, gated, IncludeObject::kNone, std::chrono::system_clock::now())["cells"][2],
      "SchedulingGated");

  // -o wide: IP, node, nominated node, readiness gates ("<true>/<gates>").
  json wide = json::parse(R"({"metadata":{"name":"w"},"spec":{"nodeName":"n1",
    "containers":[{"name":"c"}],"readinessGates":[{"conditionType":"example.com/a"},
    {"conditionType":"example.com/b"}]},"status":{"phase":"Running","podIP":"10.244.0.9",
    "conditions":[{"type":"example.com/a","status":"True"},{"type":"example.com/b",
    "status":"False"}]}})");
  auto cells =
      tableRow(pods, wide, IncludeObject::kNone, std::chrono::system_clock::now())["cells"];
  ASSERT_EQ(cells.size(), 9u);
  EXPECT_EQ(cells[5], "10.244.0.9");
  EXPECT_EQ(cells[6], "n1");
  EXPECT_EQ(cells[7], "<none>");
  EXPECT_EQ(cells[8], "1/2");
  EXPECT_EQ(tableColumns(pods).size(), 9u);
}

TEST(Table, BuiltinWorkloadServiceAndAccountRowsAsKubectlPrintsThem) {
  const auto now = std::chrono::system_clock::from_time_t(1795312551 + 90);
  const std::string created =
      R"("metadata":{"name":"x","creationTimestamp":"2026-11-22T01:55:51Z"})";
  struct Case {
    TablePrinter printer;
    std::string object;
    std::string cells;
    size_t columns;
  };
  const Case cases[] = {
      // Workloads' wide cells: the template's containers and images, the selector as
      // LabelSelectorAsSelector prints it (sorted by key; sets sorted too).
      {TablePrinter::kDeployment,
       "{" + created +
           R"(,"spec":{"replicas":2,"selector":{"matchLabels":{"z":"1","a":"2"},)"
           R"("matchExpressions":[{"key":"m","operator":"NotIn","values":["y","x"]},)"
           R"({"key":"b","operator":"Exists"},{"key":"c","operator":"DoesNotExist"}]},)"
           R"("template":{"spec":{"containers":[{"name":"w","image":"i:1"},{"name":"s","image":"j"}]}}},)"
           R"("status":{"readyReplicas":1,"updatedReplicas":2,"availableReplicas":1}})",
       R"j(["x","1/2","2","1","90s","w,s","i:1,j","a=2,b,!c,m notin (x,y),z=1"])j", 8},
      {TablePrinter::kDeployment, "{" + created + "}", R"(["x","0/1","0","0","90s","","",""])", 8},
      {TablePrinter::kReplicaSet,
       "{" + created +
           R"(,"spec":{"replicas":3,"selector":{"matchExpressions":[{"key":"k","operator":"In","values":["b","a"]}]}},)"
           R"("status":{"replicas":3,"readyReplicas":2}})",
       R"j(["x",3,3,2,"90s","","","k in (a,b)"])j", 8},
      // Nodes: Ready/NotReady/Unknown from the Ready condition, SchedulingDisabled when
      // cordoned, roles from both label styles, the first address of each type.
      {TablePrinter::kNode,
       std::string("{") +
           R"("metadata":{"name":"x","creationTimestamp":"2026-11-22T01:55:51Z",)"
           R"("labels":{"node-role.kubernetes.io/worker":"","kubernetes.io/role":"gpu",)"
           R"("node-role.kubernetes.io/":""}},"spec":{"unschedulable":true},)"
           R"("status":{"conditions":[{"type":"Ready","status":"True"}],)"
           R"("addresses":[{"type":"Hostname","address":"h"},{"type":"InternalIP","address":"10.0.0.2"},)"
           R"({"type":"InternalIP","address":"10.0.0.3"}],)"
           R"("nodeInfo":{"kubeletVersion":"v1.26.1","osImage":"Debian","kernelVersion":"6.1"}}})",
       R"(["x","Ready,SchedulingDisabled","gpu,worker","90s","v1.26.1","10.0.0.2","<none>",)"
       R"("Debian","6.1","<unknown>"])",
       10},
      {TablePrinter::kNode,
       "{" + created + R"(,"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}})",
       R"(["x","NotReady","<none>","90s","","<none>","<none>","<unknown>","<unknown>","<unknown>"])",
       10},
      {TablePrinter::kNode, "{" + created + "}",
       R"(["x","Unknown","<none>","90s","","<none>","<none>","<unknown>","<unknown>","<unknown>"])",
       10},
      {TablePrinter::kService,
       "{" + created +
           R"(,"spec":{"type":"ClusterIP","clusterIP":"10.96.0.7","ports":[{"port":80,"protocol":"TCP"},{"port":53,"protocol":"UDP"}]}})",
       R"(["x","ClusterIP","10.96.0.7","<none>","80/TCP,53/UDP","90s","<none>"])", 7},
      {TablePrinter::kService,
       "{" + created + R"(,"spec":{"clusterIP":"None","selector":{"b":"2","a":"1"}}})",
       R"(["x","ClusterIP","None","<none>","<none>","90s","a=1,b=2"])", 7},
      {TablePrinter::kServiceAccount, "{" + created + "}", R"(["x","0","90s"])", 3},
      // Events: kubectl shows LAST SEEN, TYPE, REASON, OBJECT, MESSAGE; Name comes last.
      {TablePrinter::kEvent,
       "{" + created +
           R"(,"involvedObject":{"kind":"TrainingJob","name":"ddp"},"type":"Warning",)"
           R"("reason":"Failed","message":" rank 3: ValueError: bad shard\n",)"
           R"("firstTimestamp":"2026-11-22T01:55:51Z","lastTimestamp":"2026-11-22T01:56:51Z",)"
           R"("count":2,"source":{"component":"ringmaster-operator"}})",
       R"(["30s","Warning","Failed","trainingjob/ddp","","ringmaster-operator",)"
       R"("rank 3: ValueError: bad shard","90s",2,"x"])",
       10},
      {TablePrinter::kEvent,
       "{" + created +
           R"(,"involvedObject":{"kind":"Pod","name":"p","fieldPath":"spec.containers{w}"},)"
           R"("reason":"Started","firstTimestamp":"2026-11-22T01:55:51Z",)"
           R"("source":{"component":"kubelet","host":"local"}})",
       R"(["90s","","Started","pod/p","spec.containers{w}","kubelet, local","","90s",1,"x"])", 10},
  };
  for (const auto& c : cases) {
    ApiResource r;
    r.printer = c.printer;
    EXPECT_EQ(tableRow(r, json::parse(c.object), IncludeObject::kNone, now)["cells"].dump(),
              c.cells);
    EXPECT_EQ(tableColumns(r).size(), c.columns);
  }
  ApiResource events;
  events.printer = TablePrinter::kEvent;
  std::string shown;  // the columns kubectl prints without -o wide
  for (const auto& c : tableColumns(events)) {
    if (c["priority"] == 0) shown += c["name"].get<std::string>() + ",";
  }
  EXPECT_EQ(shown, "Last Seen,Type,Reason,Object,Message,");
}

TEST(Crd, MissingGroupIsInvalid) {
  json crd = widgetCrd();
  crd["spec"].erase("group");
  auto error = validateCrd(crd);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), 422);
}

TEST(Crd, StatusPatchEstablishes) {
  json patch = json::parse(crdStatusPatch(widgetCrd(), "2026-11-22T01:55:41Z"));
  EXPECT_EQ(patch["status"]["conditions"][1]["type"], "Established");
  EXPECT_EQ(patch["status"]["acceptedNames"]["listKind"], "WidgetList");
  EXPECT_EQ(patch["status"]["storedVersions"], json::array({"v1"}));
}

}  // namespace
}  // namespace ringmaster::local
