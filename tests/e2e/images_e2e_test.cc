// The images users run, built from dockerfiles/ by scripts/build-images with this tree's binaries
// (the Dockerfiles' runtime stages unchanged) and run by podman with runc: what they contain
// starts as the image's non-root user on a read-only root filesystem, the CPU worker holds no
// CUDA library, and two worker containers train the README's job together over the tcp
// transport, checkpointing to a volume. On a real control plane (envtest), the operator image
// runs in-cluster as the chart deploys it: its ServiceAccount's token, the chart's RBAC, leader
// election, a job reconciled, a clean SIGTERM. Skipped where podman is not installed
// (scripts/setup installs it).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "control_plane.h"
#include "local_cluster.h"
#include "process.h"
#include "ringmaster/core/base64.h"

namespace ringmaster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char* kOperatorImage = "ringmaster/operator:0.1.0";
const char* kWorkerImage = "ringmaster/trainer-cpu:0.1.0";

std::string sourceDir() {
  const char* dir = std::getenv("RM_SOURCE_DIR");
  return dir ? dir : ".";
}

// podman's path ("" where it is not installed).
const std::string& podmanPath() {
  static const std::string path = [] {
    auto found = testutil::run({"/bin/sh", "-c", "command -v podman"});
    std::string p = found.exit_code == 0 ? found.stdout_text : "";
    while (!p.empty() && p.back() == '\n') p.pop_back();
    return p;
  }();
  return path;
}

// podman with the project's settings (runc, cgroupfs, explicit limits).
testutil::ProcessResult podman(std::vector<std::string> args, std::chrono::seconds limit = 300s) {
  args.insert(args.begin(), podmanPath());
  return testutil::run(args, {{"CONTAINERS_CONF", sourceDir() + "/scripts/containers.conf"}},
                       limit);
}

// `podman run --rm --read-only` of `image` with `args` (entrypoint first) and `options` before
// the image.
testutil::ProcessResult runReadOnly(const std::string& image, std::vector<std::string> args,
                                    std::vector<std::string> options = {}) {
  std::vector<std::string> argv = {"run", "--rm", "--read-only", "--network", "host"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back("--entrypoint");
  argv.push_back(args.front());
  argv.push_back(image);
  argv.insert(argv.end(), args.begin() + 1, args.end());
  return podman(argv);
}

// Builds the images of this tree's binaries once per process: "" when they are ready, "skip: ..."
// where podman is missing, else why the build failed.
const std::string& imagesReady() {
  static const std::string why = []() -> std::string {
    if (podmanPath().empty() ||
        testutil::run({"/bin/sh", "-c", "command -v debootstrap"}).exit_code != 0) {
      return "skip: podman or debootstrap is not installed (scripts/setup installs both)";
    }
    // Layers podman already has make this seconds.
    const char* binaries = std::getenv("RM_BINARY_DIR");
    if (binaries == nullptr) return "RM_BINARY_DIR is not set (run through ctest)";
    const auto started = std::chrono::steady_clock::now();
    auto built = testutil::run(
        {sourceDir() + "/scripts/build-images", "--binaries", binaries, "operator", "worker-cpu"},
        {}, 1200s);
    std::cout << built.stdout_text << built.stderr_text << "images ready in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
              << " s" << std::endl;
    if (built.exit_code != 0)
      return "scripts/build-images failed:\n" + built.stdout_text + built.stderr_text;
    return "";
  }();
  return why;
}

class ImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string& why = imagesReady();
    if (why.rfind("skip: ", 0) == 0) GTEST_SKIP() << why.substr(6);
    ASSERT_EQ(why, "");
  }
};

TEST_F(ImagesTest, BinariesStartAsTheImagesNonRootUserOnAReadOnlyRoot) {
  struct Case {
    const char* image;
    const char* binary;
    const char* uid;
    const char* usage;
  };
  const Case cases[] = {
      {kOperatorImage, "/usr/local/bin/ringmaster-operator", "65532", "Runs TrainingJobs"},
      {kWorkerImage, "/usr/local/bin/ringmaster-trainer", "1000", "Data-parallel SGD"},
      {kWorkerImage, "/usr/local/bin/ringmaster-launcher", "1000", "training processes"},
  };
  for (const Case& c : cases) {
    auto help = runReadOnly(c.image, {c.binary, "--help"});
    EXPECT_EQ(help.exit_code, 0) << c.image << " " << c.binary << ": " << help.stderr_text;
    EXPECT_NE(help.stdout_text.find(c.usage), std::string::npos)
        << c.binary << " --help:\n"
        << help.stdout_text << help.stderr_text;
    // Every library it loads is in the image.
    auto ldd = runReadOnly(c.image, {"/usr/bin/ldd", c.binary});
    EXPECT_EQ(ldd.exit_code, 0) << ldd.stderr_text;
    EXPECT_EQ(ldd.stdout_text.find("not found"), std::string::npos) << ldd.stdout_text;
  }
  for (const char* image : {kOperatorImage, kWorkerImage}) {
    auto who = runReadOnly(image, {"/bin/sh", "-c", "id -u; touch /probe 2>&1; echo rc=$?"});
    ASSERT_EQ(who.exit_code, 0) << who.stderr_text;
    EXPECT_EQ(who.stdout_text.substr(0, who.stdout_text.find('\n')),
              std::string(image) == kOperatorImage ? "65532" : "1000")
        << image;
    EXPECT_NE(who.stdout_text.find("Read-only file system"), std::string::npos)
        << image << ": " << who.stdout_text;
  }
}

TEST_F(ImagesTest, TheCpuWorkerHoldsNoCudaLibraryAndReportsItsSize) {
  auto libs = runReadOnly(kWorkerImage,
                          {"/bin/sh", "-c",
                           "find / -xdev \\( -name 'libcuda*' -o -name 'libcublas*' "
                           "-o -name 'libnccl*' -o -name 'libcudart*' \\) -print"},
                          {"--user", "0"});
  ASSERT_EQ(libs.exit_code, 0) << libs.stderr_text;
  EXPECT_EQ(libs.stdout_text, "") << "CUDA libraries in the CPU image";
  for (const char* image : {kOperatorImage, kWorkerImage}) {
    auto size = podman({"image", "inspect", "--format", "{{.Size}}", image});
    ASSERT_EQ(size.exit_code, 0) << size.stderr_text;
    const double mb = std::stod(size.stdout_text) / 1e6;
    std::cout << image << ": " << mb << " MB" << std::endl;
    EXPECT_GT(mb, 10) << image;
  }
}

// The README's job (examples/fashion-mnist-mlp.yaml's spec.trainer, one epoch) in two worker
// containers, one rank each, meeting over the host's network as two pods meet over theirs; each
// writes its checkpoints to its own volume, as the non-root user.
TEST_F(ImagesTest, TwoWorkerContainersTrainTheReadmeJobTogetherOverTcp) {
  testutil::TempDir dir;
  std::ofstream(dir.path() + "/trainer.yaml") << R"(model: {type: mlp, hidden: [512, 512]}
dataset: {name: fashion-mnist, path: /data/fashion-mnist}
epochs: 1
batchSize: 128
optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9, schedule: cosine}
bucketCapMB: 25
checkpoint: {path: /ckpt, everySteps: 200}
)";
  const int port = testutil::freePort();
  const std::string tag = "rm-images-test-" + std::to_string(getpid());
  std::vector<std::string> names;
  // Containers a failed assertion leaves behind go with the test.
  struct Remover {
    std::vector<std::string>& names;
    ~Remover() {
      for (const auto& name : names) podman({"rm", "-f", name});
    }
  } remover{names};
  for (int rank = 0; rank < 2; ++rank) {
    const std::string ckpt = dir.path() + "/ckpt-" + std::to_string(rank);
    fs::create_directories(ckpt);
    ASSERT_EQ(chown(ckpt.c_str(), 1000, 1000), 0) << "the volume belongs to the image's user";
    const std::string name = tag + "-" + std::to_string(rank);
    names.push_back(name);
    auto started =
        podman({"run", "-d", "--name", name, "--read-only", "--network", "host", "-v",
                dir.path() + "/trainer.yaml:/etc/ringmaster/trainer.yaml:ro", "-v", ckpt + ":/ckpt",
                "-e", "RANK=" + std::to_string(rank), "-e", "WORLD_SIZE=2", "-e", "LOCAL_RANK=0",
                "-e", "MASTER_ADDR=127.0.0.1", "-e", "MASTER_PORT=" + std::to_string(port),
                "--entrypoint", "/usr/local/bin/ringmaster-trainer", kWorkerImage, "--config",
                "/etc/ringmaster/trainer.yaml", "--backend", "tcp", "--device", "cpu",
                // Two ranks on one network: each its own metrics port.
                "--metrics-port", "0"});
    ASSERT_EQ(started.exit_code, 0) << started.stderr_text;
  }
  std::vector<std::string> logs;
  for (const std::string& name : names) {
    auto waited = podman({"wait", name}, 600s);
    auto log = podman({"logs", name});
    logs.push_back(log.stdout_text + log.stderr_text);
    ASSERT_EQ(waited.exit_code, 0) << waited.stderr_text;
    EXPECT_EQ(waited.stdout_text, "0\n") << name << " exited non-zero:\n" << logs.back();
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(logs[rank].find("communicator 'tcp' (world 2): using tcp"), std::string::npos)
        << logs[rank];
  }
  // Rank 0 reports for the job.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      logs[0], m, std::regex(R"(done: 1 epochs, \d+ steps, test accuracy (\d+\.\d+)%)")))
      << logs[0];
  EXPECT_GT(std::stod(m[1]), 80.0) << "one epoch of the README's job reaches 80%:\n" << logs[0];
  // Rank 0 checkpoints (the others hold the same weights): into its volume, as uid 1000.
  bool checkpointed = false;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path() + "/ckpt-0")) {
    struct stat st {};
    if (entry.is_regular_file() && stat(entry.path().c_str(), &st) == 0) {
      checkpointed = true;
      EXPECT_EQ(st.st_uid, 1000u) << entry.path();
    }
  }
  EXPECT_TRUE(checkpointed) << "no checkpoint in rank 0's volume:\n" << logs[0];
}

// README command 1's job and the pipeline example in containers: `ringmaster local run` with the
// kubelet running each container in its image (--container-runtime podman), the job's image the
// CPU worker. Each succeeds at its accuracy, its pods' containers are podman's, running as the
// user the operator asks for, and its checkpoints land in its claim as that user.
TEST_F(ImagesTest, TheReadmeJobAndThePipelineExampleRunInContainersThroughLocalRun) {
  struct Example {
    const char* file;
    const char* job;
    double min_accuracy;
  };
  for (const Example& example : {Example{"fashion-mnist-mlp.yaml", "fmnist", 85.0},
                                 Example{"fashion-mnist-pipeline.yaml", "fmnist-pipeline", 80.0}}) {
    SCOPED_TRACE(example.file);
    testutil::TempDir dir;
    std::string job = testutil::readFile(sourceDir() + "/examples/" + example.file);
    const std::string image = "image: ringmaster/trainer:0.1.0";
    ASSERT_NE(job.find(image), std::string::npos) << "the example names its image";
    job.replace(job.find(image), image.size(), std::string("image: ") + kWorkerImage);
    std::ofstream(dir.path() + "/job.yaml") << job;
    const std::string data = dir.path() + "/local";
    const std::string ringmaster = testutil::binaryPath("bin/ringmaster");
    const std::map<std::string, std::string> env = {
        {"CONTAINERS_CONF", sourceDir() + "/scripts/containers.conf"}};
    auto ran =
        testutil::run({ringmaster, "local", "run", dir.path() + "/job.yaml", "--data-dir", data,
                       "--kubelet-flags", "--container-runtime podman", "--timeout-seconds", "900"},
                      env, 1000s);
    auto pod = testutil::run({testutil::findKubectl(), "--kubeconfig", data + "/kubeconfig", "get",
                              "pod", std::string(example.job) + "-worker-0", "-o",
                              "jsonpath={.status.containerStatuses[0].containerID} "
                              "{.spec.securityContext.runAsUser}"});
    auto down = testutil::run({ringmaster, "local", "down", "--data-dir", data}, env, 120s);
    EXPECT_EQ(ran.exit_code, 0) << ran.stdout_text << ran.stderr_text;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ran.stdout_text, m, std::regex(R"(test accuracy (\d+\.\d+)%)")))
        << ran.stdout_text;
    EXPECT_GT(std::stod(m[1]), example.min_accuracy) << ran.stdout_text;
    EXPECT_EQ(pod.stdout_text.rfind("podman://rm-", 0), 0u) << pod.stdout_text << pod.stderr_text;
    EXPECT_NE(pod.stdout_text.find(" 1000"), std::string::npos) << pod.stdout_text;
    bool checkpointed = false;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(
             data + "/kubelet/volumes/default/" + example.job + "-ckpt", ec)) {
      struct stat st {};
      if (stat(entry.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        checkpointed = true;
        EXPECT_EQ(st.st_uid, 1000u) << entry.path();
      }
    }
    EXPECT_TRUE(checkpointed) << "no checkpoint in the job's claim";
    EXPECT_EQ(down.exit_code, 0) << down.stderr_text;
  }
}

// The chart installed into `ringmaster local` whose kubelet runs containers in their images:
// the operator's pods run the operator image (its ServiceAccount token through the projected
// volume, the API server through the pod network), and a job it runs has its workers in the CPU
// worker image, the chart's trainerImage.
TEST_F(ImagesTest, TheChartAndItsJobRunInContainers) {
  const std::string helm = testutil::findHelm();
  ASSERT_FALSE(helm.empty()) << "helm is not installed (scripts/install-helm)";
  setenv("CONTAINERS_CONF", (sourceDir() + "/scripts/containers.conf").c_str(), 1);
  testutil::LocalCluster cluster;
  if (auto why = cluster.missing(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(cluster.start({"--no-operator", "--kubelet-flags", "--container-runtime podman"}), "");
  auto install =
      testutil::run({helm, "install", "rm", sourceDir() + "/helm/ringmaster", "--namespace",
                     "ringmaster-system", "--create-namespace", "--wait", "--timeout=240s", "--set",
                     std::string("trainerImage=") + kWorkerImage},
                    {{"KUBECONFIG", cluster.kubeconfig()}, {"HOME", cluster.dataDir()}}, 300s);
  ASSERT_EQ(install.exit_code, 0)
      << install.stdout_text << install.stderr_text
      << cluster.kubectl({"get", "pods", "-A", "-o", "wide"}).stdout_text;
  const std::string operator_ids =
      cluster
          .kubectl({"get", "pods", "-n", "ringmaster-system", "-l",
                    "app.kubernetes.io/component=operator", "-o",
                    "jsonpath={.items[*].status.containerStatuses[0].containerID}"})
          .stdout_text;
  EXPECT_EQ(operator_ids.rfind("podman://", 0), 0u) << operator_ids;
  auto applied = cluster.apply(R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: chart-job}
spec:
  replicas: 2
  backend: tcp
  trainer:
    model: {type: mlp, hidden: [64]}
    dataset: {name: fashion-mnist, path: /data/fashion-mnist}
    epochs: 1
    maxSteps: 60
    batchSize: 64
  restartPolicy: Never
)");
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;
  const auto job = cluster.waitForJob("chart-job", 300s, testutil::jobFinished);
  EXPECT_EQ(job["status"].value("phase", ""), "Succeeded")
      << job.dump(2) << cluster.kubectl({"logs", "chart-job-worker-0"}).stdout_text;
  const std::string worker_id = cluster
                                    .kubectl({"get", "pod", "chart-job-worker-0", "-o",
                                              "jsonpath={.spec.containers[0].image} "
                                              "{.status.containerStatuses[0].containerID}"})
                                    .stdout_text;
  EXPECT_EQ(worker_id.rfind(std::string(kWorkerImage) + " podman://", 0), 0u) << worker_id;
}

// The operator image in-cluster on a real control plane, as the chart deploys it: the chart's
// ServiceAccount, RBAC and arguments (its Deployment scaled to 0, so that this container is the
// operator), the ServiceAccount's token where a pod finds it, leader election, a TrainingJob
// reconciled, and SIGTERM releasing the Lease.
class OperatorImageTest : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
      GTEST_SKIP() << why;
    const std::string& why = imagesReady();
    if (why.rfind("skip: ", 0) == 0) GTEST_SKIP() << why.substr(6);
    ASSERT_EQ(why, "");
    ASSERT_EQ(server_.start(), "");
  }
  void TearDown() override {
    if (!container_.empty()) {
      if (HasFailure()) std::cout << podman({"logs", container_}).stderr_text << std::endl;
      podman({"rm", "-f", container_});
    }
  }

  testutil::ProcessResult kubectl(std::vector<std::string> args) {
    args.insert(args.begin(), testutil::findKubectl());
    return testutil::run(args, {{"KUBECONFIG", server_.kubeconfig()}}, 120s);
  }
  std::string jsonpath(const std::vector<std::string>& what, const std::string& path) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "jsonpath=" + path});
    return kubectl(args).stdout_text;
  }

  testutil::ApiServer server_{GetParam()};
  std::string container_;
};

TEST_P(OperatorImageTest, RunsInClusterWithTheChartsRbacTokenAndLeaderElection) {
  const std::string ns = "ringmaster-system", release = "rm", fullname = "rm-ringmaster";
  testutil::TempDir dir;
  ASSERT_EQ(kubectl({"apply", "-f", sourceDir() + "/crds/trainingjob.yaml"}).exit_code, 0);
  ASSERT_EQ(kubectl({"create", "namespace", ns}).exit_code, 0);
  const int metrics_port = testutil::freePort(), health_port = testutil::freePort();
  const std::string helm_path = testutil::findHelm();
  ASSERT_FALSE(helm_path.empty()) << "helm is not installed (scripts/install-helm)";
  auto rendered = testutil::run({helm_path, "template", release, sourceDir() + "/helm/ringmaster",
                                 "--namespace", ns, "--no-hooks", "--set", "replicaCount=0",
                                 "--set", "metricsPort=" + std::to_string(metrics_port), "--set",
                                 "healthPort=" + std::to_string(health_port)});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.stderr_text;
  std::ofstream(dir.path() + "/chart.yaml") << rendered.stdout_text;
  auto applied = kubectl({"apply", "-n", ns, "-f", dir.path() + "/chart.yaml"});
  ASSERT_EQ(applied.exit_code, 0) << applied.stderr_text;

  // What the kubelet would give the operator's pod: its ServiceAccount's token, the cluster's
  // CA and its namespace at the in-cluster path, and the API server's address.
  const fs::path sa = dir.path() + "/serviceaccount";
  fs::create_directories(sa);
  auto token = kubectl({"create", "token", fullname, "-n", ns, "--duration=1h"});
  ASSERT_EQ(token.exit_code, 0) << token.stderr_text;
  std::ofstream(sa / "token") << token.stdout_text.substr(0, token.stdout_text.find('\n'));
  const std::string ca_data =
      kubectl({"config", "view", "--raw", "--minify", "-o",
               "jsonpath={.clusters[0].cluster.certificate-authority-data}"})
          .stdout_text;
  if (!ca_data.empty()) {
    auto ca = core::base64Decode(ca_data);
    ASSERT_TRUE(ca.has_value());
    std::ofstream(sa / "ca.crt") << *ca;
  } else {
    const std::string ca_file = kubectl({"config", "view", "--raw", "--minify", "-o",
                                         "jsonpath={.clusters[0].cluster.certificate-authority}"})
                                    .stdout_text;
    ASSERT_FALSE(ca_file.empty()) << "the kubeconfig names no CA";
    fs::copy_file(ca_file, sa / "ca.crt");
  }
  std::ofstream(sa / "namespace") << ns;
  for (const auto& f : fs::directory_iterator(sa))
    fs::permissions(f.path(),
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const std::string url =
      kubectl({"config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"})
          .stdout_text;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(url, m, std::regex(R"(https://([0-9.]+):(\d+)/?)"))) << url;

  // The chart's container arguments, run by the operator image.
  const auto args = nlohmann::json::parse(
      jsonpath({"deployment", fullname, "-n", ns}, "{.spec.template.spec.containers[0].args}"));
  ASSERT_TRUE(args.is_array() && !args.empty()) << args.dump();
  container_ = "rm-operator-image-test-" + std::to_string(getpid());
  std::vector<std::string> run = {"run",
                                  "-d",
                                  "--name",
                                  container_,
                                  "--read-only",
                                  "--network",
                                  "host",
                                  "-v",
                                  sa.string() + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
                                  "-e",
                                  "KUBERNETES_SERVICE_HOST=" + m[1].str(),
                                  "-e",
                                  "KUBERNETES_SERVICE_PORT=" + m[2].str(),
                                  "-e",
                                  "POD_NAMESPACE=" + ns,
                                  "-e",
                                  "POD_IP=127.0.0.1",
                                  kOperatorImage};
  for (const auto& a : args) run.push_back(a.get<std::string>());
  auto started = podman(run);
  ASSERT_EQ(started.exit_code, 0) << started.stderr_text;

  // It leads, through the Lease the chart's Role lets it hold.
  std::string holder;
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    holder = jsonpath({"lease", fullname, "-n", ns}, "{.spec.holderIdentity}");
    return !holder.empty();
  })) << podman({"logs", container_}).stderr_text;
  EXPECT_EQ(testutil::httpGet(health_port, "/healthz").status, 200);

  // It reconciles a job: the headless Service, the worker pods (Pending: no node runs them
  // here) and the job's status.
  std::ofstream(dir.path() + "/job.yaml") << R"(apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: in-cluster, namespace: default}
spec:
  replicas: 2
  image: ringmaster/trainer-cpu:0.1.0
  trainer:
    model: {type: mlp, hidden: [64]}
    dataset: {name: fashion-mnist, path: /data/fashion-mnist}
)";
  ASSERT_EQ(kubectl({"apply", "-f", dir.path() + "/job.yaml"}).exit_code, 0);
  EXPECT_TRUE(testutil::eventually(
      60s,
      [&] {
        return jsonpath({"pods", "-n", "default", "-l", "ringmaster.dev/job-name=in-cluster"},
                        "{.items[*].metadata.name}") == "in-cluster-worker-0 in-cluster-worker-1" &&
               !jsonpath({"service", "in-cluster", "-n", "default"}, "{.metadata.name}").empty() &&
               jsonpath({"trainingjob", "in-cluster", "-n", "default"}, "{.status.phase}") ==
                   "Pending";
      }))
      << kubectl({"get", "tj,pods,svc", "-n", "default"}).stdout_text
      << podman({"logs", container_}).stderr_text;
  const std::string metrics = testutil::httpGet(metrics_port, "/metrics").body;
  EXPECT_NE(
      metrics.find(
          R"(ringmaster_operator_job_phase{namespace="default",phase="Pending",trainingjob="in-cluster"} 1)"),
      std::string::npos)
      << metrics;

  // SIGTERM: it exits 0 and gives the Lease up.
  auto stopped = podman({"stop", "-t", "30", container_});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.stderr_text;
  EXPECT_EQ(podman({"inspect", "--format", "{{.State.ExitCode}}", container_}).stdout_text, "0\n")
      << podman({"logs", container_}).stderr_text;
  EXPECT_EQ(jsonpath({"lease", fullname, "-n", ns}, "{.spec.holderIdentity}"), "")
      << "the Lease was not released";
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, OperatorImageTest,
                         ::testing::Values(testutil::ControlPlane::kEnvtest),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
