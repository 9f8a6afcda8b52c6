#include "ringmaster/kube/watch_event.h"

namespace ringmaster::kube {
namespace {

constexpr std::pair<WatchEventType, std::string_view> kNames[] = {
    {WatchEventType::kAdded, "ADDED"},     {WatchEventType::kModified, "MODIFIED"},
    {WatchEventType::kDeleted, "DELETED"}, {WatchEventType::kBookmark, "BOOKMARK"},
    {WatchEventType::kError, "ERROR"},
};

}  // namespace

std::string_view watchEventTypeName(WatchEventType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return "UNKNOWN";
}

std::optional<WatchEventType> parseWatchEventType(std::string_view name) {
  for (const auto& [t, n] : kNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

namespace detail {

core::Status decodeWatchEnvelope(const nlohmann::json& j, const FieldPath& path,
                                 WatchEventType& type, const nlohmann::json*& object) {
  if (!j.is_object()) return typeError(path, "object", j);
  auto type_it = j.find("type");
  const FieldPath type_path = path.child("type");
  if (type_it == j.end()) return type_path.error("missing");
  if (!type_it->is_string()) return typeError(type_path, "string", *type_it);
  std::optional<WatchEventType> parsed = parseWatchEventType(type_it->get<std::string>());
  if (!parsed) {
    return type_path.error("unknown watch event type \"" + type_it->get<std::string>() + "\"");
  }
  type = *parsed;
  auto object_it = j.find("object");
  if (object_it == j.end()) return path.child("object").error("missing");
  object = &*object_it;
  return core::Status::Ok();
}

}  // namespace detail
}  // namespace ringmaster::kube
