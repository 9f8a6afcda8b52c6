// Supervisor with real child processes (/bin/sh scripts).

#include "launcher/supervisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ringmaster::launcher {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

ProcessSpec shell(const std::string& name, const std::string& script,
                  std::map<std::string, std::string> env = {}) {
  return ProcessSpec{name, {"/bin/sh", "-c", script}, std::move(env)};
}

Supervisor::Options grace(std::chrono::milliseconds g) {
  Supervisor::Options o;
  o.grace = g;
  return o;
}

TEST(Supervisor, AllSucceedingIsExitZero) {
  auto sup = Supervisor::start({shell("rank 0", "exit 0"), shell("rank 1", "true")}, grace(5s));
  ASSERT_TRUE(sup.ok()) << sup.status().toString();
  EXPECT_EQ((*sup)->wait().exit_code, 0);
}

TEST(Supervisor, ProcessesSeeTheirOwnEnvironmentOverTheLaunchers) {
  setenv("RM_SUPERVISOR_TEST_INHERITED", "yes", 1);
  auto sup = Supervisor::start(
      {shell("rank 0", "test \"$RANK\" = 7 && test \"$RM_SUPERVISOR_TEST_INHERITED\" = yes",
             {{"RANK", "7"}})},
      grace(5s));
  ASSERT_TRUE(sup.ok());
  EXPECT_EQ((*sup)->wait().exit_code, 0);
}

TEST(Supervisor, FirstFailureStopsTheOthersAndGivesItsCode) {
  // rank 1 would run for ten minutes; rank 0's failure must end it.
  auto sup =
      Supervisor::start({shell("rank 0", "exit 7"), shell("rank 1", "sleep 600")}, grace(10s));
  ASSERT_TRUE(sup.ok());
  SupervisorOutcome out = (*sup)->wait();
  EXPECT_EQ(out.exit_code, 7);
  EXPECT_THAT(out.reason, HasSubstr("rank 0 exited with code 7"));
}

TEST(Supervisor, KilledBySignalIs128PlusN) {
  auto sup = Supervisor::start({shell("rank 0", "kill -9 $$")}, grace(5s));
  ASSERT_TRUE(sup.ok());
  EXPECT_EQ((*sup)->wait().exit_code, 128 + 9);
}

TEST(Supervisor, StopRequestForwardsSigtermAndUsesTheRequestedCode) {
  // The script reports SIGTERM by exiting 0: the outcome is still the requester's code.
  auto sup = Supervisor::start(
      {shell("rank 0", "trap 'exit 0' TERM; while :; do sleep 0.05; done")}, grace(60s));
  ASSERT_TRUE(sup.ok());
  (*sup)->requestStop(143, "received Terminated");
  SupervisorOutcome out = (*sup)->wait();
  EXPECT_EQ(out.exit_code, 143);
  EXPECT_EQ(out.reason, "received Terminated");
}

TEST(Supervisor, ProcessIgnoringSigtermIsKilledAfterTheGrace) {
  auto sup = Supervisor::start({shell("rank 0", "trap '' TERM; while :; do sleep 0.05; done")},
                               grace(200ms));
  ASSERT_TRUE(sup.ok());
  (*sup)->requestStop(142, "hang");
  EXPECT_EQ((*sup)->wait().exit_code, 142);
  EXPECT_FALSE((*sup)->running(0));
}

TEST(Supervisor, StoppedProcessStillGetsStopped) {
  auto sup = Supervisor::start({shell("rank 0", "while :; do sleep 0.05; done")}, grace(60s));
  ASSERT_TRUE(sup.ok());
  ASSERT_EQ(kill((*sup)->pid(0), SIGSTOP), 0);
  (*sup)->requestStop(142, "hang");  // SIGTERM + SIGCONT: no need to wait for the SIGKILL
  EXPECT_EQ((*sup)->wait().exit_code, 142);
}

TEST(Supervisor, ResolvesProgramsThroughPathThenTheFallbackDirectory) {
  auto sh = resolveProgram("sh", "/nonexistent:/bin", "");
  ASSERT_TRUE(sh.ok());
  EXPECT_EQ(*sh, "/bin/sh");
  auto fallback = resolveProgram("sh", "/nonexistent", "/bin");
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(*fallback, "/bin/sh");
  auto missing = resolveProgram("ringmaster-no-such-program", "/bin", "/usr/bin");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("ringmaster-no-such-program"));
}

TEST(Supervisor, CapturedStderrGivesTheFailingProcesssLastErrorLine) {
  Supervisor::Options o = grace(10s);
  o.capture_errors = true;
  const std::string log_line =
      "printf '%s\\n' \"2026-11-22T10:00:00.123Z E CORE    [j rank $RANK/2] ";
  auto sup = Supervisor::start({shell("rank 0", "sleep 600", {{"RANK", "0"}}),
                                shell("rank 1",
                                      log_line + "first\" >&2; " + log_line +
                                          "dataset: not found\" >&2; echo plain >&2; "
                                          "printf 'no newline' >&2; exit 1",
                                      {{"RANK", "1"}})},
                               o);
  ASSERT_TRUE(sup.ok());
  SupervisorOutcome out = (*sup)->wait();
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_THAT(out.reason, HasSubstr("rank 1 exited with code 1"));
  EXPECT_EQ((*sup)->failureErrorLine(), "E CORE [j rank 1/2] dataset: not found");
  EXPECT_TRUE((*sup)->failureCause().exited_first);
}

// A rank whose peer raised may exit before it ("Connection closed by peer" as the peer's
// interpreter tears down): the cause is the rank whose error began first, not the first to exit.
TEST(Supervisor, TheCauseIsTheRankWhoseErrorBeganFirst) {
  Supervisor::Options o = grace(10s);
  o.capture_errors = true;
  auto sup = Supervisor::start(
      {shell("rank 0",
             "printf 'Traceback (most recent call last):\\n  File \"a.py\"\\n"
             "ValueError: bad shard\\n' >&2; sleep 1; exit 1"),
       shell("rank 1",
             "sleep 0.3; printf 'Traceback (most recent call last):\\n  File \"b.py\"\\n"
             "RuntimeError: Connection closed by peer\\n' >&2; exit 1")},
      o);
  ASSERT_TRUE(sup.ok());
  SupervisorOutcome out = (*sup)->wait();
  EXPECT_THAT(out.reason, HasSubstr("rank 1 exited with code 1"));  // rank 1 exited first
  const FailureCause cause = (*sup)->failureCause();
  EXPECT_EQ(cause.name, "rank 0");
  EXPECT_EQ(cause.error_line, "ValueError: bad shard");
  EXPECT_GT(cause.unix_ms, 0);
  EXPECT_FALSE(cause.exited_first);
}

TEST(Supervisor, NoErrorLineWithoutCaptureOrOnAStopRequest) {
  auto plain = Supervisor::start({shell("rank 0",
                                        "echo '2026-11-22T10:00:00.123Z E CORE x' >&2; "
                                        "exit 3")},
                                 grace(5s));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->wait().exit_code, 3);
  EXPECT_EQ((*plain)->failureErrorLine(), "");
  Supervisor::Options o = grace(5s);
  o.capture_errors = true;
  auto stopped = Supervisor::start({shell("rank 0", "sleep 600")}, o);
  ASSERT_TRUE(stopped.ok());
  (*stopped)->requestStop(142, "hang: rank 0");
  SupervisorOutcome out = (*stopped)->wait();
  EXPECT_EQ(out.reason, "hang: rank 0");
  EXPECT_EQ((*stopped)->failureErrorLine(), "");
}

TEST(Supervisor, ExitCodesFollowDesignSection5) {
  EXPECT_EQ(exitCodeOf(0), 0);
  EXPECT_EQ(exitCodeOf(3 << 8), 3);
  EXPECT_EQ(exitCodeOf(SIGTERM), 143);
  EXPECT_EQ(describeWaitStatus(SIGKILL), "killed by signal 9 (Killed)");
}

}  // namespace
}  // namespace ringmaster::launcher
