#include "local/kubelet/session.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace ringmaster::local::kubelet {
namespace {

TEST(SessionOfStatLine, ReadsTheSixthFieldCountingFromTheLastParenthesis) {
  struct Row {
    std::string stat;
    std::optional<pid_t> session;
  };
  const Row rows[] = {
      {"42 (sleep) S 1 42 42 0 -1 4194560", 42},
      {"7 (a) b) (c) R 1 9 11 0", 11},  // comm with spaces and parentheses
      {"8 (x) Z 1 2 3", 3},
      {"9 (x) S 1 2", std::nullopt},       // cut short
      {"9 (x) S 1 2 abc", std::nullopt},   // not a number
      {"9 (x) S 1 2 -4 0", std::nullopt},  // negative
      {"9 (x) SS 1 2 3 0", std::nullopt},  // the state is one letter
      {"no parenthesis 1 2 3", std::nullopt},
      {"", std::nullopt},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(sessionOfStatLine(row.stat), row.session) << row.stat;
  }
}

TEST(ParseStatLine, ReadsCpuTimesAndResidentSetPastTheSession) {
  // A whole line as Linux 6.1 writes it: utime 1500, stime 300, cutime 70, cstime 30, rss 2048.
  const std::string line =
      "4242 (python3 -c x) R 1 4242 4242 0 -1 4194560 9 0 0 0 1500 300 70 30 20 0 3 0 100 "
      "900000000 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  auto stat = parseStatLine(line);
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->pid, 4242);
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->session, 4242);
  EXPECT_EQ(stat->cpu_ticks, 1800u);
  EXPECT_EQ(stat->reaped_cpu_ticks, 100u);
  EXPECT_EQ(stat->rss_pages, 2048);
  auto short_line = parseStatLine("42 (sleep) S 1 42 42 0 -1 4194560");
  ASSERT_TRUE(short_line.has_value()) << "fields past the session are optional";
  EXPECT_EQ(short_line->cpu_ticks, 0u);
  EXPECT_EQ(short_line->rss_pages, 0);
}

TEST(SessionUsage, SumsEachAskedSessionsProcessesAndTheirReapedChildren) {
  std::vector<ProcessStat> processes = {
      {10, 'S', 10, /*cpu*/ 100, /*reaped*/ 200, /*rss*/ 10},
      {11, 'R', 10, 300, 0, 5},
      {20, 'S', 20, 50, 0, 1},
      {30, 'S', 30, 1000, 0, 100},  // not asked for
  };
  auto usage = sessionUsage(processes, {10, 20, 40}, /*ticks_per_second=*/100, /*page=*/4096);
  ASSERT_EQ(usage.size(), 2u) << "session 40 has no live process";
  EXPECT_DOUBLE_EQ(usage[10].cpu_seconds, 6.0);
  EXPECT_EQ(usage[10].memory_bytes, 15 * 4096);
  EXPECT_DOUBLE_EQ(usage[20].cpu_seconds, 0.5);
  EXPECT_TRUE(sessionUsage(processes, {10}, 0, 4096).empty()) << "no clock rate, no figures";
}

// A session leader whose children took process groups of their own (as the launcher's ranks
// do): killSession ends all of them, and never the caller's own session.
TEST(KillSession, EndsEveryProcessOfTheSessionWhateverItsProcessGroup) {
  const pid_t leader = fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    setsid();
    for (int i = 0; i < 3; ++i) {
      if (fork() == 0) {
        setpgid(0, 0);
        execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
        _exit(127);
      }
    }
    execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
    _exit(127);
  }
  // The leader and its three children.
  for (int i = 0; i < 500 && sessionMembers(leader).size() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(sessionMembers(leader).size(), 4u);
  EXPECT_EQ(killSession(getsid(0)), 0) << "the caller's own session is never killed";
  EXPECT_GE(killSession(leader), 4);
  EXPECT_TRUE(sessionMembers(leader).empty());
  int status = 0;
  ASSERT_EQ(waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

}  // namespace
}  // namespace ringmaster::local::kubelet
