// http::get against a one-connection server on a loopback socket: the canned answer comes back
// as a Response whatever its status, the body is capped, and no answer is kUnavailable naming
// the URL and the cause.

#include "ringmaster/http/get.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace ringmaster::http {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Listens on 127.0.0.1; serve() answers one connection with `answer` (or holds it open
// without answering when `answer` is empty) and keeps the request it read.
class OneShotServer {
 public:
  OneShotServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~OneShotServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  void serve(std::string answer, std::chrono::milliseconds hold = 0ms) {
    thread_ = std::thread([this, answer = std::move(answer), hold] {
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      char buf[4096];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(conn, buf, sizeof buf);
        if (n <= 0) break;
        request_.append(buf, static_cast<size_t>(n));
      }
      if (answer.empty()) {
        std::this_thread::sleep_for(hold);  // the client's timeout ends the exchange first
      } else {
        ssize_t ignored = ::write(conn, answer.data(), answer.size());
        (void)ignored;
      }
      ::close(conn);
    });
  }
  const std::string& request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

std::string answer(const std::string& status_line, const std::string& body) {
  return "HTTP/1.1 " + status_line + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

TEST(HttpGet, ReturnsTheStatusAndBodyAndSendsThePathAndHeaders) {
  OneShotServer server;
  server.serve(answer("200 OK", "steps_total 12\n"));
  GetOptions options;
  options.headers = {"Accept: text/plain", "User-Agent: kube-probe/1.32"};
  auto r = get(url("127.0.0.1", server.port(), "/metrics?x=1"), options);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "steps_total 12\n");
  EXPECT_FALSE(r->truncated);
  EXPECT_THAT(server.request(), HasSubstr("GET /metrics?x=1 HTTP/1.1\r\n"));
  EXPECT_THAT(server.request(), HasSubstr("Accept: text/plain\r\n"));
  EXPECT_THAT(server.request(), HasSubstr("User-Agent: kube-probe/1.32\r\n"));
}

TEST(HttpGet, AnErrorStatusIsAnAnswerNotAFailure) {
  OneShotServer server;
  server.serve(answer("503 Service Unavailable", "not ready"));
  auto r = get(url("127.0.0.1", server.port(), "/readyz"));
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "not ready");
}

TEST(HttpGet, BodyOverTheCapIsCutAndMarked) {
  OneShotServer server;
  server.serve(answer("200 OK", std::string(10000, 'x')));
  GetOptions options;
  options.max_body = 100;
  auto r = get(url("127.0.0.1", server.port(), "/"), options);
  ASSERT_TRUE(r.ok()) << r.status().toString();
  EXPECT_EQ(r->body, std::string(100, 'x'));
  EXPECT_TRUE(r->truncated);
}

TEST(HttpGet, RefusedConnectionNamesTheUrlAndTheOsError) {
  int port = 0;
  {
    OneShotServer closed;  // a port that was just free, with nobody listening any more
    port = closed.port();
  }
  auto r = get(url("127.0.0.1", port, "/healthz"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::Code::kUnavailable);
  EXPECT_THAT(r.status().message(),
              HasSubstr("GET http://127.0.0.1:" + std::to_string(port) + "/healthz: connect: "));
  EXPECT_THAT(r.status().message(), HasSubstr("refused"));
}

TEST(HttpGet, ServerThatNeverAnswersTimesOut) {
  OneShotServer server;
  server.serve("", 3s);
  GetOptions options;
  options.timeout = 200ms;
  const auto start = std::chrono::steady_clock::now();
  auto r = get(url("127.0.0.1", server.port(), "/metrics"), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), core::Code::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("imeout"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "the timeout bounds the exchange";
}

TEST(HttpGet, UrlBracketsIpv6Literals) {
  EXPECT_EQ(url("10.0.0.1", 80, "/m"), "http://10.0.0.1:80/m");
  EXPECT_EQ(url("::1", 9090, "/metrics"), "http://[::1]:9090/metrics");
  EXPECT_EQ(url("pod-0.svc", 1, ""), "http://pod-0.svc:1");
}

}  // namespace
}  // namespace ringmaster::http
