// HealthServer: the probe endpoints the operator's pod template points at.

#include "launcher/health_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <vector>

namespace ringmaster::launcher {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// One request on a fresh connection; the whole response.
std::string request(int port, const std::string& text) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  (void)!write(fd, text.data(), text.size());
  std::string out;
  char buf[512];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string get(int port, const std::string& path) {
  return request(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

TEST(HealthServer, ReadyzIs503UntilTheRendezvousCompletesThen200) {
  auto server = HealthServer::start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status().toString();
  const int port = (*server)->port();
  EXPECT_THAT(get(port, "/readyz"), StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(get(port, "/healthz"), StartsWith("HTTP/1.1 200"));
  (*server)->setReady(true);
  EXPECT_THAT(get(port, "/readyz"), StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(get(port, "/readyz?verbose"), StartsWith("HTTP/1.1 200"));
}

TEST(HealthServer, UnknownPathIs404AndOtherMethods405) {
  auto server = HealthServer::start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  EXPECT_THAT(get((*server)->port(), "/metrics"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(request((*server)->port(), "POST /readyz HTTP/1.1\r\n\r\n"),
              StartsWith("HTTP/1.1 405"));
}

TEST(HealthServer, ClientThatSendsNothingDoesNotBlockOthersForever) {
  auto server = HealthServer::start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  int idle = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_THAT(get((*server)->port(), "/healthz"), StartsWith("HTTP/1.1 200"));
  close(idle);
}

// A connection that sends nothing, held open (an attacker's, or a half-dead client's).
int idleConnection(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// A flood of silent connections, more than the server keeps, and a probe behind them answered
// within a kubelet-like probe timeout (served one at a time, the probe waited 1 s per idle
// connection ahead of it). The oldest idle connections were dropped to make room.
TEST(HealthServer, ProbesAreAnsweredBehindAFloodOfIdleConnections) {
  auto server = HealthServer::start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  std::vector<int> idle;
  for (size_t i = 0; i < HealthServer::kMaxConnections + 72; ++i)
    idle.push_back(idleConnection(port));
  int probe = idleConnection(port);
  timeval limit{2, 0};  // kubelet's probes give up after timeoutSeconds (default 1)
  setsockopt(probe, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  const std::string line = "GET /healthz HTTP/1.1\r\n\r\n";
  ASSERT_EQ(write(probe, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  char buf[256];
  const ssize_t n = read(probe, buf, sizeof(buf));
  ASSERT_GT(n, 0) << "no answer within 2 s";
  EXPECT_THAT(std::string(buf, static_cast<size_t>(n)), StartsWith("HTTP/1.1 200"));
  close(probe);
  // The first idle connection was closed by the server (EOF), not left to pile up.
  timeval short_wait{2, 0};
  setsockopt(idle.front(), SOL_SOCKET, SO_RCVTIMEO, &short_wait, sizeof(short_wait));
  EXPECT_EQ(read(idle.front(), buf, sizeof(buf)), 0);
  for (int fd : idle) close(fd);
}

TEST(HealthServer, BadBindAddressIsNamed) {
  auto server = HealthServer::start("not-an-ip", 0);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("not-an-ip"));
}

}  // namespace
}  // namespace ringmaster::launcher
