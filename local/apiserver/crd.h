#pragma once
// CustomResourceDefinitions: what a CRD object means for the server. Each served
// version becomes an ApiResource (group, plural, kind, shortNames, categories, scope, status
// subresource, additionalPrinterColumns); the store keeps one type per {group, plural}, taken
// from the storage version. After a CRD is written the server sets its status like
// kube-apiserver's controllers do: NamesAccepted + Established, acceptedNames, storedVersions.
//
// Thread-safety: pure functions. Failure: a CRD without group/names/versions yields a 422-style
// StatusError naming the field.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"
#include "local/store/status_error.h"

namespace ringmaster::local {

struct CrdResources {
  std::vector<ApiResource> served;  // one per served version
  ResourceType storage;             // what the store registers
};

// Each resource's type carries the admit hook that enforces the version's openAPIV3Schema
// (schema.h) and the ApiResource keeps the schema for OpenAPI v3.
ApiResult<CrdResources> resourcesFromCrd(const nlohmann::json& crd);
// A CRD version's schema.openAPIV3Schema, or nullptr.
const nlohmann::json* crdVersionSchema(const nlohmann::json& version);
// Checks a CRD on create/update (the store's admit hook for customresourcedefinitions),
// including that every version has a structural schema.
std::optional<StatusError> validateCrd(const nlohmann::json& crd);
// kube-apiserver's defaults for a CRD (names.singular and listKind, conversion strategy None)
// and, when `creating`, its first status (the stored version, no names accepted yet).
void defaultCrd(nlohmann::json& crd, bool creating);
// The merge patch for the CRD's status subresource once its names are accepted.
std::string crdStatusPatch(const nlohmann::json& crd, const std::string& now_text);

}  // namespace ringmaster::local
