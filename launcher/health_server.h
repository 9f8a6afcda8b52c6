#pragma once
// The pod's probe endpoints, on $POD_IP-or-0.0.0.0:--health-port:
//   GET /healthz   200 "ok" while the launcher runs
//   GET /readyz    503 until setReady(true) (every pod of the attempt joined the rendezvous),
//                  then 200; the operator's readinessProbe turns this into "every rank joined"
// Anything else is 404 (405 for other methods). HTTP/1.0-style: one request per connection,
// answered and closed. One thread polls every open connection, so a client that connects and
// sends nothing (or a flood of them) never delays a kubelet's probe: each has 1 s to send its
// request line, and past kMaxConnections open ones the oldest is dropped for the newcomer.
//
// Ownership: owns its listening socket, its connections and its serving thread. Thread-safety:
// setReady(), ready() and port() may be called from any thread. Failure: start() names the
// address it could not bind; a bad or slow client only loses its own connection.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"

namespace ringmaster::launcher {

class HealthServer {
 public:
  static constexpr size_t kMaxConnections = 128;

  // port 0 picks a free port.
  static core::Result<std::unique_ptr<HealthServer>> start(const std::string& bind_host, int port);
  ~HealthServer();
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  int port() const { return port_; }
  void setReady(bool ready) { ready_.store(ready, std::memory_order_release); }
  bool ready() const { return ready_.load(std::memory_order_acquire); }

 private:
  HealthServer(int listen_fd, int wake_read, int wake_write, int port);
  void serve();

  int listen_fd_;
  int wake_read_, wake_write_;  // a pipe: the destructor writes to stop serve()
  int port_;
  std::atomic<bool> ready_{false};
  std::thread thread_;
};

}  // namespace ringmaster::launcher
