#include "operator/health_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ringmaster::op {

core::Result<std::unique_ptr<HealthServer>> HealthServer::start(
    const std::string& host, int port, std::map<std::string, Handler> routes) {
  const std::string what = "health server on " + host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return core::invalidArgument(what + ": not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::errnoError(what + ": socket", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    core::Status s = core::errnoError(what + ": bind", errno);
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<HealthServer>(
      new HealthServer(fd, ntohs(addr.sin_port), std::move(routes)));
}

HealthServer::HealthServer(int fd, int port, std::map<std::string, Handler> routes)
    : fd_(fd), port_(port), routes_(std::move(routes)) {
  thread_ = std::jthread([this](std::stop_token stop) { serve(stop); });
}

HealthServer::~HealthServer() { stop(); }

void HealthServer::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void HealthServer::serve(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wake up now and then to see the stop
    int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    timeval timeout{2, 0};
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    answer(client);
    ::close(client);
  }
}

void HealthServer::answer(int client) {
  std::string request;
  char buf[4096];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    ssize_t n = ::recv(client, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  // "GET /healthz HTTP/1.1"
  size_t sp1 = request.find(' ');
  size_t sp2 = sp1 == std::string::npos ? sp1 : request.find(' ', sp1 + 1);
  HttpAnswer a{404, "not found\n"};
  if (sp2 != std::string::npos && request.compare(0, sp1, "GET") == 0) {
    std::string path = request.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    auto it = routes_.find(path);
    if (it != routes_.end()) a = it->second();
  } else if (sp2 != std::string::npos) {
    a = {405, "method not allowed\n"};
  }
  const char* reason = a.code == 200 ? "OK" : a.code == 404 ? "Not Found" : "Service Unavailable";
  std::string out = "HTTP/1.0 " + std::to_string(a.code) + " " + reason +
                    "\r\nContent-Type: " + a.content_type +
                    "\r\nContent-Length: " + std::to_string(a.body.size()) +
                    "\r\nConnection: close\r\n\r\n" + a.body;
  size_t sent = 0;
  while (sent < out.size()) {
    ssize_t n = ::send(client, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace ringmaster::op
