#pragma once
// The protobuf wire format, both ways, for the few messages the server reads (kubectl's
// protobuf bodies) and writes (the OpenAPI v2 document client-go asks for). Written here because
// those messages are a handful of fields each: generated code would need protoc and the upstream
// .proto files in the build for what is a varint and a length prefix.
//
// Thread-safety: plain values. Failure: Reader::next() is false on malformed input.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace ringmaster::local::protobuf {

// One field of a message: varint (wire type 0) or length-delimited (2); fixed32 (5) and
// fixed64 (1) are skipped over.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;
  std::string_view bytes;
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  // False on malformed input or an unsupported wire type.
  bool next(Field* f) {
    uint64_t key = 0;
    if (!varint(&key)) return false;
    f->number = static_cast<uint32_t>(key >> 3);
    f->wire = static_cast<uint32_t>(key & 7);
    if (f->wire == 0) return varint(&f->varint);
    if (f->wire == 2) {
      uint64_t n = 0;
      if (!varint(&n) || n > data_.size() - pos_) return false;
      f->bytes = data_.substr(pos_, n);
      pos_ += n;
      return true;
    }
    if (f->wire == 5 && data_.size() - pos_ >= 4) {
      pos_ += 4;
      return true;
    }
    if (f->wire == 1 && data_.size() - pos_ >= 8) {
      f->bytes = data_.substr(pos_, 8);
      pos_ += 8;
      return true;
    }
    return false;
  }

 private:
  bool varint(uint64_t* out) {
    *out = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      *out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  std::string_view data_;
  size_t pos_ = 0;
};

// Appends fields to a message. Proto3 leaves default values out; so do the callers (an empty
// string or a false bool is simply not written).
class Writer {
 public:
  void varintField(uint32_t number, uint64_t value) {
    key(number, 0);
    varint(value);
  }
  void boolField(uint32_t number, bool value) { varintField(number, value ? 1 : 0); }
  void bytesField(uint32_t number, std::string_view value) {
    key(number, 2);
    varint(value.size());
    out_.append(value);
  }
  // A nested message is its serialized bytes, length-prefixed.
  void messageField(uint32_t number, const Writer& message) { bytesField(number, message.out_); }
  void doubleField(uint32_t number, double value) {
    key(number, 1);
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  const std::string& bytes() const { return out_; }

 private:
  void key(uint32_t number, uint32_t wire) { varint((uint64_t{number} << 3) | wire); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

}  // namespace ringmaster::local::protobuf
