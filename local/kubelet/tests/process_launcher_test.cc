#include "local/kubelet/process_launcher.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "local/kubelet/tests/temp_dir.h"

namespace ringmaster::local::kubelet {
namespace {

// The session file exists, naming the child, by the time launch() returns: the child wrote it
// before exec, so no moment exists where the process runs unrecorded.
TEST(Launch, TheChildRecordsItsSessionBeforeItRuns) {
  test_support::TempDir dir;
  LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "exit 3"};
  spec.session_file = (dir.path() / "c.pid").string();
  core::Result<pid_t> pid = launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().toString();
  std::ifstream in(spec.session_file);
  long recorded = 0;
  ASSERT_TRUE(in >> recorded) << "no pid in " << spec.session_file;
  EXPECT_EQ(recorded, *pid);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

// A session file the child cannot write fails the launch, naming the step; nothing runs.
TEST(Launch, AnUnwritableSessionFileFailsTheLaunch) {
  test_support::TempDir dir;
  LaunchSpec spec;
  spec.executable = "/bin/true";
  spec.argv = {"true"};
  spec.session_file = (dir.path() / "missing-dir" / "c.pid").string();
  core::Result<pid_t> pid = launch(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_NE(pid.status().message().find("write session file"), std::string::npos)
      << pid.status().toString();
}

// A pod's containers see its hostname and its own /etc/hosts, not the host's (what MPI
// libraries tell nodes apart by, and what torch.distributed's Gloo resolves to find its address).
TEST(Launch, TheChildSeesThePodsHostnameAndHostsFile) {
  if (!mountNamespacesAvailable()) GTEST_SKIP() << "needs mount and UTS namespaces (root)";
  test_support::TempDir dir;
  const std::string hosts = (dir.path() / "etc-hosts").string();
  std::ofstream(hosts) << "10.244.0.7\tjob-worker-3\n";
  LaunchSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "test \"$(hostname)\" = job-worker-3 && getent hosts job-worker-3"};
  spec.hostname = "job-worker-3";
  spec.mounts = {{hosts, "/etc/hosts", false}};
  spec.log_path = (dir.path() / "log").string();
  core::Result<pid_t> pid = launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().toString();
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  std::stringstream log;
  log << std::ifstream(spec.log_path).rdbuf();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << log.str();
  EXPECT_NE(log.str().find("10.244.0.7"), std::string::npos) << log.str();
  char own[256] = {};
  ASSERT_EQ(gethostname(own, sizeof own - 1), 0);
  EXPECT_STRNE(own, "job-worker-3");  // the host keeps its name
}

}  // namespace
}  // namespace ringmaster::local::kubelet
