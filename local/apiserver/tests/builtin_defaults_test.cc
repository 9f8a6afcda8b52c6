#include "local/apiserver/builtin_defaults.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

json pod(json container, json spec_extra = json::object()) {
  json spec = {{"containers", json::array({std::move(container)})}};
  spec.update(spec_extra);
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}, {"spec", spec}};
}

TEST(BuiltinDefaults, PodGetsTheApiDefaultsAndAdmissionOnCreate) {
  json p = pod({{"name", "c"}, {"image", "busybox"}});
  defaultPod(p, true);
  const json& spec = p["spec"];
  EXPECT_EQ(spec["dnsPolicy"], "ClusterFirst");
  EXPECT_EQ(spec["restartPolicy"], "Always");
  EXPECT_EQ(spec["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ(spec["schedulerName"], "default-scheduler");
  EXPECT_EQ(spec["enableServiceLinks"], true);
  EXPECT_EQ(spec["securityContext"], json::object());
  EXPECT_EQ(spec["serviceAccountName"], "default");
  EXPECT_EQ(spec["serviceAccount"], "default");
  EXPECT_EQ(spec["priority"], 0);
  EXPECT_EQ(spec["preemptionPolicy"], "PreemptLowerPriority");
  ASSERT_EQ(spec["tolerations"].size(), 2u);
  EXPECT_EQ(spec["tolerations"][0]["key"], "node.kubernetes.io/not-ready");
  EXPECT_EQ(spec["tolerations"][1]["tolerationSeconds"], 300);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(c["terminationMessagePolicy"], "File");
  EXPECT_EQ(c["imagePullPolicy"], "Always");
  EXPECT_EQ(c["resources"], json::object());
  EXPECT_EQ(p["status"]["phase"], "Pending");
  EXPECT_EQ(p["status"]["qosClass"], "BestEffort");

  // Idempotent, and what the user set stays.
  json again = p;
  defaultPod(again, true);
  EXPECT_EQ(again, p);
  json mine = pod({{"name", "c"}, {"image", "x"}},
                  {{"restartPolicy", "Never"}, {"serviceAccountName", "robot"}});
  defaultPod(mine, true);
  EXPECT_EQ(mine["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(mine["spec"]["serviceAccount"], "robot");
}

TEST(BuiltinDefaults, AdmissionDefaultsAreForCreateOnly) {
  json p = pod({{"name", "c"}, {"image", "busybox"}});
  defaultPod(p, false);
  EXPECT_FALSE(p["spec"].contains("serviceAccountName"));
  EXPECT_FALSE(p["spec"].contains("tolerations"));
  EXPECT_EQ(p["spec"]["dnsPolicy"], "ClusterFirst");
}

TEST(BuiltinDefaults, ImagePullPolicyFollowsTheTag) {
  struct Row {
    const char* image;
    const char* policy;
  };
  for (const Row& row :
       {Row{"busybox", "Always"}, Row{"busybox:latest", "Always"},
        Row{"busybox:1.36", "IfNotPresent"}, Row{"localhost:5000/trainer", "Always"},
        Row{"localhost:5000/trainer:v2", "IfNotPresent"}, Row{"img@sha256:abc", "IfNotPresent"}}) {
    json p = pod({{"name", "c"}, {"image", row.image}});
    defaultPod(p, true);
    EXPECT_EQ(p["spec"]["containers"][0]["imagePullPolicy"], row.policy) << row.image;
  }
}

TEST(BuiltinDefaults, ProbesPortsVolumesAndRequestsFromLimits) {
  json p = pod(
      {{"name", "c"},
       {"image", "x:1"},
       {"ports", {{{"containerPort", 80}}}},
       {"readinessProbe", {{"httpGet", {{"port", 80}}}}},
       {"resources", {{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}}}}},
      {{"volumes", {{{"name", "cfg"}, {"configMap", {{"name", "cm"}}}}, {{"name", "scratch"}}}}});
  defaultPod(p, true);
  const json& c = p["spec"]["containers"][0];
  EXPECT_EQ(c["ports"][0]["protocol"], "TCP");
  EXPECT_EQ(c["readinessProbe"]["timeoutSeconds"], 1);
  EXPECT_EQ(c["readinessProbe"]["periodSeconds"], 10);
  EXPECT_EQ(c["readinessProbe"]["successThreshold"], 1);
  EXPECT_EQ(c["readinessProbe"]["failureThreshold"], 3);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["scheme"], "HTTP");
  EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]);
  EXPECT_EQ(p["spec"]["volumes"][0]["configMap"]["defaultMode"], 420);
  EXPECT_EQ(p["spec"]["volumes"][1]["emptyDir"], json::object());
  EXPECT_EQ(p["status"]["qosClass"], "Guaranteed");
}

TEST(BuiltinDefaults, QosClass) {
  struct Row {
    json resources;
    const char* qos;
  };
  const Row rows[] = {
      {json::object(), "BestEffort"},
      {{{"requests", {{"cpu", "100m"}}}}, "Burstable"},
      {{{"limits", {{"cpu", "1"}}}, {"requests", {{"cpu", "1"}}}}, "Burstable"},  // no memory
      {{{"limits", {{"cpu", "1"}, {"memory", "1Gi"}}},
        {"requests", {{"cpu", "1000m"}, {"memory", "1Gi"}}}},
       "Guaranteed"},
      {{{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}},
        {"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}},
       "Burstable"},
  };
  for (const Row& row : rows) {
    json p = pod({{"name", "c"}, {"image", "x"}, {"resources", row.resources}});
    EXPECT_EQ(podQosClass(p), row.qos) << row.resources.dump();
  }
}

TEST(BuiltinDefaults, AQuantityThatDoesNotParseIsABadRequest) {
  for (const json& good : {json("2"), json("500m"), json("1Gi"), json(3), json(0.5)}) {
    EXPECT_FALSE(
        podQuantityError(pod({{"name", "c"}, {"resources", {{"limits", {{"cpu", good}}}}}})))
        << good.dump();
  }
  for (const json& bad : {json("abc"), json("1.5.5"), json(true)}) {
    auto error =
        podQuantityError(pod({{"name", "c"}, {"resources", {{"requests", {{"memory", bad}}}}}}));
    ASSERT_TRUE(error) << bad.dump();
    EXPECT_EQ(error->code(), 400);
    EXPECT_EQ(error->reason(), "BadRequest");
    EXPECT_NE(error->message().find("quantities must match the regular expression"),
              std::string::npos);
  }
  // Init containers are read too.
  json with_init =
      pod({{"name", "c"}},
          {{"initContainers",
            json::array({{{"name", "i"}, {"resources", {{"limits", {{"cpu", "lots"}}}}}}})}});
  EXPECT_TRUE(podQuantityError(with_init));
}

TEST(BuiltinDefaults, ServiceDefaults) {
  json headless = {
      {"spec", {{"clusterIP", "None"}, {"ports", {{{"name", "store"}, {"port", 29400}}}}}}};
  defaultService(headless);
  EXPECT_EQ(headless["spec"]["type"], "ClusterIP");
  EXPECT_EQ(headless["spec"]["sessionAffinity"], "None");
  EXPECT_EQ(headless["spec"]["clusterIPs"], json::array({"None"}));
  EXPECT_EQ(headless["spec"]["ipFamilies"], json::array({"IPv4"}));
  EXPECT_EQ(headless["spec"]["ipFamilyPolicy"], "SingleStack");
  EXPECT_EQ(headless["spec"]["internalTrafficPolicy"], "Cluster");
  EXPECT_EQ(headless["spec"]["ports"][0]["protocol"], "TCP");
  EXPECT_EQ(headless["spec"]["ports"][0]["targetPort"], 29400);
  EXPECT_EQ(headless["status"]["loadBalancer"], json::object());

  json external = {{"spec", {{"type", "ExternalName"}, {"externalName", "example.com"}}}};
  defaultService(external);
  EXPECT_FALSE(external["spec"].contains("ipFamilies"));
}

TEST(BuiltinDefaults, NamespaceNameLabelAndFinalizer) {
  json ns = {{"metadata", {{"name", "team"}}}};
  defaultNamespace(ns, true);
  EXPECT_EQ(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
  EXPECT_EQ(ns["spec"]["finalizers"], json::array({"kubernetes"}));
  EXPECT_EQ(ns["status"]["phase"], "Active");
  ns["metadata"]["labels"]["kubernetes.io/metadata.name"] = "forged";
  defaultNamespace(ns, false);
  EXPECT_EQ(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "team");
}

TEST(BuiltinDefaults, ServiceAccountAdmissionMountsATokenVolumeUnlessTheyOptOut) {
  json p = pod({{"name", "c"}, {"image", "x"}});
  p["spec"]["initContainers"] = json::array({{{"name", "i"}, {"image", "x"}}});
  addServiceAccountVolume(p, "abcde");
  ASSERT_EQ(p["spec"]["volumes"].size(), 1u);
  const json& v = p["spec"]["volumes"][0];
  EXPECT_EQ(v["name"], "kube-api-access-abcde");
  const json& sources = v["projected"]["sources"];
  ASSERT_EQ(sources.size(), 3u);
  EXPECT_EQ(sources[0]["serviceAccountToken"]["path"], "token");
  EXPECT_EQ(sources[1]["configMap"]["name"], "kube-root-ca.crt");
  EXPECT_EQ(sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"], "metadata.namespace");
  for (const char* list : {"containers", "initContainers"}) {
    const json& m = p["spec"][list][0]["volumeMounts"][0];
    EXPECT_EQ(m["mountPath"], kServiceAccountMountPath) << list;
    EXPECT_EQ(m["readOnly"], true) << list;
  }

  json opted_out = pod({{"name", "c"}, {"image", "x"}}, {{"automountServiceAccountToken", false}});
  addServiceAccountVolume(opted_out, "abcde");
  EXPECT_FALSE(opted_out["spec"].contains("volumes"));

  json own = pod({{"name", "c"},
                  {"image", "x"},
                  {"volumeMounts",
                   json::array({{{"name", "mine"}, {"mountPath", kServiceAccountMountPath}}})}});
  addServiceAccountVolume(own, "abcde");
  EXPECT_FALSE(own["spec"].contains("volumes")) << "a pod that mounts its own keeps it";
}

TEST(BuiltinDefaults, WorkloadsGetReplicasAndADeploymentItsStrategy) {
  json d = {{"kind", "Deployment"}, {"spec", json::object()}};
  defaultWorkload(d, true);
  EXPECT_EQ(d["spec"]["replicas"], 1);
  EXPECT_EQ(d["spec"]["revisionHistoryLimit"], 10);
  EXPECT_EQ(d["spec"]["progressDeadlineSeconds"], 600);
  EXPECT_EQ(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
  json recreate = {{"kind", "Deployment"},
                   {"spec", {{"replicas", 3}, {"strategy", {{"type", "Recreate"}}}}}};
  defaultWorkload(recreate, true);
  EXPECT_EQ(recreate["spec"]["replicas"], 3);
  EXPECT_FALSE(recreate["spec"]["strategy"].contains("rollingUpdate"));
  json rs = {{"kind", "ReplicaSet"}, {"spec", json::object()}};
  defaultWorkload(rs, false);
  EXPECT_EQ(rs["spec"]["replicas"], 1);
  EXPECT_FALSE(rs["spec"].contains("strategy"));
  EXPECT_EQ(d["status"], json::object()) << "created with an empty status";
  EXPECT_FALSE(rs.contains("status")) << "an update keeps the status it has";
}

TEST(BuiltinDefaults, AWorkloadsTemplateIsDefaultedAsAPodSpecIsButNotAdmitted) {
  json rs = {{"kind", "ReplicaSet"},
             {"spec",
              {{"template",
                {{"spec", {{"containers", json::array({{{"name", "c"}, {"image", "x"}}})}}}}}}}};
  defaultWorkload(rs, true);
  const json& tmpl = rs["spec"]["template"];
  EXPECT_TRUE(tmpl["metadata"]["creationTimestamp"].is_null());
  EXPECT_EQ(tmpl["spec"]["restartPolicy"], "Always");
  EXPECT_EQ(tmpl["spec"]["schedulerName"], "default-scheduler");
  EXPECT_EQ(tmpl["spec"]["containers"][0]["imagePullPolicy"], "Always");
  EXPECT_EQ(tmpl["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
  EXPECT_FALSE(tmpl["spec"].contains("enableServiceLinks")) << "SetDefaults_Pod's, not the spec's";
  EXPECT_FALSE(tmpl["spec"].contains("serviceAccountName")) << "admission is for pods";
  json bare = {{"kind", "ReplicaSet"}, {"spec", json::object()}};
  defaultWorkload(bare, true);
  EXPECT_FALSE(bare["spec"].contains("template")) << "nothing invented";
  EXPECT_EQ(bare["status"], json({{"replicas", 0}})) << "a ReplicaSet's replicas is not omitempty";
}

TEST(BuiltinDefaults, NodesReadBackWithTheirStatusZeroValues) {
  json node = {{"kind", "Node"},
               {"status",
                {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})},
                 {"nodeInfo", {{"kubeletVersion", "v1.26.1"}}}}}};
  defaultNode(node);
  EXPECT_EQ(node["spec"], json::object());
  EXPECT_TRUE(node["status"]["conditions"][0]["lastHeartbeatTime"].is_null());
  EXPECT_TRUE(node["status"]["conditions"][0].contains("lastTransitionTime"));
  EXPECT_EQ(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 0);
  EXPECT_EQ(node["status"]["nodeInfo"]["kubeletVersion"], "v1.26.1") << "kept";
  EXPECT_EQ(node["status"]["nodeInfo"]["osImage"], "");
  EXPECT_EQ(node["status"]["nodeInfo"].size(), 10u);
  json registered = node;
  registered["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] = 10250;
  defaultNode(registered);
  EXPECT_EQ(registered["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
}

}  // namespace
}  // namespace ringmaster::local
