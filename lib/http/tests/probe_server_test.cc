// ProbeServer: the operator's and the launchers' /healthz, /readyz and /metrics endpoint.

#include "ringmaster/http/probe_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "ringmaster/http/get.h"

namespace ringmaster::http {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A connection to 127.0.0.1:port that has sent nothing yet.
int connectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// One request on a fresh connection; the whole response.
std::string request(int port, const std::string& text) {
  const int fd = connectTo(port);
  (void)!write(fd, text.data(), text.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

std::string rawGet(int port, const std::string& path) {
  return request(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

// The launcher's routes: /readyz answers 503 until `ready`.
std::map<std::string, ProbeServer::Handler> probeRoutes(const std::atomic<bool>& ready) {
  return {{"/healthz",
           [] {
             return Answer{200, "ok\n"};
           }},
          {"/readyz", [&ready] {
             return ready ? Answer{200, "ok\n"} : Answer{503, "not ready: waiting\n"};
           }}};
}

TEST(ProbeServer, AnswersItsRoutesAsAnHttpClientSeesThem) {
  std::atomic<bool> ready{false};
  auto server = ProbeServer::start("127.0.0.1", 0, probeRoutes(ready));
  ASSERT_TRUE(server.ok()) << server.status().toString();
  const int port = (*server)->port();
  core::Result<Response> healthz = get(url("127.0.0.1", port, "/healthz"));
  ASSERT_TRUE(healthz.ok()) << healthz.status().toString();
  EXPECT_EQ(healthz->status, 200);
  EXPECT_EQ(healthz->body, "ok\n");
  EXPECT_THAT(rawGet(port, "/readyz"), StartsWith("HTTP/1.1 503 Service Unavailable"));
  ready = true;
  EXPECT_THAT(rawGet(port, "/readyz"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(rawGet(port, "/readyz?verbose"), StartsWith("HTTP/1.1 200"));
  (*server)->stop();
}

TEST(ProbeServer, UnknownPathIs404OtherMethods405AndHeadHasNoBody) {
  std::atomic<bool> ready{true};
  auto server = ProbeServer::start("127.0.0.1", 0, probeRoutes(ready));
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  EXPECT_THAT(rawGet(port, "/metrics"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(request(port, "POST /readyz HTTP/1.1\r\n\r\n"), StartsWith("HTTP/1.1 405"));
  const std::string head = request(port, "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_THAT(head, EndsWith("\r\n\r\n"));
}

// A body larger than a socket buffer (a busy /metrics) arrives whole.
TEST(ProbeServer, ServesABodyLargerThanTheSocketBuffer) {
  const std::string big(4 << 20, 'm');
  auto server = ProbeServer::start("127.0.0.1", 0, {{"/metrics", [&big] {
                                                       return Answer{200, big, "text/plain"};
                                                     }}});
  ASSERT_TRUE(server.ok());
  core::Result<Response> r = get(url("127.0.0.1", (*server)->port(), "/metrics"));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body.size(), big.size());
}

TEST(ProbeServer, ClientThatSendsNothingDoesNotBlockOthers) {
  std::atomic<bool> ready{true};
  auto server = ProbeServer::start("127.0.0.1", 0, probeRoutes(ready));
  ASSERT_TRUE(server.ok());
  const int idle = connectTo((*server)->port());
  EXPECT_THAT(rawGet((*server)->port(), "/healthz"), StartsWith("HTTP/1.1 200"));
  close(idle);
}

// A flood of silent connections, more than the server keeps, and a probe behind them answered
// within a kubelet-like probe timeout (served one at a time, the probe would wait 1 s per idle
// connection ahead of it). The oldest idle connections were dropped to make room.
TEST(ProbeServer, ProbesAreAnsweredBehindAFloodOfIdleConnections) {
  std::atomic<bool> ready{true};
  auto server = ProbeServer::start("127.0.0.1", 0, probeRoutes(ready));
  ASSERT_TRUE(server.ok());
  const int port = (*server)->port();
  std::vector<int> idle;
  for (size_t i = 0; i < ProbeServer::kMaxConnections + 72; ++i) idle.push_back(connectTo(port));
  const int probe = connectTo(port);
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
  setsockopt(idle.front(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  EXPECT_EQ(read(idle.front(), buf, sizeof(buf)), 0);
  for (int fd : idle) close(fd);
}

TEST(ProbeServer, BadBindAddressIsNamed) {
  auto server = ProbeServer::start("not-an-ip", 0, {});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("not-an-ip"));
}

}  // namespace
}  // namespace ringmaster::http
