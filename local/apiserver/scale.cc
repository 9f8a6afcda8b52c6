#include "local/apiserver/scale.h"

#include <cstdint>
#include <limits>

#include "ringmaster/core/json.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;
using core::stringMember;

// What a Scale keeps of its object's metadata, in kube-apiserver's order.
constexpr const char* kScaleMetadata[] = {"name", "namespace", "uid", "resourceVersion",
                                          "creationTimestamp"};

// ".spec.replicas" -> {"spec", "replicas"}; the CRD's checks allow only such simple paths.
std::vector<std::string> pathSegments(const std::string& path) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < path.size()) {
    if (path[at] == '.') {
      ++at;
      continue;
    }
    size_t end = path.find('.', at);
    if (end == std::string::npos) end = path.size();
    out.push_back(path.substr(at, end - at));
    at = end;
  }
  return out;
}

const json* valueAt(const json& object, const std::string& path) {
  const json* at = &object;
  for (const auto& s : pathSegments(path)) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(s);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

void setAt(json& object, const std::string& path, json value) {
  json* at = &object;
  for (const auto& s : pathSegments(path)) {
    if (!at->is_object()) *at = json::object();
    at = &(*at)[s];
  }
  *at = std::move(value);
}

int64_t countAt(const json& object, const std::string& path) {
  const json* v = valueAt(object, path);
  return v && v->is_number_integer() ? v->get<int64_t>() : 0;
}

// One path's count: absent is fine (0), anything else must be an int32 >= 0.
void checkCount(const json& object, const std::string& path, std::vector<StatusCause>& causes) {
  const json* v = valueAt(object, path);
  if (!v) return;
  if (!v->is_number_integer()) {
    causes.push_back(
        {"FieldValueInvalid", "Invalid value: " + v->dump() + ": should be an integer", path});
    return;
  }
  const int64_t n = v->get<int64_t>();
  if (n < 0) {
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: " + std::to_string(n) + ": should be a non-negative integer",
                      path});
  } else if (n > std::numeric_limits<int32_t>::max()) {
    causes.push_back(
        {"FieldValueInvalid",
         "Invalid value: " + std::to_string(n) + ": should be less than or equal to 2147483647",
         path});
  }
}

void checkPath(const json& scale, const char* key, const std::string& at,
               const std::vector<std::string>& under, const std::string& what, bool required,
               std::vector<StatusCause>& causes) {
  const std::string field = at + "." + key;
  auto it = scale.find(key);
  if (it == scale.end() || !it->is_string() || it->get<std::string>().empty()) {
    if (required) causes.push_back({"FieldValueRequired", "Required value", field});
    return;
  }
  const std::string path = it->get<std::string>();
  bool ok = false;
  for (const auto& prefix : under) ok |= path.rfind(prefix, 0) == 0 && path.size() > prefix.size();
  // Simple paths only: no array notation, no empty segment.
  ok = ok && path.find_first_of("[]") == std::string::npos &&
       path.find("..") == std::string::npos && path.back() != '.';
  if (!ok) {
    causes.push_back({"FieldValueInvalid",
                      "Invalid value: \"" + path + "\": should be a json path under " + what,
                      field});
  }
}

}  // namespace

std::optional<ScaleSubresource> scaleSubresourceOf(const json& crd_version) {
  if (!crd_version.is_object()) return std::nullopt;
  auto sub = crd_version.find("subresources");
  if (sub == crd_version.end() || !sub->is_object()) return std::nullopt;
  auto scale = sub->find("scale");
  if (scale == sub->end() || !scale->is_object()) return std::nullopt;
  return ScaleSubresource{stringMember(*scale, "specReplicasPath"),
                          stringMember(*scale, "statusReplicasPath"),
                          stringMember(*scale, "labelSelectorPath")};
}

std::vector<StatusCause> scaleSubresourceCauses(const json& crd_version, const std::string& at) {
  std::vector<StatusCause> causes;
  if (!crd_version.is_object() || !crd_version.contains("subresources")) return causes;
  const json& sub = crd_version["subresources"];
  if (!sub.is_object() || !sub.contains("scale")) return causes;
  const json& scale = sub["scale"];
  if (!scale.is_object()) {
    causes.push_back(
        {"FieldValueTypeInvalid", "Invalid value: " + scale.dump() + ": must be an object", at});
    return causes;
  }
  checkPath(scale, "specReplicasPath", at, {".spec."}, ".spec", true, causes);
  checkPath(scale, "statusReplicasPath", at, {".status."}, ".status", true, causes);
  checkPath(scale, "labelSelectorPath", at, {".spec.", ".status."}, "either .spec or .status",
            false, causes);
  return causes;
}

json scaleOf(const ScaleSubresource& scale, const json& object) {
  const json meta = object.value("metadata", json::object());
  json m = json::object();
  for (const char* key : kScaleMetadata) {
    if (meta.contains(key)) m[key] = meta[key];
  }
  json status = {{"replicas", countAt(object, scale.status_replicas_path)}};
  if (!scale.label_selector_path.empty()) {
    const json* selector = valueAt(object, scale.label_selector_path);
    if (selector && selector->is_string() && !selector->get<std::string>().empty()) {
      status["selector"] = *selector;
    }
  }
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", m},
          {"spec", {{"replicas", countAt(object, scale.spec_replicas_path)}}},
          {"status", status}};
}

std::string scaleText(const json& scale) {
  using ordered = nlohmann::ordered_json;
  ordered meta = ordered::object();
  const json m = scale.value("metadata", json::object());
  for (const char* key : kScaleMetadata) {
    if (m.contains(key)) meta[key] = ordered::parse(m[key].dump());
  }
  ordered status = ordered::object();
  const json st = scale.value("status", json::object());
  status["replicas"] = ordered::parse(st.value("replicas", json(0)).dump());
  if (st.contains("selector")) status["selector"] = ordered::parse(st["selector"].dump());
  ordered doc;
  doc["kind"] = "Scale";
  doc["apiVersion"] = "autoscaling/v1";
  doc["metadata"] = meta;
  // ScaleSpec's replicas is omitempty, ScaleStatus's is not.
  doc["spec"] = ordered::object();
  const json replicas = scale["spec"].value("replicas", json(0));
  if (replicas != json(0)) doc["spec"]["replicas"] = ordered::parse(replicas.dump());
  doc["status"] = status;
  return doc.dump();
}

ApiResult<json> withScale(const ScaleSubresource& scale, json object, const json& written,
                          const std::string& name) {
  if (!written.is_object()) return badRequestError("the body of the request is not a Scale");
  const json meta = written.value("metadata", json::object());
  const std::string body_name = meta.is_object() ? stringMember(meta, "name") : "";
  if (body_name.empty()) {
    return badRequestError("the name of the object (" + name +
                           " based on URL) was undeterminable: name must be provided");
  }
  if (body_name != name) {
    return badRequestError("the name of the object (" + body_name +
                           ") does not match the name on the URL (" + name + ")");
  }
  json replicas = json(0);
  if (auto spec = written.find("spec"); spec != written.end() && spec->is_object()) {
    if (auto r = spec->find("replicas"); r != spec->end() && !r->is_null()) replicas = *r;
  }
  if (!replicas.is_number_integer()) {
    return badRequestError(
        "Scale in version \"v1\" cannot be handled as a Scale: the replica "
        "count spec.replicas must be an integer, not " +
        replicas.dump());
  }
  setAt(object, scale.spec_replicas_path, replicas);
  // A Scale that names a resourceVersion is written only over that version (kubectl scale
  // --current-replicas); one that names none is written over whatever is there.
  const std::string rv = stringMember(meta, "resourceVersion");
  if (!rv.empty()) object["metadata"]["resourceVersion"] = rv;
  return object;
}

ApiResult<json> withScalePatch(const ScaleSubresource& scale, json object, PatchType type,
                               std::string_view patch, const std::string& name) {
  if (type == PatchType::kStrategicMerge) return customResourcePatchTypeError();
  const json current = scaleOf(scale, object);
  auto patched = applyPatch(type, current, patch);
  if (!patched.ok()) return patched.error();
  const json& r = patched.value().value("spec", json::object()).value("replicas", json(0));
  if (!r.is_number_integer()) {
    return StatusError(422, "Invalid",
                       "The request is invalid: patch: Invalid value: " +
                           json(patched.value().dump()).dump() +
                           ": spec.replicas must be an integer")
        .addCause(
            {"FieldValueInvalid", "Invalid value: " + r.dump() + ": must be an integer", "patch"});
  }
  // The patched Scale carries the object's name and resourceVersion: a patch that sets another
  // version makes it a precondition.
  return withScale(scale, std::move(object), patched.value(), name);
}

std::vector<StatusCause> scaleCauses(const ScaleSubresource& scale, const json& object,
                                     bool status_write) {
  std::vector<StatusCause> causes;
  if (!status_write) checkCount(object, scale.spec_replicas_path, causes);
  checkCount(object, scale.status_replicas_path, causes);
  if (!scale.label_selector_path.empty()) {
    const json* selector = valueAt(object, scale.label_selector_path);
    if (selector && !selector->is_string()) {
      causes.push_back({"FieldValueInvalid",
                        "Invalid value: " + selector->dump() + ": should be a string",
                        scale.label_selector_path});
    }
  }
  return causes;
}

}  // namespace ringmaster::local
