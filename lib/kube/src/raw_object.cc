#include "ringmaster/kube/raw_object.h"

#include "ringmaster/kube/detail/object_codec.h"

namespace ringmaster::kube {

core::Status fromJson(const nlohmann::json& j, const FieldPath& path, RawObject& out) {
  out = RawObject{};
  if (!j.is_object()) return detail::typeError(path, "object", j);
  TypeMeta type;
  RM_RETURN_IF_ERROR(fromJson(j, path, type));
  out.api_version = std::move(type.api_version);
  out.kind = std::move(type.kind);
  auto metadata = j.find("metadata");
  const FieldPath metadata_path = path.child("metadata");
  if (metadata == j.end()) return metadata_path.error("missing");
  RM_RETURN_IF_ERROR(fromJson(*metadata, metadata_path, out.metadata));
  out.object = j;
  return core::Status::Ok();
}

nlohmann::json toJson(const RawObject& in) { return in.object; }

}  // namespace ringmaster::kube
