#pragma once
// Dialling a TCP peer with a deadline, for the clients that retry until a server is up (the
// rendezvous store's, the parameter servers'): one pass over the host's addresses, a
// non-blocking connect bounded by poll(), a wait for a socket's readiness, and the retry loop
// both clients share (dial, greet, back off).
//
// Thread-safety: functions over their own sockets. Failure: dialTcpOnce returns Unavailable
// naming why the last address failed (resolution, refusal, timeout); pollUntil returns the
// errno of a failed poll(); dialWithRetry as it says.

#include <chrono>
#include <functional>
#include <string>

#include "ringmaster/core/backoff.h"
#include "ringmaster/core/status.h"

namespace ringmaster::core {

// Waits for `events` on `fd` until `deadline` (EINTR retried): true when ready, false at the
// deadline.
Result<bool> pollUntil(int fd, short events, std::chrono::steady_clock::time_point deadline);

// A connected, non-blocking, close-on-exec TCP socket to host:port. A "connection" to itself (TCP
// simultaneous open onto a free local port) counts as refused.
Result<int> dialTcpOnce(const std::string& host, int port,
                        std::chrono::steady_clock::time_point deadline);

// Dials host:port until `deadline`, waiting `backoff` between attempts. Each connected socket
// (TCP_NODELAY set) goes to `greet`, which owns it from then on and returns OK once the peer
// accepted it (the handshake); then the result is the number of attempts. A greeting that fails
// other than Unavailable (a wrong secret: retrying will not help) ends the dial with its status;
// Unavailable (the peer dropped the connection) is retried as a refused dial is. `on_retry`,
// when set, hears of each failed attempt and the wait before the next. At the deadline:
// Unavailable "not reachable after N attempts in T s: <the last failure>".
Result<int> dialWithRetry(const std::string& host, int port,
                          std::chrono::steady_clock::time_point deadline, BackoffPolicy backoff,
                          const std::function<Status(int fd)>& greet,
                          const std::function<void(int attempt, const Status& failed,
                                                   std::chrono::milliseconds wait)>& on_retry = {});

}  // namespace ringmaster::core
