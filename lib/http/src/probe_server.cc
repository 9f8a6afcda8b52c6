#include "ringmaster/http/probe_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "ringmaster/core/log.h"

namespace ringmaster::http {
namespace {

constexpr int kRequestTimeoutMs = 1000;
constexpr size_t kMaxRequestBytes = 8192;
// A reader slower than this loses its answer (a /metrics body can exceed the socket buffer).
constexpr timeval kSendTimeout{2, 0};

const char* reasonPhrase(int code) {
  switch (code) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return code < 500 ? "Client Error" : "Server Error";
  }
}

std::string response(const Answer& a, bool with_body) {
  return "HTTP/1.1 " + std::to_string(a.code) + " " + reasonPhrase(a.code) +
         "\r\nContent-Type: " + a.content_type +
         "\r\nContent-Length: " + std::to_string(a.body.size()) + "\r\nConnection: close\r\n\r\n" +
         (with_body ? a.body : "");
}

// Blocking, within kSendTimeout: the serving thread answers one request at a time.
void writeAll(int fd, const std::string& data) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kSendTimeout, sizeof(kSendTimeout));
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away or stalled; nothing to tell anyone
    off += static_cast<size_t>(n);
  }
}

struct Connection {
  int fd;
  std::string request;
  std::chrono::steady_clock::time_point deadline;
};

}  // namespace

core::Result<std::unique_ptr<ProbeServer>> ProbeServer::start(
    const std::string& bind_host, int port, std::map<std::string, Handler> routes) {
  const std::string address = bind_host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind_host.empty() || bind_host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind_host.c_str(), &addr.sin_addr) != 1) {
    return core::invalidArgument("probe server: '" + bind_host + "' is not an IPv4 address");
  }
  // Non-blocking: serve() accepts until EAGAIN.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return core::errnoError("probe server: socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    return core::errnoError("probe server: listen on " + address, err);
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    const int err = errno;
    close(fd);
    return core::errnoError("probe server: pipe", err);
  }
  return std::unique_ptr<ProbeServer>(
      new ProbeServer(fd, wake[0], wake[1], ntohs(addr.sin_port), std::move(routes)));
}

ProbeServer::ProbeServer(int listen_fd, int wake_read, int wake_write, int port,
                         std::map<std::string, Handler> routes)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port),
      routes_(std::move(routes)) {
  thread_ = std::thread([this] { serve(); });
}

ProbeServer::~ProbeServer() {
  stop();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void ProbeServer::stop() {
  if (!thread_.joinable()) return;
  const char byte = 1;
  ssize_t ignored = write(wake_write_, &byte, 1);
  (void)ignored;
  thread_.join();
}

// The reply to one request line ("GET /readyz HTTP/1.1").
std::string ProbeServer::reply(const std::string& line) const {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos) return response({400, "bad request\n"}, true);
  const std::string method = line.substr(0, sp1);
  std::string path =
      line.substr(sp1 + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  if (method != "GET" && method != "HEAD") return response({405, "use GET\n"}, true);
  auto route = routes_.find(path);
  if (route == routes_.end()) return response({404, "not found\n"}, method == "GET");
  return response(route->second(), method == "GET");
}

void ProbeServer::serve() {
  using Clock = std::chrono::steady_clock;
  std::deque<Connection> open;  // oldest first: the one dropped when the table is full
  auto drop = [&open](size_t i) {
    close(open[i].fd);
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}});
    for (const Connection& c : open) fds.push_back({c.fd, POLLIN, 0});
    // Wake for the earliest deadline (the oldest connection's), or only for events.
    int timeout_ms = -1;
    if (!open.empty()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(open.front().deadline - Clock::now());
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, kRequestTimeoutMs));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      RM_LOG(ERROR, CORE) << "probe server on port " << port_ << ": poll: " << strerror(errno)
                          << "; probes will fail";
      break;
    }
    if (fds[1].revents != 0) break;
    // Read what arrived, answering each connection whose request line is complete. Walk
    // backwards so that dropping one keeps the earlier indexes (and their pollfds) aligned.
    for (size_t i = open.size(); i-- > 0;) {
      Connection& c = open[i];
      const short events = fds[i + 2].revents;
      if (events == 0) {
        if (Clock::now() >= c.deadline) drop(i);  // too slow to send a request line
        continue;
      }
      char buf[1024];
      const ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        drop(i);
        continue;
      }
      c.request.append(buf, static_cast<size_t>(n));
      const size_t eol = c.request.find("\r\n");
      if (eol != std::string::npos) {
        writeAll(c.fd, reply(c.request.substr(0, eol)));
        drop(i);
      } else if (c.request.size() >= kMaxRequestBytes) {
        writeAll(c.fd, response({400, "request line too long\n"}, true));
        drop(i);
      }
    }
    if (fds[0].revents != 0) {
      // Take every pending connection; a full table gives up its oldest.
      for (;;) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;  // EAGAIN: none left (or the client gave up already)
        if (open.size() >= kMaxConnections) drop(0);
        open.push_back({fd, {}, Clock::now() + std::chrono::milliseconds(kRequestTimeoutMs)});
      }
    }
  }
  for (const Connection& c : open) close(c.fd);
}

}  // namespace ringmaster::http
