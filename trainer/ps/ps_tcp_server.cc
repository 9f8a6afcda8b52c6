#include "trainer/ps/ps_tcp_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "ringmaster/core/log.h"
#include "trainer/ps/ps_wire.h"

namespace ringmaster::trainer::ps {

using Clock = std::chrono::steady_clock;

struct PsTcpServer::Connection {
  int fd = -1;  // -1 once closed; guarded by mu_ (shut down by stop(), closed by serve())
  std::string peer;
  std::thread thread;
  std::optional<WorkerId> worker;  // once authenticated; guarded by mu_
  bool left = false;               // LEAVE handled or removed by stop(); guarded by mu_
  std::atomic<bool> done{false};
};

namespace {

std::string peerName(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = "?";
  char port[NI_MAXSERV] = "?";
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, host, sizeof host, port,
                sizeof port, NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

core::Result<int> listenOn(const std::string& bind_host, int port, int* bound_port) {
  const std::string host = bind_host.empty() ? "0.0.0.0" : bind_host;
  const std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) return core::invalidArgument(where + ": port out of range");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return core::invalidArgument("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  core::Status last = core::unavailable(where + ": no addresses");
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = core::errnoError("socket", errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      last = core::errnoError("bind/listen " + where, errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return last;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *bound_port = addr.ss_family == AF_INET6
                    ? ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port)
                    : ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  return fd;
}

wire::Error errorOf(const core::Status& status) {
  return {wire::toWire(status.code()), status.message()};
}

}  // namespace

core::Result<std::unique_ptr<PsTcpServer>> PsTcpServer::start(ParameterServer* server,
                                                              const std::string& bind_host,
                                                              int port, std::string secret,
                                                              PsTcpServerOptions options) {
  int bound = 0;
  RM_ASSIGN_OR_RETURN(const int fd, listenOn(bind_host, port, &bound));
  std::unique_ptr<PsTcpServer> self(
      new PsTcpServer(*server, fd, bound, std::move(secret), options));
  self->accept_thread_ = std::thread([s = self.get()] { s->acceptLoop(); });
  RM_LOG(INFO, COMM) << self->name() << " listening on port " << bound;
  return self;
}

PsTcpServer::PsTcpServer(ParameterServer& server, int listen_fd, int port, std::string secret,
                         PsTcpServerOptions options)
    : server_(server),
      listen_fd_(listen_fd),
      port_(port),
      secret_(std::move(secret)),
      options_(options) {}

PsTcpServer::~PsTcpServer() { stop(); }

std::string PsTcpServer::name() const {
  return "parameter server " + std::to_string(server_.id()) + " (port " + std::to_string(port_) +
         ")";
}

void PsTcpServer::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  ::close(listen_fd_);
  std::vector<WorkerId> leaving;
  std::list<std::unique_ptr<Connection>> connections;
  {
    std::lock_guard lock(mu_);
    for (auto& c : connections_) {
      if (c->fd >= 0) ::shutdown(c->fd, SHUT_RDWR);
      if (c->worker && !c->left) {
        c->left = true;
        leaving.push_back(*c->worker);
      }
    }
    connections.swap(connections_);
  }
  // Wakes a handler waiting in a pull or push for the other workers.
  for (WorkerId w : leaving) (void)server_.removeWorker(w);
  for (auto& c : connections) c->thread.join();
}

void PsTcpServer::reapFinished() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void PsTcpServer::acceptLoop() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    std::lock_guard lock(mu_);
    if (stopped_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    if (fd < 0) {
      if (errno != EINTR && errno != ECONNABORTED) {
        RM_LOG(WARN, COMM) << name() << ": accept: " << std::strerror(errno);
      }
      continue;
    }
    reapFinished();
    const std::string peer = peerName(addr);
    if (connections_.size() >= options_.max_connections) {
      RM_LOG(WARN, COMM) << name() << ": refusing " << peer << ": already " << connections_.size()
                         << " connections";
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->peer = peer;
    Connection* raw = c.get();
    connections_.push_back(std::move(c));
    raw->thread = std::thread([this, raw] { serve(*raw); });
  }
}

core::Result<WorkerId> PsTcpServer::authenticate(Connection& c) {
  const Clock::time_point deadline = Clock::now() + options_.auth_timeout;
  RM_ASSIGN_OR_RETURN(const std::string nonce, wire::randomNonce());
  RM_RETURN_IF_ERROR(wire::writeAll(c.fd, wire::encode(wire::Challenge{nonce}), deadline));
  RM_ASSIGN_OR_RETURN(const std::string body,
                      wire::readFrame(c.fd, wire::kMaxAuthFrameBytes, deadline));
  core::Result<wire::Message> message = wire::parse(body);
  const auto refuse = [&](wire::ErrorCode code, const std::string& why) -> core::Status {
    (void)wire::writeAll(c.fd, wire::encode(wire::Error{code, why}), deadline);
    return wire::fromWire({code, why});
  };
  const wire::Hello* hello = message.ok() ? std::get_if<wire::Hello>(&*message) : nullptr;
  if (hello == nullptr) {
    return refuse(wire::ErrorCode::kUnauthenticated, "the first request must be HELLO");
  }
  if (!wire::sameProof(hello->proof, wire::proof(secret_, wire::Role::kClient, nonce, hello->nonce,
                                                 hello->worker))) {
    return refuse(wire::ErrorCode::kUnauthenticated,
                  "worker " + std::to_string(hello->worker) + ": wrong proof of the secret");
  }
  if (hello->version != wire::kVersion) {
    return refuse(wire::ErrorCode::kInvalidArgument,
                  "protocol version " + std::to_string(hello->version) + ", this server speaks " +
                      std::to_string(wire::kVersion));
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& other : connections_) {
      if (other.get() != &c && other->worker == hello->worker && !other->left) {
        return refuse(wire::ErrorCode::kAlreadyExists,
                      "worker " + std::to_string(hello->worker) + " is already connected");
      }
    }
    if (stopped_) return core::cancelled("stopping");
    c.worker = hello->worker;
  }
  const WorkerStanding standing = server_.standing(hello->worker);
  RM_RETURN_IF_ERROR(wire::writeAll(
      c.fd,
      wire::encode(wire::Welcome{
          wire::proof(secret_, wire::Role::kServer, nonce, hello->nonce, hello->worker),
          standing.live, standing.clock}),
      deadline));
  return hello->worker;
}

void PsTcpServer::serve(Connection& c) {
  core::Result<WorkerId> worker = authenticate(c);
  core::Status why;  // why the connection ended, when not by LEAVE
  if (!worker.ok()) {
    RM_LOG(WARN, COMM) << name() << ": refused " << c.peer << ": " << worker.status().toString();
  } else {
    const WorkerId w = *worker;
    RM_LOG(INFO, COMM) << name() << ": worker " << w << " joined from " << c.peer;
    std::vector<float> values(server_.elements());
    const size_t max_body = wire::maxDataFrameBytes(server_.elements());
    for (;;) {
      core::Result<std::string> body = wire::readFrame(c.fd, max_body, wire::Deadline::max());
      if (!body.ok()) {
        why = body.status();
        break;
      }
      core::Result<wire::Message> request = wire::parse(*body);
      std::string reply;
      bool close_after = false;
      if (!request.ok()) {
        why = request.status();
        reply = wire::encode(errorOf(why));
        close_after = true;
      } else if (const auto* pull = std::get_if<wire::Pull>(&*request)) {
        const core::Status st = server_.pull(
            w, pull->step, values, pull->as_stored ? PullView::kAsStored : PullView::kForStep);
        reply = st.ok() ? wire::encodeValues(values) : wire::encode(errorOf(st));
      } else if (const auto* push = std::get_if<wire::Push>(&*request)) {
        const core::Status st = server_.push(w, push->step, push->gradients);
        reply = wire::encode(st.ok() ? wire::Message(wire::Pushed{server_.pushes()})
                                     : wire::Message(errorOf(st)));
      } else if (const auto* join = std::get_if<wire::Join>(&*request)) {
        const core::Result<int64_t> joined = server_.addWorker(w, join->clock);
        if (joined.ok())
          RM_LOG(INFO, COMM) << name() << ": worker " << w << " rejoined at step " << *joined + 1;
        reply = wire::encode(joined.ok() ? wire::Message(wire::Ack{})
                                         : wire::Message(errorOf(joined.status())));
      } else if (std::holds_alternative<wire::Leave>(*request)) {
        bool remove = false;
        {
          std::lock_guard lock(mu_);
          remove = !c.left;
          c.left = true;
        }
        const core::Status st = remove ? server_.removeWorker(w) : core::Status::Ok();
        if (remove && st.ok()) RM_LOG(INFO, COMM) << name() << ": worker " << w << " left";
        reply = wire::encode(st.ok() ? wire::Message(wire::Ack{}) : wire::Message(errorOf(st)));
        close_after = true;
      } else {
        why = core::invalidArgument("unexpected message type " +
                                    std::to_string(static_cast<int>((*body)[0])));
        reply = wire::encode(errorOf(why));
        close_after = true;
      }
      const core::Status sent = wire::writeAll(c.fd, reply, wire::Deadline::max());
      if (!sent.ok() && why.ok()) why = sent;
      if (!sent.ok() || close_after) break;
    }
  }
  bool dropped = false;
  {
    std::lock_guard lock(mu_);
    if (worker.ok() && !c.left) {
      c.left = true;
      dropped = true;
    }
    ::close(c.fd);
    c.fd = -1;
  }
  if (dropped) {
    RM_LOG(WARN, COMM) << name() << ": worker " << *worker << " (" << c.peer
                       << ") dropped its connection without LEAVE ("
                       << (why.ok() ? std::string("closed") : why.toString())
                       << "); removing it so the others go on";
    const core::Status removed = server_.removeWorker(*worker);
    if (!removed.ok() && removed.code() != core::Code::kNotFound &&
        removed.code() != core::Code::kCancelled) {
      RM_LOG(WARN, COMM) << name() << ": removing worker " << *worker << ": " << removed.toString();
    }
  } else if (worker.ok() && !why.ok()) {
    RM_LOG(DEBUG, COMM) << name() << ": worker " << *worker << " closed: " << why.toString();
  }
  c.done = true;
}

}  // namespace ringmaster::trainer::ps
