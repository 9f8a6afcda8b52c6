#include "ringmaster/core/tcp_dial.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ringmaster/core/deadline.h"

namespace ringmaster::core {

namespace {

bool connectedToItself(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_len = sizeof local;
  socklen_t peer_len = sizeof peer;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
    return false;
  }
  return local_len == peer_len && std::memcmp(&local, &peer, local_len) == 0;
}

}  // namespace

Result<bool> pollUntil(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int64_t left = millisecondsUntil(deadline).count();
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return errnoError("poll", errno);
  }
}

Result<int> dialTcpOnce(const std::string& host, int port,
                        std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  // getaddrinfo cannot be bounded by our deadline; resolvers time out on their own.
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return unavailable("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  std::string last = "no addresses";
  int connected = -1;
  for (addrinfo* ai = found; ai != nullptr && connected < 0; ai = ai->ai_next) {
    const int fd =
        ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = errnoError("socket", errno).message();
      continue;
    }
    int err = ::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      Result<bool> ready = pollUntil(fd, POLLOUT, deadline);
      if (!ready.ok()) {
        last = ready.status().message();
      } else if (!*ready) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0 && connectedToItself(fd)) err = ECONNREFUSED;
    if (err == 0) {
      connected = fd;
      break;
    }
    if (err != EINPROGRESS) last = errnoError("connect", err).message();
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (connected < 0) return unavailable(last);
  return connected;
}

Result<int> dialWithRetry(const std::string& host, int port,
                          std::chrono::steady_clock::time_point deadline, BackoffPolicy policy,
                          const std::function<Status(int fd)>& greet,
                          const std::function<void(int attempt, const Status& failed,
                                                   std::chrono::milliseconds wait)>& on_retry) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Backoff backoff(policy);
  for (int attempt = 1;; ++attempt) {
    Status failed;
    Result<int> fd = dialTcpOnce(host, port, deadline);
    if (fd.ok()) {
      int one = 1;
      ::setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      failed = greet(*fd);
      if (failed.ok()) return attempt;
      if (failed.code() != Code::kUnavailable) return failed;
    } else {
      failed = fd.status();
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      char spent[32];
      std::snprintf(spent, sizeof spent, "%.1f s",
                    std::chrono::duration<double>(now - start).count());
      return unavailable("not reachable after " + std::to_string(attempt) + " attempts in " +
                         spent + ": " + failed.message());
    }
    const std::chrono::milliseconds wait = backoff.next();
    if (on_retry) on_retry(attempt, failed, wait);
    std::this_thread::sleep_for(std::min<Clock::duration>(wait, deadline - now));
  }
}

}  // namespace ringmaster::core
