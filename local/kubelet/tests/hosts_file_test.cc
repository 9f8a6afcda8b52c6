#include "local/kubelet/hosts_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "local/kubelet/kubelet.h"
#include "local/kubelet/pod_env.h"

namespace ringmaster::local::kubelet {
namespace {

TEST(RenderHosts, NamesPodsByHostnameSubdomainAndService) {
  std::string text = renderHosts({{"127.1.0.2", "ns", "job-worker-1", "job-worker-1", "job"},
                                  {"127.1.0.1", "ns", "job-worker-0", "job-worker-0", "job"},
                                  {"127.1.0.3", "ns", "lonely", "", ""},
                                  {"", "ns", "no-ip", "h", "s"}});
  EXPECT_NE(text.find("127.1.0.1 job-worker-0.job.ns.svc.cluster.local job-worker-0.job.ns.svc "
                      "job-worker-0.job.ns\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("127.1.0.2 job-worker-1.job.ns.svc.cluster.local"), std::string::npos);
  EXPECT_NE(text.find("127.1.0.1 job.ns.svc.cluster.local job.ns.svc\n"), std::string::npos);
  EXPECT_NE(text.find("127.1.0.3 lonely.ns.pod\n"), std::string::npos);
  EXPECT_EQ(text.find("no-ip"), std::string::npos);
  EXPECT_EQ(text.find('#'), std::string::npos);  // nss_wrapper rejects comment lines
  EXPECT_LT(text.find("job-worker-0.job"), text.find("job-worker-1.job"));  // sorted
}

// Output and exit status of `command` run by /bin/sh.
std::pair<std::string, int> runShell(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return {"", -1};
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {out, pclose(p)};
}

TEST(RenderHosts, ThousandPodsResolveThroughThePodsOwnPreload) {
  const std::string library = findNssWrapper();
  if (library.empty()) GTEST_SKIP() << "libnss_wrapper.so is not installed";
  std::vector<HostsEntry> pods;
  for (int i = 0; i < 1000; ++i) {
    const std::string ip = "127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    const std::string name = "job" + std::to_string(i / 2) + "-worker-" + std::to_string(i % 2);
    pods.push_back({ip, "ns", name, name, "job" + std::to_string(i / 2)});
  }
  char tmpl[] = "/tmp/hosts_scale.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string hosts = std::string(tmpl) + "/hosts";
  ASSERT_TRUE(writeFileAtomically(hosts, renderHosts(pods)).ok());
  // Exactly the environment a container gets, around getent (which resolves through NSS).
  BaseEnvOptions o;
  o.nss_wrapper_library = library;
  o.hosts_file = hosts;
  std::string command = "env -i";
  for (const auto& [k, v] : baseEnv(o)) command += " '" + k + "=" + v + "'";
  for (const char* name :
       {"job499-worker-1.job499.ns.svc.cluster.local", "job0-worker-0.job0.ns", "job250.ns.svc"}) {
    SCOPED_TRACE(name);
    auto [out, status] = runShell(command + " getent hosts " + name + " 2>&1");
    EXPECT_EQ(status, 0) << out;
    EXPECT_EQ(out.find("Hash table is full"), std::string::npos) << out;
    EXPECT_NE(out.find(name), std::string::npos) << out;
  }
  std::filesystem::remove_all(tmpl);
}

TEST(RenderPodHosts, APodsOwnFileNamesItselfFirstThenTheCluster) {
  const HostsEntry self{"10.244.0.3", "ns", "job-worker-0", "job-worker-0", "job"};
  const std::vector<HostsEntry> cluster = {
      self,
      {"10.244.0.4", "ns", "job-worker-1", "job-worker-1", "job"},
      {"10.244.0.9", "other", "x-worker-0", "x-worker-0", "x"}};
  const std::string text = renderPodHosts(self, cluster);
  EXPECT_EQ(text.rfind("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n", 0), 0u) << text;
  const size_t own = text.find("10.244.0.3\tjob-worker-0.job.ns.svc.cluster.local\tjob-worker-0\n");
  ASSERT_NE(own, std::string::npos) << text;
  EXPECT_LT(own, text.find("10.244.0.4"));
  // Pods of its own namespace also by <hostname>.<subdomain>, as the DNS search path gives them.
  EXPECT_NE(text.find("job-worker-1.job.ns.svc job-worker-1.job.ns job-worker-1.job\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("10.244.0.9 x-worker-0.x.other.svc.cluster.local x-worker-0.x.other.svc "
                      "x-worker-0.x.other\n"),
            std::string::npos)
      << text;
  // Without spec.hostname a pod is called by its name.
  const std::string bare = renderPodHosts({"10.244.0.5", "ns", "lonely", "", ""}, {});
  EXPECT_NE(bare.find("10.244.0.5\tlonely\n"), std::string::npos) << bare;
  EXPECT_EQ(podHostname({"", "ns", std::string(80, 'p'), "", ""}), std::string(63, 'p'));
}

TEST(WriteFileInPlace, KeepsTheInodeAndLeavesNoOldTail) {
  char tmpl[] = "/tmp/hosts_inplace.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/etc-hosts";
  ASSERT_TRUE(writeFileInPlace(path, "10.0.0.1 a-long-name-of-a-pod\n10.0.0.2 b\n").ok());
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  ASSERT_TRUE(writeFileInPlace(path, "10.0.0.3 c\n").ok());
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // a bind mount of the file sees the new text
  std::stringstream content;
  content << std::ifstream(path).rdbuf();
  std::string text = content.str();
  EXPECT_EQ(text.rfind("10.0.0.3 c\n", 0), 0u) << text;
  // The rest is one blank line: nothing of the old names is left to resolve.
  EXPECT_EQ(text.find_first_not_of(" \n", 11), std::string::npos) << text;
  EXPECT_EQ(text.size(), static_cast<size_t>(before.st_size));
  std::filesystem::remove_all(tmpl);
}

TEST(WriteFileAtomically, ReplacesContentWithMode) {
  char tmpl[] = "/tmp/hosts_test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string path = std::string(tmpl) + "/hosts";
  ASSERT_TRUE(writeFileAtomically(path, "one\n").ok());
  ASSERT_TRUE(writeFileAtomically(path, "two\n", 0600).ok());
  std::stringstream content;
  content << std::ifstream(path).rdbuf();
  EXPECT_EQ(content.str(), "two\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(writeFileAtomically(std::string(tmpl) + "/missing/dir/f", "x").ok());
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
