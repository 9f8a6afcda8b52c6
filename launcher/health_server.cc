#include "launcher/health_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "ringmaster/core/log.h"

namespace ringmaster::launcher {
namespace {

constexpr int kRequestTimeoutMs = 1000;
constexpr size_t kMaxRequestBytes = 8192;

std::string response(int code, const char* reason, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason +
         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

void writeAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the prober went away; nothing to tell anyone
    off += static_cast<size_t>(n);
  }
}

}  // namespace

core::Result<std::unique_ptr<HealthServer>> HealthServer::start(const std::string& bind_host,
                                                                int port) {
  const std::string address = bind_host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind_host.empty() || bind_host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind_host.c_str(), &addr.sin_addr) != 1) {
    return core::invalidArgument("health server: '" + bind_host + "' is not an IPv4 address");
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::errnoError("health server: socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    return core::errnoError("health server: listen on " + address, err);
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    const int err = errno;
    close(fd);
    return core::errnoError("health server: pipe", err);
  }
  return std::unique_ptr<HealthServer>(
      new HealthServer(fd, wake[0], wake[1], ntohs(addr.sin_port)));
}

HealthServer::HealthServer(int listen_fd, int wake_read, int wake_write, int port)
    : listen_fd_(listen_fd), wake_read_(wake_read), wake_write_(wake_write), port_(port) {
  thread_ = std::thread([this] { serve(); });
}

HealthServer::~HealthServer() {
  const char byte = 1;
  ssize_t ignored = write(wake_write_, &byte, 1);
  (void)ignored;
  thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void HealthServer::serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      RM_LOG(ERROR, LAUNCH) << "health server: poll: " << strerror(errno) << "; probes will fail";
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents == 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client gave up between poll and accept
    answer(fd);
    close(fd);
  }
}

void HealthServer::answer(int fd) {
  std::string request;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kRequestTimeoutMs);
  while (request.find("\r\n") == std::string::npos && request.size() < kMaxRequestBytes) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
    char buf[1024];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  // "GET /readyz HTTP/1.1"
  const std::string line = request.substr(0, request.find("\r\n"));
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos) return writeAll(fd, response(400, "Bad Request", "bad request\n"));
  const std::string method = line.substr(0, sp1);
  std::string path =
      line.substr(sp1 + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") {
    return writeAll(fd, response(405, "Method Not Allowed", "use GET\n"));
  }
  if (path == "/healthz") return writeAll(fd, response(200, "OK", "ok\n"));
  if (path == "/readyz") {
    if (ready()) return writeAll(fd, response(200, "OK", "ok\n"));
    return writeAll(fd, response(503, "Service Unavailable",
                                 "not ready: waiting for every pod to join the rendezvous\n"));
  }
  writeAll(fd, response(404, "Not Found", "not found\n"));
}

}  // namespace ringmaster::launcher
