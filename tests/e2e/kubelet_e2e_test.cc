// e2e of the local kubelet as a node of a cluster, on the embedded API server and on a real
// control plane (envtest), with real kubectl:
//   - a pod with a downwardAPI volume and a projected volume reads its own labels and namespace;
//   - (envtest only: the embedded server issues no ServiceAccount tokens) an ordinary pod, with
//     the projected token volume ServiceAccount admission adds, runs, and the token it finds
//     authenticates to the API server as the pod's ServiceAccount;
//   - (envtest only: the embedded server runs no EndpointSlice controller) a pod's address is
//     routable from the host and listed in its headless Service's EndpointSlice.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "local_cluster.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;

class KubeletE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (!cluster_.missing().empty()) GTEST_SKIP() << cluster_.missing();
    ASSERT_EQ(cluster_.startOnce(), "");
  }

  // Applies `yaml` and waits until pod `name` has finished; its phase.
  std::string runPod(const std::string& name, const std::string& yaml) {
    testutil::ProcessResult applied = cluster_.apply(yaml);
    EXPECT_EQ(applied.exit_code, 0) << applied.stderr_text;
    std::string phase;
    testutil::eventually(60s, [&] {
      phase = cluster_.get("pod", name).value("/status/phase"_json_pointer, std::string());
      return phase == "Succeeded" || phase == "Failed";
    });
    return phase;
  }

  // One per plane for the binary: the cases name their pods apart and leave its daemons be.
  testutil::LocalCluster& cluster_ = testutil::sharedCluster(GetParam());
};

TEST_P(KubeletE2e, DownwardApiAndProjectedVolumesHoldThePodsOwnFields) {
  const std::string phase = runPod("podinfo", R"yaml(apiVersion: v1
kind: Pod
metadata: {name: podinfo, labels: {app: demo, tier: back-end}}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  volumes:
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
  - name: mixed
    projected:
      sources:
      - downwardAPI:
          items:
          - {path: ns, fieldRef: {fieldPath: metadata.namespace}}
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "cat /info/labels; echo; printf ns=; cat /mixed/ns; echo"]
    volumeMounts:
    - {name: info, mountPath: /info}
    - {name: mixed, mountPath: /mixed}
)yaml");
  const std::string log = cluster_.podLog("podinfo");
  ASSERT_EQ(phase, "Succeeded") << log << cluster_.get("pod", "podinfo").dump(2);
  EXPECT_EQ(log, "app=\"demo\"\ntier=\"back-end\"\nns=default\n");
}

class KubeletEnvtestE2e : public KubeletE2e {};

TEST_P(KubeletEnvtestE2e, APodWithTheServiceAccountTokenVolumeRunsAndItsTokenAuthenticates) {
  // No automountServiceAccountToken: admission adds the kube-api-access-* projected volume.
  const std::string phase = runPod("plain", R"(apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "cd /var/run/secrets/kubernetes.io/serviceaccount && cat namespace && echo && head -c 27 ca.crt && echo && cat token"]
)");
  const nlohmann::json pod = cluster_.get("pod", "plain");
  bool projected = false;
  for (const auto& v : pod.value("/spec/volumes"_json_pointer, nlohmann::json::array())) {
    projected |= v.contains("projected");
  }
  ASSERT_TRUE(projected) << "admission added no token volume: " << pod.dump(2);
  const std::string log = cluster_.podLog("plain");
  ASSERT_EQ(phase, "Succeeded") << log << pod.dump(2);
  ASSERT_EQ(log.rfind("default\n-----BEGIN CERTIFICATE-----\n", 0), 0u) << log;
  const std::string token = log.substr(log.rfind('\n') + 1);
  ASSERT_FALSE(token.empty()) << log;

  // The token, alone, is the ServiceAccount: authenticated (so not 401), and refused what
  // its empty RBAC does not allow.
  const std::string config = cluster_.dataDir() + "/token-kubeconfig";
  std::filesystem::copy_file(cluster_.kubeconfig(), config);
  auto kubectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {cluster_.kubectlPath(), "--kubeconfig", config});
    return testutil::run(args, {}, 60s);
  };
  ASSERT_EQ(kubectl({"config", "set-credentials", "pod", "--token=" + token}).exit_code, 0);
  ASSERT_EQ(kubectl({"config", "set-context", "--current", "--user=pod"}).exit_code, 0);
  testutil::ProcessResult as_pod = kubectl({"get", "secrets"});
  EXPECT_NE(as_pod.exit_code, 0);
  EXPECT_NE(as_pod.stderr_text.find("User \"system:serviceaccount:default:default\" cannot list"),
            std::string::npos)
      << as_pod.stderr_text;
}

// The pod network a real cluster needs: the pod's address is its own (not loopback, which the
// EndpointSlice controller refuses), the host reaches it, and a headless Service's EndpointSlice
// lists it.
TEST_P(KubeletEnvtestE2e, APodsAddressIsRoutableAndItsServicesEndpointSliceListsIt) {
  testutil::ProcessResult applied = cluster_.apply(R"(apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  automountServiceAccountToken: false
  containers:
  - name: main
    image: python
    command: [python3, -m, http.server, "8080"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  ASSERT_EQ(
      cluster_.kubectl({"wait", "pod/web", "--for=condition=Ready", "--timeout=60s"}).exit_code, 0)
      << cluster_.kubectl({"describe", "pod", "web"}).stdout_text;
  const std::string ip = cluster_.get("pod", "web").value("/status/podIP"_json_pointer, "");
  ASSERT_FALSE(ip.empty());
  if (ip.rfind("127.", 0) == 0) {
    GTEST_SKIP() << "the kubelet runs pods on loopback addresses (" << ip
                 << "): its cni pod network needs root and the CNI plugins (scripts/setup)";
  }
  EXPECT_EQ(testutil::httpGet(ip, 8080, "/").status, 200) << "the host cannot reach " << ip;
  std::string slices;
  EXPECT_TRUE(testutil::eventually(
      60s,
      [&] {
        slices = cluster_
                     .kubectl({"get", "endpointslices", "-l", "kubernetes.io/service-name=web",
                               "-o", "jsonpath={.items[*].endpoints[*].addresses[*]}"})
                     .stdout_text;
        return slices == ip;
      }))
      << "EndpointSlice addresses: '" << slices << "', pod IP " << ip;
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, KubeletE2e, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });
INSTANTIATE_TEST_SUITE_P(ControlPlanes, KubeletEnvtestE2e,
                         ::testing::Values(testutil::ControlPlane::kEnvtest),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
