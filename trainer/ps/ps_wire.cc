#include "trainer/ps/ps_wire.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace ringmaster::trainer::ps::wire {
namespace {

// Builds one frame: header reserved, fields appended, length filled in by take().
class Writer {
 public:
  explicit Writer(Type type, size_t reserve = 0) {
    buf_.reserve(kFrameHeaderBytes + 1 + reserve);
    buf_.resize(kFrameHeaderBytes);
    u8(static_cast<uint8_t>(type));
  }
  Writer& u8(uint8_t v) { return bytes(&v, 1); }
  Writer& u32(uint32_t v) { return bytes(&v, 4); }
  Writer& i32(int32_t v) { return bytes(&v, 4); }
  Writer& i64(int64_t v) { return bytes(&v, 8); }
  Writer& raw(std::string_view s) { return bytes(s.data(), s.size()); }
  Writer& floats(std::span<const float> f) { return bytes(f.data(), f.size_bytes()); }
  std::string take() {
    const auto body = static_cast<uint32_t>(buf_.size() - kFrameHeaderBytes);
    std::memcpy(buf_.data(), &body, 4);
    return std::move(buf_);
  }

 private:
  Writer& bytes(const void* p, size_t n) {
    if (n > 0) buf_.append(static_cast<const char*>(p), n);
    return *this;
  }
  std::string buf_;
};

// Reads fields front to back; every method fails on a short body.
class Reader {
 public:
  explicit Reader(std::string_view body) : rest_(body) {}
  bool u8(uint8_t* v) { return bytes(v, 1); }
  bool u32(uint32_t* v) { return bytes(v, 4); }
  bool i32(int32_t* v) { return bytes(v, 4); }
  bool i64(int64_t* v) { return bytes(v, 8); }
  bool raw(size_t n, std::string* out) {
    if (rest_.size() < n) return false;
    out->assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
  }
  bool floats(std::vector<float>* out) {
    if (rest_.size() % sizeof(float) != 0) return false;
    out->resize(rest_.size() / sizeof(float));
    if (!rest_.empty()) std::memcpy(out->data(), rest_.data(), rest_.size());
    rest_ = {};
    return true;
  }
  std::string_view rest() const { return rest_; }
  bool done() const { return rest_.empty(); }

 private:
  bool bytes(void* p, size_t n) {
    if (rest_.size() < n) return false;
    std::memcpy(p, rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest_;
};

core::Status bad(std::string_view what) {
  return core::invalidArgument("ps wire: malformed " + std::string(what) + " message");
}

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

std::string encodePush(int64_t step, std::span<const float> gradients) {
  return Writer(Type::kPush, 8 + gradients.size_bytes()).i64(step).floats(gradients).take();
}

std::string encodeValues(std::span<const float> values) {
  return Writer(Type::kValues, values.size_bytes()).floats(values).take();
}

std::string encode(const Message& message) {
  return std::visit(
      Overloaded{
          [](const Challenge& m) { return Writer(Type::kChallenge).raw(m.nonce).take(); },
          [](const Hello& m) {
            return Writer(Type::kHello)
                .u32(m.version)
                .i32(m.worker)
                .raw(m.nonce)
                .raw(m.proof)
                .take();
          },
          [](const Welcome& m) {
            return Writer(Type::kWelcome).raw(m.proof).u8(m.live ? 1 : 0).i64(m.clock).take();
          },
          [](const Pull& m) {
            return Writer(Type::kPull).i64(m.step).u8(m.as_stored ? 1 : 0).take();
          },
          [](const Push& m) { return encodePush(m.step, m.gradients); },
          [](const Values& m) { return encodeValues(m.values); },
          [](const Ack&) { return Writer(Type::kAck).take(); },
          [](const Leave&) { return Writer(Type::kLeave).take(); },
          [](const Join& m) { return Writer(Type::kJoin).i64(m.clock).take(); },
          [](const Pushed& m) {
            return Writer(Type::kPushed).i64(static_cast<int64_t>(m.pushes)).take();
          },
          [](const Error& m) {
            return Writer(Type::kError).u8(static_cast<uint8_t>(m.code)).raw(m.message).take();
          },
      },
      message);
}

core::Result<Message> parse(std::string_view body) {
  Reader r(body);
  uint8_t type = 0;
  if (!r.u8(&type)) return bad("empty");
  switch (static_cast<Type>(type)) {
    case Type::kChallenge: {
      Challenge m;
      if (!r.raw(kNonceBytes, &m.nonce) || !r.done()) return bad("CHALLENGE");
      return Message(std::move(m));
    }
    case Type::kHello: {
      Hello m;
      if (!r.u32(&m.version) || !r.i32(&m.worker) || !r.raw(kNonceBytes, &m.nonce) ||
          !r.raw(kProofBytes, &m.proof) || !r.done()) {
        return bad("HELLO");
      }
      return Message(std::move(m));
    }
    case Type::kWelcome: {
      Welcome m;
      uint8_t live = 0;
      if (!r.raw(kProofBytes, &m.proof) || !r.u8(&live) || live > 1 || !r.i64(&m.clock) ||
          !r.done()) {
        return bad("WELCOME");
      }
      m.live = live == 1;
      return Message(std::move(m));
    }
    case Type::kPull: {
      Pull m;
      uint8_t as_stored = 0;
      if (!r.i64(&m.step) || !r.u8(&as_stored) || as_stored > 1 || !r.done()) return bad("PULL");
      m.as_stored = as_stored == 1;
      return Message(m);
    }
    case Type::kPush: {
      Push m;
      if (!r.i64(&m.step) || !r.floats(&m.gradients)) return bad("PUSH");
      return Message(std::move(m));
    }
    case Type::kValues: {
      Values m;
      if (!r.floats(&m.values)) return bad("VALUES");
      return Message(std::move(m));
    }
    case Type::kAck:
      if (!r.done()) return bad("ACK");
      return Message(Ack{});
    case Type::kLeave:
      if (!r.done()) return bad("LEAVE");
      return Message(Leave{});
    case Type::kPushed: {
      int64_t pushes = 0;
      if (!r.i64(&pushes) || pushes < 0 || !r.done()) return bad("PUSHED");
      return Message(Pushed{static_cast<uint64_t>(pushes)});
    }
    case Type::kJoin: {
      Join m;
      if (!r.i64(&m.clock) || !r.done()) return bad("JOIN");
      return Message(m);
    }
    case Type::kError: {
      Error m;
      uint8_t code = 0;
      if (!r.u8(&code)) return bad("ERROR");
      m.code = static_cast<ErrorCode>(code);
      m.message.assign(r.rest());
      return Message(std::move(m));
    }
  }
  return core::invalidArgument("ps wire: unknown message type " + std::to_string(type));
}

core::Status parseValuesInto(std::string_view body, std::span<float> out) {
  if (body.empty() || body[0] != static_cast<char>(Type::kValues)) return bad("VALUES");
  body.remove_prefix(1);
  if (body.size() != out.size_bytes()) {
    return core::invalidArgument("ps wire: VALUES of " + std::to_string(body.size()) +
                                 " bytes for a buffer of " + std::to_string(out.size()) +
                                 " floats");
  }
  if (!body.empty()) std::memcpy(out.data(), body.data(), body.size());
  return core::Status::Ok();
}

FrameStatus peekFrame(std::string_view buf, size_t max_body, uint32_t* body_len) {
  if (buf.size() < kFrameHeaderBytes) return FrameStatus::kNeedMore;
  uint32_t len = 0;
  std::memcpy(&len, buf.data(), 4);
  if (len == 0 || len > max_body) return FrameStatus::kBad;
  if (buf.size() - kFrameHeaderBytes < len) return FrameStatus::kNeedMore;
  *body_len = len;
  return FrameStatus::kReady;
}

ErrorCode toWire(core::Code code) {
  switch (code) {
    case core::Code::kInvalidArgument:
    case core::Code::kUsage:
    case core::Code::kDataLoss:
      return ErrorCode::kInvalidArgument;
    case core::Code::kNotFound:
      return ErrorCode::kNotFound;
    case core::Code::kAlreadyExists:
      return ErrorCode::kAlreadyExists;
    case core::Code::kTimeout:
      return ErrorCode::kTimeout;
    case core::Code::kUnavailable:
      return ErrorCode::kUnavailable;
    case core::Code::kCancelled:
      return ErrorCode::kCancelled;
    case core::Code::kOk:
    case core::Code::kInternal:
      break;
  }
  return ErrorCode::kInternal;
}

std::string_view errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case ErrorCode::kTimeout:
      return "TIMEOUT";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kCancelled:
      return "CANCELLED";
    case ErrorCode::kInternal:
      return "INTERNAL";
    case ErrorCode::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

core::Status fromWire(const Error& error) {
  core::Code code = core::Code::kInternal;
  switch (error.code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnauthenticated:
      code = core::Code::kInvalidArgument;
      break;
    case ErrorCode::kNotFound:
      code = core::Code::kNotFound;
      break;
    case ErrorCode::kAlreadyExists:
      code = core::Code::kAlreadyExists;
      break;
    case ErrorCode::kTimeout:
      code = core::Code::kTimeout;
      break;
    case ErrorCode::kUnavailable:
      code = core::Code::kUnavailable;
      break;
    case ErrorCode::kCancelled:
      code = core::Code::kCancelled;
      break;
    case ErrorCode::kInternal:
      break;
  }
  const std::string prefix = error.code == ErrorCode::kUnauthenticated ? "unauthenticated: " : "";
  return {code, prefix + error.message};
}

core::Result<std::string> randomNonce() { return rendezvous::auth::randomBytes(kNonceBytes); }

std::string proof(std::string_view secret, Role role, std::string_view server_nonce,
                  std::string_view client_nonce, int32_t worker) {
  return rendezvous::auth::proof(
      secret, kProtocol, role, server_nonce, client_nonce,
      std::string_view(reinterpret_cast<const char*>(&worker), sizeof worker));
}

namespace {

// Waits for `events` until `deadline`: ok(true) ready, ok(false) timed out.
core::Result<bool> waitFor(int fd, short events, Deadline deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline != Deadline::max()) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
    }
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, timeout);
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return core::errnoError("poll", errno);
  }
}

core::Status readExact(int fd, char* out, size_t n, Deadline deadline) {
  while (n > 0) {
    RM_ASSIGN_OR_RETURN(const bool ready, waitFor(fd, POLLIN, deadline));
    if (!ready) return core::timeoutError("no reply before the deadline");
    const ssize_t got = ::recv(fd, out, n, MSG_DONTWAIT);
    if (got == 0) return core::unavailable("connection closed by the peer");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return core::unavailable(core::errnoError("recv", errno).message());
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
  return core::Status::Ok();
}

}  // namespace

core::Status writeAll(int fd, std::string_view data, Deadline deadline) {
  while (!data.empty()) {
    const ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return core::unavailable(core::errnoError("send", errno).message());
      }
      RM_ASSIGN_OR_RETURN(const bool ready, waitFor(fd, POLLOUT, deadline));
      if (!ready) return core::timeoutError("could not send before the deadline");
      continue;
    }
    data.remove_prefix(static_cast<size_t>(sent));
  }
  return core::Status::Ok();
}

core::Result<std::string> readFrame(int fd, size_t max_body, Deadline deadline) {
  char header[kFrameHeaderBytes];
  RM_RETURN_IF_ERROR(readExact(fd, header, sizeof header, deadline));
  uint32_t len = 0;
  std::memcpy(&len, header, 4);
  if (len == 0 || len > max_body) {
    return core::invalidArgument("ps wire: a frame of " + std::to_string(len) +
                                 " bytes (allowed: 1.." + std::to_string(max_body) + ")");
  }
  std::string body(len, '\0');
  RM_RETURN_IF_ERROR(readExact(fd, body.data(), len, deadline));
  return body;
}

}  // namespace ringmaster::trainer::ps::wire
