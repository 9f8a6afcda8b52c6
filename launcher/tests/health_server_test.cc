// HealthServer: the probe endpoints the operator's pod template points at.

#include "launcher/health_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

TEST(HealthServer, BadBindAddressIsNamed) {
  auto server = HealthServer::start("not-an-ip", 0);
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.status().message(), HasSubstr("not-an-ip"));
}

}  // namespace
}  // namespace ringmaster::launcher
