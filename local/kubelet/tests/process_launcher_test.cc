#include "local/kubelet/process_launcher.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
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

}  // namespace
}  // namespace ringmaster::local::kubelet
