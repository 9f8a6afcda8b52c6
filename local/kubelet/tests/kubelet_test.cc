// `ringmaster local serve` + `ringmaster local kubelet`, driven by the real kubectl (skipped when
// kubectl is missing): pods run as local processes, are scheduled within the node's capacity,
// restart, resolve each other by name, see their volumes, die on delete; simulate mode scales.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/testutil/local_cluster.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;
using testutil::ProcessResult;

using testutil::findKubectl;

// One API server and one kubelet; the tests share them (pods have distinct names).
class Cluster {
 public:
  Cluster(const std::string& kubectl_path, std::vector<std::string> kubelet_flags)
      : kubectl_(kubectl_path),
        data_(fs::path(dir_.path()) / "data"),
        root_(fs::path(dir_.path()) / "kubelet") {
    server_ = std::make_unique<testutil::Process>(
        std::vector<std::string>{testutil::binaryPath("bin/ringmaster"), "local", "serve",
                                 "--data-dir", data_.string(), "--port", "0"});
    server_->start();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(data_ / "pid")) {
      if (!server_->running() || std::chrono::steady_clock::now() > deadline) {
        error_ = "server did not start: " + server_->stderrSoFar();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<std::string> argv{testutil::binaryPath("bin/ringmaster"),
                                  "local",
                                  "kubelet",
                                  "--kubeconfig",
                                  (data_ / "kubeconfig").string(),
                                  "--root-dir",
                                  root_.string(),
                                  "--node-name",
                                  "local"};
    argv.insert(argv.end(), kubelet_flags.begin(), kubelet_flags.end());
    kubelet_argv_ = argv;
    kubelet_ = std::make_unique<testutil::Process>(argv);
    kubelet_->start();
    // Ready once the Node is registered.
    while (kubectl({"get", "node", "local"}).exit_code != 0) {
      if (!kubelet_->running() || std::chrono::steady_clock::now() > deadline) {
        error_ = "kubelet did not register: " + kubelet_->stderrSoFar();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  ~Cluster() {
    for (auto* p : {kubelet_.get(), server_.get()}) {
      if (p && p->running()) {
        p->signal(SIGTERM);
        p->wait(std::chrono::seconds(60));
      }
    }
  }

  // What the running kubelet has logged.
  std::string kubeletLog() const { return kubelet_->stderrSoFar(); }

  // SIGTERM to the kubelet, then a new one with the same flags; the old one's exit result.
  ProcessResult restartKubelet() {
    ProcessResult result = stopKubelet();
    startKubelet();
    return result;
  }
  ProcessResult stopKubelet() {
    kubelet_->signal(SIGTERM);
    return kubelet_->wait(std::chrono::seconds(60));
  }
  void startKubelet() {
    kubelet_ = std::make_unique<testutil::Process>(kubelet_argv_);
    kubelet_->start();
  }

  ProcessResult kubectl(std::vector<std::string> args,
                        std::chrono::seconds limit = std::chrono::seconds(120)) {
    std::vector<std::string> argv{kubectl_, "--kubeconfig", (data_ / "kubeconfig").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::run(
        argv, {{"KUBECACHEDIR", (fs::path(dir_.path()) / "cache").string()}, {"HOME", dir_.path()}},
        limit);
  }

  ProcessResult apply(const std::string& yaml) {
    const fs::path file =
        fs::path(dir_.path()) / ("manifest-" + std::to_string(++files_) + ".yaml");
    std::ofstream(file) << yaml;
    return kubectl({"apply", "-f", file.string()});
  }

  // kubectl wait --for=<condition> with a deadline; the result's output explains a failure.
  ProcessResult wait(const std::string& what, const std::string& condition, int seconds = 90) {
    return kubectl(
        {"wait", "--for=" + condition, what, "--timeout=" + std::to_string(seconds) + "s"},
        std::chrono::seconds(seconds + 30));
  }

  std::string jsonpath(const std::string& what, const std::string& path) {
    return kubectl({"get", what, "-o", "jsonpath=" + path}).stdout_text;
  }

  std::string podDir(const std::string& name) {
    return (root_ / "pods" / "default" / (name + "_" + jsonpath("pod/" + name, "{.metadata.uid}")))
        .string();
  }

  // Everything about a pod, for failure messages.
  std::string describe(const std::string& name) {
    return kubectl({"get", "pod", name, "-o", "yaml"}).stdout_text + "\nkubelet log:\n" +
           kubelet_->stderrSoFar();
  }

  const std::string& error() const { return error_; }
  fs::path tmp() const { return dir_.path(); }
  const fs::path& root() const { return root_; }

 private:
  testutil::TempDir dir_;
  std::string kubectl_;
  fs::path data_, root_;
  std::unique_ptr<testutil::Process> server_, kubelet_;
  std::vector<std::string> kubelet_argv_;
  std::string error_;
  int files_ = 0;
};

class KubeletTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (findKubectl().empty()) return;
    cluster_ = new Cluster(findKubectl(),
                           {"--cpu", "4", "--memory", "8Gi", "--gpus", "1", "--max-backoff-seconds",
                            "1", "--heartbeat-seconds", "2", "--metrics-port", "0"});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!cluster_) GTEST_SKIP() << "kubectl is not installed";
    ASSERT_EQ(cluster_->error(), "");
  }
  static Cluster* cluster_;
};
Cluster* KubeletTest::cluster_ = nullptr;

TEST_F(KubeletTest, NodeIsRegisteredWithCapacityAndRootAnnotation) {
  Cluster& c = *cluster_;
  EXPECT_EQ(c.wait("node/local", "condition=Ready").exit_code, 0);
  EXPECT_EQ(c.jsonpath("node/local", "{.status.allocatable.nvidia\\.com/gpu}"), "1");
  EXPECT_EQ(c.jsonpath("node/local", "{.status.capacity.cpu}"), "4");
  EXPECT_EQ(c.jsonpath("node/local", "{.status.addresses[0].address}"), "127.0.0.1");
  EXPECT_EQ(
      c.jsonpath("node/local", "{.metadata.annotations.local\\.ringmaster\\.dev/kubelet-root}"),
      fs::absolute(c.root()).string());
}

// The node's /metrics/cadvisor at `port`, read until the CPU series with `labels` ("{container=
// ...} ") shows at least `seconds` (30 s at most): the last value read and the body it came from.
struct CadvisorReading {
  double cpu = 0;
  std::string body;
};
CadvisorReading waitForCpuSeconds(int port, const std::string& labels, double seconds) {
  CadvisorReading r;
  const std::string series = "container_cpu_usage_seconds_total" + labels;
  testutil::eventually(std::chrono::seconds(30), [&] {
    r.body = testutil::httpGet(port, "/metrics/cadvisor").body;
    const size_t at = r.body.find(series);
    r.cpu = at == std::string::npos ? 0 : std::stod(r.body.substr(at + series.size()));
    return r.cpu >= seconds;
  });
  return r;
}

// The node's metrics endpoint, found through the Node's annotation, reports a busy pod's CPU
// and memory under cAdvisor's names; a pod that ended leaves no series behind.
TEST_F(KubeletTest, ContainersCpuAndMemoryAreServedAsCadvisorsSeries) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: burner}
spec:
  restartPolicy: Never
  containers:
  - name: spin
    image: busybox
    command: [sh, -c, 'while :; do :; done']
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/burner", "jsonpath={.status.phase}=Running").exit_code, 0)
      << c.describe("burner");
  const std::string port_text =
      c.jsonpath("node/local", "{.metadata.annotations.local\\.ringmaster\\.dev/metrics-port}");
  ASSERT_FALSE(port_text.empty()) << "the Node does not advertise its metrics port";
  const int port = std::stoi(port_text);
  const std::string labels =
      R"({container="spin",image="busybox",namespace="default",pod="burner"} )";
  const CadvisorReading r = waitForCpuSeconds(port, labels, 0.5);
  EXPECT_GE(r.cpu, 0.5) << r.body;
  EXPECT_NE(r.body.find("container_memory_working_set_bytes" + labels), std::string::npos)
      << r.body;
  ASSERT_EQ(c.kubectl({"delete", "pod", "burner", "--grace-period=1"}).exit_code, 0);
  EXPECT_TRUE(testutil::eventually(std::chrono::seconds(30), [&] {
    return testutil::httpGet(port, "/metrics/cadvisor").body.find("pod=\"burner\"") ==
           std::string::npos;
  })) << testutil::httpGet(port, "/metrics/cadvisor").body;
}

TEST_F(KubeletTest, PodExitingWithThreeEndsFailedWithItsOutputLogged) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: exit3}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'echo hello from $(POD_NAME); exit 3']
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}

)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/exit3", "jsonpath={.status.phase}=Failed").exit_code, 0)
      << c.describe("exit3");
  EXPECT_EQ(c.jsonpath("pod/exit3", "{.status.containerStatuses[0].state.terminated.exitCode}"),
            "3");
  EXPECT_EQ(c.jsonpath("pod/exit3", "{.status.containerStatuses[0].state.terminated.reason}"),
            "Error");
  EXPECT_EQ(testutil::readFile(c.podDir("exit3") + "/main.log"), "hello from exit3\n");
  ProcessResult logs = c.kubectl({"logs", "exit3"});
  EXPECT_EQ(logs.stdout_text, "hello from exit3\n") << logs.stderr_text;
}

TEST_F(KubeletTest, TerminationMessagesFromTheFileOrTheLogsTail) {
  Cluster& c = *cluster_;
  // A message written at /dev/termination-log (made without touching the host's /dev, where
  // /dev/null must still work); a failing container with an empty file under
  // FallbackToLogsOnError gets its log's tail; under File it gets nothing.
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: messages}
spec:
  restartPolicy: Never
  containers:
  - name: writes
    image: busybox
    command: [sh, -c, 'echo noise > /dev/null; printf "bad input: %s" "$0" > /dev/termination-log; exit 2', x]
  - name: falls-back
    image: busybox
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, 'echo first; echo "E CORE the last words"; exit 1']
  - name: file-only
    image: busybox
    command: [sh, -c, 'echo ignored; exit 1']
  - name: succeeds
    image: busybox
    terminationMessagePolicy: FallbackToLogsOnError
    terminationMessagePath: /dev/custom-message
    command: [sh, -c, 'echo fine; printf done > /dev/custom-message']
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/messages", "jsonpath={.status.phase}=Failed").exit_code, 0)
      << c.describe("messages");
  auto message = [&](const std::string& container) {
    return c.jsonpath("pod/messages", "{.status.containerStatuses[?(@.name==\"" + container +
                                          "\")].state.terminated.message}");
  };
  EXPECT_EQ(message("writes"), "bad input: x") << c.describe("messages");
  EXPECT_EQ(message("falls-back"), "first\nE CORE the last words\n") << c.describe("messages");
  EXPECT_EQ(message("file-only"), "") << c.describe("messages");
  EXPECT_EQ(message("succeeds"), "done") << c.describe("messages");
  EXPECT_FALSE(fs::exists("/dev/termination-log"));
  EXPECT_FALSE(fs::exists("/dev/custom-message"));
}

TEST_F(KubeletTest, PodTooLargeForTheNodeStaysPendingUnschedulable) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: too-big}
spec:
  containers:
  - name: main
    image: busybox
    command: [sleep, "1000"]
    resources: {limits: {nvidia.com/gpu: 2}}

)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/too-big", "condition=PodScheduled=false").exit_code, 0)
      << c.describe("too-big");
  EXPECT_EQ(c.jsonpath("pod/too-big", "{.status.phase}"), "Pending");
  EXPECT_EQ(c.jsonpath("pod/too-big", "{.status.conditions[0].reason}"), "Unschedulable");
  EXPECT_EQ(c.jsonpath("pod/too-big", "{.status.conditions[0].message}"),
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  EXPECT_EQ(c.jsonpath("pod/too-big", "{.spec.nodeName}"), "");
  ProcessResult events = c.kubectl({"get", "events", "-o", "jsonpath={.items[*].reason}"});
  EXPECT_NE(events.stdout_text.find("FailedScheduling"), std::string::npos) << events.stdout_text;
  EXPECT_EQ(c.kubectl({"delete", "pod", "too-big"}).exit_code, 0);
}

// A pod that may not go to the node stays Pending with kube-scheduler's reason and a
// FailedScheduling event until the node or the pod changes: an untolerated taint, a nodeSelector
// the node's labels miss, an extended resource it lacks. A pod with scheduling gates waits,
// reason SchedulingGated and no event, until its gates are removed.
TEST_F(KubeletTest, PlacementFollowsTaintsSelectorsResourcesAndGates) {
  Cluster& c = *cluster_;
  auto sleeper = [](const std::string& name, const std::string& spec) {
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
           "}\nspec:\n  containers:\n  - name: main\n    image: busybox\n    command: [sleep, "
           "\"1000\"]\n" +
           spec;
  };
  auto condition = [&](const std::string& pod) {
    return c.jsonpath("pod/" + pod,
                      "{.status.conditions[?(@.type==\"PodScheduled\")].reason}: "
                      "{.status.conditions[?(@.type==\"PodScheduled\")].message}");
  };
  auto pendingWith = [&](const std::string& pod, const std::string& want) {
    return testutil::eventually(std::chrono::seconds(30), [&] { return condition(pod) == want; });
  };

  ASSERT_EQ(c.kubectl({"taint", "node", "local", "dedicated=gpu:NoSchedule"}).exit_code, 0);
  ASSERT_EQ(c.apply(sleeper("untolerating", "")).exit_code, 0);
  ASSERT_EQ(c.apply(sleeper("tolerating",
                            "  tolerations: [{key: dedicated, operator: Equal, value: gpu, "
                            "effect: NoSchedule}]\n"))
                .exit_code,
            0);
  EXPECT_TRUE(pendingWith("untolerating",
                          "Unschedulable: 0/1 nodes are available: 1 node(s) had untolerated "
                          "taint {dedicated: gpu}."))
      << c.describe("untolerating");
  EXPECT_EQ(c.wait("pod/tolerating", "condition=Ready").exit_code, 0) << c.describe("tolerating");
  ASSERT_EQ(c.kubectl({"taint", "node", "local", "dedicated-"}).exit_code, 0);
  EXPECT_EQ(c.wait("pod/untolerating", "condition=Ready").exit_code, 0)
      << c.describe("untolerating");

  ASSERT_EQ(
      c.apply(sleeper("zoned", "  nodeSelector: {topology.kubernetes.io/zone: a}\n")).exit_code, 0);
  EXPECT_TRUE(pendingWith("zoned",
                          "Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's "
                          "node affinity/selector."))
      << c.describe("zoned");
  ASSERT_EQ(c.kubectl({"label", "node", "local", "topology.kubernetes.io/zone=a"}).exit_code, 0);
  EXPECT_EQ(c.wait("pod/zoned", "condition=Ready").exit_code, 0) << c.describe("zoned");

  ASSERT_EQ(c.apply(sleeper("fpga", "    resources: {limits: {example.com/fpga: 1}}\n")).exit_code,
            0);
  EXPECT_TRUE(pendingWith(
      "fpga", "Unschedulable: 0/1 nodes are available: 1 Insufficient example.com/fpga."))
      << c.describe("fpga");

  ASSERT_EQ(
      c.apply(sleeper("gated", "  schedulingGates: [{name: example.com/admission}]\n")).exit_code,
      0);
  EXPECT_TRUE(pendingWith(
      "gated", "SchedulingGated: Scheduling is blocked due to non-empty scheduling gates"))
      << c.describe("gated");
  ProcessResult events =
      c.kubectl({"get", "events", "--field-selector", "involvedObject.name=gated", "-o",
                 "jsonpath={.items[*].reason}"});
  EXPECT_EQ(events.stdout_text.find("FailedScheduling"), std::string::npos) << events.stdout_text;
  EXPECT_EQ(c.jsonpath("pod/gated", "{.spec.nodeName}"), "");
  ASSERT_EQ(c.kubectl({"patch", "pod", "gated", "--type=json", "-p",
                       R"([{"op":"remove","path":"/spec/schedulingGates"}])"})
                .exit_code,
            0);
  EXPECT_EQ(c.wait("pod/gated", "condition=Ready").exit_code, 0) << c.describe("gated");

  c.kubectl({"label", "node", "local", "topology.kubernetes.io/zone-"});
  EXPECT_EQ(c.kubectl({"delete", "pod", "untolerating", "tolerating", "zoned", "fpga", "gated",
                       "--wait=false"})
                .exit_code,
            0);
}

TEST_F(KubeletTest, OnFailurePodIsRestarted) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: crashy}
spec:
  restartPolicy: OnFailure
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'echo run; exit 1']

)yaml")
                .exit_code,
            0);
  // restartCount counts exits that will restart; at 2 the first restart has run.
  ASSERT_EQ(
      c.wait("pod/crashy", "jsonpath={.status.containerStatuses[0].restartCount}=2").exit_code, 0)
      << c.describe("crashy");
  EXPECT_EQ(
      c.jsonpath("pod/crashy", "{.status.containerStatuses[0].lastState.terminated.exitCode}"),
      "1");
  EXPECT_EQ(c.jsonpath("pod/crashy", "{.status.phase}"), "Running");
  EXPECT_EQ(testutil::readFile(c.podDir("crashy") + "/main.previous.log"), "run\n");
  EXPECT_EQ(c.kubectl({"delete", "pod", "crashy"}).exit_code, 0);
}

TEST_F(KubeletTest, PodsResolveEachOtherByHostnameAndConnectOverTcp) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: server, labels: {app: peers}}
spec:
  hostname: server
  subdomain: peers
  containers:
  - name: main
    image: python
    command: [python3, -m, http.server, "8080", --bind, $(POD_IP)]
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    readinessProbe:
      httpGet: {path: /, port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  hostname: client
  subdomain: peers
  restartPolicy: OnFailure
  dnsConfig:
    searches: [example.test]
    options: [{name: ndots, value: "5"}]
  containers:
  - name: main
    image: python
    command:
    - sh
    - -c
    - >-
      sed 's/^/resolv: /' /etc/resolv.conf &&
      getent hosts server.peers.default.svc &&
      python3 -c "import urllib.request; print('status', urllib.request.urlopen('http://server.peers.default.svc:8080/', timeout=5).status)"

)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/server", "condition=Ready").exit_code, 0) << c.describe("server");
  ASSERT_EQ(c.wait("pod/client", "jsonpath={.status.phase}=Succeeded").exit_code, 0)
      << c.describe("client");
  const std::string server_ip = c.jsonpath("pod/server", "{.status.podIP}");
  const std::string client_ip = c.jsonpath("pod/client", "{.status.podIP}");
  // An address of either pod network (pod_network.h): cni's where this host allows it.
  EXPECT_TRUE(server_ip.rfind("10.244.", 0) == 0 || server_ip.rfind("127.1.", 0) == 0) << server_ip;
  EXPECT_NE(server_ip, client_ip);
  const std::string log = c.kubectl({"logs", "client"}).stdout_text;
  EXPECT_NE(log.find(server_ip + " "), std::string::npos) << log;
  EXPECT_NE(log.find("status 200"), std::string::npos) << log;
  if (server_ip.rfind("10.244.", 0) == 0) {
    // With namespaces (root, as cni needs), the pod's own resolv.conf: the node's resolver with
    // the pod's dnsConfig appended.
    EXPECT_NE(log.find("resolv: search example.test"), std::string::npos) << log;
    EXPECT_NE(log.find("ndots:5"), std::string::npos) << log;
  }
  EXPECT_EQ(c.kubectl({"delete", "pod", "server", "client"}).exit_code, 0);
}

TEST_F(KubeletTest, VolumesAppearAtTheirMountPathsWithModes) {
  Cluster& c = *cluster_;
  const std::string mnt = (c.tmp() / "mnt").string();
  std::string yaml = R"yaml(apiVersion: v1
kind: ConfigMap
metadata: {name: vol-cm}
data: {greeting: hello-config}
---
apiVersion: v1
kind: Secret
metadata: {name: vol-secret}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: volumes}
spec:
  restartPolicy: Never
  volumes:
  - name: cfg
    configMap:
      name: vol-cm
      items: [{key: greeting, path: sub/greeting.txt, mode: 0600}]
  - name: sec
    secret: {secretName: vol-secret, defaultMode: 0400}
  - name: scratch
    emptyDir: {}
  - name: data
    persistentVolumeClaim: {claimName: claim1}
  containers:
  - name: main
    image: busybox
    volumeMounts:
    - {name: cfg, mountPath: MNT/cfg}
    - {name: sec, mountPath: MNT/sec}
    - {name: scratch, mountPath: MNT/scratch}
    - {name: data, mountPath: MNT/data}
    command:
    - sh
    - -c
    - |
      cat MNT/cfg/sub/greeting.txt; echo
      stat -c 'cfg %a' MNT/cfg/sub/greeting.txt
      cat MNT/sec/password; echo
      stat -c 'sec %a' MNT/sec/password
      echo scratch-ok > MNT/scratch/f && cat MNT/scratch/f
      echo persisted > MNT/data/out
      touch MNT/cfg/new 2>/dev/null || echo cfg-read-only
)yaml";
  for (size_t at; (at = yaml.find("MNT")) != std::string::npos;) yaml.replace(at, 3, mnt);
  ASSERT_EQ(c.apply(yaml).exit_code, 0);
  ASSERT_EQ(c.wait("pod/volumes", "jsonpath={.status.phase}=Succeeded").exit_code, 0)
      << c.describe("volumes") << testutil::readFile(c.podDir("volumes") + "/main.log");
  const std::string log = c.kubectl({"logs", "volumes"}).stdout_text;
  EXPECT_EQ(log, "hello-config\ncfg 600\ns3cret\nsec 400\nscratch-ok\ncfg-read-only\n");
  EXPECT_EQ(testutil::readFile((c.root() / "volumes/default/claim1/out").string()), "persisted\n");
  // The mounts lived in the container's own mount namespace only.
  EXPECT_FALSE(fs::exists(mnt + "/cfg/sub"));
}

TEST_F(KubeletTest, PodWhoseVolumeNameClimbsOutFailsAndTouchesNothingOutside) {
  // The API server does not validate pod specs: the kubelet itself must refuse a volume whose
  // directory would be R/sentinel (5 levels up from R/pods/<ns>/<pod>/volumes/configmap).
  Cluster& c = *cluster_;
  const fs::path sentinel = c.root() / "sentinel";
  fs::create_directories(sentinel);
  std::ofstream(sentinel / "keep") << "x";
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: ConfigMap
metadata: {name: climb-cm}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: climb}
spec:
  restartPolicy: Always
  volumes:
  - name: ../../../../../sentinel
    configMap: {name: climb-cm}
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "sleep 60"]
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/climb", "jsonpath={.status.phase}=Failed").exit_code, 0)
      << c.describe("climb");
  EXPECT_EQ(c.jsonpath("pod/climb", "{.status.reason}"), "UnsafePath");
  const std::string message = c.jsonpath("pod/climb", "{.status.message}");
  EXPECT_NE(message.find("spec.volumes[0].name"), std::string::npos) << message;
  EXPECT_EQ(testutil::readFile((sentinel / "keep").string()), "x");
  EXPECT_EQ(c.kubectl({"delete", "pod", "climb", "--wait=true"}).exit_code, 0);
}

TEST_F(KubeletTest, BackgroundChildrenEndWithTheirContainer) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: leaves-child}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'sleep 987 & perl -e "setpgrp; exec @ARGV" sleep 988 & echo started']
    env:
    - {name: LEFT_BEHIND_BY, value: leaves-child}

)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/leaves-child", "jsonpath={.status.phase}=Succeeded").exit_code, 0)
      << c.describe("leaves-child");
  EXPECT_TRUE(testutil::eventually(
      std::chrono::seconds(10),
      [] {
        return testutil::findProcess("sleep", {{"LEFT_BEHIND_BY", "leaves-child"}}) == 0;
      }))
      << "a background sleep outlived the container: 987 shares its process group, 988 took "
         "one of its own (as the launcher's ranks do); the container's session holds both";
}

TEST_F(KubeletTest, DeletingARunningPodSendsSigtermAndRemovesIt) {
  Cluster& c = *cluster_;
  const std::string marker = (c.tmp() / "sigterm-marker").string();
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 20
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'trap "echo got-term > )yaml" +
                    marker + R"yaml(; exit 0" TERM; while true; do sleep 0.1; done']

)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/graceful", "condition=Ready").exit_code, 0) << c.describe("graceful");
  ProcessResult deleted = c.kubectl({"delete", "pod", "graceful", "--timeout=60s"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.stderr_text;
  EXPECT_EQ(testutil::readFile(marker), "got-term\n");
  ProcessResult get = c.kubectl({"get", "pod", "graceful"});
  EXPECT_NE(get.exit_code, 0);
  EXPECT_NE(get.stderr_text.find("NotFound"), std::string::npos) << get.stderr_text;
}

// A pod `name` whose one container loops until killed, Ready.
void startLoopingPod(Cluster& c, const std::string& name, const std::string& restart_policy) {
  ASSERT_EQ(c.apply("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                    "}\nspec:\n  restartPolicy: " + restart_policy +
                    "\n  containers:\n  - {name: main, image: busybox, command: [sh, -c, 'while "
                    "true; do sleep 0.1; done']}\n")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/" + name, "condition=Ready").exit_code, 0) << c.describe(name);
}

// --container-runtime podman: each container runs in its image (the Debian base that
// scripts/build-images makes), with the pod's network, hostname and /etc/hosts, its volumes, its
// environment, its securityContext enforced, and exit code, logs and termination message as a
// host process has them. Skipped where podman is not installed.
// podman's containers of the pod with uid `uid`, one id a line ("" when none is left).
std::string imageContainersOf(const std::string& uid) {
  return testutil::run({"/bin/sh", "-c",
                        "podman ps -a --filter label=local.ringmaster.dev/pod-uid=" + uid + " -q"})
      .stdout_text;
}

// The kubelet refuses to start `pod`'s container: it waits with CreateContainerConfigError,
// its message holding `why`.
void expectRefused(Cluster& c, const std::string& pod, const std::string& why) {
  EXPECT_EQ(c.wait("pod/" + pod,
                   "jsonpath={.status.containerStatuses[0].state.waiting.reason}="
                   "CreateContainerConfigError",
                   60)
                .exit_code,
            0)
      << c.describe(pod);
  EXPECT_NE(
      c.jsonpath("pod/" + pod, "{.status.containerStatuses[0].state.waiting.message}").find(why),
      std::string::npos)
      << c.describe(pod);
}

class KubeletImageTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto podman = testutil::run({"/bin/sh", "-c", "command -v podman && command -v debootstrap"});
    if (findKubectl().empty() || podman.exit_code != 0) return;
    const std::string source = std::getenv("RM_SOURCE_DIR") ? std::getenv("RM_SOURCE_DIR") : ".";
    setenv("CONTAINERS_CONF", (source + "/scripts/containers.conf").c_str(), 1);
    auto base =
        testutil::run({source + "/scripts/build-images", "base"}, {}, std::chrono::seconds(600));
    base_error_ = base.exit_code == 0 ? "" : base.stdout_text + base.stderr_text;
    // auto: podman works on a machine with it, so every test below runs containers in images.
    cluster_ =
        new Cluster(findKubectl(), {"--container-runtime", "auto", "--metrics-port", "0",
                                    "--max-backoff-seconds", "1", "--heartbeat-seconds", "2"});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!cluster_) GTEST_SKIP() << "kubectl, podman or debootstrap is not installed";
    ASSERT_EQ(base_error_, "");
    ASSERT_EQ(cluster_->error(), "");
  }
  static Cluster* cluster_;
  static std::string base_error_;
};
Cluster* KubeletImageTest::cluster_ = nullptr;
std::string KubeletImageTest::base_error_;

TEST_F(KubeletImageTest, APodRunsInItsImageWithItsNamesVolumesAndSecurityContext) {
  Cluster& c = *cluster_;
  EXPECT_NE(c.kubeletLog().find("containers as podman containers (auto: podman works here"),
            std::string::npos)
      << c.kubeletLog();
  // A file only the host has: the container sees the image's filesystem, not the host's.
  const std::string marker = "/tmp/rm-host-only-" + std::to_string(getpid());
  std::ofstream(marker) << "host";
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: ConfigMap
metadata: {name: in-image-cfg}
data: {x: from-a-configmap}
---
apiVersion: v1
kind: Pod
metadata: {name: in-image}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  dnsConfig: {searches: [example.test]}
  containers:
  - name: main
    image: localhost/ringmaster-base:bookworm
    command: [/bin/sh, -c]
    args:
    - |
      echo "uid=$(id -u) groups=$(id -G) host=$(hostname)"
      grep -c "in-image$" /etc/hosts | sed 's/^/hosts-lines=/'
      grep -q "^search .*example.test" /etc/resolv.conf && echo resolv=the-pods
      cat /etc/debian_version | sed 's/^/debian=/'
      cat /etc/shadow 2>/dev/null || echo shadow=denied
      touch /probe 2>/dev/null || echo root=read-only
      test -e $(MARKER) && echo marker=seen || echo marker=absent
      echo "greeting=$GREETING" "data=$(cat /data/x)"
      echo bye > /dev/termination-log
      exit 3
    env:
    - {name: GREETING, value: hello world}
    - {name: MARKER, value: )yaml" +
                    marker + R"yaml(}
    securityContext:
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
    volumeMounts: [{name: cfg, mountPath: /data}]
  volumes: [{name: cfg, configMap: {name: in-image-cfg}}]
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/in-image", "jsonpath={.status.phase}=Failed", 120).exit_code, 0)
      << c.describe("in-image");
  std::remove(marker.c_str());
  EXPECT_EQ(c.jsonpath("pod/in-image", "{.status.containerStatuses[0].state.terminated.exitCode}"),
            "3");
  EXPECT_EQ(c.jsonpath("pod/in-image", "{.status.containerStatuses[0].state.terminated.message}"),
            "bye\n");
  const std::string logs = c.kubectl({"logs", "in-image"}).stdout_text;
  for (const char* line : {"uid=1000 groups=1000 2000 host=in-image", "hosts-lines=1",
                           "resolv=the-pods", "debian=12", "shadow=denied", "root=read-only",
                           "marker=absent", "greeting=hello world data=from-a-configmap"}) {
    EXPECT_NE(logs.find(line), std::string::npos) << line << " not in:\n" << logs;
  }
  // Its container is gone with it.
  EXPECT_EQ(imageContainersOf(c.jsonpath("pod/in-image", "{.metadata.uid}")), "")
      << "a container outlived its pod";
}

// A container in its image is measured from its cgroup: the spinning process' CPU time and
// memory, not those of podman, which only waits for it.
TEST_F(KubeletImageTest, AContainersCpuAndMemoryComeFromItsCgroup) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: burner-in-image}
spec:
  restartPolicy: Never
  containers:
  - name: spin
    image: localhost/ringmaster-base:bookworm
    command: [/bin/sh, -c, 'while :; do :; done']
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/burner-in-image", "jsonpath={.status.phase}=Running").exit_code, 0)
      << c.describe("burner-in-image");
  const int port = std::stoi(
      c.jsonpath("node/local", "{.metadata.annotations.local\\.ringmaster\\.dev/metrics-port}"));
  const std::string labels =
      R"({container="spin",image="localhost/ringmaster-base:bookworm",namespace="default",pod="burner-in-image"} )";
  // podman's own process uses a few hundredths of a second; the spinning shell a second a second.
  const CadvisorReading r = waitForCpuSeconds(port, labels, 1.0);
  EXPECT_GE(r.cpu, 1.0) << r.body;
  EXPECT_NE(r.body.find("container_memory_working_set_bytes" + labels), std::string::npos)
      << r.body;
  ASSERT_EQ(c.kubectl({"delete", "pod", "burner-in-image", "--grace-period=1"}).exit_code, 0);
}

// Deleting a pod whose container runs in an image: SIGTERM reaches the container's process
// through podman (the pod goes long before its 60 s grace period), and the container goes too.
TEST_F(KubeletImageTest, DeletingThePodStopsItsContainerWithSigterm) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: in-image-term}
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: main
    image: localhost/ringmaster-base:bookworm
    command: [/bin/sh, -c, 'trap "exit 0" TERM; echo up; while :; do sleep 0.2; done']
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/in-image-term", "jsonpath={.status.phase}=Running", 120).exit_code, 0)
      << c.describe("in-image-term");
  const std::string uid = c.jsonpath("pod/in-image-term", "{.metadata.uid}");
  ASSERT_TRUE(testutil::eventually(std::chrono::seconds(30), [&] {
    return c.kubectl({"logs", "in-image-term"}).stdout_text.find("up") != std::string::npos;
  })) << c.describe("in-image-term");
  const auto deleted =
      c.kubectl({"delete", "pod", "in-image-term", "--timeout=30s"}, std::chrono::seconds(60));
  EXPECT_EQ(deleted.exit_code, 0) << "not gone within 30 s of a 60 s grace period: "
                                  << deleted.stderr_text << c.describe("in-image-term");
  EXPECT_EQ(imageContainersOf(uid), "") << "a container outlived its pod";
}

// A pod that asks for root gets root of its container only: the /etc/shadow it reads is its
// image's, not the host's; and with runAsNonRoot, runAsUser 0 is refused.
TEST_F(KubeletImageTest, RootInAContainerIsNotRootOfTheHost) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: asks-for-root}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 0}
  containers:
  - {name: main, image: localhost/ringmaster-base:bookworm, command: [cat, /etc/shadow]}
---
apiVersion: v1
kind: Pod
metadata: {name: root-and-non-root}
spec:
  restartPolicy: Never
  securityContext: {runAsUser: 0, runAsNonRoot: true}
  containers:
  - {name: main, image: localhost/ringmaster-base:bookworm, command: [id]}
)yaml")
                .exit_code,
            0);
  ASSERT_EQ(c.wait("pod/asks-for-root", "jsonpath={.status.phase}=Succeeded", 120).exit_code, 0)
      << c.describe("asks-for-root");
  const std::string in_container = c.kubectl({"logs", "asks-for-root"}).stdout_text;
  EXPECT_NE(in_container.find("root:"), std::string::npos) << "root reads a shadow file";
  EXPECT_NE(in_container, testutil::readFile("/etc/shadow")) << "the host's own";
  expectRefused(c, "root-and-non-root", "runAsUser breaks non-root policy");
  c.kubectl({"delete", "pod", "asks-for-root", "root-and-non-root", "--wait=false"});
}

// runAsNonRoot over an image whose user is root: the kubelet refuses to start it, as a real one
// does, and says why.
TEST_F(KubeletImageTest, RunAsNonRootRefusesAnImageThatRunsAsRoot) {
  Cluster& c = *cluster_;
  ASSERT_EQ(c.apply(R"yaml(apiVersion: v1
kind: Pod
metadata: {name: wants-non-root}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true}
  containers:
  - {name: main, image: localhost/ringmaster-base:bookworm, command: [id]}
)yaml")
                .exit_code,
            0);
  expectRefused(c, "wants-non-root", "runAsNonRoot and image will run as root");
  EXPECT_EQ(c.kubectl({"delete", "pod", "wants-non-root", "--wait=false"}).exit_code, 0);
}

TEST(KubeletRestartTest, LostContainersEndOrRestartPerRestartPolicy) {
  const std::string kubectl = findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  Cluster c(kubectl, {"--max-backoff-seconds", "1"});
  ASSERT_EQ(c.error(), "");
  startLoopingPod(c, "once", "Never");
  startLoopingPod(c, "always", "Always");
  ProcessResult old = c.restartKubelet();
  EXPECT_EQ(old.exit_code, 0) << old.stderr_text;
  ASSERT_EQ(c.wait("pod/once", "jsonpath={.status.phase}=Failed").exit_code, 0)
      << c.describe("once");
  EXPECT_EQ(c.jsonpath("pod/once", "{.status.containerStatuses[0].state.terminated.exitCode}"),
            "137");
  ASSERT_EQ(
      c.wait("pod/always", "jsonpath={.status.containerStatuses[0].restartCount}=1").exit_code, 0)
      << c.describe("always");
  ASSERT_EQ(c.wait("pod/always", "condition=Ready").exit_code, 0) << c.describe("always");
}

// With a shutdown grace period, a stopping kubelet shuts its node down as a real one does:
// NotReady, every pod Failed with reason Terminated (not restarted by the next kubelet), and the
// node Ready again once a kubelet runs.
TEST(KubeletRestartTest, ShutdownGracePeriodShutsTheNodeDownAndItComesBackReady) {
  const std::string kubectl = findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  Cluster c(kubectl, {"--shutdown-grace-period", "3", "--heartbeat-seconds", "1"});
  ASSERT_EQ(c.error(), "");
  startLoopingPod(c, "always", "Always");
  ProcessResult old = c.stopKubelet();
  EXPECT_EQ(old.exit_code, 0) << old.stderr_text;
  EXPECT_EQ(c.jsonpath("pod/always", "{.status.phase} {.status.reason}"), "Failed Terminated");
  EXPECT_EQ(c.jsonpath("pod/always", "{.status.message}"),
            "Pod was terminated in response to imminent node shutdown.");
  EXPECT_NE(c.jsonpath("pod/always", "{.status.containerStatuses[0].state.terminated.exitCode}"),
            "");
  EXPECT_EQ(c.jsonpath("node/local",
                       "{.status.conditions[?(@.type==\"Ready\")].status} "
                       "{.status.conditions[?(@.type==\"Ready\")].message}"),
            "False node is shutting down");
  c.startKubelet();
  ASSERT_EQ(c.wait("node/local", "condition=Ready").exit_code, 0);
  EXPECT_EQ(c.jsonpath("pod/always", "{.status.phase}"), "Failed") << c.describe("always");
}

TEST(KubeletSimulateTest, RunsAThousandPods) {
  const std::string kubectl = findKubectl();
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not installed";
  Cluster c(kubectl, {"--simulate"});
  ASSERT_EQ(c.error(), "");
  constexpr int kPods = 1000;
  std::string yaml;
  for (int i = 0; i < kPods; ++i) {
    yaml += "---\n{apiVersion: v1, kind: Pod, metadata: {name: sim-" + std::to_string(i) +
            ", labels: {sim: \"yes\"}}, spec: {containers: [{name: main, image: none}]}}\n";
  }
  const fs::path file = c.tmp() / "sim.yaml";
  std::ofstream(file) << yaml;
  ProcessResult created = c.kubectl({"create", "-f", file.string()}, std::chrono::seconds(300));
  ASSERT_EQ(created.exit_code, 0) << created.stderr_text;
  // Polled with a deadline: `kubectl wait --all` and `delete --wait` watch pod by pod.
  auto count = [&](const std::vector<std::string>& selector) {
    std::vector<std::string> args{"get", "pods", "-l", "sim=yes", "-o", "name"};
    args.insert(args.end(), selector.begin(), selector.end());
    return testutil::countLines(c.kubectl(args).stdout_text, "pod/sim-");
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (count({"--field-selector", "status.phase=Running"}) < kPods) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "not all pods Running";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(c.jsonpath("pod/sim-999", "{.status.conditions[?(@.type==\"Ready\")].status}"), "True");
  EXPECT_EQ(c.jsonpath("pod/sim-999", "{.status.podIP}").rfind("127.1.", 0), 0u);
  ProcessResult removed = c.kubectl({"delete", "pods", "-l", "sim=yes", "--wait=false"});
  ASSERT_EQ(removed.exit_code, 0) << removed.stderr_text;
  while (count({}) > 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "pods not deleted";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace
}  // namespace ringmaster::local
