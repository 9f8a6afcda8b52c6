#pragma once
// applyObject: create-or-replace one object given as JSON (a document of a manifest), the way
// `ringmaster local run` installs the CRD and the job without needing kubectl. The resource is
// found through discovery (apiVersion + kind -> plural, namespaced), so any kind the server
// serves works, custom resources included.
//
// Semantics: absent -> POST; present -> PUT of the document carrying the server's current
// resourceVersion (a replace: fields the document omits are dropped, status is kept by the
// server's status-subresource rules). A 409 Conflict from a concurrent writer is retried.
//
// Thread-safety: none needed (one call at a time per Applier). Failure: Status with the
// object's kind/namespace/name and the server's message (a 422 names the field).

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/api_client.h"

namespace ringmaster::local {

struct ApiResourceInfo {
  std::string path_prefix;  // "/api/v1" or "/apis/<group>/<version>"
  std::string plural;
  bool namespaced = true;
};

// The fields that name an object — apiVersion, kind, metadata (an object) and its name and
// namespace — have the types Kubernetes gives them wherever present; a manifest may say
// anything (`kind: 5`), and these are read before the server sees the object. kInvalidArgument
// naming `where` and the field.
core::Status checkObjectIdentity(const nlohmann::json& object, const std::string& where);

class Applier {
 public:
  explicit Applier(kube::ApiClient& client) : client_(client) {}

  // Returns the object as the server stored it.
  core::Result<nlohmann::json> apply(nlohmann::json object);
  // The REST path of an object (after discovery). Forgets cached discovery when `refresh`.
  core::Result<std::string> objectPath(const nlohmann::json& object, bool refresh = false);

 private:
  core::Result<ApiResourceInfo> resolve(const std::string& api_version, const std::string& kind,
                                        bool refresh);

  kube::ApiClient& client_;
  std::map<std::string, ApiResourceInfo> cache_;  // "<apiVersion>/<kind>"
};

}  // namespace ringmaster::local
