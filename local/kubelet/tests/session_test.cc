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
