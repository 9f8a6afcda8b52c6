#include "local/apiserver/protobuf_body.h"

#include <cstdint>
#include <string>

#include "ringmaster/core/base64.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

// One field of a protobuf message: varint (wire type 0) or length-delimited (2).
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

// map<string, string|bytes> entry {1: key, 2: value}.
bool mapEntry(std::string_view entry, json* map, bool bytes_value) {
  Reader r(entry);
  std::string key, value;
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 2) key = f.bytes;
    if (f.number == 2 && f.wire == 2) value = f.bytes;
  }
  (*map)[key] = bytes_value ? core::base64Encode(value) : value;
  return true;
}

bool objectMeta(std::string_view data, json* meta) {
  Reader r(data);
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.wire != 2) continue;
    const std::string s(f.bytes);
    switch (f.number) {
      case 1:
        if (!s.empty()) (*meta)["name"] = s;
        break;
      case 2:
        if (!s.empty()) (*meta)["generateName"] = s;
        break;
      case 3:
        if (!s.empty()) (*meta)["namespace"] = s;
        break;
      case 11:
        if (!mapEntry(f.bytes, &(*meta)["labels"], false)) return false;
        break;
      case 12:
        if (!mapEntry(f.bytes, &(*meta)["annotations"], false)) return false;
        break;
      case 14:
        (*meta)["finalizers"].push_back(s);
        break;
      default:
        break;  // server-set or unused by the generators
    }
  }
  return true;
}

bool decodeKind(const std::string& kind, std::string_view raw, json* obj) {
  Reader r(raw);
  Field f;
  json meta = json::object();
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 2) {
      if (!objectMeta(f.bytes, &meta)) return false;
      continue;
    }
    if (kind == "ConfigMap") {
      if (f.number == 2 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["data"], false)) return false;
      if (f.number == 3 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["binaryData"], true))
        return false;
      if (f.number == 4 && f.wire == 0) (*obj)["immutable"] = f.varint != 0;
    } else if (kind == "Secret") {
      if (f.number == 2 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["data"], true)) return false;
      if (f.number == 3 && f.wire == 2 && !f.bytes.empty()) (*obj)["type"] = std::string(f.bytes);
      if (f.number == 4 && f.wire == 2 && !mapEntry(f.bytes, &(*obj)["stringData"], false))
        return false;
      if (f.number == 5 && f.wire == 0) (*obj)["immutable"] = f.varint != 0;
    } else if (kind == "Namespace") {
      if (f.number == 2 && f.wire == 2) {  // NamespaceSpec{1: finalizers}
        Reader spec(f.bytes);
        Field g;
        json& spec_json = (*obj)["spec"] = json::object();
        while (!spec.done()) {
          if (!spec.next(&g)) return false;
          if (g.number == 1 && g.wire == 2) spec_json["finalizers"].push_back(std::string(g.bytes));
        }
      }
    }
  }
  (*obj)["metadata"] = meta;
  return true;
}

}  // namespace

std::optional<json> decodeProtobufBody(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) return std::nullopt;
  Reader r(body.substr(4));
  Field f;
  std::string api_version, kind;
  std::string_view raw;
  while (!r.done()) {
    if (!r.next(&f)) return std::nullopt;
    if (f.number == 1 && f.wire == 2) {  // TypeMeta{1: apiVersion, 2: kind}
      Reader tm(f.bytes);
      Field g;
      while (!tm.done()) {
        if (!tm.next(&g)) return std::nullopt;
        if (g.number == 1 && g.wire == 2) api_version = g.bytes;
        if (g.number == 2 && g.wire == 2) kind = g.bytes;
      }
    } else if (f.number == 2 && f.wire == 2) {
      raw = f.bytes;
    } else if ((f.number == 3 || f.number == 4) && f.wire == 2 && !f.bytes.empty()) {
      return std::nullopt;  // a content encoding/type inside the envelope: not ours
    }
  }
  if (api_version != "v1" || (kind != "ConfigMap" && kind != "Secret" && kind != "Namespace")) {
    return std::nullopt;
  }
  json obj = {{"apiVersion", api_version}, {"kind", kind}};
  if (!decodeKind(kind, raw, &obj)) return std::nullopt;
  return obj;
}

}  // namespace ringmaster::local
