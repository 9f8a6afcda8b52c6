#pragma once
// The machinery behind every typed codec in this library (not for use outside lib/kube except
// through List<T>/WatchEvent<T>). A type's fields are listed once, in a visit function
//   template <class V, class S> void visitFoo(V& v, S& s) { v("name", s.name); ... }
// that runs with an ObjectDecoder (decode) or an ObjectEncoder (encode), so both directions agree.
//
// Field rules (the conventions of codec.h):
//   std::optional<T>       present <-> has_value(); encode writes it whenever set.
//   std::string            omitted on encode when empty (Go's omitempty).
//   vector / map           omitted when empty; JSON null decodes as empty.
//   nlohmann::json         opaque: kept verbatim, omitted when null.
//   bool / integers / double (plain)  always written.
//   nested struct (plain)  omitted when it encodes to {}.
//   v.required(key, f)     always written, even when empty (List.items, Pod containers).
//   Keys that no field claims are kept in the struct's `extra` object and written back, so a
//   read-modify-write never drops fields this library does not model.
//
// Thread-safety: decoders/encoders are single-use stack objects. Failure: the first field that
// fails to decode sets an InvalidArgument naming its path; later fields are skipped.

#include <concepts>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/field_path.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube::detail {

using nlohmann::json;

// Types for which JSON null is a value (the zero time), not absence.
template <class T>
inline constexpr bool kNullIsValue = false;
template <>
inline constexpr bool kNullIsValue<Time> = true;
template <>
inline constexpr bool kNullIsValue<MicroTime> = true;
template <>
inline constexpr bool kNullIsValue<json> = true;

// "string", "number", "object", ... as in "expected integer, got string".
std::string_view jsonTypeName(const json& j);
core::Status typeError(const FieldPath& path, std::string_view expected, const json& got);

core::Status decodeValue(const json& j, const FieldPath& path, std::string& out);
core::Status decodeValue(const json& j, const FieldPath& path, bool& out);
core::Status decodeValue(const json& j, const FieldPath& path, int32_t& out);
core::Status decodeValue(const json& j, const FieldPath& path, int64_t& out);
core::Status decodeValue(const json& j, const FieldPath& path, double& out);
core::Status decodeValue(const json& j, const FieldPath& path, json& out);

template <class T>
concept HasFromJson = requires(const json& j, const FieldPath& p, T& t) {
  { fromJson(j, p, t) } -> std::same_as<core::Status>;
};
// Struct-like types with their own codec. Scalars are excluded because IntOrString converts
// implicitly from int32_t and std::string.
template <class T>
concept HasToJson =
    !std::is_arithmetic_v<T> && !std::same_as<T, std::string> && requires(const T& t) {
  { toJson(t) } -> std::same_as<json>;
};

template <HasFromJson T>
core::Status decodeValue(const json& j, const FieldPath& path, T& out);
template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::optional<T>& out);
template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::vector<T>& out);
template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::map<std::string, T>& out);

template <HasFromJson T>
core::Status decodeValue(const json& j, const FieldPath& path, T& out) {
  return fromJson(j, path, out);
}

template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::optional<T>& out) {
  if (j.is_null() && !kNullIsValue<T>) {
    out.reset();
    return core::Status::Ok();
  }
  T value{};
  core::Status s = decodeValue(j, path, value);
  if (!s.ok()) return s;
  out = std::move(value);
  return core::Status::Ok();
}

template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::vector<T>& out) {
  out.clear();
  if (j.is_null()) return core::Status::Ok();
  if (!j.is_array()) return typeError(path, "array", j);
  out.resize(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    core::Status s = decodeValue(j[i], path.index(i), out[i]);
    if (!s.ok()) return s;
  }
  return core::Status::Ok();
}

template <class T>
core::Status decodeValue(const json& j, const FieldPath& path, std::map<std::string, T>& out) {
  out.clear();
  if (j.is_null()) return core::Status::Ok();
  if (!j.is_object()) return typeError(path, "object", j);
  for (const auto& [key, value] : j.items()) {
    T decoded{};
    core::Status s = decodeValue(value, path.child(key), decoded);
    if (!s.ok()) return s;
    out.emplace(key, std::move(decoded));
  }
  return core::Status::Ok();
}

inline json encodeValue(const std::string& v) { return v; }
inline json encodeValue(bool v) { return v; }
inline json encodeValue(int32_t v) { return v; }
inline json encodeValue(int64_t v) { return v; }
inline json encodeValue(double v) { return v; }
inline json encodeValue(const json& v) { return v; }
template <HasToJson T>
json encodeValue(const T& v) {
  return toJson(v);
}
template <class T>
json encodeValue(const std::vector<T>& v);
template <class T>
json encodeValue(const std::map<std::string, T>& v);

template <class T>
json encodeValue(const std::vector<T>& v) {
  json out = json::array();
  for (const T& item : v) out.push_back(encodeValue(item));
  return out;
}

template <class T>
json encodeValue(const std::map<std::string, T>& v) {
  json out = json::object();
  for (const auto& [key, item] : v) out[key] = encodeValue(item);
  return out;
}

// Base64 for Secret data and ConfigMap binaryData: the map holds raw bytes.
core::Status decodeBytesMap(const json& j, const FieldPath& path,
                            std::map<std::string, std::string>& out);
json encodeBytesMap(const std::map<std::string, std::string>& in);

// Reads the fields of one JSON object; see the rules above.
class ObjectDecoder {
 public:
  ObjectDecoder(const json& j, const FieldPath& path);

  template <class T>
  void operator()(std::string_view key, T& field) {
    const json* value = claim(key);
    if (value != nullptr) note(decodeValue(*value, path_.child(key), field));
  }
  template <class T>
  void required(std::string_view key, T& field) {
    (*this)(key, field);
  }
  void bytesMap(std::string_view key, std::map<std::string, std::string>& field) {
    const json* value = claim(key);
    if (value != nullptr) note(decodeBytesMap(*value, path_.child(key), field));
  }

  // The first error, or OK after moving unclaimed keys into `extra` (null when there are none).
  core::Status finish(json& extra);

 private:
  const json* claim(std::string_view key);  // nullptr when absent or after an error
  void note(core::Status s) {
    if (!s.ok() && status_.ok()) status_ = std::move(s);
  }

  const json& j_;
  const FieldPath& path_;
  core::Status status_;
  std::vector<std::string_view> claimed_;
};

// Writes the fields of one JSON object on top of the struct's `extra` keys.
class ObjectEncoder {
 public:
  explicit ObjectEncoder(const json& extra)
      : out_(extra.is_object() ? extra : json(json::object())) {}

  template <class T>
  void operator()(std::string_view key, const std::optional<T>& field) {
    if (field.has_value()) put(key, encodeValue(*field));
  }
  void operator()(std::string_view key, const std::string& field) {
    if (!field.empty()) put(key, field);
  }
  void operator()(std::string_view key, const json& field) {
    if (!field.is_null()) put(key, field);
  }
  template <class T>
  void operator()(std::string_view key, const std::vector<T>& field) {
    if (!field.empty()) put(key, encodeValue(field));
  }
  template <class T>
  void operator()(std::string_view key, const std::map<std::string, T>& field) {
    if (!field.empty()) put(key, encodeValue(field));
  }
  template <class T>
  requires std::is_arithmetic_v<T>
  void operator()(std::string_view key, const T& field) { put(key, encodeValue(field)); }
  template <HasToJson T>
  void operator()(std::string_view key, const T& field) {
    json value = encodeValue(field);
    if (!(value.is_object() && value.empty())) put(key, std::move(value));
  }
  template <class T>
  void required(std::string_view key, const T& field) {
    put(key, encodeValue(field));
  }
  void bytesMap(std::string_view key, const std::map<std::string, std::string>& field) {
    if (!field.empty()) put(key, encodeBytesMap(field));
  }

  json take() { return std::move(out_); }

 private:
  void put(std::string_view key, json value) { out_[std::string(key)] = std::move(value); }
  json out_;
};

}  // namespace ringmaster::kube::detail

// Declares the codec of a struct with an `extra` member (in a public header).
#define RM_KUBE_DECLARE_CODEC(Type)                                                          \
  ::ringmaster::core::Status fromJson(const ::nlohmann::json& j,                             \
                                      const ::ringmaster::kube::FieldPath& path, Type& out); \
  ::nlohmann::json toJson(const Type& in)

// Defines that codec from a visit function template (in a .cc, inside namespace kube).
#define RM_KUBE_DEFINE_CODEC(Type, visitFn)                                                   \
  ::ringmaster::core::Status fromJson(const ::nlohmann::json& j,                              \
                                      const ::ringmaster::kube::FieldPath& path, Type& out) { \
    out = Type{};                                                                             \
    ::ringmaster::kube::detail::ObjectDecoder decoder(j, path);                               \
    visitFn(decoder, out);                                                                    \
    return decoder.finish(out.extra);                                                         \
  }                                                                                           \
  ::nlohmann::json toJson(const Type& in) {                                                   \
    ::ringmaster::kube::detail::ObjectEncoder encoder(in.extra);                              \
    visitFn(encoder, in);                                                                     \
    return encoder.take();                                                                    \
  }
