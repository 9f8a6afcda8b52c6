#pragma once
// ProbeServer: the small HTTP endpoint of the operator and of every pod's launcher (/healthz,
// /readyz, the operator's /metrics): GET or HEAD, one request per connection, answered by the
// handler of its path (the query string ignored) and closed; other paths 404, other methods 405.
// Not a general web server (no keep-alive, no TLS, no request body), and hardened where a probe
// needs it: one thread polls every open connection, so a client that connects and sends nothing
// (or a flood of them) never delays a kubelet's probe. Each connection has 1 s to send its
// request line, and past kMaxConnections open ones the oldest is dropped for the newcomer.
//
// Ownership: owns its listening socket, its connections and its serving thread; stop() or the
// destructor ends them. Thread-safety: handlers run on the serving thread, one at a time, and
// must be safe against the rest of the program; port() and stop() may be called from any
// thread. Failure: start() names the address it could not bind; a bad or slow client only loses
// its own connection.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"

namespace ringmaster::http {

struct Answer {
  int code = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class ProbeServer {
 public:
  using Handler = std::function<Answer()>;
  static constexpr size_t kMaxConnections = 128;

  // Listens on bind_host:port; bind_host "" or "0.0.0.0" is every address, port 0 a free one.
  static core::Result<std::unique_ptr<ProbeServer>> start(const std::string& bind_host, int port,
                                                          std::map<std::string, Handler> routes);
  ~ProbeServer();
  ProbeServer(const ProbeServer&) = delete;
  ProbeServer& operator=(const ProbeServer&) = delete;

  int port() const { return port_; }
  void stop();

 private:
  ProbeServer(int listen_fd, int wake_read, int wake_write, int port,
              std::map<std::string, Handler> routes);
  void serve();
  std::string reply(const std::string& request_line) const;

  int listen_fd_;
  int wake_read_, wake_write_;  // a pipe: stop() writes to end serve()
  int port_;
  std::map<std::string, Handler> routes_;
  std::thread thread_;
};

}  // namespace ringmaster::http
