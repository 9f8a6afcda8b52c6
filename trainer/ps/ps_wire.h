#pragma once
// The parameter servers' wire protocol: the one place that encodes and parses it, plus the
// handshake's proofs (the rendezvous store's challenge-response, ringmaster/rendezvous/auth.h,
// bound to the worker id) and blocking frame I/O on a socket. (The store's frame codec is
// private to its library and carries no floats, so this is a small codec of its own.)
//
// Every message, both ways, is one frame: u32 body_len, then body[body_len], 1 <= body_len <=
// the reader's limit. The body is a type byte and the type's fields. Integers are little-endian;
// floats are raw little-endian float32 (the host must be little-endian: static_assert).
//
//   server -> client on accept
//     CHALLENGE = 0x81 : server_nonce[32]
//   client -> server, first and only once
//     HELLO     = 0x01 : u32 version, i32 worker, client_nonce[32],
//                        HMAC-SHA256(secret, "ringmaster-ps client" server_nonce client_nonce
//                        worker)
//     -> WELCOME = 0x82 : HMAC-SHA256(secret, "ringmaster-ps server" ...same...), which the
//        client checks in turn, u8 live, i64 clock: the worker's standing on the server (live at
//        its clock, or not live and the clock it would join at); or ERROR(UNAUTHENTICATED) and
//        the server closes.
//   then, one request and its reply at a time:
//     PULL  = 0x02 : i64 step, u8 as_stored   -> VALUES = 0x83 : float32 x n (rest of body); 0:
//                                                for the worker's step (a loose server may look
//                                                ahead), 1: the values as they stand
//     PUSH  = 0x03 : i64 step, float32 x n    -> PUSHED = 0x86 : u64 pushes the server took so far
//     LEAVE = 0x04                            -> ACK    = 0x84; the server removes the worker and
//                                                closes
//     JOIN  = 0x05 : i64 clock                -> ACK; the server adds the worker (not live: a
//                                                worker process started again) at that clock
//   any request may instead get
//     ERROR = 0x85 : u8 code (ErrorCode), message (rest of body, UTF-8)
// The secret never crosses the wire. Frames before WELCOME are at most kMaxAuthFrameBytes.
//
// Thread-safety: pure functions and value types; the I/O functions use only their socket.
// Failure: parse() returns kInvalidArgument for a body the protocol does not allow (unknown type,
// short or trailing bytes, a payload that is not whole floats); readFrame() returns kUnavailable
// for a closed or reset connection, kTimeout at the deadline, kInvalidArgument for a frame over
// the limit or an empty one.

#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/auth.h"

namespace ringmaster::trainer::ps::wire {

static_assert(std::endian::native == std::endian::little,
              "the PS wire protocol sends floats as raw little-endian float32");

inline constexpr uint32_t kVersion = 4;
inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr size_t kNonceBytes = rendezvous::auth::kNonceBytes;
inline constexpr size_t kProofBytes = rendezvous::auth::kProofBytes;
inline constexpr size_t kMaxAuthFrameBytes = 256;
// The largest frame with `elements` floats in it (a PUSH or VALUES of a whole server).
constexpr size_t maxDataFrameBytes(size_t elements) { return 16 + 4 * elements; }

enum class Type : uint8_t {
  kHello = 0x01,
  kPull = 0x02,
  kPush = 0x03,
  kLeave = 0x04,
  kJoin = 0x05,
  kChallenge = 0x81,
  kWelcome = 0x82,
  kValues = 0x83,
  kAck = 0x84,
  kError = 0x85,
  kPushed = 0x86,
};

// core::Code's values where one exists, plus the refusal of a peer that did not authenticate.
enum class ErrorCode : uint8_t {
  kInvalidArgument = 1,
  kNotFound = 3,
  kAlreadyExists = 4,
  kTimeout = 5,
  kUnavailable = 6,
  kCancelled = 8,
  kInternal = 9,
  kUnauthenticated = 100,
};

struct Challenge {
  std::string nonce;
  bool operator==(const Challenge&) const = default;
};
struct Hello {
  uint32_t version = kVersion;
  int32_t worker = 0;
  std::string nonce, proof;
  bool operator==(const Hello&) const = default;
};
struct Welcome {
  std::string proof;
  bool live = false;
  int64_t clock = 0;
  bool operator==(const Welcome&) const = default;
};
struct Pull {
  int64_t step = 0;
  bool as_stored = false;
  bool operator==(const Pull&) const = default;
};
struct Push {
  int64_t step = 0;
  std::vector<float> gradients;
  bool operator==(const Push&) const = default;
};
struct Values {
  std::vector<float> values;
  bool operator==(const Values&) const = default;
};
struct Ack {
  bool operator==(const Ack&) const = default;
};
struct Pushed {
  uint64_t pushes = 0;
  bool operator==(const Pushed&) const = default;
};
struct Leave {
  bool operator==(const Leave&) const = default;
};
struct Join {
  int64_t clock = 0;
  bool operator==(const Join&) const = default;
};
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  bool operator==(const Error&) const = default;
};

using Message =
    std::variant<Challenge, Hello, Welcome, Pull, Push, Values, Ack, Leave, Join, Error, Pushed>;

// A whole frame (header included). Nonces and proofs must be kNonceBytes / kProofBytes long.
std::string encode(const Message& message);
// The data frames without a copy into a Message first.
std::string encodePush(int64_t step, std::span<const float> gradients);
std::string encodeValues(std::span<const float> values);
// One frame's body (no header).
core::Result<Message> parse(std::string_view body);
// The body of a VALUES message straight into `out` (which must be exactly as long).
core::Status parseValuesInto(std::string_view body, std::span<float> out);

enum class FrameStatus { kNeedMore, kReady, kBad };
// Is a whole frame of 1..max_body body bytes at the start of `buf`? kReady sets *body_len.
FrameStatus peekFrame(std::string_view buf, size_t max_body, uint32_t* body_len);

// Error codes both ways; a core::Code without a wire code travels as kInternal, and
// kUnauthenticated arrives as kInvalidArgument (as the rendezvous store reports a bad secret).
ErrorCode toWire(core::Code code);
core::Status fromWire(const Error& error);
std::string_view errorCodeName(ErrorCode code);

// The handshake (see above).
using rendezvous::auth::Role;
using rendezvous::auth::sameProof;  // constant time
inline constexpr std::string_view kProtocol = "ringmaster-ps";
core::Result<std::string> randomNonce();
// rendezvous::auth::proof for this protocol, bound to `worker` (its four bytes, little-endian).
std::string proof(std::string_view secret, Role role, std::string_view server_nonce,
                  std::string_view client_nonce, int32_t worker);

// Blocking I/O on a connected socket; a deadline of time_point::max() waits for ever (until the
// socket is shut down).
using Deadline = std::chrono::steady_clock::time_point;
core::Status writeAll(int fd, std::string_view data, Deadline deadline);
core::Result<std::string> readFrame(int fd, size_t max_body, Deadline deadline);

}  // namespace ringmaster::trainer::ps::wire
