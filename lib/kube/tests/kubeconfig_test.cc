#include "ringmaster/kube/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ringmaster::kube {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
  return fs::path(RM_KUBE_TESTDATA_DIR) / "kubeconfig" / name;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kubeconfig-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void write(const std::string& name, const std::string& content) const {
    fs::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << content;
  }

 private:
  fs::path path_;
};

TEST(KubeConfigFileTest, ReadsTheCurrentContext) {
  core::Result<KubeConfig> c = loadKubeConfigFile(fixture("two_contexts.yaml"));
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->server, "https://127.0.0.1:16443");
  EXPECT_EQ(c->ca_pem, "CA PEM\n");
  EXPECT_EQ(c->tls_server_name, "kubernetes");
  EXPECT_EQ(c->namespace_name, "team-a");
  EXPECT_EQ(*c->bearerToken(), "s3cret");
  EXPECT_EQ(c->source, fixture("two_contexts.yaml").string());
}

TEST(KubeConfigFileTest, ContextOverrideAndTokenFileRelativeToTheConfig) {
  core::Result<KubeConfig> c = loadKubeConfigFile(fixture("two_contexts.yaml"), "robot");
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->server, "https://prod.example:6443");
  EXPECT_EQ(c->namespace_name, "default");
  EXPECT_EQ(c->token_file, fixture("robot.token").string());
  EXPECT_EQ(*c->bearerToken(), "robot-token-1");
}

TEST(KubeConfigFileTest, RefusesToSkipTlsVerification) {
  core::Result<KubeConfig> c = loadKubeConfigFile(fixture("insecure.yaml"));
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_TRUE(contains(m, "insecure.yaml")) << m;
  EXPECT_TRUE(contains(m, "clusters[0].cluster.insecure-skip-tls-verify")) << m;
  EXPECT_TRUE(contains(m, "never skipped")) << m;
}

TEST(KubeConfigFileTest, ErrorsNameTheFileAndTheKey) {
  core::Result<KubeConfig> ca = loadKubeConfigFile(fixture("missing_ca_file.yaml"));
  ASSERT_FALSE(ca.ok());
  EXPECT_TRUE(contains(ca.status().message(), "clusters[0].cluster.certificate-authority"))
      << ca.status().message();
  EXPECT_TRUE(contains(ca.status().message(), "does-not-exist.crt")) << ca.status().message();

  core::Result<KubeConfig> exec = loadKubeConfigFile(fixture("exec_user.yaml"));
  ASSERT_FALSE(exec.ok());
  EXPECT_TRUE(contains(exec.status().message(), "users[0].user.exec")) << exec.status().message();

  core::Result<KubeConfig> http = loadKubeConfigFile(fixture("http_server.yaml"));
  ASSERT_FALSE(http.ok());
  EXPECT_TRUE(contains(http.status().message(), "clusters[0].cluster.server"))
      << http.status().message();

  core::Result<KubeConfig> unknown = loadKubeConfigFile(fixture("unknown_cluster.yaml"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.status().message(), "no entry named \"nowhere\""))
      << unknown.status().message();
}

TEST(KubeConfigFileTest, ReadsClientCertificateFromFileAndKeyFromData) {
  core::Result<KubeConfig> c = loadKubeConfigFile(fixture("client_cert.yaml"));
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->ca_pem, "FILE CA\n");
  EXPECT_EQ(c->client_cert_pem, "CLIENT CERT\n");
  EXPECT_EQ(c->client_key_pem, "KEY\n");
  EXPECT_EQ(*c->bearerToken(), "");
}

TEST(KubeConfigFileTest, InvalidYamlNamesTheFile) {
  TempDir dir;
  dir.write("bad.yaml", "clusters: [\n");
  core::Result<KubeConfig> c = loadKubeConfigFile(dir.path() / "bad.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.status().message(), "bad.yaml: invalid YAML")) << c.status().message();
}

TEST(InClusterConfigTest, ReadsServiceAccountAndRereadsTheToken) {
  TempDir dir;
  dir.write("ca.crt", "CLUSTER CA");
  dir.write("token", "token-1\n");
  dir.write("namespace", "jobs");
  core::Result<KubeConfig> c = loadInClusterConfig("10.96.0.1", "443", dir.path());
  ASSERT_TRUE(c.ok()) << c.status().toString();
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->ca_pem, "CLUSTER CA");
  EXPECT_EQ(c->namespace_name, "jobs");
  EXPECT_EQ(c->source, "in-cluster");
  EXPECT_EQ(*c->bearerToken(), "token-1");
  dir.write("token", "token-2\n");  // the kubelet rotated it
  EXPECT_EQ(*c->bearerToken(), "token-2");

  core::Result<KubeConfig> v6 = loadInClusterConfig("fd00::1", "6443", dir.path());
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");
}

TEST(InClusterConfigTest, MissingCaIsAnError) {
  TempDir dir;
  dir.write("token", "t");
  core::Result<KubeConfig> c = loadInClusterConfig("10.96.0.1", "443", dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.status().message(), "ca.crt")) << c.status().message();
}

class LoadOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("sa/ca.crt", "CA");
    dir_.write("sa/token", "sa-token");
    dir_.write("home/.kube/config", configFor("https://home:6443"));
    dir_.write("env.yaml", configFor("https://env:6443"));
    dir_.write("flag.yaml", configFor("https://flag:6443"));
    sources_.service_account_dir = dir_.path() / "sa";
    sources_.home = (dir_.path() / "home").string();
  }
  static std::string configFor(const std::string& server) {
    return "current-context: c\nclusters:\n- name: k\n  cluster:\n    server: " + server +
           "\ncontexts:\n- name: c\n  context: {cluster: k}\n";
  }
  std::string serverOf() {
    core::Result<KubeConfig> c = loadKubeConfig(sources_);
    EXPECT_TRUE(c.ok()) << c.status().toString();
    return c.ok() ? c->server : "";
  }
  TempDir dir_;
  KubeConfigSources sources_;
};

TEST_F(LoadOrderTest, FlagThenEnvThenInClusterThenHome) {
  EXPECT_EQ(serverOf(), "https://home:6443");
  sources_.service_host = "10.0.0.1";
  sources_.service_port = "443";
  EXPECT_EQ(serverOf(), "https://10.0.0.1:443");
  sources_.kubeconfig_env = (dir_.path() / "env.yaml").string() + ":/nonexistent";
  EXPECT_EQ(serverOf(), "https://env:6443");
  sources_.explicit_path = (dir_.path() / "flag.yaml").string();
  EXPECT_EQ(serverOf(), "https://flag:6443");
}

TEST_F(LoadOrderTest, NothingFoundSaysWhereItLooked) {
  sources_.home = (dir_.path() / "nohome").string();
  core::Result<KubeConfig> c = loadKubeConfig(sources_);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), core::Code::kNotFound);
  EXPECT_TRUE(contains(c.status().message(), "KUBECONFIG"));
}

}  // namespace
}  // namespace ringmaster::kube
