#pragma once
// The three PATCH bodies kubectl and client-go send:
//  - JSON merge patch (RFC 7386, application/merge-patch+json);
//  - JSON patch (RFC 6902, application/json-patch+json): add, remove, replace, move, copy, test
//    with JSON pointers (RFC 6901, "~0"/"~1" escapes, "-" appends);
//  - strategic merge patch (application/strategic-merge-patch+json) for built-in kinds. Supported:
//    maps merge as in a merge patch; lists of objects merge by their Kubernetes merge key
//    (containers/initContainers/ephemeralContainers/env/volumes/imagePullSecrets/resourceClaims
//    by name, volumeMounts by mountPath, volumeDevices by devicePath, ports by containerPort
//    (Service ports by port), conditions by type, ownerReferences by uid, hostAliases by ip);
//    metadata.finalizers merges as a set; other lists are replaced. Directives: `$patch: delete`
//    (list element or map), `$patch: replace` (map or list), `$retainKeys`,
//    `$deleteFromPrimitiveList/<field>`; `$setElementOrder/<field>` is accepted and ignored
//    (order is kept as stored, new elements appended).
//
// Thread-safety: pure functions. Failure: 400 BadRequest for an unreadable body, 422 Invalid
// (upstream's "the server rejected our request…" with the cause) for a patch that cannot apply.

#include <nlohmann/json.hpp>
#include <string_view>

#include "local/store/status_error.h"

namespace ringmaster::local {

enum class PatchType { kMerge, kJson, kStrategicMerge };

nlohmann::json applyMergePatch(const nlohmann::json& target, const nlohmann::json& patch);
ApiResult<nlohmann::json> applyJsonPatch(const nlohmann::json& target, const nlohmann::json& patch);
ApiResult<nlohmann::json> applyStrategicMergePatch(const nlohmann::json& target,
                                                   const nlohmann::json& patch);

// Parses `body` and applies it.
ApiResult<nlohmann::json> applyPatch(PatchType type, const nlohmann::json& target,
                                     std::string_view body);

// "application/merge-patch+json" etc. -> PatchType; nullopt for anything else.
std::optional<PatchType> patchTypeFromContentType(std::string_view content_type);

}  // namespace ringmaster::local
