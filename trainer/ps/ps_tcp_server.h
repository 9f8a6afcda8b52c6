#pragma once
// Serves one ParameterServer to workers over TCP (protocol: ps_wire.h). One accept thread and
// one thread per connection (a job has few workers): a connection's thread authenticates the
// peer (HMAC challenge-response over the shared secret, which never crosses the wire), then
// answers its PULL, PUSH and LEAVE requests one at a time by calling the ParameterServer, so a
// pull that waits for the other workers (sync) waits in that connection's thread only.
//
// Membership: a connection speaks for the worker its HELLO named; a second live connection for
// the same worker is refused (kAlreadyExists). LEAVE removes the worker from the server; so does
// a connection that drops without it (logged as a warning), so that sync training does not wait
// for a worker that is gone. A worker id that is not live on the server gets its pulls and pushes
// refused with the server's kNotFound until it JOINs: a worker process started again after it
// died learns its standing from WELCOME and rejoins at a clock of its choosing (planStart).
//
// Ownership: borrows the ParameterServer (it must outlive this object); owns the sockets and
// threads. Thread-safety: port(), stop() and the destructor may be called from any thread;
// stop() is idempotent. Failure: start() fails if the address cannot be resolved or bound.
// Afterwards an error on one connection closes that connection only, with a log line naming the
// server, the peer and the worker. A peer that sends anything but HELLO first or proves a wrong
// secret gets ERROR(UNAUTHENTICATED) and is closed; one that sends a frame over the handshake's
// limit, or no HELLO within auth_timeout, is closed.
// stop() closes the listener and every connection and makes their workers leave (which also
// wakes a pull waiting for the others), then joins the threads.

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"
#include "trainer/ps/parameter_server.h"

namespace ringmaster::trainer::ps {

struct PsTcpServerOptions {
  std::chrono::milliseconds auth_timeout{10000};
  // Connections held at once (authenticated or not); more are closed at accept.
  size_t max_connections = 256;
};

class PsTcpServer {
 public:
  // bind_host "" or "0.0.0.0": every IPv4 interface; port 0 picks a free port (see port()).
  static core::Result<std::unique_ptr<PsTcpServer>> start(ParameterServer* server,
                                                          const std::string& bind_host, int port,
                                                          std::string secret,
                                                          PsTcpServerOptions options = {});
  ~PsTcpServer();
  PsTcpServer(const PsTcpServer&) = delete;
  PsTcpServer& operator=(const PsTcpServer&) = delete;

  int port() const { return port_; }
  void stop();

 private:
  struct Connection;
  PsTcpServer(ParameterServer& server, int listen_fd, int port, std::string secret,
              PsTcpServerOptions options);
  void acceptLoop();
  void serve(Connection& connection);
  // Reads HELLO and answers it; returns the worker, or why the peer is refused.
  core::Result<WorkerId> authenticate(Connection& connection);
  void reapFinished();  // joins connection threads that are done (requires mu_)
  std::string name() const;

  ParameterServer& server_;
  const int listen_fd_;
  const int port_;
  const std::string secret_;
  const PsTcpServerOptions options_;
  std::thread accept_thread_;

  std::mutex mu_;
  std::list<std::unique_ptr<Connection>> connections_;
  bool stopped_ = false;
};

}  // namespace ringmaster::trainer::ps
