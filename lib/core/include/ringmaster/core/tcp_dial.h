#pragma once
// Dialling a TCP peer with a deadline, for the clients that retry until a server is up (the
// rendezvous store's, the parameter servers'): one pass over the host's addresses, a
// non-blocking connect bounded by poll(), and a wait for a socket's readiness.
//
// Thread-safety: pure functions over their own sockets. Failure: dialTcpOnce returns Unavailable
// naming why the last address failed (resolution, refusal, timeout); pollUntil returns the
// errno of a failed poll().

#include <chrono>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::core {

// Waits for `events` on `fd` until `deadline` (EINTR retried): true when ready, false at the
// deadline.
Result<bool> pollUntil(int fd, short events, std::chrono::steady_clock::time_point deadline);

// A connected, non-blocking, close-on-exec TCP socket to host:port. A "connection" to itself (TCP
// simultaneous open onto a free local port) counts as refused.
Result<int> dialTcpOnce(const std::string& host, int port,
                        std::chrono::steady_clock::time_point deadline);

}  // namespace ringmaster::core
