#include "ringmaster/core/tcp_dial.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ringmaster::core {
namespace {

using namespace std::chrono_literals;

// A listening socket on 127.0.0.1 and its port; closed with the object.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int port = 0;
  Listener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 4) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
  }
  ~Listener() { ::close(fd); }
};

TEST(DialTcpOnce, ConnectsToAListenerAndTheSocketBecomesWritable) {
  Listener listener;
  ASSERT_GT(listener.port, 0);
  Result<int> fd = dialTcpOnce("127.0.0.1", listener.port, std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(fd.ok()) << fd.status().toString();
  Result<bool> writable = pollUntil(*fd, POLLOUT, std::chrono::steady_clock::now() + 10s);
  ASSERT_TRUE(writable.ok());
  EXPECT_TRUE(*writable);
  ::close(*fd);
}

TEST(DialTcpOnce, APortNobodyListensOnIsUnavailable) {
  int port = 0;
  {
    Listener gone;  // a port that was free a moment ago, closed again
    port = gone.port;
  }
  ASSERT_GT(port, 0);
  Result<int> fd = dialTcpOnce("127.0.0.1", port, std::chrono::steady_clock::now() + 10s);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), Code::kUnavailable) << fd.status().toString();
}

TEST(DialTcpOnce, AnUnknownHostIsUnavailableNamingIt) {
  Result<int> fd = dialTcpOnce("no-such-host.invalid", 80, std::chrono::steady_clock::now() + 10s);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), Code::kUnavailable);
  EXPECT_NE(fd.status().message().find("no-such-host.invalid"), std::string::npos);
}

TEST(PollUntil, ANotReadySocketTimesOutAtTheDeadline) {
  Listener listener;
  Result<bool> readable = pollUntil(listener.fd, POLLIN, std::chrono::steady_clock::now() + 20ms);
  ASSERT_TRUE(readable.ok());
  EXPECT_FALSE(*readable);  // nobody connected
}

}  // namespace
}  // namespace ringmaster::core
