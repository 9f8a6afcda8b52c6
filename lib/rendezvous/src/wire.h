#pragma once
// Encoding and decoding of the store's wire protocol (written down in tcp_store.h): frames,
// big-endian integers and length-prefixed strings.
//
// Thread-safety: value types. Failure: Reader methods return false on a truncated body and
// FrameStatus::kBad flags a frame the protocol does not allow; callers decide what to close.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ringmaster::rendezvous::wire {

enum class Op : uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4, kAuth = 5 };
enum class Reply : uint8_t { kOk = 0, kTimeout = 1, kInvalid = 2, kUnauthenticated = 3 };

inline constexpr size_t kFrameHeaderBytes = 4;

// Builds one frame: reserve the header, append fields, then take().
class Writer {
 public:
  Writer() : buf_(kFrameHeaderBytes, '\0') {}
  Writer& u8(uint8_t v);
  Writer& u32(uint32_t v);
  Writer& u64(uint64_t v);
  Writer& str(std::string_view s);  // u32 length + bytes
  Writer& raw(std::string_view s);  // bytes only
  // Fills in the length header and returns the frame. The body must be under kMaxFrameBytes.
  std::string take();

 private:
  std::string buf_;
};

// Reads fields from one frame body, front to back.
class Reader {
 public:
  explicit Reader(std::string_view body) : rest_(body) {}
  bool u8(uint8_t* v);
  bool u32(uint32_t* v);
  bool u64(uint64_t* v);
  bool str(std::string* s);
  std::string_view rest() const { return rest_; }
  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

enum class FrameStatus { kNeedMore, kReady, kBad };
// Looks at the start of `buf`: is a whole frame of at most `max_body` bytes there? On kReady
// sets *body_len.
FrameStatus peekFrame(std::string_view buf, size_t max_body, uint32_t* body_len);

}  // namespace ringmaster::rendezvous::wire
