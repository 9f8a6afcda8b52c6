#include "ringmaster/kube/detail/object_codec.h"

#include <cmath>
#include <limits>

#include "ringmaster/core/base64.h"

namespace ringmaster::kube::detail {
namespace {

// An integral JSON number as int64 (2.0 counts; 2.5 does not).
core::Status readInteger(const json& j, const FieldPath& path, int64_t lo, int64_t hi,
                         std::string_view type_name, int64_t& out) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(hi)) {
      return path.error("integer " + j.dump() + " out of range for " + std::string(type_name));
    }
    out = static_cast<int64_t>(v);
    return core::Status::Ok();
  }
  if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) {
      return path.error("integer " + j.dump() + " out of range for " + std::string(type_name));
    }
    out = v;
    return core::Status::Ok();
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::trunc(d) != d) return path.error("expected integer, got number " + j.dump());
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return path.error("integer " + j.dump() + " out of range for " + std::string(type_name));
    }
    out = static_cast<int64_t>(d);
    return core::Status::Ok();
  }
  return typeError(path, "integer", j);
}

}  // namespace

std::string_view jsonTypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    default:
      return j.type_name();  // "null", "object", "array", "string", "boolean", "binary"
  }
}

core::Status typeError(const FieldPath& path, std::string_view expected, const json& got) {
  return path.error("expected " + std::string(expected) + ", got " +
                    std::string(jsonTypeName(got)));
}

core::Status decodeValue(const json& j, const FieldPath& path, std::string& out) {
  if (j.is_null()) {
    out.clear();
    return core::Status::Ok();
  }
  if (!j.is_string()) return typeError(path, "string", j);
  out = j.get_ref<const std::string&>();
  return core::Status::Ok();
}

core::Status decodeValue(const json& j, const FieldPath& path, bool& out) {
  if (!j.is_boolean()) return typeError(path, "boolean", j);
  out = j.get<bool>();
  return core::Status::Ok();
}

core::Status decodeValue(const json& j, const FieldPath& path, int32_t& out) {
  int64_t v = 0;
  core::Status s = readInteger(j, path, std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max(), "int32", v);
  if (s.ok()) out = static_cast<int32_t>(v);
  return s;
}

core::Status decodeValue(const json& j, const FieldPath& path, int64_t& out) {
  return readInteger(j, path, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), "int64", out);
}

core::Status decodeValue(const json& j, const FieldPath& path, double& out) {
  if (!j.is_number()) return typeError(path, "number", j);
  out = j.get<double>();
  return core::Status::Ok();
}

core::Status decodeValue(const json& j, const FieldPath& path, json& out) {
  out = j;
  return core::Status::Ok();
}

core::Status decodeBytesMap(const json& j, const FieldPath& path,
                            std::map<std::string, std::string>& out) {
  out.clear();
  if (j.is_null()) return core::Status::Ok();
  if (!j.is_object()) return typeError(path, "object", j);
  for (const auto& [key, value] : j.items()) {
    const FieldPath item = path.child(key);
    if (!value.is_string()) return typeError(item, "base64 string", value);
    std::optional<std::string> bytes = core::base64Decode(value.get_ref<const std::string&>());
    if (!bytes) return item.error("expected base64, got \"" + value.get<std::string>() + "\"");
    out.emplace(key, std::move(*bytes));
  }
  return core::Status::Ok();
}

json encodeBytesMap(const std::map<std::string, std::string>& in) {
  json out = json::object();
  for (const auto& [key, bytes] : in) out[key] = core::base64Encode(bytes);
  return out;
}

ObjectDecoder::ObjectDecoder(const json& j, const FieldPath& path) : j_(j), path_(path) {
  if (!j.is_object() && !j.is_null()) status_ = typeError(path, "object", j);
}

const json* ObjectDecoder::claim(std::string_view key) {
  if (!status_.ok() || !j_.is_object()) return nullptr;
  auto it = j_.find(key);
  if (it == j_.end()) return nullptr;
  claimed_.push_back(key);
  return &*it;
}

core::Status ObjectDecoder::finish(json& extra) {
  extra = nullptr;
  if (!status_.ok()) return status_;
  if (!j_.is_object() || claimed_.size() == j_.size()) return status_;
  extra = json::object();
  for (const auto& [key, value] : j_.items()) {
    bool known = false;
    for (std::string_view c : claimed_) {
      if (c == key) {
        known = true;
        break;
      }
    }
    if (!known) extra[key] = value;
  }
  return status_;
}

}  // namespace ringmaster::kube::detail
