#include "local/apiserver/protobuf_body.h"

#include <cstdint>
#include <string>

#include "local/apiserver/protobuf_wire.h"
#include "ringmaster/core/base64.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

using protobuf::Field;
using protobuf::Reader;

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

// meta/v1 DeleteOptions{1: gracePeriodSeconds, 2: Preconditions{1: uid, 2: resourceVersion},
// 3: orphanDependents, 4: propagationPolicy, 5: repeated dryRun}.
bool decodeDeleteOptions(std::string_view raw, json* obj) {
  Reader r(raw);
  Field f;
  while (!r.done()) {
    if (!r.next(&f)) return false;
    if (f.number == 1 && f.wire == 0) (*obj)["gracePeriodSeconds"] = static_cast<int64_t>(f.varint);
    if (f.number == 3 && f.wire == 0) (*obj)["orphanDependents"] = f.varint != 0;
    if (f.number == 4 && f.wire == 2) (*obj)["propagationPolicy"] = std::string(f.bytes);
    if (f.number == 5 && f.wire == 2) (*obj)["dryRun"].push_back(std::string(f.bytes));
    if (f.number == 2 && f.wire == 2) {
      Reader pre(f.bytes);
      Field g;
      json& p = (*obj)["preconditions"] = json::object();
      while (!pre.done()) {
        if (!pre.next(&g)) return false;
        if (g.number == 1 && g.wire == 2) p["uid"] = std::string(g.bytes);
        if (g.number == 2 && g.wire == 2) p["resourceVersion"] = std::string(g.bytes);
      }
    }
  }
  return true;
}

bool decodeKind(const std::string& kind, std::string_view raw, json* obj) {
  if (kind == "DeleteOptions") return decodeDeleteOptions(raw, obj);
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
  // DeleteOptions is registered in every group-version (client-go's Secrets client sends it as
  // "v1"; others as "meta.k8s.io/v1").
  const bool delete_options = kind == "DeleteOptions";
  if ((api_version != "v1" && !delete_options) ||
      (kind != "ConfigMap" && kind != "Secret" && kind != "Namespace" && !delete_options)) {
    return std::nullopt;
  }
  json obj = {{"apiVersion", api_version}, {"kind", kind}};
  if (!decodeKind(kind, raw, &obj)) return std::nullopt;
  return obj;
}

}  // namespace ringmaster::local
