// probeSsh / waitForSsh against tiny fake servers on 127.0.0.1, and the interface lookup MPI
// mode pins Open MPI's traffic to.

#include "launcher/ssh_probe.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "launcher/mpi_mode.h"

namespace ringmaster::launcher {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A listening socket on 127.0.0.1 that answers each connection with `reply` and closes.
class FakeServer {
 public:
  explicit FakeServer(std::string reply, int connections = 1) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, connections] {
      for (int i = 0; i < connections; ++i) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        (void)!write(c, reply_.data(), reply_.size());
        close(c);
      }
    });
  }
  ~FakeServer() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A port nothing listens on: bound (so nobody else takes it) but not listening.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~ClosedPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_;
};

TEST(ProbeSsh, ReturnsTheServersIdentificationLine) {
  FakeServer server("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
  auto banner = probeSsh("127.0.0.1", server.port(), 5s);
  ASSERT_TRUE(banner.ok()) << banner.status().toString();
  EXPECT_EQ(*banner, "SSH-2.0-OpenSSH_9.2p1 Debian-2");
}

TEST(ProbeSsh, SkipsLinesBeforeTheBanner) {
  FakeServer server("welcome\r\nSSH-2.0-x\r\n");
  auto banner = probeSsh("127.0.0.1", server.port(), 5s);
  ASSERT_TRUE(banner.ok()) << banner.status().toString();
  EXPECT_EQ(*banner, "SSH-2.0-x");
}

TEST(ProbeSsh, NamesARefusedPortAServerThatIsNotSshAndAnUnknownName) {
  ClosedPort closed;
  auto refused = probeSsh("127.0.0.1", closed.port(), 5s);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("127.0.0.1:" + std::to_string(closed.port())));
  EXPECT_THAT(refused.status().message(), HasSubstr("refused"));

  FakeServer http("HTTP/1.1 400 Bad Request\r\n\r\n");
  auto not_ssh = probeSsh("127.0.0.1", http.port(), 5s);
  ASSERT_FALSE(not_ssh.ok());
  EXPECT_THAT(not_ssh.status().message(), HasSubstr("closed the connection before its banner"));

  auto unknown = probeSsh("no-such-host.invalid", 22, 5s);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("cannot resolve"));
}

TEST(WaitForSsh, TimesOutWithTheLastErrorAndStopsOnRequest) {
  ClosedPort closed;
  auto late = waitForSsh("127.0.0.1", closed.port(), std::chrono::steady_clock::now() + 300ms);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), core::Code::kTimeout);
  EXPECT_THAT(late.status().message(), HasSubstr("refused"));

  core::StopSource stop;
  stop.requestStop("SIGTERM");
  auto stopped =
      waitForSsh("127.0.0.1", closed.port(), std::chrono::steady_clock::now() + 60s, &stop);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), core::Code::kCancelled);
}

TEST(WaitForSsh, ReturnsTheBannerOfAServerThatAnswers) {
  FakeServer server("SSH-2.0-late\r\n");
  auto banner = waitForSsh("127.0.0.1", server.port(), std::chrono::steady_clock::now() + 30s);
  ASSERT_TRUE(banner.ok()) << banner.status().toString();
  EXPECT_EQ(*banner, "SSH-2.0-late");
}

TEST(InterfaceFor, FindsTheInterfaceWhoseNetworkHoldsTheAddress) {
  EXPECT_EQ(interfaceFor("127.0.0.1"), "lo");
  EXPECT_EQ(interfaceFor("127.1.0.10"), "lo");  // the local cluster's pod addresses
  EXPECT_EQ(interfaceFor(""), "");
  EXPECT_EQ(interfaceFor("not-an-ip"), "");
}

}  // namespace
}  // namespace ringmaster::launcher
