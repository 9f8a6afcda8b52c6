#pragma once
// The JSON codecs of the typed Kubernetes objects in this library, behind one front:
//   core::Result<Pod> pod = decode<Pod>(json);        nlohmann::json j = encode(pod);
//   core::Result<Pod> pod = decodeText<Pod>(body);    std::string body = encodeText(pod);
// Every type T here has a pair of free functions found by argument-dependent lookup,
//   core::Status fromJson(const nlohmann::json&, const FieldPath&, T&);
//   nlohmann::json toJson(const T&);
// declared next to T (pod.h, lease.h, ...); decode/encode are thin templates over them.
//
// Conventions (every kind follows them; detail/object_codec.h implements them):
// - Field names are the Kubernetes JSON names in snake_case (`resourceVersion` ->
//   resource_version; `namespace` -> namespace_name, `continue` -> continue_token).
// - Optional fields are std::optional; absent stays absent on encode. Plain std::string,
//   vector and map fields are written only when non-empty (Kubernetes' omitempty), so decoding
//   and re-encoding an object from the API server reproduces it, apart from key order.
// - JSON null decodes as absent, except for Time/MicroTime, where it is the zero time (and is
//   written back as null, as Kubernetes does).
// - Unknown fields never fail a decode. They are kept in each struct's `extra` object and written
//   back, so a read-modify-write (GET, change, PUT) does not strip fields this library does not
//   model (tolerations, podIPs, ...). `extra` takes part in operator==.
// - Numbers are typed as Kubernetes defines them (int32/int64); an integral float such as 2.0 is
//   accepted for an integer, 2.5 is not.
// - Decode errors are InvalidArgument naming the full field path:
//   "spec.containers[0].resources.limits.cpu: expected a quantity, got \"abc\"",
//   "spec.replicas: expected integer, got string".
//
// Thread-safety: all functions are reentrant; objects are plain values. Failure: only decode*
// fails; encode never throws (invalid UTF-8 in strings is replaced when dumping text).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {

// Parses JSON text within core::kMaxJsonDepth; InvalidArgument "invalid JSON: <parser message>"
// on a syntax error.
core::Result<nlohmann::json> parseJson(std::string_view text);

// Compact JSON text, as the API server and kubectl send it.
std::string dumpJson(const nlohmann::json& j);

template <class T>
core::Result<T> decode(const nlohmann::json& j) {
  T out{};
  core::Status s = fromJson(j, FieldPath(), out);
  if (!s.ok()) return s;
  return out;
}

template <class T>
nlohmann::json encode(const T& value) {
  return toJson(value);
}

template <class T>
core::Result<T> decodeText(std::string_view json_text) {
  core::Result<nlohmann::json> j = parseJson(json_text);
  if (!j.ok()) return j.status();
  return decode<T>(*j);
}

template <class T>
std::string encodeText(const T& value) {
  return dumpJson(toJson(value));
}

// Sets a top-level object's apiVersion and kind from its type (Pod -> "v1", "Pod"). A kind that
// more than one API serves (PodGroup) has no apiVersion of its own: its objects carry theirs.
template <class T>
void setTypeMeta(T& object) {
  if constexpr (requires { T::kApiVersion; }) object.api_version = T::kApiVersion;
  object.kind = T::kKind;
}

}  // namespace ringmaster::kube
