#pragma once
// A ServerConnection (ps_worker.h) to a PsTcpServer: one TCP connection that speaks for one
// worker (protocol: ps_wire.h). connect() retries until its deadline, so servers may start after
// their workers, then proves knowledge of the shared secret and checks the server's proof in
// turn. pull and push are one request and its reply each.
//
// Ownership: owns its socket; destroying the connection without leave() closes it, which the
// server takes as the worker being gone. Thread-safety: one request at a time (calls are
// serialized by a mutex); the connection belongs to one worker. Failure: every error names the
// server's address. A server that cannot be reached by the deadline is kUnavailable; one that
// refuses our proof (a wrong secret: "unauthenticated"), or cannot prove its own, is
// kInvalidArgument. A lost connection is kUnavailable; no reply within op_timeout is kTimeout.
// Both leave the connection unusable (later calls: kUnavailable), since the stream is out of
// step. Errors the server returns (kNotFound, kTimeout, ...) arrive with their own code and
// leave the connection usable.

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/ps/ps_worker.h"

namespace ringmaster::trainer::ps {

struct PsTcpConnectionOptions {
  // How long connect() keeps retrying an unreachable server.
  std::chrono::milliseconds connect_deadline{60000};
  // How long a reply may take; longer than the server's wait_timeout, since a sync pull waits
  // there for the other workers.
  std::chrono::milliseconds op_timeout{180000};
};

class PsTcpConnection final : public ServerConnection {
 public:
  static core::Result<std::unique_ptr<PsTcpConnection>> connect(
      const std::string& host, int port, const std::string& secret, WorkerId worker,
      PsTcpConnectionOptions options = {});
  ~PsTcpConnection() override;
  PsTcpConnection(const PsTcpConnection&) = delete;
  PsTcpConnection& operator=(const PsTcpConnection&) = delete;

  // `worker` must be the one the connection was made for (kInvalidArgument otherwise).
  core::Status pull(WorkerId worker, int64_t step, std::span<float> values,
                    PullView view = PullView::kForStep) override;
  core::Status push(WorkerId worker, int64_t step, std::span<const float> gradients) override;
  uint64_t serverPushes() const override { return server_pushes_; }
  // Tells the server this worker is done (it removes the worker) and closes the connection.
  core::Status leave();
  // The worker's standing on the server when it connected (WELCOME): live at its clock, or not
  // live (its process started again) and the clock it would join at.
  WorkerStanding standing() const { return standing_; }
  // Adds this worker, not live on the server, at `clock` (JOIN).
  core::Status join(int64_t clock);
  // Closes the connection without LEAVE, as a crash would (the server removes the worker).
  void drop();
  // Shuts the socket down from any thread, so that a request waiting for its reply (a pull the
  // staleness bound holds) fails at once with kUnavailable; the server takes it as the worker
  // being gone. For a worker asked to stop that cannot leave between steps.
  void interrupt();

  WorkerId worker() const { return worker_; }
  const std::string& address() const { return address_; }

 private:
  PsTcpConnection(int fd, std::string address, WorkerId worker, PsTcpConnectionOptions options);
  core::Status handshake(const std::string& secret);
  // Sends `request` and reads the reply's body; the caller holds mu_.
  core::Result<std::string> roundTrip(const std::string& request, size_t max_reply);
  // roundTrip for a small request whose answer is a `Reply`: the server's ERROR comes back as its
  // status; any other answer breaks the connection ("unexpected reply to <what>"). The caller
  // holds mu_.
  template <class Reply>
  core::Result<Reply> exchange(const std::string& request, const char* what);
  core::Status broken(core::Status why);  // closes; the caller holds mu_
  core::Status check(WorkerId worker, const char* what) const;

  std::mutex mu_;
  // Taken (after mu_, where both are) to close the socket and by interrupt(), which must not
  // wait for a request in flight.
  std::mutex fd_mu_;
  int fd_;  // -1 once closed; written under both mutexes
  const std::string address_;
  const WorkerId worker_;
  const PsTcpConnectionOptions options_;
  std::string closed_reason_;
  WorkerStanding standing_;     // from WELCOME, then JOIN
  uint64_t server_pushes_ = 0;  // from the last PUSHED
};

}  // namespace ringmaster::trainer::ps
