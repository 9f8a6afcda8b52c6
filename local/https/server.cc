// Threads: one accepting, one watching streaming sockets for hang-ups (poll() with POLLRDHUP,
// woken through an eventfd when the set changes), and one per connection. stop_fd_ is an
// eventfd that stop() makes readable for good; every blocking wait polls it too.

#include "local/https/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "local/https/auth.h"
#include "local/https/tls.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local {

namespace {

std::string peerName(const sockaddr_in& addr) {
  char host[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(addr.sin_port));
}

int64_t steadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void signalFd(int fd) {
  const uint64_t one = 1;
  // Fails only if the counter would overflow, and then the fd is readable already.
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof one);
}

Headers statusHeaders() {
  Headers headers;
  headers.add("Cache-Control", "no-cache, private");
  headers.add("Content-Type", "application/json");
  return headers;
}

// A listening socket on `ip`:`port`. IP_FREEBIND: the address may not exist yet (the pod
// bridge appears when the kubelet attaches the first pod); connections arrive once it does.
core::Result<int> listenOn(const std::string& ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return core::invalidArgument("https server: not an IPv4 address: " + ip);
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::errnoError("https server: socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("https server: listen on " + ip + ":" + std::to_string(port), err);
  }
  return fd;
}

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, Handler handler, std::unique_ptr<TlsContext> tls, int listen_fd,
       int stop_fd, int wake_fd, int port)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        tls_(std::move(tls)),
        auth_(options_.bearer_token, options_.token_user),
        listen_fd_(listen_fd),
        stop_fd_(stop_fd),
        wake_fd_(wake_fd),
        port_(port) {}

  void setExtraListeners(std::vector<int> fds) { extra_fds_ = std::move(fds); }

  ~Impl() {
    stop();
    ::close(stop_fd_);
    ::close(wake_fd_);
  }

  void startThreads() {
    accept_thread_ = std::thread([this] { acceptLoop(); });
    monitor_thread_ = std::thread([this] { monitorLoop(); });
  }

  void stop();
  int port() const { return port_; }

 private:
  struct Conn {
    int fd;
    std::string peer;
    std::stop_source closer;
    std::thread thread;
    std::atomic<bool> done{false};
    // When the connection began waiting for a request (its TLS handshake, or keep-alive between
    // requests), in steady-clock nanoseconds; 0 while a request is being served.
    std::atomic<int64_t> idle_since{0};
    bool evicted = false;     // guarded by mu_: shut down to make room for a newcomer
    bool fd_closing = false;  // guarded by mu_: the thread is about to close fd
  };

  void acceptLoop();
  // At the connection limit: shuts down the connection idle longest so that a newcomer (kubectl
  // behind a pile of idle or abandoned connections) is served; false when every connection is
  // busy serving a request. Called with mu_ held.
  bool evictLongestIdle(const std::string& newcomer);
  void monitorLoop();
  void reapFinished();
  void serveConnection(Conn& conn);
  // Serves one request; false when the connection must close.
  bool serveRequest(Conn& conn, TlsConnection& tls, RequestReader& reader);
  uint64_t watchSocket(int fd, std::stop_source closer);
  void unwatchSocket(uint64_t id);

  ServerOptions options_;
  Handler handler_;
  std::unique_ptr<TlsContext> tls_;
  BearerAuthenticator auth_;
  int listen_fd_;
  std::vector<int> extra_fds_;  // options_.also_listen_on, same port
  const int stop_fd_;
  const int wake_fd_;
  const int port_;
  std::atomic<bool> stopping_{false};
  std::once_flag stop_once_;
  std::thread accept_thread_;
  std::thread monitor_thread_;

  struct Watched {
    int fd;
    std::stop_source closer;
  };
  std::mutex mu_;
  std::list<std::unique_ptr<Conn>> conns_;  // guarded by mu_
  std::map<uint64_t, Watched> watched_;     // guarded by mu_
  uint64_t next_watch_id_ = 1;              // guarded by mu_
};

void Server::Impl::stop() {
  std::call_once(stop_once_, [this] {
    stopping_.store(true);
    signalFd(stop_fd_);
    if (accept_thread_.joinable()) accept_thread_.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    for (int extra : extra_fds_) ::close(extra);
    extra_fds_.clear();
    if (monitor_thread_.joinable()) monitor_thread_.join();
    std::list<std::unique_ptr<Conn>> conns;
    {
      std::lock_guard lock(mu_);
      conns.swap(conns_);
      watched_.clear();
    }
    for (auto& conn : conns) conn->closer.request_stop();
    for (auto& conn : conns) conn->thread.join();
    RM_LOG(INFO, LOCAL) << "https server on 127.0.0.1:" << port_ << " stopped";
  });
}

void Server::Impl::reapFinished() {
  std::list<std::unique_ptr<Conn>> finished;
  {
    std::lock_guard lock(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->done.load()) {
        finished.push_back(std::move(*it));
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& conn : finished) conn->thread.join();
}

void Server::Impl::acceptLoop() {
  // The listening sockets, then the stop signal.
  std::vector<pollfd> fds;
  fds.push_back({listen_fd_, POLLIN, 0});
  for (int extra : extra_fds_) fds.push_back({extra, POLLIN, 0});
  fds.push_back({stop_fd_, POLLIN, 0});
  for (;;) {
    int timeout_ms = -1;
    int r = ::poll(fds.data(), fds.size(), timeout_ms);
    if (r < 0 && errno != EINTR) {
      RM_LOG(ERROR, LOCAL) << "https accept loop: poll: " << std::strerror(errno);
      return;
    }
    if (fds.back().revents != 0) return;
    reapFinished();
    if (r <= 0) continue;
    auto ready =
        std::find_if(fds.begin(), fds.end() - 1, [](const pollfd& p) { return p.revents; });
    if (ready == fds.end() - 1) continue;
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(ready->fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        RM_LOG(WARN, LOCAL) << "https accept: " << std::strerror(errno) << "; retrying shortly";
        pollfd stop = {stop_fd_, POLLIN, 0};
        ::poll(&stop, 1, 100);  // back off instead of spinning on a full fd table
      }
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // watch events go out at once
    std::lock_guard lock(mu_);
    const size_t live = static_cast<size_t>(
        std::count_if(conns_.begin(), conns_.end(), [](const auto& c) { return !c->evicted; }));
    if (live >= options_.max_connections && !evictLongestIdle(peerName(addr))) {
      RM_LOG(WARN, LOCAL) << "https: " << live << " connections open (the limit), all busy; "
                          << "closing the new one from " << peerName(addr);
      ::close(fd);
      continue;
    }
    auto conn = std::make_unique<Conn>();
    conn->fd = fd;
    conn->peer = peerName(addr);
    conn->idle_since.store(steadyNanos());
    Conn& ref = *conn;
    try {
      conn->thread = std::thread([this, &ref] {
        serveConnection(ref);
        ref.done.store(true);
      });
    } catch (const std::exception& e) {  // std::thread's edge: resource exhaustion
      RM_LOG(WARN, LOCAL) << "https: cannot start a connection thread: " << e.what();
      ::close(fd);
      continue;
    }
    conns_.push_back(std::move(conn));
  }
}

bool Server::Impl::evictLongestIdle(const std::string& newcomer) {
  Conn* victim = nullptr;
  int64_t oldest = 0;
  for (const auto& c : conns_) {
    const int64_t since = c->idle_since.load();
    if (c->evicted || c->fd_closing || since == 0) continue;
    if (victim == nullptr || since < oldest) {
      victim = c.get();
      oldest = since;
    }
  }
  if (victim == nullptr) return false;
  // shutdown(), not close(): the connection's thread wakes to EOF and closes the fd itself, so
  // the number cannot be reused under it. fd_closing (set under mu_ before that close) keeps
  // this from touching an fd the thread already closed.
  victim->evicted = true;
  ::shutdown(victim->fd, SHUT_RDWR);
  RM_LOG(INFO, LOCAL) << "https: at the limit of " << options_.max_connections
                      << " connections; closed the one idle longest (" << victim->peer << ", "
                      << (steadyNanos() - oldest) / 1'000'000'000 << " s) for " << newcomer;
  return true;
}

uint64_t Server::Impl::watchSocket(int fd, std::stop_source closer) {
  uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = next_watch_id_++;
    watched_.emplace(id, Watched{fd, std::move(closer)});
  }
  signalFd(wake_fd_);
  return id;
}

void Server::Impl::unwatchSocket(uint64_t id) {
  {
    std::lock_guard lock(mu_);
    watched_.erase(id);
  }
  signalFd(wake_fd_);
}

void Server::Impl::monitorLoop() {
  for (;;) {
    std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    std::vector<uint64_t> ids;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, watched] : watched_) {
        fds.push_back({watched.fd, POLLRDHUP, 0});
        ids.push_back(id);
      }
    }
    int r = ::poll(fds.data(), fds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      RM_LOG(ERROR, LOCAL) << "https stream monitor: poll: " << std::strerror(errno);
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      uint64_t count;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if ((fds[i + 2].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0) continue;
      std::stop_source closer;
      {
        std::lock_guard lock(mu_);
        auto it = watched_.find(ids[i]);
        if (it == watched_.end()) continue;  // the stream ended meanwhile
        closer = it->second.closer;
        watched_.erase(it);
      }
      closer.request_stop();  // outside mu_: it runs the handler's stop callbacks
    }
  }
}

namespace {

// After a 413 the client is usually still sending the body. Closing with unread data resets
// the connection, and the reset can reach the client before it reads the answer ("connection
// reset by peer" instead of the 413): so the rest is read and dropped first, for a bounded time
// and amount, and only while the client keeps sending.
void discardUnreadBody(TlsConnection& tls) {
  constexpr auto kLinger = std::chrono::seconds(5);
  constexpr auto kSilence = std::chrono::seconds(1);
  constexpr size_t kMaxDiscardedBytes = 64u << 20;
  const SteadyClock::time_point deadline = SteadyClock::now() + kLinger;
  std::vector<char> buf(64 << 10);
  size_t discarded = 0;
  while (discarded < kMaxDiscardedBytes && SteadyClock::now() < deadline) {
    core::Result<size_t> got =
        tls.read(buf.data(), buf.size(), std::min(deadline, SteadyClock::now() + kSilence));
    if (!got.ok() || *got == 0) return;
    discarded += *got;
  }
}

}  // namespace

void Server::Impl::serveConnection(Conn& conn) {
  // A write to a reset socket raises SIGPIPE in the writing thread; here it only stays pending
  // (TlsConnection consumes it) and the write reports EPIPE.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);

  TlsConnection tls(*tls_, conn.fd, stop_fd_, options_.write_timeout);
  // Destroyed before tls, which closes the fd: from then on no eviction may shut it down.
  struct MarkClosing {
    Impl* server;
    Conn& conn;
    ~MarkClosing() {
      std::lock_guard lock(server->mu_);
      conn.fd_closing = true;
    }
  } mark_closing{this, conn};
  core::Status shaken = tls.handshake(SteadyClock::now() + options_.handshake_timeout);
  if (!shaken.ok()) {
    RM_LOG(DEBUG, LOCAL) << "https " << conn.peer << ": " << shaken.message();
    return;
  }
  RequestReader reader(tls, options_.limits);
  while (!stopping_.load() && !conn.closer.stop_requested()) {
    if (!serveRequest(conn, tls, reader)) break;
  }
  tls.shutdown();
}

bool Server::Impl::serveRequest(Conn& conn, TlsConnection& tls, RequestReader& reader) {
  Request request;
  request.remote_address = conn.peer;
  conn.idle_since.store(steadyNanos());
  ReadOutcome head = reader.readHead(&request, SteadyClock::now() + options_.idle_timeout);
  conn.idle_since.store(0);
  const SteadyClock::time_point started = SteadyClock::now();
  auto accessLog = [&](const ResponseWriter& w) {
    RM_LOG(DEBUG, LOCAL) << request.method << " " << request.target << " " << w.status() << " "
                         << w.bodyBytes() << "B "
                         << std::chrono::duration_cast<std::chrono::microseconds>(
                                SteadyClock::now() - started)
                                    .count() /
                                1000.0
                         << "ms " << conn.peer << (request.user.empty() ? "" : " " + request.user);
  };
  auto reject = [&](const ReadOutcome& outcome) {
    ResponseWriter writer(tls, request, false, conn.closer);
    if (outcome.status == 413) {
      // kube-apiserver itself answers an oversized body with a Status that clients can read;
      // malformed requests are refused before it, by the HTTP server, in plain text.
      (void)writer.send(413, statusHeaders(),
                        statusBody(413, "RequestEntityTooLarge",
                                   "Request entity too large: limit is " +
                                       std::to_string(options_.limits.max_body_bytes)));
      discardUnreadBody(tls);
    } else {
      Headers headers;
      headers.add("Content-Type", "text/plain; charset=utf-8");
      (void)writer.send(outcome.status, std::move(headers), outcome.message + "\n");
    }
    RM_LOG(DEBUG, LOCAL) << "https " << conn.peer << ": rejected request: " << outcome.message;
    accessLog(writer);
    return false;
  };
  if (head.kind == ReadOutcome::Kind::kClosed) return false;
  if (head.kind == ReadOutcome::Kind::kReject) return reject(head);

  const bool keep_alive = wantsKeepAlive(request) && !stopping_.load();
  const BearerAuthenticator::Result auth = auth_.check(request);
  const BearerAuthenticator::Decision decision = auth.decision;
  if (decision == BearerAuthenticator::Decision::kInvalidToken ||
      (decision == BearerAuthenticator::Decision::kAnonymous && !isPublicPath(request.path) &&
       !options_.anonymous_reads)) {
    // The body is never read, so the connection cannot carry another request after one.
    ResponseWriter writer(tls, request, keep_alive && !reader.expectsBody(), conn.closer);
    bool invalid = decision == BearerAuthenticator::Decision::kInvalidToken;
    if (!invalid) request.user = std::string(kAnonymousUser);
    (void)writer.send(invalid ? 401 : 403, statusHeaders(),
                      invalid ? unauthorizedBody() : anonymousForbiddenBody(request));
    accessLog(writer);
    return writer.keepAlive();
  }
  request.user = auth.user;
  if (reader.expectsBody()) {
    if (equalsIgnoreCase(request.headers.get("Expect"), "100-continue") &&
        !tls.writeAll("HTTP/1.1 100 Continue\r\n\r\n").ok()) {
      return false;
    }
    ReadOutcome body = reader.readBody(&request);
    if (body.kind == ReadOutcome::Kind::kClosed) return false;
    if (body.kind == ReadOutcome::Kind::kReject) return reject(body);
  }

  uint64_t watch_id = 0;
  ResponseWriter writer(tls, request, keep_alive, conn.closer,
                        [&] { watch_id = watchSocket(tls.fd(), conn.closer); });
  std::string failure;
  try {
    handler_(request, writer);
  } catch (const std::exception& e) {  // the handler is the edge of this transport
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  if (watch_id != 0) unwatchSocket(watch_id);
  if (!failure.empty() || !writer.responded()) {
    if (failure.empty()) failure = "the handler sent no response";
    RM_LOG(ERROR, LOCAL) << request.method << " " << request.path << ": " << failure;
  }
  if (!writer.responded()) {
    (void)writer.send(500, statusHeaders(),
                      statusBody(500, "InternalError", "Internal error occurred: " + failure));
  } else if (writer.streaming() && !writer.closed()) {
    (void)writer.endStream();
  }
  accessLog(writer);
  return writer.keepAlive();
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_) impl_->stop();
}

int Server::port() const { return impl_->port(); }

std::string Server::url() const { return "https://127.0.0.1:" + std::to_string(port()); }

void Server::stop() { impl_->stop(); }

core::Result<std::unique_ptr<Server>> Server::start(ServerOptions options, Handler handler) {
  if (options.bearer_token.empty()) return core::invalidArgument("https server: empty token");
  if (!handler) return core::invalidArgument("https server: no handler");
  RM_ASSIGN_OR_RETURN(std::unique_ptr<TlsContext> tls,
                      TlsContext::createServer(options.cert_pem, options.key_pem));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return core::errnoError("https server: socket", errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(options.port));
  std::string where = "127.0.0.1:" + std::to_string(options.port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("https server: listen on " + where, err);
  }
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    return core::errnoError("https server: getsockname", err);
  }
  const int port = ntohs(addr.sin_port);
  std::vector<int> extra_fds;
  std::string also;
  for (const auto& ip : options.also_listen_on) {
    auto extra = listenOn(ip, port);
    if (!extra.ok()) {
      // Only pods reach the server there; everything on the host still can.
      RM_LOG(WARN, LOCAL) << extra.status().message() << "; pods cannot reach this server at "
                          << ip;
      continue;
    }
    extra_fds.push_back(*extra);
    also += " and " + ip + ":" + std::to_string(port);
  }
  int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0 || wake_fd < 0) {
    int err = errno;
    ::close(fd);
    for (int e : extra_fds) ::close(e);
    if (stop_fd >= 0) ::close(stop_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    return core::errnoError("https server: eventfd", err);
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler), std::move(tls), fd,
                                     stop_fd, wake_fd, port);
  impl->setExtraListeners(std::move(extra_fds));
  impl->startThreads();
  RM_LOG(INFO, LOCAL) << "https server listening on 127.0.0.1:" << port << also;
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

}  // namespace ringmaster::local
