#pragma once
// WatchEvent<T>: one line of a watch stream, {"type": ..., "object": ...}:
//   ADDED / MODIFIED / DELETED  object is the T (DELETED carries its last state)
//   BOOKMARK                    object is a T with only apiVersion, kind, metadata.resourceVersion
//   ERROR                       object is a Status (410 Expired: the watcher must relist); it is
//                               decoded into `error`, and `object` stays empty.
//
// Thread-safety: plain value. Failure: decode returns InvalidArgument naming the field path
// ("type: unknown watch event type \"FOO\"", "object.spec.replicas: ...").

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_status.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/field_path.h"

namespace ringmaster::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

std::string_view watchEventTypeName(WatchEventType type);  // "ADDED", ...
std::optional<WatchEventType> parseWatchEventType(std::string_view name);

template <class T>
struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  T object;         // every type but kError
  ApiStatus error;  // kError only
  bool operator==(const WatchEvent&) const = default;
};

namespace detail {
// Decodes "type" and returns the "object" member (null when absent).
core::Status decodeWatchEnvelope(const nlohmann::json& j, const FieldPath& path,
                                 WatchEventType& type, const nlohmann::json*& object);
}  // namespace detail

template <class T>
core::Status fromJson(const nlohmann::json& j, const FieldPath& path, WatchEvent<T>& out) {
  out = WatchEvent<T>{};
  const nlohmann::json* object = nullptr;
  core::Status s = detail::decodeWatchEnvelope(j, path, out.type, object);
  if (!s.ok()) return s;
  const FieldPath object_path = path.child("object");
  if (out.type == WatchEventType::kError) return fromJson(*object, object_path, out.error);
  return fromJson(*object, object_path, out.object);
}

template <class T>
nlohmann::json toJson(const WatchEvent<T>& in) {
  nlohmann::json out = nlohmann::json::object();
  out["type"] = std::string(watchEventTypeName(in.type));
  out["object"] = in.type == WatchEventType::kError ? toJson(in.error) : toJson(in.object);
  return out;
}

}  // namespace ringmaster::kube
