// A HorizontalPodAutoscaler drives a TrainingJob through the CRD's scale subresource, on a real
// control plane (envtest: kube-apiserver and kube-controller-manager, whose HPA controller is the
// autoscaler; the embedded server runs none, so there is no local half). No operator runs: the
// test is about the CRD's contract with autoscalers. An HPA whose minReplicas is above an elastic
// parameter-server job's spec.replicas raises it to minReplicas without metrics, as upstream
// rescales below its minimum; the API server's rules still decide what it may set, so the same
// HPA on a job whose replicas are immutable only reports the refusal. Skipped without
// RINGMASTER_ENVTEST.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "control_plane.h"
#include "process.h"

namespace ringmaster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class Autoscaler : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testutil::controlPlaneMissing(testutil::ControlPlane::kEnvtest);
        !why.empty()) {
      GTEST_SKIP() << why;
    }
    ASSERT_EQ(server_.start(), "");
    kubectl_ = testutil::findKubectl();
    const char* source = std::getenv("RM_SOURCE_DIR");
    ASSERT_NE(source, nullptr) << "RM_SOURCE_DIR is not set";
    source_ = source;
    const auto crd = kubectl({"apply", "-f", source_ + "/crds/trainingjob.yaml"});
    ASSERT_EQ(crd.exit_code, 0) << crd.stderr_text;
    ASSERT_EQ(kubectl({"wait", "--for=condition=Established", "crd/trainingjobs.ringmaster.dev",
                       "--timeout=30s"})
                  .exit_code,
              0);
  }

  testutil::ProcessResult kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv{kubectl_, "--kubeconfig", server_.kubeconfig()};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::run(argv, {{"HOME", dir_.path()}}, 60s);
  }

  // An autoscaling/v2 HPA of TrainingJob `job` with these bounds.
  void autoscale(const std::string& job, int min, int max) {
    const fs::path file = fs::path(dir_.path()) / (job + "-hpa.yaml");
    std::ofstream(file) << "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n"
                        << "metadata: {name: " << job << "}\n"
                        << "spec:\n  scaleTargetRef: {apiVersion: ringmaster.dev/v1alpha1, "
                        << "kind: TrainingJob, name: " << job << "}\n"
                        << "  minReplicas: " << min << "\n  maxReplicas: " << max << "\n";
    const auto applied = kubectl({"apply", "-f", file.string()});
    ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  }

  std::string jsonpath(const std::string& kind, const std::string& name, const std::string& path) {
    return kubectl({"get", kind, name, "-o", "jsonpath=" + path}).stdout_text;
  }

  testutil::ApiServer server_{testutil::ControlPlane::kEnvtest};
  testutil::TempDir dir_;
  std::string kubectl_;
  std::string source_;
};

TEST_F(Autoscaler, AnHpaScalesAnElasticParameterServerJobWithinTheRulesOfItsCrd) {
  const auto elastic =
      kubectl({"apply", "-f", source_ + "/examples/fashion-mnist-ps-elastic.yaml"});
  ASSERT_EQ(elastic.exit_code, 0) << elastic.stderr_text;
  const auto fixed = kubectl({"apply", "-f", source_ + "/examples/fashion-mnist-ps.yaml"});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.stderr_text;
  ASSERT_EQ(jsonpath("trainingjob", "fmnist-ps-elastic", "{.spec.replicas}"), "1");

  autoscale("fmnist-ps-elastic", 2, 3);
  autoscale("fmnist-ps", 3, 4);
  // The HPA controller syncs every 15 s.
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  std::string replicas, refused;
  while (std::chrono::steady_clock::now() < deadline) {
    replicas = jsonpath("trainingjob", "fmnist-ps-elastic", "{.spec.replicas}");
    refused = kubectl({"get", "events", "--field-selector",
                       "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=fmnist-ps",
                       "-o", "jsonpath={.items[*].message}"})
                  .stdout_text;
    if (replicas == "2" && refused.find("immutable") != std::string::npos) break;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(replicas, "2") << kubectl({"describe", "hpa", "fmnist-ps-elastic"}).stdout_text;
  EXPECT_EQ(jsonpath("hpa", "fmnist-ps-elastic", "{.status.desiredReplicas}"), "2");
  // The job whose world size is fixed keeps it; the HPA says why it could not scale.
  EXPECT_EQ(jsonpath("trainingjob", "fmnist-ps", "{.spec.replicas}"), "2");
  EXPECT_NE(refused.find("spec.replicas and spec.procsPerReplica (the world size) are immutable"),
            std::string::npos)
      << refused << kubectl({"describe", "hpa", "fmnist-ps"}).stdout_text;
}

}  // namespace
}  // namespace ringmaster
