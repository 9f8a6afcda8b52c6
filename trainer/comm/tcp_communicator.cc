#include "trainer/comm/tcp_communicator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <thread>

#include "ringmaster/core/log.h"
#include "trainer/comm/rank_keys.h"
#include "trainer/comm/sum_kernel.h"
#include "trainer/comm/tcp_congestion.h"

namespace ringmaster::trainer::comm {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::array<char, 8> kMagic = {'R', 'M', 'T', 'C', 'P', '0', '0', '1'};
constexpr size_t kTokenBytes = 32;
// A rank's first words on a new connection (integers in network byte order).
struct Hello {
  std::array<char, 8> magic;
  uint32_t rank;
  uint32_t size;
  std::array<unsigned char, kTokenBytes> token;
};
static_assert(sizeof(Hello) == 48);

// Connections during setup that have not said hello yet, at most.
constexpr size_t kMaxCallers = 64;
// How long a waiting rank spins on its sockets before sleeping in poll(): a small message's
// answer usually comes within this, and a poll() wake-up alone costs about as much.
constexpr auto kSpin = std::chrono::microseconds(20);
// Received floats reduced at a time while the rest of the chunk still arrives.
constexpr size_t kSegmentFloats = 16 << 10;
// The ring receives into a buffer this size, small enough to stay in a core's cache while its
// floats are summed into the data.
constexpr size_t kScratchFloats = 64 << 10;
// Most bytes one send() takes: a long copy into the socket leaves the other direction idle. Larger
// pieces cost fewer calls while the data is in cache; beyond kCachedBytes (measured on loopback,
// 2 ranks: 256 KiB pieces are the faster up to 4 MiB, 32 KiB ones from 16 MiB on) the ring sends
// smaller ones.
constexpr size_t kSendPieceBytes = 256 << 10;
constexpr size_t kCachedBytes = 8 << 20;
constexpr size_t kUncachedSendPieceBytes = 32 << 10;

std::string errnoText(int err) { return std::strerror(err); }

// `result`, its error prefixed with `what`.
template <class T>
core::Result<T> within(core::Result<T> result, const std::string& what) {
  if (!result.ok()) return result.status().withContext(what);
  return result;
}

// Closes on scope exit unless released.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  ~OwnedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.release();
    }
    return *this;
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

int pollMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
}

core::Status tune(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
    return core::unavailable("socket options: " + errnoText(errno));
  }
  return core::Status::Ok();
}

// The IPv4 address `host` resolves to ("" : this machine's hostname).
core::Result<sockaddr_in> resolve(std::string host) {
  if (host.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) {
      return core::unavailable("gethostname: " + errnoText(errno));
    }
    host = name;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return core::unavailable("resolve " + host + ": " + ::gai_strerror(rc));
  }
  sockaddr_in addr = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  return addr;
}

std::string format(const sockaddr_in& addr) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

core::Result<sockaddr_in> parseAddress(const std::string& text) {
  const size_t colon = text.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (colon == std::string::npos ||
      ::inet_pton(AF_INET, text.substr(0, colon).c_str(), &addr.sin_addr) != 1) {
    return core::invalidArgument("bad address \"" + text + "\"");
  }
  const int port = std::atoi(text.c_str() + colon + 1);
  if (port <= 0 || port > 65535) return core::invalidArgument("bad port in \"" + text + "\"");
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
core::Result<bool> waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, pollMs(deadline));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return core::unavailable("poll: " + errnoText(errno));
    if (Clock::now() >= deadline) return false;
  }
}

// Writes all `n` bytes to a non-blocking socket by `deadline` (the hello).
core::Status writeAll(int fd, const char* data, size_t n, Clock::time_point deadline) {
  size_t done = 0;
  while (done < n) {
    const ssize_t k = ::send(fd, data + done, n - done, MSG_NOSIGNAL);
    if (k > 0) {
      done += static_cast<size_t>(k);
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return core::unavailable(errnoText(errno));
    }
    RM_ASSIGN_OR_RETURN(const bool ready, waitFor(fd, POLLOUT, deadline));
    if (!ready) return core::timeoutError("no room to send in time");
  }
  return core::Status::Ok();
}

// Connects to `addr`, retrying while nobody listens there yet, until `deadline`.
core::Result<OwnedFd> dial(const sockaddr_in& addr, Clock::time_point deadline) {
  for (;;) {
    OwnedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return core::unavailable("socket: " + errnoText(errno));
    RM_RETURN_IF_ERROR(tune(fd.get()));
    preferUnpacedCongestionControl(fd.get());
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      RM_ASSIGN_OR_RETURN(const bool ready, waitFor(fd.get(), POLLOUT, deadline));
      socklen_t len = sizeof(err);
      if (!ready) {
        err = ETIMEDOUT;
      } else if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
    }
    if (err == 0) return fd;
    if (Clock::now() >= deadline) {
      return core::timeoutError("connect to " + format(addr) + ": " + errnoText(err));
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

core::Result<std::array<unsigned char, kTokenBytes>> randomToken() {
  std::array<unsigned char, kTokenBytes> token{};
  if (::getrandom(token.data(), token.size(), 0) != static_cast<ssize_t>(token.size())) {
    return core::unavailable("getrandom: " + errnoText(errno));
  }
  return token;
}

}  // namespace

class TcpCommunicator::Send final : public PendingSend {
 public:
  explicit Send(std::function<core::Status()> work)
      : thread_([this, work = std::move(work)] { result_ = work(); }) {}
  ~Send() override { (void)wait(); }
  core::Status wait() override {
    if (thread_.joinable()) thread_.join();
    return result_;
  }

 private:
  core::Status result_;
  std::thread thread_;  // last: started once result_ exists
};

// The order of writers on one connection: each takes a ticket where it is called and writes when
// its turn comes, so that a PendingSend's thread keeps the order of the calls that made it.
struct TcpCommunicator::SendQueue {
  std::mutex mu;
  std::condition_variable turn;
  uint64_t next = 0;     // the next ticket handed out
  uint64_t serving = 0;  // whose turn it is
};

uint64_t TcpCommunicator::takeTicket(int peer) {
  std::lock_guard lock(queues_[peer].mu);
  return queues_[peer].next++;
}

void TcpCommunicator::awaitTurn(int peer, uint64_t ticket) {
  std::unique_lock lock(queues_[peer].mu);
  queues_[peer].turn.wait(lock, [&] { return queues_[peer].serving == ticket; });
}

void TcpCommunicator::endTurn(int peer) {
  {
    std::lock_guard lock(queues_[peer].mu);
    ++queues_[peer].serving;
  }
  queues_[peer].turn.notify_all();
}

core::Result<std::unique_ptr<TcpCommunicator>> TcpCommunicator::create(const TcpConfig& config) {
  const std::string what = "rank " + std::to_string(config.rank) + ": tcp rendezvous (world " +
                           std::to_string(config.size) + ")";
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size) {
    return core::invalidArgument(what + ": rank out of range");
  }
  if (config.store == nullptr) return core::invalidArgument(what + ": no store");
  const auto deadline = Clock::now() + config.timeout;
  rendezvous::PrefixStore store(config.store, "tcp");

  RM_ASSIGN_OR_RETURN(sockaddr_in self, within(resolve(config.hostname), what));
  self.sin_port = 0;
  OwnedFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return core::unavailable(what + ": socket: " + errnoText(errno));
  preferUnpacedCongestionControl(listener.get());
  socklen_t len = sizeof(self);
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&self), sizeof(self)) != 0 ||
      ::listen(listener.get(), config.size + 16) != 0 ||
      ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&self), &len) != 0 ||
      ::fcntl(listener.get(), F_SETFL, ::fcntl(listener.get(), F_GETFL) | O_NONBLOCK) != 0) {
    return core::unavailable(what + ": listen on " + format(self) + ": " + errnoText(errno));
  }
  std::array<unsigned char, kTokenBytes> token{};
  if (config.rank == 0) {
    RM_ASSIGN_OR_RETURN(token, within(randomToken(), what));
    RM_RETURN_IF_ERROR_CTX(store.set("token", rendezvous::Bytes(token.begin(), token.end())), what);
  }
  RM_RETURN_IF_ERROR_CTX(store.set(rankKey("addr", config.rank), rendezvous::toBytes(format(self))),
                         what);
  RM_RETURN_IF_ERROR_CTX(waitForRankKeys(store, "addr", config.size, config.timeout, "join"), what);
  if (config.rank != 0) {
    RM_ASSIGN_OR_RETURN(rendezvous::Bytes got, within(store.get("token", config.timeout), what));
    if (got.size() != kTokenBytes) return core::unavailable(what + ": malformed token");
    std::copy(got.begin(), got.end(), token.begin());
  }

  std::vector<OwnedFd> peers(static_cast<size_t>(config.size));
  // Dial every lower rank and say who this is.
  for (int peer = 0; peer < config.rank; ++peer) {
    const std::string to = what + ": connect to rank " + std::to_string(peer);
    RM_ASSIGN_OR_RETURN(rendezvous::Bytes text,
                        within(store.get(rankKey("addr", peer), config.timeout), to));
    RM_ASSIGN_OR_RETURN(sockaddr_in addr, within(parseAddress(rendezvous::toString(text)), to));
    RM_ASSIGN_OR_RETURN(OwnedFd fd, within(dial(addr, deadline), to));
    Hello hello{kMagic, htonl(static_cast<uint32_t>(config.rank)),
                htonl(static_cast<uint32_t>(config.size)), token};
    RM_RETURN_IF_ERROR_CTX(
        writeAll(fd.get(), reinterpret_cast<const char*>(&hello), sizeof(hello), deadline), to);
    peers[static_cast<size_t>(peer)] = std::move(fd);
  }
  // Accept every higher rank. Hellos are read as they arrive, so a stranger that says nothing
  // (or the wrong thing) holds up nobody; it is dropped.
  struct Caller {
    OwnedFd fd;
    Hello hello{};
    size_t got = 0;
  };
  std::vector<Caller> callers;
  int missing = config.size - 1 - config.rank;
  while (missing > 0) {
    if (Clock::now() >= deadline) {
      std::string ranks;
      for (int peer = config.rank + 1; peer < config.size; ++peer) {
        if (peers[static_cast<size_t>(peer)].get() < 0) {
          ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
        }
      }
      return core::timeoutError(what + ": rank(s) " + ranks + " did not connect within " +
                                std::to_string(config.timeout.count()) + " ms");
    }
    std::vector<pollfd> waits{{listener.get(), POLLIN, 0}};
    for (const Caller& c : callers) waits.push_back({c.fd.get(), POLLIN, 0});
    if (::poll(waits.data(), waits.size(), pollMs(deadline)) < 0 && errno != EINTR) {
      return core::unavailable(what + ": poll: " + errnoText(errno));
    }
    for (size_t i = callers.size(); i-- > 0;) {  // from the back: erasing keeps earlier indices
      if (waits[i + 1].revents == 0) continue;
      Caller& c = callers[i];
      const ssize_t k = ::recv(c.fd.get(), reinterpret_cast<char*>(&c.hello) + c.got,
                               sizeof(Hello) - c.got, MSG_DONTWAIT);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (k > 0) c.got += static_cast<size_t>(k);
      if (k > 0 && c.got < sizeof(Hello)) continue;
      const int peer = static_cast<int>(ntohl(c.hello.rank));
      if (c.got == sizeof(Hello) && c.hello.magic == kMagic && c.hello.token == token &&
          static_cast<int>(ntohl(c.hello.size)) == config.size && peer > config.rank &&
          peer < config.size && peers[static_cast<size_t>(peer)].get() < 0) {
        peers[static_cast<size_t>(peer)] = std::move(c.fd);
        --missing;
      }
      callers.erase(callers.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (waits[0].revents != 0) {
      for (;;) {
        OwnedFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (fd.get() < 0) break;
        if (!tune(fd.get()).ok()) continue;
        // A bounded set: a flood of strangers pushes out the oldest, never a rank for long.
        if (callers.size() >= kMaxCallers) callers.erase(callers.begin());
        callers.push_back(Caller{std::move(fd)});
      }
    }
  }
  std::vector<int> fds;
  for (OwnedFd& fd : peers) fds.push_back(fd.release());
  return std::unique_ptr<TcpCommunicator>(
      new TcpCommunicator(config.rank, config.size, config.timeout, std::move(fds)));
}

TcpCommunicator::TcpCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                                 std::vector<int> fds)
    : rank_(rank),
      size_(size),
      timeout_(timeout),
      doubling_max_bytes_(tcpDoublingMaxBytes(size)),
      fds_(std::move(fds)),
      queues_(std::make_unique<SendQueue[]>(static_cast<size_t>(size))) {}

TcpCommunicator::~TcpCommunicator() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

core::Status TcpCommunicator::fail(core::Status error) {
  std::lock_guard lock(broken_mu_);
  if (broken_.ok()) {
    broken_ = error;
    // Not close(): another thread may still be in a call on the descriptor. The peers see the
    // connection end and fail now rather than at their timeouts.
    for (int fd : fds_) {
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    }
  }
  return error;
}

core::Status TcpCommunicator::usable(const std::string& what) const {
  std::lock_guard lock(broken_mu_);
  if (broken_.ok()) return core::Status::Ok();
  return core::unavailable(what +
                           ": communicator unusable after an earlier error: " + broken_.message());
}

TcpCommunicator::Clock::time_point TcpCommunicator::deadlineFor(milliseconds timeout) const {
  return Clock::now() + (timeout.count() > 0 ? timeout : timeout_);
}

core::Result<size_t> TcpCommunicator::sendSome(int peer, const char* data, size_t bytes,
                                               const std::string& what) {
  const ssize_t n = ::send(fds_[static_cast<size_t>(peer)], data, std::min(bytes, kSendPieceBytes),
                           MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return fail(core::unavailable(what + ": send to rank " + std::to_string(peer) + ": " +
                                errnoText(errno) + " (the rank is gone)"));
}

core::Result<size_t> TcpCommunicator::recvSome(int peer, char* data, size_t bytes,
                                               const std::string& what) {
  const ssize_t n = ::recv(fds_[static_cast<size_t>(peer)], data, bytes, MSG_DONTWAIT);
  if (n > 0) return static_cast<size_t>(n);
  if (n == 0) {
    return fail(core::unavailable(what + ": rank " + std::to_string(peer) +
                                  " closed the connection (the rank is gone)"));
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return fail(core::unavailable(what + ": receive from rank " + std::to_string(peer) + ": " +
                                errnoText(errno)));
}

core::Result<bool> TcpCommunicator::Waiter::wait(int out, int in) {
  const auto now = Clock::now();
  if (now - idle_since_ < kSpin) {
    ::sched_yield();  // a rank sharing this core (more ranks than cores) may be the one to answer
    return true;
  }
  if (now >= deadline_) return false;
  std::array<pollfd, 2> waits{};
  nfds_t n = 0;
  if (out >= 0) waits[n++] = {out, POLLOUT, 0};
  if (in >= 0 && in == out) {
    waits[0].events |= POLLIN;
  } else if (in >= 0) {
    waits[n++] = {in, POLLIN, 0};
  }
  if (::poll(waits.data(), n, pollMs(deadline_)) < 0 && errno != EINTR) {
    return core::unavailable("poll: " + errnoText(errno));
  }
  idle_since_ = Clock::now() - kSpin;  // poll already waited: no second spin
  return true;
}

core::Status TcpCommunicator::transfer(int to, const char* send_data, size_t send_bytes, int from,
                                       char* recv_data, size_t recv_bytes,
                                       Clock::time_point deadline, const std::string& what,
                                       const std::function<void(size_t)>& on_received) {
  size_t sent = to >= 0 ? 0 : send_bytes, got = from >= 0 ? 0 : recv_bytes;
  Waiter waiter(deadline);
  while (sent < send_bytes || got < recv_bytes) {
    bool moved = false;
    if (sent < send_bytes) {
      RM_ASSIGN_OR_RETURN(const size_t n, sendSome(to, send_data + sent, send_bytes - sent, what));
      sent += n;
      moved = n > 0;
    }
    if (got < recv_bytes) {
      RM_ASSIGN_OR_RETURN(const size_t n, recvSome(from, recv_data + got, recv_bytes - got, what));
      got += n;
      if (n > 0 && on_received) on_received(got);
      moved = moved || n > 0;
    }
    if (moved) {
      waiter.progressed();
      continue;
    }
    auto waited = waiter.wait(sent < send_bytes ? fds_[static_cast<size_t>(to)] : -1,
                              got < recv_bytes ? fds_[static_cast<size_t>(from)] : -1);
    if (!waited.ok()) return fail(waited.status().withContext(what));
    if (!*waited) {
      const int silent = got < recv_bytes ? from : to;
      return fail(core::timeoutError(
          what + ": rank " + std::to_string(silent) + " made no progress before the timeout (" +
          std::to_string(sent) + "/" + std::to_string(send_bytes) + " bytes sent, " +
          std::to_string(got) + "/" + std::to_string(recv_bytes) + " received)"));
    }
  }
  return core::Status::Ok();
}

core::Status TcpCommunicator::exchange(int partner, const char* out, size_t out_bytes, char* in,
                                       size_t in_bytes, Clock::time_point deadline,
                                       const std::string& what,
                                       const std::function<void(size_t)>& on_received) {
  const uint64_t ticket = takeTicket(partner);
  awaitTurn(partner, ticket);
  core::Status s =
      transfer(partner, out, out_bytes, partner, in, in_bytes, deadline, what, on_received);
  endTurn(partner);
  return s;
}

namespace {
int largestPowerOfTwoAtMost(int n) {
  int pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  return pow2;
}
}  // namespace

core::Status TcpCommunicator::exchangeAndSum(int partner, const char* out, size_t out_bytes,
                                             float* mine, size_t floats, Clock::time_point deadline,
                                             const std::string& what) {
  if (scratch_.size() < floats) scratch_.resize(floats);
  size_t summed = 0;
  auto sumUpTo = [&](size_t upto) {
    if (upto <= summed) return;
    const float* src[2] = {mine + summed, scratch_.data() + summed};
    sumArrays(mine + summed, src, 2, upto - summed);
    summed = upto;
  };
  core::Status s = exchange(partner, out, out_bytes, reinterpret_cast<char*>(scratch_.data()),
                            floats * sizeof(float), deadline, what, [&](size_t got) {
                              sumUpTo(got / sizeof(float) / kSegmentFloats * kSegmentFloats);
                            });
  if (s.ok()) sumUpTo(floats);
  return s;
}

core::Status TcpCommunicator::folded(float* data, size_t count, Clock::time_point deadline,
                                     const std::string& what,
                                     const std::function<core::Status(int pow2)>& among) {
  const size_t bytes = count * sizeof(float);
  const int pow2 = largestPowerOfTwoAtMost(size_);
  const int extra = size_ - pow2;
  char* raw = reinterpret_cast<char*>(data);
  if (rank_ >= pow2) {
    RM_RETURN_IF_ERROR(exchange(rank_ - pow2, raw, bytes, nullptr, 0, deadline, what));
    return transfer(-1, nullptr, 0, rank_ - pow2, raw, bytes, deadline, what);
  }
  if (rank_ < extra) {
    RM_RETURN_IF_ERROR(exchangeAndSum(rank_ + pow2, nullptr, 0, data, count, deadline, what));
  }
  RM_RETURN_IF_ERROR(among(pow2));
  if (rank_ < extra)
    RM_RETURN_IF_ERROR(exchange(rank_ + pow2, raw, bytes, nullptr, 0, deadline, what));
  return core::Status::Ok();
}

core::Status TcpCommunicator::recursiveDoubling(float* data, size_t count,
                                                Clock::time_point deadline,
                                                const std::string& what) {
  return folded(data, count, deadline, what, [&](int pow2) {
    const size_t bytes = count * sizeof(float);
    char* raw = reinterpret_cast<char*>(data);
    if (scratch_.size() < count) scratch_.resize(count);
    char* theirs = reinterpret_cast<char*>(scratch_.data());
    for (int mask = 1; mask < pow2; mask <<= 1) {
      const int partner = rank_ ^ mask;
      // The whole vector goes while the partner's arrives, so the sum waits for the end.
      RM_RETURN_IF_ERROR(exchange(partner, raw, bytes, theirs, bytes, deadline, what));
      const float* in[2] = {data, scratch_.data()};
      sumArrays(data, in, 2, count);  // both partners add the same two operands: the same bits
    }
    return core::Status::Ok();
  });
}

core::Status TcpCommunicator::ring(float* data, size_t count, Clock::time_point deadline,
                                   const std::string& what) {
  const int n = size_;
  const int right = (rank_ + 1) % n, left = (rank_ + n - 1) % n;
  const int steps = 2 * (n - 1);  // n - 1 of reduce-scatter, then n - 1 of all-gather
  auto begin = [&](int chunk) { return count * static_cast<size_t>(chunk) / n; };
  auto bytesOf = [&](int chunk) { return (begin(chunk + 1) - begin(chunk)) * sizeof(float); };
  auto reducing = [&](int step) { return step < n - 1; };
  // Step s receives chunk received(s) and sends the chunk received one step earlier (its own
  // first): the stream to the right is the stream from the left, forwarded once reduced.
  auto received = [&](int step) {
    return reducing(step) ? (rank_ - step - 1 + n) % n : (rank_ - (step - n + 1) + n) % n;
  };
  auto forwarded = [&](int step) { return step == 0 ? rank_ : received(step - 1); };
  char* raw = reinterpret_cast<char*>(data);
  scratch_.resize(kScratchFloats);
  char* scratch = reinterpret_cast<char*>(scratch_.data());
  constexpr size_t kScratchBytes = kScratchFloats * sizeof(float);
  struct Position {
    int step = 0;
    size_t bytes = 0;  // of this step's chunk
  } out, in;
  size_t reduced = 0;  // floats of in's chunk summed into data (reduce-scatter steps)
  // Sums the received floats [reduced, upto) of in's chunk from the scratch ring into data.
  auto reduceUpTo = [&](size_t upto) {
    float* dst = data + begin(received(in.step));
    while (reduced < upto) {
      const size_t slot = reduced % kScratchFloats;
      const size_t k = std::min(upto - reduced, kScratchFloats - slot);
      const float* src[2] = {dst + reduced, scratch_.data() + slot};
      sumArrays(dst + reduced, src, 2, k);
      reduced += k;
    }
  };
  // Bytes of out's chunk that may go now: all of it once the step that received it is done.
  auto sendable = [&]() -> size_t {
    if (out.step == 0 || out.step - 1 < in.step) return bytesOf(forwarded(out.step));
    return reducing(in.step) ? reduced * sizeof(float) : in.bytes;
  };
  const size_t piece =
      count * sizeof(float) <= kCachedBytes ? kSendPieceBytes : kUncachedSendPieceBytes;
  const uint64_t ticket = takeTicket(right);
  awaitTurn(right, ticket);
  Waiter waiter(deadline);
  core::Status status;
  while (status.ok()) {
    // Finished steps (and empty chunks) end here.
    while (in.step < steps && in.bytes == bytesOf(received(in.step)) &&
           (!reducing(in.step) || reduced * sizeof(float) == in.bytes)) {
      ++in.step;
      in.bytes = reduced = 0;
    }
    while (out.step < steps && out.bytes == bytesOf(forwarded(out.step))) {
      ++out.step;
      out.bytes = 0;
    }
    if (in.step == steps && out.step == steps) break;
    bool moved = false;
    const size_t may_send = out.step < steps ? sendable() : 0;
    if (out.bytes < may_send) {
      auto n_sent = sendSome(right, raw + begin(forwarded(out.step)) * sizeof(float) + out.bytes,
                             std::min(may_send - out.bytes, piece), what);
      if (!n_sent.ok()) {
        status = n_sent.status();
        break;
      }
      out.bytes += *n_sent;
      moved = *n_sent > 0;
    }
    size_t room = 0;
    if (in.step < steps) {
      const size_t left_in_step = bytesOf(received(in.step)) - in.bytes;
      char* into = nullptr;
      if (reducing(in.step)) {
        // Into the scratch ring, never over floats not yet reduced.
        const size_t at = in.bytes % kScratchBytes;
        room = std::min({left_in_step, kScratchBytes - at,
                         kScratchBytes - (in.bytes - reduced * sizeof(float))});
        into = scratch + at;
      } else {
        room = left_in_step;
        into = raw + begin(received(in.step)) * sizeof(float) + in.bytes;
      }
      if (room > 0) {
        auto n_got = recvSome(left, into, room, what);
        if (!n_got.ok()) {
          status = n_got.status();
          break;
        }
        in.bytes += *n_got;
        moved = moved || *n_got > 0;
      }
      if (reducing(in.step)) {
        // Reduce a segment at a time, or whatever arrived when nothing else can move.
        const size_t whole = in.bytes / sizeof(float);
        if (whole - reduced >= kSegmentFloats || in.bytes == bytesOf(received(in.step)) ||
            (!moved && whole > reduced)) {
          reduceUpTo(whole);
          moved = true;
        }
      }
    }
    if (moved) {
      waiter.progressed();
      continue;
    }
    auto waited = waiter.wait(out.step < steps && out.bytes < sendable() ? fds_[right] : -1,
                              in.step < steps ? fds_[left] : -1);
    if (!waited.ok()) {
      status = fail(waited.status().withContext(what));
    } else if (!*waited) {
      const bool receiving = in.step < steps;
      status = fail(core::timeoutError(what + ": rank " + std::to_string(receiving ? left : right) +
                                       " made no progress before the timeout (ring step " +
                                       std::to_string(std::min(in.step, out.step) + 1) + "/" +
                                       std::to_string(steps) + ": " + std::to_string(out.bytes) +
                                       " bytes of the chunk sent, " + std::to_string(in.bytes) +
                                       " received)"));
    }
  }
  endTurn(right);
  return status;
}

core::Status TcpCommunicator::halvingDoubling(float* data, size_t count, Clock::time_point deadline,
                                              const std::string& what) {
  return folded(data, count, deadline, what, [&](int pow2) {
    const auto* raw = reinterpret_cast<const char*>(data);
    // Reduce-scatter by recursive halving: each step keeps half of the range, summed with the
    // partner's copy of it (mine + theirs: one rank computes each sum, so every rank ends with
    // the same bits once the owners' results are gathered), and hands the partner the other half.
    struct Level {
      size_t lo, mid, hi;
      bool kept_lower;
    };
    std::vector<Level> levels;
    size_t lo = 0, hi = count;
    for (int mask = pow2 / 2; mask >= 1; mask /= 2) {
      const int partner = rank_ ^ mask;
      const size_t mid = lo + (hi - lo) / 2;
      const bool lower = (rank_ & mask) == 0;
      levels.push_back({lo, mid, hi, lower});
      const size_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      if (lower) {
        hi = mid;
      } else {
        lo = mid;
      }
      RM_RETURN_IF_ERROR(exchangeAndSum(partner, raw + give_lo * sizeof(float),
                                        (give_hi - give_lo) * sizeof(float), data + lo, hi - lo,
                                        deadline, what));
    }
    // All-gather by recursive doubling, in the reverse order: the partner owns the other half.
    for (int mask = 1; mask < pow2; mask *= 2) {
      const int partner = rank_ ^ mask;
      const Level level = levels.back();
      levels.pop_back();
      const size_t other_lo = level.kept_lower ? level.mid : level.lo;
      const size_t other_hi = level.kept_lower ? level.hi : level.mid;
      RM_RETURN_IF_ERROR(exchange(partner, raw + lo * sizeof(float), (hi - lo) * sizeof(float),
                                  reinterpret_cast<char*>(data + other_lo),
                                  (other_hi - other_lo) * sizeof(float), deadline, what));
      lo = level.lo;
      hi = level.hi;
    }
    return core::Status::Ok();
  });
}

core::Status TcpCommunicator::setDoublingMaxBytes(size_t bytes) {
  doubling_max_bytes_.store(bytes);
  return core::Status::Ok();
}

std::string TcpCommunicator::allreduceAlgorithm(size_t bytes) const {
  if (size_ == 1) return "none";
  if (bytes <= doubling_max_bytes_.load()) return "recursive_doubling";
  return size_ >= 4 && bytes <= kTcpHalvingDoublingMaxBytes ? "halving_doubling" : "ring";
}

core::Status TcpCommunicator::allreduceSum(float* data, size_t count,
                                           const AllreduceOptions& opts) {
  const auto start = Clock::now();
  const size_t bytes = count * sizeof(float);
  const std::string algorithm = allreduceAlgorithm(bytes);
  const std::string what = describeRankCall(rank_, "allreduceSum", opts.tag, bytes) + " over tcp " +
                           algorithm + " (world " + std::to_string(size_) + ")";
  RM_RETURN_IF_ERROR(usable(what));
  if (size_ > 1 && count > 0) {
    const auto deadline = deadlineFor(opts.timeout);
    if (algorithm == "recursive_doubling") {
      RM_RETURN_IF_ERROR(recursiveDoubling(data, count, deadline, what));
    } else if (algorithm == "halving_doubling") {
      RM_RETURN_IF_ERROR(halvingDoubling(data, count, deadline, what));
    } else {
      RM_RETURN_IF_ERROR(ring(data, count, deadline, what));
    }
  }
  countAllreduce(bytes, start);
  return core::Status::Ok();
}

core::Status TcpCommunicator::broadcast(void* data, size_t bytes, int root) {
  const std::string what =
      describeRankCall(rank_, "broadcast from rank " + std::to_string(root), "", bytes) +
      " over tcp";
  if (root < 0 || root >= size_) return core::invalidArgument(what + ": root out of range");
  RM_RETURN_IF_ERROR(usable(what));
  const auto deadline = deadlineFor(milliseconds(0));
  char* raw = static_cast<char*>(data);
  if (rank_ != root) return transfer(-1, nullptr, 0, root, raw, bytes, deadline, what);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == root) continue;
    const uint64_t ticket = takeTicket(peer);
    awaitTurn(peer, ticket);
    core::Status s = transfer(peer, raw, bytes, -1, nullptr, 0, deadline, what);
    endTurn(peer);
    RM_RETURN_IF_ERROR(s);
  }
  return core::Status::Ok();
}

core::Status TcpCommunicator::barrier() {
  const std::string what = "rank " + std::to_string(rank_) + ": barrier over tcp";
  RM_RETURN_IF_ERROR(usable(what));
  float token = 0;
  return size_ > 1 ? recursiveDoubling(&token, 1, deadlineFor(milliseconds(0)), what)
                   : core::Status::Ok();
}

core::Status TcpCommunicator::sendInTurn(const void* data, size_t bytes, int peer, uint64_t ticket,
                                         Clock::time_point deadline, const std::string& what) {
  // Each message goes with its length, so that a receive expecting another size says so.
  const uint64_t header = bytes;
  awaitTurn(peer, ticket);
  core::Status s = transfer(peer, reinterpret_cast<const char*>(&header), sizeof(header), -1,
                            nullptr, 0, deadline, what);
  if (s.ok()) {
    s = transfer(peer, static_cast<const char*>(data), bytes, -1, nullptr, 0, deadline, what);
  }
  endTurn(peer);
  return s;
}

core::Status TcpCommunicator::send(const void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("send to", peer, opts, bytes) + " over tcp";
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  RM_RETURN_IF_ERROR(usable(what));
  return sendInTurn(data, bytes, peer, takeTicket(peer), deadlineFor(opts.timeout), what);
}

core::Result<std::unique_ptr<PendingSend>> TcpCommunicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("send to", peer, opts, bytes) + " over tcp";
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  RM_RETURN_IF_ERROR(usable(what));
  const uint64_t ticket = takeTicket(peer);  // here: the order of the calls is the order sent
  const auto deadline = deadlineFor(opts.timeout);
  return std::unique_ptr<PendingSend>(std::make_unique<Send>(
      [=, this] { return sendInTurn(data, bytes, peer, ticket, deadline, what); }));
}

core::Status TcpCommunicator::recv(void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("receive from", peer, opts, bytes) + " over tcp";
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  RM_RETURN_IF_ERROR(usable(what));
  const auto deadline = deadlineFor(opts.timeout);
  uint64_t header = 0;
  RM_RETURN_IF_ERROR(transfer(-1, nullptr, 0, peer, reinterpret_cast<char*>(&header),
                              sizeof(header), deadline, what));
  if (header != bytes) {
    return fail(core::invalidArgument(what + ": rank " + std::to_string(peer) + " sent " +
                                      std::to_string(header) + " bytes"));
  }
  return transfer(-1, nullptr, 0, peer, static_cast<char*>(data), bytes, deadline, what);
}

}  // namespace ringmaster::trainer::comm
