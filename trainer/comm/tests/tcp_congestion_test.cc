#include "trainer/comm/tcp_congestion.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace ringmaster::trainer::comm {
namespace {

std::string allowedCongestionControls() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  std::string text;
  std::getline(in, text);
  return " " + text + " ";
}

bool allowed(const std::string& name) {
  return allowedCongestionControls().find(" " + name + " ") != std::string::npos;
}

// Becomes `uid` (without capabilities when not 0), chooses on a fresh socket and says what it
// chose on stderr: run as a death test's child, in a process of its own without other threads.
[[noreturn]] void chooseAs(uid_t uid) {
  if (uid != 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) ::_exit(2);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) ::_exit(3);
  std::fprintf(stderr, "chosen=%s.\n", preferUnpacedCongestionControl(fd).c_str());
  ::_exit(0);
}

// Root may choose any loaded algorithm: CUBIC.
TEST(TcpCongestion, APrivilegedProcessRunsCubic) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(chooseAs(0), ::testing::ExitedWithCode(0), "chosen=cubic\\.");
}

// A container's non-root user may choose only what the host allows; where CUBIC is not among
// them (a host whose default is BBR often allows "reno bbr"), Reno, never a pacing BBR.
TEST(TcpCongestion, AnUnprivilegedProcessRunsCubicWhereAllowedElseReno) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string want = allowed("cubic") ? "chosen=cubic\\." : "chosen=reno\\.";
  EXPECT_EXIT(chooseAs(65534), ::testing::ExitedWithCode(0), want)
      << "allowed:" << allowedCongestionControls();
}

}  // namespace
}  // namespace ringmaster::trainer::comm
