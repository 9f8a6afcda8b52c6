// Drives the real kubectl against `ringmaster local serve` and, where RINGMASTER_ENVTEST names
// one, a real control plane: the same commands must give the same answers on both (skipped when
// kubectl is missing).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/testutil/control_plane.h"
#include "tests/testutil/process.h"

namespace ringmaster::local {
namespace {

namespace fs = std::filesystem;
using testutil::ProcessResult;

constexpr const char* kCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.dev
spec:
  group: example.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [toys]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
)";

constexpr const char* kWidget = R"(apiVersion: example.dev/v1
kind: Widget
metadata: {name: w1}
spec: {size: 3, color: red}
)";

constexpr const char* kConfigMap = R"(apiVersion: v1
kind: ConfigMap
metadata: {name: cm1}
data: {a: "1"}
)";

// The TrainingJob CRD, trimmed: a structural schema with descriptions, bounds,
// an enum, defaults and one CEL rule.
constexpr const char* kTjCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: trainingjobs.ringmaster.dev
spec:
  group: ringmaster.dev
  scope: Namespaced
  names: {plural: trainingjobs, singular: trainingjob, kind: TrainingJob, shortNames: [tj]}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        description: TrainingJob runs a distributed training program on a set of worker pods.
        properties:
          spec:
            type: object
            description: Desired state of the TrainingJob.
            required: [replicas, trainer]
            x-kubernetes-validations:
            - rule: "self.replicas * self.procsPerReplica <= 4096"
              message: "world size (replicas * procsPerReplica) must be <= 4096"
            properties:
              replicas: {type: integer, format: int32, minimum: 1, description: Number of worker pods.}
              procsPerReplica: {type: integer, format: int32, minimum: 1, default: 1,
                                description: Processes started in each worker pod.}
              launcher: {type: string, enum: [native, mpi], default: native,
                         description: How processes are started.}
              trainer:
                type: object
                description: The training program run by every process.
                required: [image]
                properties:
                  image: {type: string, minLength: 1, description: Container image.}
          status:
            type: object
            properties:
              phase: {type: string, enum: [Pending, Running, Succeeded, Failed]}
)";

constexpr const char* kPod = R"(apiVersion: v1
kind: Pod
metadata: {name: p1, labels: {app: demo}}
spec:
  containers: [{name: worker, image: busybox}]
)";

using testutil::findKubectl;

void writeFile(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// Whether some line of `text` starts with these whitespace-separated words ("*": any word).
// (No std::regex: GCC 12 warns inside <regex> under the sanitizers.)
bool hasRow(const std::string& text, const std::vector<std::string>& words) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    size_t i = 0;
    for (std::string w; i < words.size() && in >> w; ++i) {
      if (words[i] != "*" && words[i] != w) break;
    }
    if (i == words.size()) return true;
  }
  return false;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// kubectl against one API server: `ringmaster local serve` (a fresh one per test), or the real
// control plane of envtest (one per test suite, a fresh namespace per test, as controller-runtime's
// envtest suites do: a start costs about 15 s).
class KubectlFixture : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { sharedEnvtest().reset(); }

  void startOn(testutil::ControlPlane plane) {
    plane_ = plane;
    if (std::string why = testutil::controlPlaneMissing(plane); !why.empty()) GTEST_SKIP() << why;
    kubectl_ = findKubectl();
    if (plane == testutil::ControlPlane::kLocal) {
      server_ = std::make_unique<testutil::ApiServer>(plane);
      ASSERT_EQ(server_->start(), "");
      kubeconfig_ = server_->kubeconfig();
      return;
    }
    auto& envtest = sharedEnvtest();
    if (!envtest) {
      envtest = std::make_unique<testutil::ApiServer>(plane, testutil::PlaneUse::kSharedByCases);
      ASSERT_EQ(envtest->start(), "");
    }
    static int tests = 0;
    ns_ = "kubectl-" + std::to_string(++tests);
    kubeconfig_ = (fs::path(dir_.path()) / "kubeconfig").string();
    fs::copy_file(envtest->kubeconfig(), kubeconfig_);
    ASSERT_EQ(kubectl({"create", "namespace", ns_}).exit_code, 0);
    ASSERT_EQ(kubectl({"config", "set-context", "--current", "--namespace=" + ns_}).exit_code, 0);
    // ServiceAccount admission refuses pods until the controller manager made `default`.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (kubectl({"get", "serviceaccount", "default"}).exit_code != 0) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no default ServiceAccount";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->stop(), "");
    }
    if (!ns_.empty()) (void)kubectl({"delete", "namespace", ns_, "--wait=false"});
  }

  bool onEnvtest() const { return plane_ == testutil::ControlPlane::kEnvtest; }

  ProcessResult kubectl(std::vector<std::string> args, const std::string& kubeconfig = "") {
    std::vector<std::string> argv{kubectl_, "--kubeconfig",
                                  kubeconfig.empty() ? kubeconfig_ : kubeconfig};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::run(
        argv, {{"KUBECACHEDIR", (fs::path(dir_.path()) / "cache").string()}, {"HOME", dir_.path()}},
        std::chrono::seconds(60));
  }

  void applyTrainingJobCrd() {
    auto applied = kubectl({"apply", "-f", file("tj-crd.yaml", kTjCrd)});
    ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
    ASSERT_EQ(kubectl({"wait", "--for=condition=Established", "crd/trainingjobs.ringmaster.dev",
                       "--timeout=20s"})
                  .exit_code,
              0);
  }

  std::string output(std::vector<std::string> args) {
    auto r = kubectl(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return r.stdout_text;
  }

  // A Node carrying the kubelet-root annotation, pod p1 bound to it and marked running: the
  // setup `kubectl logs` needs (what the local kubelet does for real pods).
  fs::path runningPodWithLogDir() {
    const fs::path root = fs::path(dir_.path()) / "kubelet";
    const std::string node =
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: local\n"
        "  annotations: {local.ringmaster.dev/kubelet-root: " +
        root.string() + "}\n";
    EXPECT_EQ(kubectl({"create", "-f", file("node.yaml", node)}).exit_code, 0);
    EXPECT_EQ(kubectl({"create", "-f", file("pod.yaml", kPod)}).exit_code, 0);
    const std::string binding = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},)"
                                R"("target":{"apiVersion":"v1","kind":"Node","name":"local"}})";
    auto bound = kubectl({"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/p1/binding", "-f",
                          file("binding.json", binding)});
    EXPECT_EQ(bound.exit_code, 0) << bound.stderr_text;
    setWorkerState(R"({"running":{"startedAt":"2026-11-22T01:59:56Z"}})", "Running");
    const std::string uid = output({"get", "pod", "p1", "-o", "jsonpath={.metadata.uid}"});
    const fs::path dir = root / "pods" / ns_ / ("p1_" + uid);
    fs::create_directories(dir);
    return dir;
  }

  void setWorkerState(const std::string& state, const std::string& phase) {
    auto patched =
        kubectl({"patch", "pod", "p1", "--subresource=status", "--type=merge", "-p",
                 R"({"status":{"phase":")" + phase +
                     R"(","containerStatuses":[{"name":"worker",)"
                     R"("image":"busybox","imageID":"","ready":true,"restartCount":0,"state":)" +
                     state + "}]}}"});
    EXPECT_EQ(patched.exit_code, 0) << patched.stderr_text;
  }

  std::string file(const std::string& name, const std::string& text) {
    fs::path p = fs::path(dir_.path()) / name;
    writeFile(p, text);
    return p.string();
  }

  static std::unique_ptr<testutil::ApiServer>& sharedEnvtest() {
    static std::unique_ptr<testutil::ApiServer> envtest;
    return envtest;
  }

  testutil::ControlPlane plane_ = testutil::ControlPlane::kLocal;
  testutil::TempDir dir_;
  std::string kubectl_;
  std::string kubeconfig_;
  std::string ns_ = "default";
  std::unique_ptr<testutil::ApiServer> server_;  // the local server (envtest is shared)
};

class KubectlTest : public KubectlFixture,
                    public ::testing::WithParamInterface<testutil::ControlPlane> {
 protected:
  void SetUp() override { startOn(GetParam()); }
};

// What only the embedded server can be made to do: restart on its data dir, and read pod logs
// from the kubelet's files (a real API server reads them through the kubelet's log endpoint,
// which the e2e tests drive).
class LocalKubectlTest : public KubectlFixture {
 protected:
  void SetUp() override { startOn(testutil::ControlPlane::kLocal); }
  // Stops the server and starts it again on the same data directory.
  void restartServer() {
    ASSERT_EQ(server_->restart(), "");
    kubeconfig_ = server_->kubeconfig();
  }
};

TEST_P(KubectlTest, ApiResourcesListsBuiltinsAndAppliedCrd) {
  auto before = kubectl({"api-resources"});
  ASSERT_EQ(before.exit_code, 0) << before.stderr_text;
  EXPECT_NE(before.stdout_text.find("pods"), std::string::npos);
  EXPECT_NE(before.stdout_text.find("services"), std::string::npos);
  EXPECT_NE(before.stdout_text.find("configmaps"), std::string::npos);
  EXPECT_EQ(before.stdout_text.find("widgets"), std::string::npos);

  auto applied = kubectl({"apply", "-f", file("crd.yaml", kCrd)});
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  auto waited =
      kubectl({"wait", "--for=condition=Established", "crd/widgets.example.dev", "--timeout=20s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.stderr_text;
  EXPECT_NE(waited.stdout_text.find("condition met"), std::string::npos);

  auto after = kubectl({"api-resources", "--api-group=example.dev"});
  ASSERT_EQ(after.exit_code, 0) << after.stderr_text;
  EXPECT_TRUE(hasRow(after.stdout_text, {"widgets", "wd", "example.dev/v1", "true", "Widget"}))
      << after.stdout_text;

  auto deleted = kubectl({"delete", "crd", "widgets.example.dev"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.stderr_text;
  auto gone = kubectl({"api-resources"});
  EXPECT_EQ(gone.stdout_text.find("widgets"), std::string::npos);
}

TEST_P(KubectlTest, GetCustomResourcesShowsPrinterColumns) {
  ASSERT_EQ(kubectl({"apply", "-f", file("crd.yaml", kCrd)}).exit_code, 0);
  ASSERT_EQ(
      kubectl({"wait", "--for=condition=Established", "crd/widgets.example.dev", "--timeout=20s"})
          .exit_code,
      0);
  auto applied = kubectl({"apply", "-f", file("w.yaml", kWidget)});
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  EXPECT_NE(applied.stdout_text.find("widget.example.dev/w1 created"), std::string::npos);

  auto got = kubectl({"get", "widgets"});
  ASSERT_EQ(got.exit_code, 0) << got.stderr_text;
  EXPECT_TRUE(hasRow(got.stdout_text, {"NAME", "SIZE", "COLOR", "AGE"})) << got.stdout_text;
  EXPECT_TRUE(hasRow(got.stdout_text, {"w1", "3", "red", "*"})) << got.stdout_text;

  // Update through apply (merge patch) and through the status subresource.
  std::string v2 = replaced(kWidget, "size: 3", "size: 5");
  auto configured = kubectl({"apply", "-f", file("w2.yaml", v2)});
  ASSERT_EQ(configured.exit_code, 0) << configured.stderr_text;
  EXPECT_NE(configured.stdout_text.find("configured"), std::string::npos);
  auto status = kubectl({"patch", "wd", "w1", "--subresource=status", "--type=merge", "-p",
                         R"({"status":{"phase":"Ready"}})"});
  ASSERT_EQ(status.exit_code, 0) << status.stderr_text;
  auto yaml = kubectl({"get", "wd", "w1", "-o", "yaml"});
  EXPECT_NE(yaml.stdout_text.find("size: 5"), std::string::npos) << yaml.stdout_text;
  EXPECT_NE(yaml.stdout_text.find("phase: Ready"), std::string::npos) << yaml.stdout_text;
  auto by_category = kubectl({"get", "toys"});
  EXPECT_NE(by_category.stdout_text.find("w1"), std::string::npos) << by_category.stderr_text;
  EXPECT_EQ(kubectl({"delete", "crd", "widgets.example.dev"}).exit_code, 0);
}

TEST_P(KubectlTest, ConfigMapCreateGetPatchDelete) {
  const std::string cm = file("cm.yaml", kConfigMap);
  auto created = kubectl({"create", "-f", cm});
  ASSERT_EQ(created.exit_code, 0) << created.stderr_text;
  auto again = kubectl({"create", "-f", cm});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.stderr_text.find("(AlreadyExists)"), std::string::npos) << again.stderr_text;
  EXPECT_NE(again.stderr_text.find("configmaps \"cm1\" already exists"), std::string::npos);

  auto patched = kubectl({"patch", "cm", "cm1", "--type=merge", "-p", R"({"data":{"b":"2"}})"});
  ASSERT_EQ(patched.exit_code, 0) << patched.stderr_text;
  auto yaml = kubectl({"get", "cm", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.stderr_text;
  EXPECT_NE(yaml.stdout_text.find("name: cm1"), std::string::npos) << yaml.stdout_text;
  EXPECT_NE(yaml.stdout_text.find("b: \"2\""), std::string::npos) << yaml.stdout_text;

  auto table = kubectl({"get", "cm"});
  EXPECT_TRUE(hasRow(table.stdout_text, {"cm1", "2", "*"})) << table.stdout_text;

  auto deleted = kubectl({"delete", "cm", "cm1"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.stderr_text;
  EXPECT_NE(deleted.stdout_text.find("configmap \"cm1\" deleted"), std::string::npos);
  auto missing = kubectl({"get", "cm", "cm1"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.stderr_text.find("(NotFound)"), std::string::npos) << missing.stderr_text;
}

TEST_P(KubectlTest, WrongTokenIsUnauthorized) {
  const std::string bad = (fs::path(dir_.path()) / "bad-kubeconfig").string();
  fs::copy_file(kubeconfig_, bad);
  ASSERT_EQ(
      kubectl({"config", "set-credentials", "stranger", "--token=not-the-token"}, bad).exit_code,
      0);
  ASSERT_EQ(kubectl({"config", "set-context", "--current", "--user=stranger"}, bad).exit_code, 0);
  auto result = kubectl({"get", "cm"}, bad);
  EXPECT_NE(result.exit_code, 0);
  // client-go words a 401 during discovery as "…provide credentials".
  EXPECT_NE(result.stderr_text.find("You must be logged in to the server"), std::string::npos)
      << result.stderr_text;
}

TEST_F(LocalKubectlTest, StatePersistsAcrossRestart) {
  ASSERT_EQ(kubectl({"create", "-f", file("cm.yaml", kConfigMap)}).exit_code, 0);
  restartServer();
  auto got = kubectl({"get", "cm", "cm1", "-o", "yaml"});
  EXPECT_EQ(got.exit_code, 0) << got.stderr_text;
  EXPECT_NE(got.stdout_text.find("a: \"1\""), std::string::npos);
}

TEST_P(KubectlTest, SchemaViolationIs422NamingTheFieldAndDefaultsAreApplied) {
  applyTrainingJobCrd();
  const std::string good =
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: ok}\n"
      "spec: {replicas: 2, trainer: {image: img}}\n";
  ASSERT_EQ(kubectl({"create", "-f", file("ok.yaml", good)}).exit_code, 0);
  EXPECT_EQ(output({"get", "tj", "ok", "-o", "jsonpath={.spec.procsPerReplica} {.spec.launcher}"}),
            "1 native");

  auto zero = kubectl(
      {"create", "-f",
       file("zero.yaml", replaced(replaced(good, "replicas: 2", "replicas: 0"), "ok", "zero"))});
  EXPECT_NE(zero.exit_code, 0);
  EXPECT_NE(zero.stderr_text.find("The TrainingJob \"zero\" is invalid: spec.replicas: Invalid "
                                  "value: 0: spec.replicas in body should be greater than or "
                                  "equal to 1"),
            std::string::npos)
      << zero.stderr_text;

  auto cel = kubectl(
      {"create", "-f",
       file("cel.yaml", replaced(replaced(good, "replicas: 2", "replicas: 5000"), "ok", "cel"))});
  EXPECT_NE(cel.stderr_text.find("spec: Invalid value: \"object\": world size (replicas * "
                                 "procsPerReplica) must be <= 4096"),
            std::string::npos)
      << cel.stderr_text;

  auto unknown =
      kubectl({"create", "-f",
               file("unknown.yaml",
                    replaced(replaced(good, "replicas: 2", "replicas: 2, gpus: 8"), "ok", "unk"))});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.stderr_text.find("strict decoding error: unknown field \"spec.gpus\""),
            std::string::npos)
      << unknown.stderr_text;

  auto status = kubectl({"patch", "tj", "ok", "--subresource=status", "--type=merge", "-p",
                         R"({"status":{"phase":"Lost"}})"});
  EXPECT_NE(status.exit_code, 0);
  EXPECT_NE(status.stderr_text.find("status.phase: Unsupported value: \"Lost\""), std::string::npos)
      << status.stderr_text;
}

TEST_P(KubectlTest, NonStructuralCrdIsRejected) {
  auto bad =
      kubectl({"apply", "-f",
               file("bad-crd.yaml", replaced(kTjCrd, "          spec:\n            type: object\n",
                                             "          spec:\n"))});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.stderr_text.find("properties[spec].type: Required value: must not be empty for "
                                 "specified object fields"),
            std::string::npos)
      << bad.stderr_text;
}

TEST_P(KubectlTest, ExplainPrintsCrdAndBuiltinFieldDocs) {
  applyTrainingJobCrd();
  auto tj = kubectl({"explain", "trainingjob.spec"});
  ASSERT_EQ(tj.exit_code, 0) << tj.stderr_text;
  EXPECT_NE(tj.stdout_text.find("Desired state of the TrainingJob."), std::string::npos)
      << tj.stdout_text;
  EXPECT_TRUE(hasRow(tj.stdout_text, {"replicas", "<integer>", "-required-"})) << tj.stdout_text;
  EXPECT_NE(tj.stdout_text.find("enum: native, mpi"), std::string::npos) << tj.stdout_text;

  auto containers = kubectl({"explain", "pod.spec.containers"});
  ASSERT_EQ(containers.exit_code, 0) << containers.stderr_text;
  EXPECT_NE(containers.stdout_text.find("FIELD: containers <[]Container>"), std::string::npos)
      << containers.stdout_text;
  EXPECT_TRUE(hasRow(containers.stdout_text, {"image", "<string>"})) << containers.stdout_text;
  EXPECT_NE(containers.stdout_text.find("Container image name."), std::string::npos);
}

TEST_P(KubectlTest, DescribeShowsEventsForPodsNodesAndCustomResources) {
  runningPodWithLogDir();
  const std::string uid = output({"get", "pod", "p1", "-o", "jsonpath={.metadata.uid}"});
  const std::string event =
      "apiVersion: v1\nkind: Event\nmetadata: {name: p1.started, namespace: " + ns_ +
      "}\ninvolvedObject: {apiVersion: v1, kind: Pod, name: p1, namespace: " + ns_ +
      ", uid: " + uid +
      "}\nreason: Started\nmessage: Started container worker\ntype: Normal\n"
      "source: {component: kubelet}\ncount: 1\n"
      "firstTimestamp: \"2026-11-22T01:59:56Z\"\nlastTimestamp: \"2026-11-22T01:59:56Z\"\n";
  ASSERT_EQ(kubectl({"create", "-f", file("event.yaml", event)}).exit_code, 0);
  const std::string other = replaced(replaced(event, "p1.started", "other"), "uid: " + uid,
                                     "uid: 00000000-0000-4000-8000-000000000000");
  ASSERT_EQ(kubectl({"create", "-f",
                     file("other.yaml", replaced(other, "Started container", "Unrelated"))})
                .exit_code,
            0);
  auto pod = kubectl({"describe", "pod", "p1"});
  ASSERT_EQ(pod.exit_code, 0) << pod.stderr_text;
  // "local" or "local/<host IP>", aligned to the widest label (both vary with the pod).
  EXPECT_TRUE(hasRow(pod.stdout_text, {"Node:", "local"}) ||
              hasRow(pod.stdout_text, {"Node:", "local/"}))
      << pod.stdout_text;
  EXPECT_NE(pod.stdout_text.find("Events:"), std::string::npos) << pod.stdout_text;
  EXPECT_TRUE(hasRow(pod.stdout_text, {"Normal", "Started", "*", "kubelet", "Started"}))
      << pod.stdout_text;
  EXPECT_EQ(pod.stdout_text.find("Unrelated"), std::string::npos) << pod.stdout_text;

  auto node = kubectl({"describe", "node", "local"});
  ASSERT_EQ(node.exit_code, 0) << node.stderr_text;
  EXPECT_NE(node.stdout_text.find("p1"), std::string::npos) << node.stdout_text;

  applyTrainingJobCrd();
  ASSERT_EQ(kubectl({"create", "-f",
                     file("tj.yaml",
                          "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
                          "metadata: {name: mnist}\n"
                          "spec: {replicas: 2, trainer: {image: img}}\n")})
                .exit_code,
            0);
  const std::string tj_uid = output({"get", "tj", "mnist", "-o", "jsonpath={.metadata.uid}"});
  const std::string tj_event =
      "apiVersion: v1\nkind: Event\nmetadata: {name: mnist.restart, namespace: " + ns_ +
      "}\ninvolvedObject: {apiVersion: ringmaster.dev/v1alpha1, kind: TrainingJob, name: mnist, "
      "namespace: " +
      ns_ + ", uid: " + tj_uid +
      "}\nreason: WorkerRestarted\nmessage: Worker exited\ntype: Warning\n"
      "source: {component: ringmaster-operator}\ncount: 1\n"
      "firstTimestamp: \"2026-11-22T01:59:56Z\"\nlastTimestamp: \"2026-11-22T01:59:56Z\"\n";
  ASSERT_EQ(kubectl({"create", "-f", file("tj-event.yaml", tj_event)}).exit_code, 0);
  auto described = kubectl({"describe", "tj", "mnist"});
  ASSERT_EQ(described.exit_code, 0) << described.stderr_text;
  EXPECT_TRUE(hasRow(described.stdout_text,
                     {"Warning", "WorkerRestarted", "*", "ringmaster-operator", "Worker"}))
      << described.stdout_text;
  auto selected =
      kubectl({"get", "events", "--field-selector", "reason=WorkerRestarted", "-o", "name"});
  EXPECT_EQ(selected.stdout_text, "event/mnist.restart\n") << selected.stderr_text;
  // `kubectl get events`, where users look first: kube-apiserver's columns, on both servers.
  auto table = kubectl({"get", "events", "--field-selector", "reason=WorkerRestarted"});
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_TRUE(hasRow(table.stdout_text, {"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}))
      << table.stdout_text;
  EXPECT_TRUE(hasRow(table.stdout_text,
                     {"*", "Warning", "WorkerRestarted", "trainingjob/mnist", "Worker", "exited"}))
      << table.stdout_text;
  auto wide =
      kubectl({"get", "events", "--field-selector", "reason=WorkerRestarted", "-o", "wide"});
  ASSERT_EQ(wide.exit_code, 0) << wide.stderr_text;
  EXPECT_TRUE(hasRow(wide.stdout_text, {"LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT",
                                        "SOURCE", "MESSAGE", "FIRST", "SEEN", "COUNT", "NAME"}))
      << wide.stdout_text;
  EXPECT_TRUE(hasRow(wide.stdout_text,
                     {"*", "Warning", "WorkerRestarted", "trainingjob/mnist", "ringmaster-operator",
                      "Worker", "exited", "*", "1", "mnist.restart"}))
      << wide.stdout_text;
}

TEST_P(KubectlTest, LabelSelectorsFilterPods) {
  ASSERT_EQ(kubectl({"create", "-f", file("p1.yaml", kPod)}).exit_code, 0);
  ASSERT_EQ(
      kubectl({"create", "-f",
               file("p2.yaml", replaced(replaced(kPod, "p1", "p2"), "app: demo", "app: other"))})
          .exit_code,
      0);
  EXPECT_EQ(output({"get", "pods", "-l", "app=demo", "-o", "name"}), "pod/p1\n");
  EXPECT_EQ(output({"get", "pods", "-l", "app!=demo", "-o", "name"}), "pod/p2\n");
  EXPECT_EQ(output({"get", "pods", "-l", "app in (demo,other)", "-o", "name"}), "pod/p1\npod/p2\n");
  auto none = kubectl({"get", "pods", "-l", "app=nope"});
  EXPECT_NE(none.stderr_text.find("No resources found in " + ns_ + " namespace."),
            std::string::npos)
      << none.stderr_text;
}

TEST_F(LocalKubectlTest, LogsReadsTheKubeletLogFile) {
  const fs::path dir = runningPodWithLogDir();
  writeFile(dir / "worker.log", "epoch 1\nepoch 2\nepoch 3\n");
  writeFile(dir / "worker.previous.log", "crashed run\n");
  EXPECT_EQ(output({"logs", "p1"}), "epoch 1\nepoch 2\nepoch 3\n");
  EXPECT_EQ(output({"logs", "p1", "--tail=1"}), "epoch 3\n");
  EXPECT_EQ(output({"logs", "p1", "-c", "worker", "--previous"}), "crashed run\n");
  auto bad = kubectl({"logs", "p1", "-c", "nope"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.stderr_text.find("container nope is not valid for pod p1"), std::string::npos)
      << bad.stderr_text;
}

TEST_F(LocalKubectlTest, LogsFollowStreamsUntilTheContainerTerminates) {
  const fs::path dir = runningPodWithLogDir();
  writeFile(dir / "worker.log", "first\n");
  const fs::path out = fs::path(dir_.path()) / "follow.out";
  // Through a shell so the test can watch kubectl's output as it arrives.
  testutil::Process follow(
      {"/bin/sh", "-c",
       kubectl_ + " --kubeconfig " + kubeconfig_ + " logs -f p1 > " + out.string()},
      {{"KUBECACHEDIR", (fs::path(dir_.path()) / "cache").string()}, {"HOME", dir_.path()}});
  follow.start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (testutil::readFile(out.string()) != "first\n") {
    ASSERT_TRUE(follow.running()) << follow.stderrSoFar();
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << testutil::readFile(out.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ofstream(dir / "worker.log", std::ios::app) << "second\n";
  setWorkerState(R"({"terminated":{"exitCode":0,"reason":"Completed"}})", "Succeeded");
  auto result = follow.wait(std::chrono::seconds(30));
  EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
  EXPECT_EQ(testutil::readFile(out.string()), "first\nsecond\n");
}

TEST_F(LocalKubectlTest, WatchFromACompactedResourceVersionIsGone) {
  ASSERT_EQ(kubectl({"create", "-f", file("cm.yaml", kConfigMap)}).exit_code, 0);
  const std::string old_rv =
      output({"get", "cm", "cm1", "-o", "jsonpath={.metadata.resourceVersion}"});
  ASSERT_EQ(
      kubectl({"create", "-f", file("cm2.yaml", replaced(kConfigMap, "cm1", "cm2"))}).exit_code, 0);
  restartServer();  // the watch history starts over at the current resourceVersion
  auto watched = kubectl({"get", "--raw",
                          "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5&"
                          "resourceVersion=" +
                              old_rv});
  EXPECT_NE(watched.stdout_text.find(R"("type":"ERROR")"), std::string::npos)
      << watched.stdout_text << watched.stderr_text;
  EXPECT_NE(watched.stdout_text.find(R"("code":410)"), std::string::npos) << watched.stdout_text;
  EXPECT_NE(watched.stdout_text.find("too old resource version: " + old_rv), std::string::npos)
      << watched.stdout_text;
}

TEST_P(KubectlTest, ServerDryRunValidatesButPersistsNothing) {
  auto dry = kubectl({"create", "-f", file("cm.yaml", kConfigMap), "--dry-run=server"});
  ASSERT_EQ(dry.exit_code, 0) << dry.stderr_text;
  EXPECT_EQ(dry.stdout_text, "configmap/cm1 created (server dry run)\n");
  EXPECT_NE(kubectl({"get", "cm", "cm1"}).exit_code, 0);
  ASSERT_EQ(kubectl({"create", "-f", file("cm.yaml", kConfigMap)}).exit_code, 0);
  auto patched = kubectl(
      {"patch", "cm", "cm1", "--type=merge", "-p", R"({"data":{"a":"9"}})", "--dry-run=server"});
  ASSERT_EQ(patched.exit_code, 0) << patched.stderr_text;
  EXPECT_EQ(output({"get", "cm", "cm1", "-o", "jsonpath={.data.a}"}), "1");
  auto deleted = kubectl({"delete", "cm", "cm1", "--dry-run=server"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.stderr_text;
  EXPECT_EQ(kubectl({"get", "cm", "cm1"}).exit_code, 0);

  applyTrainingJobCrd();
  auto invalid = kubectl({"create", "--dry-run=server", "-f",
                          file("bad.yaml",
                               "apiVersion: ringmaster.dev/v1alpha1\n"
                               "kind: TrainingJob\nmetadata: {name: x}\n"
                               "spec: {replicas: 0, trainer: {image: i}}\n")});
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_NE(invalid.stderr_text.find("spec.replicas"), std::string::npos) << invalid.stderr_text;
}

TEST_P(KubectlTest, ImperativeCreateSendsProtobufWhichIsDecoded) {
  // kubectl's generators send protobuf bodies and do not fall back.
  auto cm = kubectl({"create", "configmap", "imp", "--from-literal=a=b"});
  ASSERT_EQ(cm.exit_code, 0) << cm.stderr_text;
  EXPECT_EQ(cm.stdout_text, "configmap/imp created\n");
  EXPECT_EQ(output({"get", "cm", "imp", "-o", "jsonpath={.data.a}"}), "b");
  auto ns = kubectl({"create", "namespace", "np-test"});
  ASSERT_EQ(ns.exit_code, 0) << ns.stderr_text;
  EXPECT_EQ(output({"get", "ns", "np-test", "-o", "jsonpath={.status.phase}"}), "Active");
  auto secret = kubectl({"create", "secret", "generic", "s1", "--from-literal=k=v"});
  ASSERT_EQ(secret.exit_code, 0) << secret.stderr_text;
  EXPECT_EQ(output({"get", "secret", "s1", "-o", "jsonpath={.data.k}"}), "dg==");
}

// The RBAC round trip a user makes with kubectl's generators (all protobuf bodies): an account,
// a Role, a binding, a token; the token reads what the Role grants and is refused the rest in
// RBAC's words, on both servers.
TEST_P(KubectlTest, ServiceAccountTokensAreAuthorizedByRbac) {
  const std::string ns = ns_.empty() ? "default" : ns_;  // the local server's tests use default
  ASSERT_EQ(kubectl({"create", "configmap", "visible", "--from-literal=a=b"}).exit_code, 0);
  auto sa = kubectl({"create", "serviceaccount", "robot"});
  ASSERT_EQ(sa.exit_code, 0) << sa.stderr_text;
  auto role = kubectl({"create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps"});
  ASSERT_EQ(role.exit_code, 0) << role.stderr_text;
  auto binding = kubectl({"create", "rolebinding", "robot-reads", "--role=cm-reader",
                          "--serviceaccount=" + ns + ":robot"});
  ASSERT_EQ(binding.exit_code, 0) << binding.stderr_text;
  auto token = kubectl({"create", "token", "robot", "--duration=15m"});
  ASSERT_EQ(token.exit_code, 0) << token.stderr_text;
  std::string bearer = token.stdout_text;
  while (!bearer.empty() && std::isspace(static_cast<unsigned char>(bearer.back())))
    bearer.pop_back();
  ASSERT_FALSE(bearer.empty());

  // A kubeconfig with the server, its CA and the token only: the admin's kubeconfig may carry a
  // client certificate, which a real server would take instead.
  const std::string server =
      output({"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"});
  const std::string ca = output({"config", "view", "--raw", "--minify", "-o",
                                 "jsonpath={.clusters[0].cluster.certificate-authority-data}"});
  const std::string robot = (fs::path(dir_.path()) / "robot.kubeconfig").string();
  for (std::vector<std::string> step :
       {std::vector<std::string>{"config", "set-cluster", "c", "--server=" + server},
        {"config", "set", "clusters.c.certificate-authority-data", ca},
        {"config", "set-credentials", "robot", "--token=" + bearer},
        {"config", "set-context", "robot", "--cluster=c", "--user=robot", "--namespace=" + ns},
        {"config", "use-context", "robot"}}) {
    auto r = kubectl(step, robot);
    ASSERT_EQ(r.exit_code, 0) << step[1] << ": " << r.stderr_text;
  }

  auto read = kubectl({"get", "cm", "visible", "-o", "jsonpath={.data.a}"}, robot);
  EXPECT_EQ(read.stdout_text, "b") << read.stderr_text;
  auto refused = kubectl({"get", "secrets"}, robot);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.stderr_text.find("secrets is forbidden: User \"system:serviceaccount:" + ns +
                                     ":robot\" cannot list resource \"secrets\" in API group \"\" "
                                     "in the namespace \"" +
                                     ns + "\""),
            std::string::npos)
      << refused.stderr_text;
  auto elsewhere = kubectl({"get", "cm", "-n", "kube-system"}, robot);
  EXPECT_NE(elsewhere.exit_code, 0) << "a Role's grant stays in its namespace";
  ASSERT_EQ(
      kubectl({"config", "set-credentials", "robot", "--token=" + bearer + "x"}, robot).exit_code,
      0);
  EXPECT_NE(kubectl({"get", "cm"}, robot).stderr_text.find("Unauthorized"), std::string::npos);
}

// `kubectl get -w` sees an object change, and deleting an owner removes what it owns
// (ownerReference garbage collection, as with a TrainingJob and its pods).
TEST_P(KubectlTest, GetWatchSeesChangesAndDeleteCascadesToOwnedObjects) {
  ASSERT_EQ(kubectl({"create", "-f",
                     file("owner.yaml",
                          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "
                          "owner}\ndata: {a: '1'}\n")})
                .exit_code,
            0);
  const std::string uid = output({"get", "cm", "owner", "-o", "jsonpath={.metadata.uid}"});
  ASSERT_FALSE(uid.empty());
  const std::string child =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  ownerReferences:\n"
      "  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: " +
      uid + "}\ndata: {b: '1'}\n";
  ASSERT_EQ(kubectl({"create", "-f", file("child.yaml", child)}).exit_code, 0);

  testutil::Process watch(
      {kubectl_, "--kubeconfig", kubeconfig_, "get", "cm", "child", "-w", "--output-watch-events",
       "-o", "jsonpath={.type} {.object.data.b}{\"\\n\"}"},
      {{"KUBECACHEDIR", (fs::path(dir_.path()) / "cache").string()}, {"HOME", dir_.path()}});
  watch.start();
  // The watch prints the current object first; then a change must show up as MODIFIED.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool modified = false;
  int patches = 0;
  while (!modified && std::chrono::steady_clock::now() < deadline) {
    ++patches;
    ASSERT_EQ(kubectl({"patch", "cm", "child", "--type=merge", "-p",
                       "{\"data\":{\"b\":\"" + std::to_string(100 + patches) + "\"}}"})
                  .exit_code,
              0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    modified = watch.stdoutSoFar().find("MODIFIED 10") != std::string::npos;
  }
  watch.signal(SIGTERM);
  auto watched = watch.wait(std::chrono::seconds(10));
  EXPECT_TRUE(modified) << watched.stdout_text << watched.stderr_text;

  auto deleted = kubectl({"delete", "cm", "owner"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.stderr_text;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    auto r = kubectl({"get", "cm", "child"});
    gone = r.exit_code != 0 && r.stderr_text.find("NotFound") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(gone) << "the owned ConfigMap outlived its owner";
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, KubectlTest, ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster::local
