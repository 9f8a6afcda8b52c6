// TcpStoreClient: connects with retries (start order never matters), then speaks the protocol
// of tcp_store.h over one non-blocking socket, bounding every wait with poll(). The first
// exchange on every connection is the challenge-response that proves we know the secret.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "key_value_map.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/tcp_dial.h"
#include "ringmaster/rendezvous/auth.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "wire.h"

namespace ringmaster::rendezvous {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kFirstBackoff{50};
constexpr milliseconds kMaxBackoff{1000};
// get/wait: the server answers TIMEOUT at the caller's deadline; allow this long on top for
// that answer to arrive before deciding the server is not responding.
constexpr milliseconds kReplyGrace{10000};

std::string errnoText(int err) {
  char buf[256];
  return strerror_r(err, buf, sizeof buf);  // GNU variant returns the text
}

std::string seconds(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

milliseconds waitReplyTimeout(milliseconds timeout) {
  constexpr milliseconds kForever = std::chrono::hours(24 * 365);
  return std::clamp(timeout, milliseconds::zero(), kForever) + kReplyGrace;
}

uint64_t wireTimeout(milliseconds timeout) {
  return static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0));
}

}  // namespace

core::Result<std::unique_ptr<TcpStoreClient>> TcpStoreClient::connect(const std::string& host,
                                                                      int port,
                                                                      const std::string& secret,
                                                                      milliseconds connect_deadline,
                                                                      milliseconds op_timeout) {
  const std::string address = host + ":" + std::to_string(port);
  if (port <= 0 || port > 65535) {
    return core::invalidArgument("rendezvous store at " + address + ": port out of range 1..65535");
  }
  const Clock::time_point start = Clock::now();
  std::unique_ptr<TcpStoreClient> client;
  core::Result<int> attempts = core::dialWithRetry(
      host, port, deadlineAfter(connect_deadline), {kFirstBackoff, kMaxBackoff, 0.5},
      [&](int fd) {
        client.reset(new TcpStoreClient(fd, address, op_timeout));
        return client->authenticate(secret, op_timeout);
      },
      [&](int attempt, const core::Status& failed, milliseconds wait) {
        RM_LOG(DEBUG, RDZV) << "rendezvous store at " << address << " not reachable yet (attempt "
                            << attempt << "): " << failed.message() << "; retrying in "
                            << wait.count() << " ms";
      });
  if (!attempts.ok()) return attempts.status().withContext("rendezvous store at " + address);
  RM_LOG(INFO, RDZV) << "connected to rendezvous store at " << address << " (attempt " << *attempts
                     << ", " << seconds(Clock::now() - start) << ")";
  return client;
}

TcpStoreClient::TcpStoreClient(int fd, std::string address, milliseconds op_timeout)
    : fd_(fd), address_(std::move(address)), op_timeout_(op_timeout) {}

core::Status TcpStoreClient::authenticate(const std::string& secret, milliseconds timeout) {
  std::lock_guard lock(mu_);
  const std::string context = "rendezvous store at " + address_ + ": authenticate";
  const Clock::time_point deadline = Clock::now() + timeout;
  std::string challenge;
  core::Status st = recvFrame(&challenge, deadline);
  if (st.ok() && (challenge.size() != 1 + auth::kNonceBytes ||
                  challenge[0] != static_cast<char>(wire::Reply::kOk))) {
    st = core::unavailable("malformed challenge (not a rendezvous store of this version?)");
  }
  core::Result<std::string> nonce = auth::randomBytes(auth::kNonceBytes);
  if (st.ok() && !nonce.ok()) st = nonce.status();
  std::string answer;
  if (st.ok()) {
    const std::string server_nonce = challenge.substr(1);
    st = sendAll(wire::Writer()
                     .u8(static_cast<uint8_t>(wire::Op::kAuth))
                     .raw(*nonce)
                     .raw(auth::proof(secret, auth::kStoreProtocol, auth::Role::kClient,
                                      server_nonce, *nonce))
                     .take(),
                 deadline);
    if (st.ok()) st = recvFrame(&answer, deadline);
    if (st.ok() && !answer.empty() &&
        answer[0] == static_cast<char>(wire::Reply::kUnauthenticated)) {
      st = core::invalidArgument("the store refused our proof of the secret (" + answer.substr(1) +
                                 ")");
    } else if (st.ok() &&
               (answer.empty() || answer[0] != static_cast<char>(wire::Reply::kOk) ||
                !auth::sameProof(answer.substr(1),
                                 auth::proof(secret, auth::kStoreProtocol, auth::Role::kServer,
                                             server_nonce, *nonce)))) {
      st = core::invalidArgument("the store could not prove it knows the secret");
    }
  }
  if (!st.ok()) {
    st = std::move(st).withContext(context);
    markBroken(st);
  }
  return st;
}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

core::Status TcpStoreClient::set(const std::string& key, const Bytes& value) {
  std::string request = wire::Writer()
                            .u8(static_cast<uint8_t>(wire::Op::kSet))
                            .str(key)
                            .str(std::string_view(value.data(), value.size()))
                            .take();
  RM_ASSIGN_OR_RETURN(std::string reply, roundTrip(request, op_timeout_));
  return decodeStatusOnly(reply, "set '" + key + "'");
}

core::Result<Bytes> TcpStoreClient::get(const std::string& key, milliseconds timeout) {
  std::string request = wire::Writer()
                            .u8(static_cast<uint8_t>(wire::Op::kGet))
                            .u64(wireTimeout(timeout))
                            .str(key)
                            .take();
  RM_ASSIGN_OR_RETURN(std::string reply, roundTrip(request, waitReplyTimeout(timeout)));
  RM_RETURN_IF_ERROR(decodeStatus(reply, "get '" + key + "'"));
  return Bytes(reply.begin() + 1, reply.end());
}

core::Status TcpStoreClient::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  wire::Writer w;
  w.u8(static_cast<uint8_t>(wire::Op::kWait))
      .u64(wireTimeout(timeout))
      .u32(static_cast<uint32_t>(keys.size()));
  for (const auto& key : keys) w.str(key);
  RM_ASSIGN_OR_RETURN(std::string reply, roundTrip(w.take(), waitReplyTimeout(timeout)));
  return decodeStatusOnly(reply, "wait");
}

core::Result<int64_t> TcpStoreClient::add(const std::string& key, int64_t delta) {
  std::string request = wire::Writer()
                            .u8(static_cast<uint8_t>(wire::Op::kAdd))
                            .str(key)
                            .u64(static_cast<uint64_t>(delta))
                            .take();
  RM_ASSIGN_OR_RETURN(std::string reply, roundTrip(request, op_timeout_));
  const std::string what = "add '" + key + "'";
  RM_RETURN_IF_ERROR(decodeStatus(reply, what));
  wire::Reader r(std::string_view(reply).substr(1));
  uint64_t sum = 0;
  if (!r.u64(&sum) || !r.done()) return protocolError(what + ": malformed reply");
  return static_cast<int64_t>(sum);
}

core::Status TcpStoreClient::decodeStatus(const std::string& reply, const std::string& what) {
  const std::string context = "rendezvous store at " + address_ + ": " + what;
  std::string message = reply.substr(1);
  switch (static_cast<wire::Reply>(reply[0])) {
    case wire::Reply::kOk:
      return core::Status::Ok();
    case wire::Reply::kTimeout:
      return core::timeoutError(context + ": " + message);
    case wire::Reply::kInvalid:
      return core::invalidArgument(context + ": " + message);
    case wire::Reply::kUnauthenticated:
      return protocolError(what + ": refused as unauthenticated: " + message);
  }
  return protocolError(what + ": unknown reply status " +
                       std::to_string(static_cast<uint8_t>(reply[0])));
}

core::Status TcpStoreClient::decodeStatusOnly(const std::string& reply, const std::string& what) {
  RM_RETURN_IF_ERROR(decodeStatus(reply, what));
  if (reply.size() != 1) return protocolError(what + ": malformed reply");
  return core::Status::Ok();
}

core::Status TcpStoreClient::protocolError(const std::string& what) {
  core::Status st = core::unavailable("rendezvous store at " + address_ + ": " + what);
  std::lock_guard lock(mu_);
  markBroken(st);
  return st;
}

core::Result<std::string> TcpStoreClient::roundTrip(const std::string& request,
                                                    milliseconds reply_timeout) {
  if (request.size() - wire::kFrameHeaderBytes > kMaxFrameBytes) {
    return core::invalidArgument("rendezvous store at " + address_ + ": request of " +
                                 std::to_string(request.size()) + " bytes exceeds the " +
                                 std::to_string(kMaxFrameBytes) + "-byte frame limit");
  }
  std::lock_guard lock(mu_);
  if (fd_ < 0) {
    return core::unavailable("rendezvous store at " + address_ +
                             ": connection already lost: " + broken_reason_);
  }
  const Clock::time_point deadline = Clock::now() + reply_timeout;
  core::Status st = sendAll(request, deadline);
  std::string body;
  if (st.ok()) st = recvFrame(&body, deadline);
  if (!st.ok()) {
    st = std::move(st).withContext("rendezvous store at " + address_);
    markBroken(st);
    return st;
  }
  return body;
}

core::Status TcpStoreClient::recvFrame(std::string* body, Clock::time_point deadline) {
  char header[wire::kFrameHeaderBytes];
  RM_RETURN_IF_ERROR(recvExact(header, sizeof header, deadline));
  uint32_t len = 0;
  if (wire::peekFrame(std::string_view(header, sizeof header), kMaxFrameBytes, &len) ==
      wire::FrameStatus::kBad) {
    return core::unavailable("malformed reply frame");
  }
  wire::Reader(std::string_view(header, sizeof header)).u32(&len);
  body->resize(len);
  return recvExact(body->data(), len, deadline);
}

core::Status TcpStoreClient::sendAll(const std::string& data, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return core::unavailable("send: " + errnoText(errno));
    RM_ASSIGN_OR_RETURN(bool ready, core::pollUntil(fd_, POLLOUT, deadline));
    if (!ready) return core::timeoutError("request not sent within the operation timeout");
  }
  return core::Status::Ok();
}

core::Status TcpStoreClient::recvExact(char* out, size_t n, Clock::time_point deadline) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::recv(fd_, out + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      continue;
    }
    if (r == 0) return core::unavailable("connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return core::unavailable("recv: " + errnoText(errno));
    RM_ASSIGN_OR_RETURN(bool ready, core::pollUntil(fd_, POLLIN, deadline));
    if (!ready) return core::timeoutError("no reply within the operation timeout");
  }
  return core::Status::Ok();
}

void TcpStoreClient::markBroken(const core::Status& why) {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  broken_reason_ = why.message();
  RM_LOG(WARN, RDZV) << "closing the connection: " << why.message();
}

}  // namespace ringmaster::rendezvous
