#include "trainer/ps/ps_tcp_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "ringmaster/core/log.h"
#include "ringmaster/core/tcp_dial.h"
#include "trainer/ps/ps_wire.h"

namespace ringmaster::trainer::ps {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// Replies other than VALUES (ACK, ERROR with its message) are small.
constexpr size_t kMaxSmallReplyBytes = 64 * 1024;

}  // namespace

core::Result<std::unique_ptr<PsTcpConnection>> PsTcpConnection::connect(
    const std::string& host, int port, const std::string& secret, WorkerId worker,
    PsTcpConnectionOptions options) {
  const std::string address = host + ":" + std::to_string(port);
  if (port <= 0 || port > 65535) {
    return core::invalidArgument("parameter server at " + address + ": port out of range");
  }
  std::unique_ptr<PsTcpConnection> connection;
  core::Result<int> attempts = core::dialWithRetry(
      host, port, Clock::now() + options.connect_deadline,
      {.initial = milliseconds(50), .max = milliseconds(1000), .jitter = 0.5}, [&](int fd) {
        connection.reset(new PsTcpConnection(fd, address, worker, options));
        return connection->handshake(secret);
      });
  if (!attempts.ok()) {
    return attempts.status().withContext("worker " + std::to_string(worker) +
                                         ": parameter server at " + address);
  }
  RM_LOG(DEBUG, COMM) << "worker " << worker << ": connected to parameter server at " << address
                      << " (attempt " << *attempts << ")";
  return connection;
}

PsTcpConnection::PsTcpConnection(int fd, std::string address, WorkerId worker,
                                 PsTcpConnectionOptions options)
    : fd_(fd), address_(std::move(address)), worker_(worker), options_(options) {}

PsTcpConnection::~PsTcpConnection() { drop(); }

void PsTcpConnection::drop() {
  std::lock_guard lock(mu_);
  if (fd_ >= 0) (void)broken(core::unavailable("closed"));
}

void PsTcpConnection::interrupt() {
  std::lock_guard lock(fd_mu_);
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

core::Status PsTcpConnection::broken(core::Status why) {
  {
    std::lock_guard lock(fd_mu_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  closed_reason_ = why.message();
  return why;
}

core::Status PsTcpConnection::handshake(const std::string& secret) {
  std::lock_guard lock(mu_);
  const std::string context = "parameter server at " + address_ + ": handshake";
  const Clock::time_point deadline = Clock::now() + options_.op_timeout;
  core::Result<std::string> body = wire::readFrame(fd_, wire::kMaxAuthFrameBytes, deadline);
  if (!body.ok()) return broken(body.status().withContext(context));
  core::Result<wire::Message> challenge = wire::parse(*body);
  if (!challenge.ok() || !std::holds_alternative<wire::Challenge>(*challenge)) {
    return broken(core::unavailable(context + ": no CHALLENGE (not a parameter server?)"));
  }
  const std::string& server_nonce = std::get<wire::Challenge>(*challenge).nonce;
  RM_ASSIGN_OR_RETURN(const std::string nonce, wire::randomNonce());
  const wire::Hello hello{wire::kVersion, worker_, nonce,
                          wire::proof(secret, wire::Role::kClient, server_nonce, nonce, worker_)};
  core::Status st = wire::writeAll(fd_, wire::encode(hello), deadline);
  if (!st.ok()) return broken(std::move(st).withContext(context));
  body = wire::readFrame(fd_, kMaxSmallReplyBytes, deadline);
  if (!body.ok()) return broken(body.status().withContext(context));
  core::Result<wire::Message> answer = wire::parse(*body);
  if (answer.ok()) {
    if (const auto* error = std::get_if<wire::Error>(&*answer)) {
      return broken(wire::fromWire(*error).withContext(context));
    }
    if (const auto* welcome = std::get_if<wire::Welcome>(&*answer)) {
      if (wire::sameProof(welcome->proof,
                          wire::proof(secret, wire::Role::kServer, server_nonce, nonce, worker_))) {
        standing_ = {welcome->live, welcome->clock};
        return core::Status::Ok();
      }
      return broken(core::invalidArgument(
          context + ": the server could not prove it knows the secret (another job's server?)"));
    }
  }
  return broken(core::unavailable(context + ": unexpected answer to HELLO"));
}

core::Status PsTcpConnection::check(WorkerId worker, const char* what) const {
  if (worker == worker_) return core::Status::Ok();
  return core::invalidArgument("parameter server at " + address_ + ": " + what + " for worker " +
                               std::to_string(worker) + " on the connection of worker " +
                               std::to_string(worker_));
}

core::Result<std::string> PsTcpConnection::roundTrip(const std::string& request, size_t max_reply) {
  if (fd_ < 0) {
    return core::unavailable("parameter server at " + address_ +
                             ": connection unusable: " + closed_reason_);
  }
  const Clock::time_point deadline = Clock::now() + options_.op_timeout;
  const std::string context = "parameter server at " + address_;
  core::Status st = wire::writeAll(fd_, request, deadline);
  if (!st.ok()) return broken(std::move(st).withContext(context));
  core::Result<std::string> reply = wire::readFrame(fd_, max_reply, deadline);
  if (!reply.ok()) {
    core::Status why = reply.status();
    if (why.code() == core::Code::kInvalidArgument) why = core::unavailable(why.message());
    return broken(std::move(why).withContext(context));
  }
  return reply;
}

core::Status PsTcpConnection::pull(WorkerId worker, int64_t step, std::span<float> values,
                                   PullView view) {
  RM_RETURN_IF_ERROR(check(worker, "pull"));
  std::lock_guard lock(mu_);
  RM_ASSIGN_OR_RETURN(
      const std::string reply,
      roundTrip(wire::encode(wire::Pull{step, view == PullView::kAsStored}),
                std::max(wire::maxDataFrameBytes(values.size()), kMaxSmallReplyBytes)));
  if (!reply.empty() && reply[0] == static_cast<char>(wire::Type::kValues)) {
    core::Status st = wire::parseValuesInto(reply, values);
    if (!st.ok()) return broken(std::move(st).withContext("parameter server at " + address_));
    return core::Status::Ok();
  }
  core::Result<wire::Message> message = wire::parse(reply);
  if (message.ok()) {
    if (const auto* error = std::get_if<wire::Error>(&*message)) return wire::fromWire(*error);
  }
  return broken(
      core::unavailable("parameter server at " + address_ + ": unexpected reply to PULL"));
}

template <class Reply>
core::Result<Reply> PsTcpConnection::exchange(const std::string& request, const char* what) {
  RM_ASSIGN_OR_RETURN(const std::string reply, roundTrip(request, kMaxSmallReplyBytes));
  core::Result<wire::Message> message = wire::parse(reply);
  if (message.ok()) {
    if (auto* answer = std::get_if<Reply>(&*message)) return std::move(*answer);
    if (const auto* error = std::get_if<wire::Error>(&*message)) return wire::fromWire(*error);
  }
  return broken(
      core::unavailable("parameter server at " + address_ + ": unexpected reply to " + what));
}

core::Status PsTcpConnection::push(WorkerId worker, int64_t step,
                                   std::span<const float> gradients) {
  RM_RETURN_IF_ERROR(check(worker, "push"));
  std::lock_guard lock(mu_);
  RM_ASSIGN_OR_RETURN(const wire::Pushed pushed,
                      exchange<wire::Pushed>(wire::encodePush(step, gradients), "PUSH"));
  server_pushes_ = pushed.pushes;
  return core::Status::Ok();
}

core::Status PsTcpConnection::join(int64_t clock) {
  std::lock_guard lock(mu_);
  RM_RETURN_IF_ERROR(exchange<wire::Ack>(wire::encode(wire::Join{clock}), "JOIN").status());
  standing_ = {true, clock};
  return core::Status::Ok();
}

core::Status PsTcpConnection::leave() {
  std::lock_guard lock(mu_);
  const core::Status st = exchange<wire::Ack>(wire::encode(wire::Leave{}), "LEAVE").status();
  if (fd_ >= 0) (void)broken(core::unavailable("left"));  // else it broke, and says why
  return st;
}

}  // namespace ringmaster::trainer::ps
