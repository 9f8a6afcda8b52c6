#include "launcher/ssh_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/deadline.h"

namespace ringmaster::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Closes the socket on every path out of probeSsh.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Waits for `events` on fd until `deadline`; false on timeout.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(core::millisecondsUntil(deadline).count()));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the next call report the error
  }
}

}  // namespace

core::Result<std::string> probeSsh(const std::string& host, int port, milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string what = "sshd at " + host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_INET;  // pods' addresses (POD_IP) are IPv4 here and in the local cluster
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) return core::unavailable(what + ": cannot resolve the name: " + gai_strerror(gai));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, &freeaddrinfo);
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, ip, sizeof(ip));
  const std::string where = what + " (" + ip + ")";

  Fd sock{socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return core::errnoError(where + ": socket", errno);
  if (connect(sock.fd, found->ai_addr, found->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return core::unavailable(where + ": connect: " + strerror(errno));
    if (!waitFor(sock.fd, POLLOUT, deadline)) {
      return core::unavailable(where + ": connect: no answer within " +
                               std::to_string(timeout.count()) + " ms");
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return core::unavailable(where + ": connect: " + strerror(err));
  }
  // RFC 4253 4.2: the server sends "SSH-protoversion-softwareversion\r\n" first (possibly after
  // other lines, which we skip).
  std::string received;
  for (;;) {
    const size_t eol = received.find('\n');
    if (eol != std::string::npos) {
      std::string line = received.substr(0, eol);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("SSH-", 0) == 0) {
        // Identify ourselves before closing: sshd then logs one "[preauth]" line, not a failed
        // key exchange.
        constexpr char kHello[] = "SSH-2.0-ringmaster-probe\r\n";
        (void)!send(sock.fd, kHello, sizeof(kHello) - 1, MSG_NOSIGNAL);
        return line;
      }
      received.erase(0, eol + 1);
      continue;
    }
    if (received.size() > 4096) return core::unavailable(where + ": answers, but not as SSH");
    if (!waitFor(sock.fd, POLLIN, deadline)) {
      return core::unavailable(where + ": connected, but no SSH banner within " +
                               std::to_string(timeout.count()) + " ms");
    }
    char buf[512];
    const ssize_t n = read(sock.fd, buf, sizeof(buf));
    if (n == 0) return core::unavailable(where + ": closed the connection before its banner");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return core::unavailable(where + ": read: " + strerror(errno));
    }
    received.append(buf, static_cast<size_t>(n));
  }
}

core::Result<std::string> waitForSsh(const std::string& host, int port, Clock::time_point deadline,
                                     const core::StopSource* stop) {
  core::Backoff backoff({milliseconds(100), milliseconds(2000), 0.5});
  std::string last_error = "no attempt";
  for (;;) {
    if (stop != nullptr && stop->stopRequested()) {
      return core::cancelled("waiting for sshd at " + host + ": " + stop->reason());
    }
    const milliseconds left = core::millisecondsUntil(deadline);
    if (left.count() == 0) {
      return core::timeoutError("sshd at " + host + ":" + std::to_string(port) +
                                " did not answer in time (" + last_error + ")");
    }
    core::Result<std::string> banner = probeSsh(host, port, std::min(left, milliseconds(2000)));
    if (banner.ok()) return banner;
    last_error = banner.status().message();
    const milliseconds nap = std::min(backoff.next(), core::millisecondsUntil(deadline));
    if (stop != nullptr) {
      if (stop->waitFor(nap)) continue;  // reported at the top of the loop
    } else {
      std::this_thread::sleep_for(nap);
    }
  }
}

}  // namespace ringmaster::launcher
