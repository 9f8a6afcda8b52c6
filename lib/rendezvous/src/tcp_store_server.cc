// TcpStoreServer: one thread, one poll() over the listening socket, an eventfd that stop()
// writes, and every client socket. Requests are handled in arrival order per connection; a
// GET/WAIT whose keys are missing is "held" until a SET/ADD makes it whole or its deadline
// passes (poll's timeout is the nearest deadline, so nothing busy-polls). A connection does
// nothing but authenticate until it has proven it knows the secret; until then it may buffer
// only kMaxAuthFrameBytes, and it is closed at its authentication deadline.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>

#include "key_value_map.h"
#include "ringmaster/core/log.h"
#include "ringmaster/rendezvous/auth.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "wire.h"

namespace ringmaster::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

std::string describePeer(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "unknown peer";
  char host[NI_MAXHOST];
  char port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "unknown peer";
  }
  return std::string(host) + ":" + port;
}

std::string replyFrame(wire::Reply reply, std::string_view payload = {}) {
  return wire::Writer().u8(static_cast<uint8_t>(reply)).raw(payload).take();
}

}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(int listen_fd, int wake_fd, std::string secret, const StoreLimits& limits)
      : listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        secret_(std::move(secret)),
        limits_(limits),
        map_(limits) {}
  ~Loop() {
    closeAll();
    ::close(wake_fd_);
  }

  void run();
  void requestStop() {
    stop_.store(true);
    const uint64_t one = 1;
    // Can only fail if the counter would overflow, which then already wakes poll().
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
  size_t storedBytes() const { return stored_bytes_.load(); }
  bool waitForPending(size_t n, milliseconds timeout) {
    std::unique_lock lock(pending_mu_);
    return pending_cv_.wait_for(lock, timeout, [&] { return pending_ >= n; });
  }

 private:
  struct Conn {
    int fd;
    std::string peer;
    std::string in;
    std::string out;
    bool held = false;               // a GET/WAIT of this connection waits for keys
    bool closing = false;            // closed at the end of this turn of the loop
    bool authed = false;             // proved it knows the secret
    bool close_after_flush = false;  // refused: closed once its last answer is sent
    std::string nonce;               // our challenge
    Clock::time_point auth_deadline;
    // The largest frame this connection may send now.
    size_t maxFrame(const StoreLimits& limits) const {
      return authed ? limits.maxFrameBytes() : kMaxAuthFrameBytes;
    }
  };
  struct Held {
    uint64_t conn_id;
    wire::Op op;
    std::vector<std::string> keys;
    Clock::time_point deadline;
    milliseconds timeout;
  };

  int pollTimeoutMs(Clock::time_point now) const;
  void acceptAll();
  void readFrom(Conn& conn);
  void flush(uint64_t id, Conn& conn);
  void processInput(uint64_t id, Conn& conn);
  // Returns an empty string, or why the body is malformed.
  std::string handleRequest(uint64_t id, Conn& conn, std::string_view body);
  // The AUTH request, or whatever a connection sends before authenticating.
  std::string handleAuth(Conn& conn, std::string_view body);
  // Answers an error for a request over the limits, and logs it.
  void refuse(Conn& conn, const std::string& what, const core::Status& why);
  void expireUnauthenticated(Clock::time_point now);
  void answer(Held& held, Conn& conn);
  void releaseSatisfied();
  void expireHeld(Clock::time_point now);
  void dropClosed();
  void closeWithWarning(Conn& conn, const std::string& why);
  void publishPending();
  void closeAll();

  int listen_fd_;  // -1 once closed
  const int wake_fd_;
  std::atomic<bool> stop_{false};
  bool accept_paused_ = false;  // out of file descriptors: retry when a connection closes
  const std::string secret_;
  const StoreLimits limits_;
  std::atomic<size_t> stored_bytes_{0};  // map_.bytes(), for tests on other threads

  KeyValueMap map_;
  std::map<uint64_t, Conn> conns_;
  uint64_t next_conn_id_ = 1;
  std::list<Held> held_;
  std::deque<uint64_t> ready_;  // connections whose buffered input may be processable now

  std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  size_t pending_ = 0;
};

void TcpStoreServer::Loop::run() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;  // ids[i] is the connection of fds[i + 2]
  while (!stop_.load()) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accept_paused_ ? -1 : listen_fd_, POLLIN, 0});
    for (auto& [id, conn] : conns_) {
      fds.push_back({conn.fd, static_cast<short>(POLLIN | (conn.out.empty() ? 0 : POLLOUT)), 0});
      ids.push_back(id);
    }
    if (::poll(fds.data(), fds.size(), pollTimeoutMs(Clock::now())) < 0) {
      if (errno == EINTR) continue;
      RM_LOG(ERROR, RDZV) << "rendezvous store: poll failed: " << std::strerror(errno)
                          << "; stopping the server";
      break;
    }
    if (stop_.load()) break;
    if (fds[1].revents != 0) acceptAll();
    for (size_t i = 0; i < ids.size(); ++i) {
      Conn& conn = conns_.at(ids[i]);
      if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) readFrom(conn);
      if (!conn.in.empty()) ready_.push_back(ids[i]);
    }
    expireHeld(Clock::now());
    expireUnauthenticated(Clock::now());
    // Flushing an answer can make buffered input processable again, and processing makes
    // answers: go round until neither has anything left to do.
    do {
      while (!ready_.empty()) {
        const uint64_t id = ready_.front();
        ready_.pop_front();
        auto it = conns_.find(id);
        if (it != conns_.end()) processInput(id, it->second);
      }
      for (auto& [id, conn] : conns_) flush(id, conn);
    } while (!ready_.empty());
    dropClosed();
  }
  // Close now, not when the server object goes: clients blocked in get see the end at once.
  closeAll();
}

void TcpStoreServer::Loop::closeAll() {
  for (auto& [id, conn] : conns_) ::close(conn.fd);
  conns_.clear();
  held_.clear();
  publishPending();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

int TcpStoreServer::Loop::pollTimeoutMs(Clock::time_point now) const {
  Clock::time_point nearest = Clock::time_point::max();
  for (const Held& h : held_) nearest = std::min(nearest, h.deadline);
  for (const auto& [id, conn] : conns_) {
    if (!conn.authed) nearest = std::min(nearest, conn.auth_deadline);
  }
  if (nearest == Clock::time_point::max()) return -1;
  if (nearest <= now) return 0;
  // Round up so that we wake at or after the deadline, not just before it.
  auto ms = std::chrono::ceil<milliseconds>(nearest - now).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

void TcpStoreServer::Loop::acceptAll() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        RM_LOG(WARN, RDZV) << "rendezvous store: accept: " << std::strerror(errno)
                           << "; not accepting until a connection closes";
        accept_paused_ = true;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        RM_LOG(WARN, RDZV) << "rendezvous store: accept: " << std::strerror(errno);
      }
      return;
    }
    Conn conn;
    conn.fd = fd;
    conn.peer = describePeer(fd);
    if (conns_.size() >= limits_.max_connections) {
      RM_LOG(WARN, RDZV) << "rendezvous store: refused the connection from " << conn.peer << ": "
                         << conns_.size() << " connections are open, the limit";
      ::close(fd);
      continue;
    }
    core::Result<std::string> nonce = auth::randomBytes(auth::kNonceBytes);
    if (!nonce.ok()) {
      RM_LOG(WARN, RDZV) << "rendezvous store: closing the connection from " << conn.peer
                         << ": no challenge: " << nonce.status().message();
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conn.nonce = std::move(nonce).value();
    conn.auth_deadline = deadlineAfter(limits_.auth_timeout);
    conn.out = replyFrame(wire::Reply::kOk, conn.nonce);
    RM_LOG(DEBUG, RDZV) << "rendezvous store: connection from " << conn.peer;
    conns_.emplace(next_conn_id_++, std::move(conn));
  }
}

void TcpStoreServer::Loop::readFrom(Conn& conn) {
  char buf[64 * 1024];
  while (!conn.closing) {
    // A client sends one request and awaits its answer; more than one frame's worth of
    // unprocessed input means it is not speaking our protocol. Reading at most one byte past
    // that keeps what a stranger can make us buffer at the small pre-authentication frame.
    const size_t cap = conn.maxFrame(limits_) + wire::kFrameHeaderBytes;
    ssize_t n = ::recv(conn.fd, buf, std::min(sizeof buf, cap + 1 - conn.in.size()), 0);
    if (n > 0) {
      conn.in.append(buf, static_cast<size_t>(n));
      if (conn.in.size() > cap) {
        closeWithWarning(conn, "sent more than one frame without awaiting the reply");
      }
      continue;
    }
    if (n == 0) {
      RM_LOG(DEBUG, RDZV) << "rendezvous store: " << conn.peer << " disconnected";
      conn.closing = true;
    } else if (errno == EINTR) {
      continue;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      RM_LOG(DEBUG, RDZV) << "rendezvous store: recv from " << conn.peer << ": "
                          << std::strerror(errno);
      conn.closing = true;
    }
    return;
  }
}

void TcpStoreServer::Loop::flush(uint64_t id, Conn& conn) {
  while (!conn.closing && !conn.out.empty()) {
    ssize_t n = ::send(conn.fd, conn.out.data(), conn.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      conn.out.erase(0, static_cast<size_t>(n));
      if (conn.out.empty() && conn.close_after_flush) conn.closing = true;
      if (conn.out.empty() && !conn.in.empty()) ready_.push_back(id);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    RM_LOG(DEBUG, RDZV) << "rendezvous store: send to " << conn.peer << ": "
                        << std::strerror(errno);
    conn.closing = true;
  }
}

void TcpStoreServer::Loop::processInput(uint64_t id, Conn& conn) {
  // Stop at a held request (answers stay in order) and while an answer is still unsent
  // (a client that does not read cannot make us buffer without bound).
  while (!conn.closing && !conn.close_after_flush && !conn.held && conn.out.empty()) {
    uint32_t body_len = 0;
    const size_t max_frame = conn.maxFrame(limits_);
    switch (wire::peekFrame(conn.in, max_frame, &body_len)) {
      case wire::FrameStatus::kNeedMore:
        return;
      case wire::FrameStatus::kBad:
        closeWithWarning(conn, "frame length is 0 or over the " + std::to_string(max_frame) +
                                   "-byte limit" + (conn.authed ? "" : " before authentication"));
        return;
      case wire::FrameStatus::kReady:
        break;
    }
    std::string body = conn.in.substr(wire::kFrameHeaderBytes, body_len);
    conn.in.erase(0, wire::kFrameHeaderBytes + body_len);
    std::string error = handleRequest(id, conn, body);
    stored_bytes_.store(map_.bytes());
    if (!error.empty()) closeWithWarning(conn, "malformed request: " + error);
  }
}

std::string TcpStoreServer::Loop::handleAuth(Conn& conn, std::string_view body) {
  wire::Reader r(body);
  uint8_t op = 0;
  std::string_view client_nonce;
  std::string_view client_proof;
  const bool is_auth = r.u8(&op) && op == static_cast<uint8_t>(wire::Op::kAuth);
  if (is_auth) {
    if (r.rest().size() != auth::kNonceBytes + auth::kProofBytes) return "AUTH: wrong length";
    client_nonce = r.rest().substr(0, auth::kNonceBytes);
    client_proof = r.rest().substr(auth::kNonceBytes);
  }
  const std::string expected =
      auth::proof(secret_, auth::kStoreProtocol, auth::Role::kClient, conn.nonce, client_nonce);
  if (!is_auth || !auth::sameProof(client_proof, expected)) {
    RM_LOG(WARN, RDZV) << "rendezvous store: refused " << conn.peer << ": "
                       << (is_auth ? "wrong proof of the secret" : "request before authenticating");
    conn.out += replyFrame(wire::Reply::kUnauthenticated,
                           "authentication failed: this store belongs to another job or attempt");
    conn.close_after_flush = true;
    return {};
  }
  conn.authed = true;
  conn.out += replyFrame(
      wire::Reply::kOk,
      auth::proof(secret_, auth::kStoreProtocol, auth::Role::kServer, conn.nonce, client_nonce));
  RM_LOG(DEBUG, RDZV) << "rendezvous store: " << conn.peer << " authenticated";
  return {};
}

void TcpStoreServer::Loop::refuse(Conn& conn, const std::string& what, const core::Status& why) {
  RM_LOG(WARN, RDZV) << "rendezvous store: refused " << what << " from " << conn.peer << ": "
                     << why.message();
  conn.out += replyFrame(wire::Reply::kInvalid, why.message());
}

std::string TcpStoreServer::Loop::handleRequest(uint64_t id, Conn& conn, std::string_view body) {
  if (!conn.authed) return handleAuth(conn, body);
  wire::Reader r(body);
  uint8_t op = 0;
  if (!r.u8(&op)) return "empty body";
  switch (static_cast<wire::Op>(op)) {
    case wire::Op::kAuth:
      return "AUTH: already authenticated";
    case wire::Op::kSet: {
      std::string key;
      std::string value;
      if (!r.str(&key) || !r.str(&value) || !r.done()) return "SET: truncated or trailing bytes";
      if (core::Status st = map_.set(key, Bytes(value.begin(), value.end())); !st.ok()) {
        refuse(conn, "SET", st);
        return {};
      }
      conn.out += replyFrame(wire::Reply::kOk);
      releaseSatisfied();
      return {};
    }
    case wire::Op::kAdd: {
      std::string key;
      uint64_t delta = 0;
      if (!r.str(&key) || !r.u64(&delta) || !r.done()) return "ADD: truncated or trailing bytes";
      core::Result<int64_t> sum = map_.add(key, static_cast<int64_t>(delta));
      if (!sum.ok()) {
        refuse(conn, "ADD", sum.status());
        return {};
      }
      conn.out += wire::Writer()
                      .u8(static_cast<uint8_t>(wire::Reply::kOk))
                      .u64(static_cast<uint64_t>(*sum))
                      .take();
      releaseSatisfied();
      return {};
    }
    case wire::Op::kGet:
    case wire::Op::kWait: {
      Held held{id, static_cast<wire::Op>(op), {}, {}, {}};
      uint64_t timeout_ms = 0;
      if (!r.u64(&timeout_ms)) return "GET/WAIT: truncated";
      uint32_t count = 1;
      if (held.op == wire::Op::kWait && !r.u32(&count)) return "WAIT: truncated";
      // Each key takes at least its 4-byte length: bounds the reservation by the frame.
      if (count > r.rest().size() / 4) return "WAIT: key count exceeds the frame";
      held.keys.resize(count);
      for (auto& key : held.keys) {
        if (!r.str(&key)) return "GET/WAIT: truncated key";
      }
      if (!r.done()) return "GET/WAIT: trailing bytes";
      for (const auto& key : held.keys) {
        // A key too long to be set can never exist: say so now rather than time out.
        if (core::Status st = map_.checkKey(key); !st.ok()) {
          refuse(conn, held.op == wire::Op::kGet ? "GET" : "WAIT", st);
          return {};
        }
      }
      held.timeout = milliseconds(
          static_cast<int64_t>(std::min<uint64_t>(timeout_ms, static_cast<uint64_t>(INT64_MAX))));
      held.deadline = deadlineAfter(held.timeout);
      if (map_.missing(held.keys).empty()) {
        answer(held, conn);
      } else if (held.timeout.count() == 0) {
        conn.out += replyFrame(wire::Reply::kTimeout,
                               timeoutMessage(map_.missing(held.keys), held.timeout));
      } else {
        conn.held = true;
        held_.push_back(std::move(held));
        publishPending();
      }
      return {};
    }
  }
  return "unknown op " + std::to_string(op);
}

void TcpStoreServer::Loop::answer(Held& held, Conn& conn) {
  if (held.op == wire::Op::kGet) {
    const Bytes* value = map_.find(held.keys.front());
    conn.out += replyFrame(wire::Reply::kOk, std::string_view(value->data(), value->size()));
  } else {
    conn.out += replyFrame(wire::Reply::kOk);
  }
}

void TcpStoreServer::Loop::releaseSatisfied() {
  bool changed = false;
  for (auto it = held_.begin(); it != held_.end();) {
    if (!map_.missing(it->keys).empty()) {
      ++it;
      continue;
    }
    Conn& conn = conns_.at(it->conn_id);
    answer(*it, conn);
    conn.held = false;
    ready_.push_back(it->conn_id);
    it = held_.erase(it);
    changed = true;
  }
  if (changed) publishPending();
}

void TcpStoreServer::Loop::expireHeld(Clock::time_point now) {
  bool changed = false;
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->deadline > now) {
      ++it;
      continue;
    }
    Conn& conn = conns_.at(it->conn_id);
    conn.out +=
        replyFrame(wire::Reply::kTimeout, timeoutMessage(map_.missing(it->keys), it->timeout));
    conn.held = false;
    ready_.push_back(it->conn_id);
    it = held_.erase(it);
    changed = true;
  }
  if (changed) publishPending();
}

void TcpStoreServer::Loop::expireUnauthenticated(Clock::time_point now) {
  for (auto& [id, conn] : conns_) {
    if (!conn.authed && !conn.closing && conn.auth_deadline <= now) {
      closeWithWarning(conn, "did not authenticate within " +
                                 std::to_string(limits_.auth_timeout.count()) + " ms");
    }
  }
}

void TcpStoreServer::Loop::dropClosed() {
  bool changed = false;
  for (auto it = conns_.begin(); it != conns_.end();) {
    if (!it->second.closing) {
      ++it;
      continue;
    }
    const uint64_t id = it->first;
    changed |= std::erase_if(held_, [id](const Held& h) { return h.conn_id == id; }) > 0;
    ::close(it->second.fd);
    it = conns_.erase(it);
    accept_paused_ = false;
  }
  if (changed) publishPending();
}

void TcpStoreServer::Loop::closeWithWarning(Conn& conn, const std::string& why) {
  RM_LOG(WARN, RDZV) << "rendezvous store: closing the connection from " << conn.peer << ": "
                     << why;
  conn.closing = true;
}

void TcpStoreServer::Loop::publishPending() {
  {
    std::lock_guard lock(pending_mu_);
    pending_ = held_.size();
  }
  pending_cv_.notify_all();
}

core::Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(const std::string& bind_host,
                                                                    int port,
                                                                    const std::string& secret,
                                                                    const StoreLimits& limits) {
  const std::string where = (bind_host.empty() ? "*" : bind_host) + ":" + std::to_string(port);
  if (port < 0 || port > 65535) {
    return core::invalidArgument("rendezvous store: port " + std::to_string(port) +
                                 " is out of range 0..65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(bind_host.empty() ? nullptr : bind_host.c_str(), service.c_str(),
                             &hints, &found);
      rc != 0) {
    return core::invalidArgument("rendezvous store: cannot resolve bind address " + where + ": " +
                                 gai_strerror(rc));
  }
  core::Status last = core::internalError("no addresses");
  int listen_fd = -1;
  for (addrinfo* ai = found; ai != nullptr && listen_fd < 0; ai = ai->ai_next) {
    int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = core::errnoError("socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      last = core::errnoError("bind", errno);
    } else if (::listen(fd, SOMAXCONN) != 0) {
      last = core::errnoError("listen", errno);
    } else {
      listen_fd = fd;
      break;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd < 0) return std::move(last).withContext("rendezvous store on " + where);

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    core::Status st = core::errnoError("getsockname", errno);
    ::close(listen_fd);
    return std::move(st).withContext("rendezvous store on " + where);
  }
  const int bound_port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    core::Status st = core::errnoError("eventfd", errno);
    ::close(listen_fd);
    return std::move(st).withContext("rendezvous store on " + where);
  }
  std::unique_ptr<TcpStoreServer> server(
      new TcpStoreServer(std::make_unique<Loop>(listen_fd, wake_fd, secret, limits), bound_port));
  RM_LOG(INFO, RDZV) << "rendezvous store listening on " << (bind_host.empty() ? "*" : bind_host)
                     << ":" << bound_port;
  return server;
}

TcpStoreServer::TcpStoreServer(std::unique_ptr<Loop> loop, int port)
    : loop_(std::move(loop)), port_(port) {
  thread_ = std::thread([this] { loop_->run(); });
}

TcpStoreServer::~TcpStoreServer() { stop(); }

void TcpStoreServer::stop() {
  std::lock_guard lock(stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  loop_->requestStop();
  thread_.join();  // the loop closes every socket on its way out
  RM_LOG(INFO, RDZV) << "rendezvous store on port " << port_ << " stopped";
}

size_t TcpStoreServer::storedBytesForTesting() const { return loop_->storedBytes(); }

bool TcpStoreServer::waitForPendingRequestsForTesting(size_t n, milliseconds timeout) {
  return loop_->waitForPending(n, timeout);
}

}  // namespace ringmaster::rendezvous
