// The images users run, built from dockerfiles/ by scripts/build-images with this tree's binaries
// (the Dockerfiles' runtime stages unchanged) and run by podman with runc: what they contain
// starts as the image's non-root user on a read-only root filesystem, the CPU worker holds no
// CUDA library, and two worker containers train the README's job together over the tcp
// transport, checkpointing to a volume. Skipped where podman is not installed (scripts/setup
// installs it).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "process.h"

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

class ImagesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (podmanPath().empty() ||
        testutil::run({"/bin/sh", "-c", "command -v debootstrap"}).exit_code != 0) {
      skip_ = "podman or debootstrap is not installed (scripts/setup installs both)";
      return;
    }
    // The images of this tree's binaries: layers podman already has make this seconds.
    const char* binaries = std::getenv("RM_BINARY_DIR");
    ASSERT_NE(binaries, nullptr) << "RM_BINARY_DIR is not set (run through ctest)";
    const auto started = std::chrono::steady_clock::now();
    auto built = testutil::run(
        {sourceDir() + "/scripts/build-images", "--binaries", binaries, "operator", "worker-cpu"},
        {}, 1200s);
    build_output_ = built.stdout_text + built.stderr_text;
    std::cout << build_output_ << "images ready in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
              << " s" << std::endl;
    built_ = built.exit_code == 0;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(built_) << "scripts/build-images failed:\n" << build_output_;
  }
  static std::string skip_;
  static std::string build_output_;
  static bool built_;
};
std::string ImagesTest::skip_;
std::string ImagesTest::build_output_;
bool ImagesTest::built_ = false;

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

}  // namespace
}  // namespace ringmaster
