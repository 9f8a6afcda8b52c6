// The rendezvous store's wire format (lib/rendezvous/src/wire.h) as its server reads a
// connection's bytes: frames cut from a buffer (peekFrame), each body decoded field by field
// with wire::Reader into the requests tcp_store.h defines. A request that decodes is encoded
// again with wire::Writer and must give back the very same frame.
#include <string>
#include <string_view>
#include <vector>

#include "wire.h"

namespace {

namespace wire = ringmaster::rendezvous::wire;

// Small enough that the fuzzer reaches the limit, as an unauthenticated peer does.
constexpr size_t kMaxBody = 4096;

// Decodes one request body and re-encodes it; false when the body is malformed.
bool decodeAndReencode(std::string_view body, std::string* frame) {
  wire::Reader r(body);
  wire::Writer w;
  uint8_t op = 0;
  if (!r.u8(&op)) return false;
  w.u8(op);
  std::string key, value;
  uint64_t u64 = 0;
  uint32_t count = 0;
  switch (static_cast<wire::Op>(op)) {
    case wire::Op::kSet:
      if (!r.str(&key) || !r.str(&value)) return false;
      w.str(key).str(value);
      break;
    case wire::Op::kGet:
      if (!r.u64(&u64) || !r.str(&key)) return false;
      w.u64(u64).str(key);
      break;
    case wire::Op::kWait: {
      if (!r.u64(&u64) || !r.u32(&count)) return false;
      // As the server: each key takes at least its 4-byte length, so the count is bounded by
      // the frame before anything is reserved.
      if (count > r.rest().size() / 4) return false;
      std::vector<std::string> keys(count);
      for (auto& k : keys) {
        if (!r.str(&k)) return false;
      }
      w.u64(u64).u32(count);
      for (const auto& k : keys) w.str(k);
      break;
    }
    case wire::Op::kAdd:
      if (!r.str(&key) || !r.u64(&u64)) return false;
      w.str(key).u64(u64);
      break;
    default:
      // AUTH and unknown ops: opaque bytes as far as framing goes.
      w.raw(r.rest());
      r = wire::Reader(std::string_view());
      break;
  }
  if (!r.done()) return false;
  *frame = w.take();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (;;) {
    uint32_t body_len = 0;
    const wire::FrameStatus status = wire::peekFrame(in, kMaxBody, &body_len);
    if (status != wire::FrameStatus::kReady) break;
    if (body_len == 0 || body_len > kMaxBody || body_len > in.size() - wire::kFrameHeaderBytes) {
      __builtin_trap();  // peekFrame promised a whole frame within the limit
    }
    const std::string_view frame = in.substr(0, wire::kFrameHeaderBytes + body_len);
    std::string again;
    if (!decodeAndReencode(frame.substr(wire::kFrameHeaderBytes), &again)) break;
    if (again != frame) __builtin_trap();
    in.remove_prefix(frame.size());
  }
  return 0;
}
