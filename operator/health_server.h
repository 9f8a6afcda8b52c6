#pragma once
// HealthServer: a minimal HTTP/1.0 server for the operator's probes and metrics
// (/healthz, /readyz, /metrics): GET only, one short request per connection, answered by a
// handler per path; anything else is 404. Not a general web server: no keep-alive, no TLS.
//
// Ownership: owns its listening socket and accept thread; stop() (or the destructor) closes the
// socket and joins the thread. Thread-safety: handlers run on the accept thread, one at a time,
// and must be thread-safe against the rest of the program. Failure: start() returns the bind or
// listen error naming the address; per-connection errors are dropped (the prober retries).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"

namespace ringmaster::op {

struct HttpAnswer {
  int code = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HealthServer {
 public:
  using Handler = std::function<HttpAnswer()>;

  // Listens on host:port (port 0 picks a free one).
  static core::Result<std::unique_ptr<HealthServer>> start(const std::string& host, int port,
                                                           std::map<std::string, Handler> routes);
  ~HealthServer();
  int port() const { return port_; }
  void stop();

 private:
  HealthServer(int fd, int port, std::map<std::string, Handler> routes);
  void serve(std::stop_token stop);
  void answer(int client);

  int fd_;
  int port_;
  std::map<std::string, Handler> routes_;
  std::jthread thread_;
};

}  // namespace ringmaster::op
