#include "ringmaster/kube/raw_object.h"

#include "ringmaster/kube/detail/object_codec.h"

namespace ringmaster::kube {

namespace {

// Everything but the document itself.
core::Status decodeHead(const nlohmann::json& j, const FieldPath& path, RawObject& out) {
  out = RawObject{};
  if (!j.is_object()) return detail::typeError(path, "object", j);
  TypeMeta type;
  RM_RETURN_IF_ERROR(fromJson(j, path, type));
  out.api_version = std::move(type.api_version);
  out.kind = std::move(type.kind);
  auto metadata = j.find("metadata");
  const FieldPath metadata_path = path.child("metadata");
  if (metadata == j.end()) return metadata_path.error("missing");
  return fromJson(*metadata, metadata_path, out.metadata);
}

}  // namespace

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, RawObject& out) {
  RM_RETURN_IF_ERROR(decodeHead(j, path, out));
  out.object = j;
  return core::Status::Ok();
}

core::Status fromJson(nlohmann::json&& j, const FieldPath& path, RawObject& out) {
  RM_RETURN_IF_ERROR(decodeHead(j, path, out));
  out.object = std::move(j);
  return core::Status::Ok();
}

nlohmann::json toJson(const RawObject& in) { return in.object; }

core::Result<WatchEvent<RawObject>> decodeRawWatchEvent(std::string_view line) {
  RM_ASSIGN_OR_RETURN(nlohmann::json j, parseJson(line));
  WatchEvent<RawObject> event;
  const nlohmann::json* object = nullptr;
  const FieldPath path;
  RM_RETURN_IF_ERROR(detail::decodeWatchEnvelope(j, path, event.type, object));
  const FieldPath object_path = path.child("object");
  if (event.type == WatchEventType::kError) {
    RM_RETURN_IF_ERROR(fromJson(*object, object_path, event.error));
    return event;
  }
  RM_RETURN_IF_ERROR(fromJson(std::move(j["object"]), object_path, event.object));
  return event;
}

}  // namespace ringmaster::kube
