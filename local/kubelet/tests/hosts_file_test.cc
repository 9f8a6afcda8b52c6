#include "local/kubelet/hosts_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

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
