// Drives the real kubectl against `ringmaster local serve` (skipped when kubectl is missing).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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

std::string findKubectl() {
  // The Cloud SDK dispatcher picks a bundled kubectl by server version; prefer 1.32 directly.
  for (const char* p : {"/usr/lib/google-cloud-sdk/bin/kubectl.1.32", "/usr/local/bin/kubectl",
                        "/usr/bin/kubectl"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

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

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubectl_ = findKubectl();
    if (kubectl_.empty()) GTEST_SKIP() << "kubectl is not installed";
    data_ = fs::path(dir_.path()) / "data";
    server_ = std::make_unique<testutil::Process>(
        std::vector<std::string>{testutil::binaryPath("bin/ringmaster"), "local",
                                 "serve", "--data-dir", data_.string(), "--port", "0"});
    server_->start();
    // Ready when the pid file appears (written after the listener and kubeconfig).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(data_ / "pid")) {
      ASSERT_TRUE(server_->running()) << server_->stderrSoFar();
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "server did not start";
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void TearDown() override {
    if (server_ && server_->running()) {
      server_->signal(SIGTERM);
      auto result = server_->wait(std::chrono::seconds(30));
      EXPECT_FALSE(result.signaled) << result.stderr_text;
      EXPECT_EQ(result.exit_code, 0) << result.stderr_text;
      EXPECT_FALSE(fs::exists(data_ / "pid"));
    }
  }

  ProcessResult kubectl(std::vector<std::string> args, const std::string& kubeconfig = "") {
    std::vector<std::string> argv{
        kubectl_, "--kubeconfig",
        kubeconfig.empty() ? (data_ / "kubeconfig").string() : kubeconfig};
    argv.insert(argv.end(), args.begin(), args.end());
    return testutil::run(
        argv, {{"KUBECACHEDIR", (fs::path(dir_.path()) / "cache").string()}, {"HOME", dir_.path()}},
        std::chrono::seconds(60));
  }

  std::string file(const std::string& name, const std::string& text) {
    fs::path p = fs::path(dir_.path()) / name;
    writeFile(p, text);
    return p.string();
  }

  testutil::TempDir dir_;
  fs::path data_;
  std::string kubectl_;
  std::unique_ptr<testutil::Process> server_;
};

TEST_F(KubectlTest, ApiResourcesListsBuiltinsAndAppliedCrd) {
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

TEST_F(KubectlTest, GetCustomResourcesShowsPrinterColumns) {
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
}

TEST_F(KubectlTest, ConfigMapCreateGetPatchDelete) {
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

TEST_F(KubectlTest, WrongTokenIsUnauthorized) {
  std::string config = testutil::readFile((data_ / "kubeconfig").string());
  size_t at = config.find("token: ");
  ASSERT_NE(at, std::string::npos);
  std::string bad =
      config.substr(0, at) + "token: not-the-token\n" + config.substr(config.find('\n', at) + 1);
  ASSERT_NE(bad, config);
  auto result = kubectl({"get", "cm"}, file("bad-kubeconfig", bad));
  EXPECT_NE(result.exit_code, 0);
  // client-go words a 401 during discovery as "…provide credentials".
  EXPECT_NE(result.stderr_text.find("You must be logged in to the server"), std::string::npos)
      << result.stderr_text;
}

TEST_F(KubectlTest, StatePersistsAcrossRestart) {
  ASSERT_EQ(kubectl({"create", "-f", file("cm.yaml", kConfigMap)}).exit_code, 0);
  server_->signal(SIGTERM);
  auto stopped = server_->wait(std::chrono::seconds(30));
  ASSERT_EQ(stopped.exit_code, 0) << stopped.stderr_text;
  server_ = std::make_unique<testutil::Process>(
      std::vector<std::string>{testutil::binaryPath("bin/ringmaster"), "local", "serve",
                               "--data-dir", data_.string(), "--port", "0"});
  server_->start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(data_ / "pid")) {
    ASSERT_TRUE(server_->running()) << server_->stderrSoFar();
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto got = kubectl({"get", "cm", "cm1", "-o", "yaml"});
  EXPECT_EQ(got.exit_code, 0) << got.stderr_text;
  EXPECT_NE(got.stdout_text.find("a: \"1\""), std::string::npos);
}

}  // namespace
}  // namespace ringmaster::local
