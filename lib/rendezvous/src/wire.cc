#include "wire.h"

namespace ringmaster::rendezvous::wire {
namespace {

void putBigEndian(char* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

uint64_t getBigEndian(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

}  // namespace

Writer& Writer::u8(uint8_t v) {
  buf_.push_back(static_cast<char>(v));
  return *this;
}

Writer& Writer::u32(uint32_t v) {
  char b[4];
  putBigEndian(b, v, 4);
  buf_.append(b, 4);
  return *this;
}

Writer& Writer::u64(uint64_t v) {
  char b[8];
  putBigEndian(b, v, 8);
  buf_.append(b, 8);
  return *this;
}

Writer& Writer::str(std::string_view s) {
  u32(static_cast<uint32_t>(s.size()));
  return raw(s);
}

Writer& Writer::raw(std::string_view s) {
  buf_.append(s);
  return *this;
}

std::string Writer::take() {
  putBigEndian(buf_.data(), buf_.size() - kFrameHeaderBytes, 4);
  std::string out = std::move(buf_);
  buf_.assign(kFrameHeaderBytes, '\0');
  return out;
}

bool Reader::u8(uint8_t* v) {
  if (rest_.size() < 1) return false;
  *v = static_cast<uint8_t>(rest_[0]);
  rest_.remove_prefix(1);
  return true;
}

bool Reader::u32(uint32_t* v) {
  if (rest_.size() < 4) return false;
  *v = static_cast<uint32_t>(getBigEndian(rest_.data(), 4));
  rest_.remove_prefix(4);
  return true;
}

bool Reader::u64(uint64_t* v) {
  if (rest_.size() < 8) return false;
  *v = getBigEndian(rest_.data(), 8);
  rest_.remove_prefix(8);
  return true;
}

bool Reader::str(std::string* s) {
  uint32_t len = 0;
  if (!u32(&len) || rest_.size() < len) return false;
  s->assign(rest_.data(), len);
  rest_.remove_prefix(len);
  return true;
}

FrameStatus peekFrame(std::string_view buf, size_t max_body, uint32_t* body_len) {
  if (buf.size() < kFrameHeaderBytes) return FrameStatus::kNeedMore;
  const auto len = static_cast<uint32_t>(getBigEndian(buf.data(), 4));
  if (len == 0 || len > max_body) return FrameStatus::kBad;
  if (buf.size() - kFrameHeaderBytes < len) return FrameStatus::kNeedMore;
  *body_len = len;
  return FrameStatus::kReady;
}

}  // namespace ringmaster::rendezvous::wire
