#include "local/run/apply.h"

#include "ringmaster/kube/codec.h"

namespace ringmaster::local {
namespace {

std::string describe(const nlohmann::json& object) {
  std::string out = object.value("kind", std::string("object"));
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json::object();
  // Appended piece by piece: GCC 12 flags `" " + std::string&&` with a false -Wrestrict.
  out += " ";
  if (meta.contains("namespace")) out.append(meta["namespace"].get<std::string>()).append("/");
  out += meta.value("name", std::string("<unnamed>"));
  return out;
}

}  // namespace

core::Status checkObjectIdentity(const nlohmann::json& object, const std::string& where) {
  if (!object.is_object()) return core::invalidArgument(where + ": not a mapping");
  for (const char* field : {"apiVersion", "kind"}) {
    if (object.contains(field) && !object[field].is_string()) {
      return core::invalidArgument(where + ": " + field + " must be a string");
    }
  }
  if (!object.contains("metadata")) return core::Status::Ok();
  const nlohmann::json& meta = object["metadata"];
  if (!meta.is_object()) return core::invalidArgument(where + ": metadata must be a mapping");
  for (const char* field : {"name", "namespace"}) {
    if (meta.contains(field) && !meta[field].is_string()) {
      return core::invalidArgument(where + ": metadata." + field + " must be a string");
    }
  }
  return core::Status::Ok();
}

core::Result<ApiResourceInfo> Applier::resolve(const std::string& api_version,
                                               const std::string& kind, bool refresh) {
  const std::string key = api_version + "/" + kind;
  if (!refresh) {
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  ApiResourceInfo info;
  info.path_prefix =
      api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  kube::ApiRequest request;
  request.path = info.path_prefix;
  kube::ApiResult<kube::ApiResponse> response = kube::callApi(client_, request);
  if (!response.ok()) {
    return response.status().withContext("discovery of " + api_version +
                                         " (is the CRD installed?)");
  }
  core::Result<nlohmann::json> list = kube::parseJson(response->body);
  if (!list.ok() || !list->contains("resources")) {
    return core::internalError("discovery of " + api_version + ": not an APIResourceList");
  }
  for (const auto& r : (*list)["resources"]) {
    const std::string name = r.value("name", std::string());
    if (r.value("kind", std::string()) == kind && name.find('/') == std::string::npos) {
      info.plural = name;
      info.namespaced = r.value("namespaced", false);
      cache_[key] = info;
      return info;
    }
  }
  return core::notFound("the server does not serve kind " + kind + " in " + api_version);
}

core::Result<std::string> Applier::objectPath(const nlohmann::json& object, bool refresh) {
  RM_RETURN_IF_ERROR(checkObjectIdentity(object, "object"));
  const std::string api_version = object.value("apiVersion", std::string());
  const std::string kind = object.value("kind", std::string());
  if (api_version.empty() || kind.empty()) {
    return core::invalidArgument(describe(object) + ": apiVersion and kind are required");
  }
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json::object();
  const std::string name = meta.value("name", std::string());
  if (name.empty()) return core::invalidArgument(describe(object) + ": metadata.name is required");
  RM_ASSIGN_OR_RETURN(ApiResourceInfo info, resolve(api_version, kind, refresh));
  std::string path = info.path_prefix;
  if (info.namespaced) {
    path += "/namespaces/" + meta.value("namespace", client_.defaultNamespace());
  }
  return path + "/" + info.plural + "/" + name;
}

core::Result<nlohmann::json> Applier::apply(nlohmann::json object) {
  // A kind that appeared a moment ago (a CRD just established) may be missing from a cached
  // discovery answer: look again once.
  core::Result<std::string> path = objectPath(object);
  if (!path.ok() && path.status().code() == core::Code::kNotFound) path = objectPath(object, true);
  if (!path.ok()) return path.status();
  auto& meta = object["metadata"];
  if (!meta.contains("namespace")) {
    RM_ASSIGN_OR_RETURN(ApiResourceInfo info, resolve(object["apiVersion"], object["kind"], false));
    if (info.namespaced) meta["namespace"] = client_.defaultNamespace();
  }
  const std::string what = describe(object);
  for (int attempt = 0; attempt < 5; ++attempt) {
    kube::ApiRequest get;
    get.path = *path;
    core::Result<kube::ApiResponse> current = client_.request(get);
    if (!current.ok()) return current.status().withContext("apply " + what);
    kube::ApiRequest write;
    write.body = object.dump();
    if (current->status_code == 404) {
      write.verb = kube::Verb::kPost;
      write.path = path->substr(0, path->rfind('/'));
    } else if (current->status_code == 200) {
      RM_ASSIGN_OR_RETURN(nlohmann::json existing, kube::parseJson(current->body));
      nlohmann::json replaced = object;
      replaced["metadata"]["resourceVersion"] = existing.value("metadata", nlohmann::json::object())
                                                    .value("resourceVersion", std::string());
      write.verb = kube::Verb::kPut;
      write.path = *path;
      write.body = replaced.dump();
    } else {
      return kube::ApiError::fromResponse("GET " + *path, *current)
          .status()
          .withContext("apply " + what);
    }
    kube::ApiResult<kube::ApiResponse> written = kube::callApi(client_, write);
    if (written.ok()) return kube::parseJson(written->body);
    // Raced with another writer: read again.
    if (written.error().isConflict() || written.error().isAlreadyExists()) continue;
    return written.status().withContext("apply " + what);
  }
  return core::unavailable("apply " + what + ": kept conflicting with other writers");
}

}  // namespace ringmaster::local
