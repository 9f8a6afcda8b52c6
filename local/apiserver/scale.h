#pragma once
// The scale subresource of a custom resource, as kube-apiserver serves it for a CRD that declares
// subresources.scale: GET <resource>/NAME/scale answers an autoscaling/v1 Scale read from the
// object (spec.replicas from specReplicasPath, status.replicas from statusReplicasPath, the
// selector from labelSelectorPath), and PUT or PATCH of that Scale writes only its spec.replicas
// back, at specReplicasPath, through the object's own validation (`kubectl scale`, autoscalers).
//
// Thread-safety: pure functions. Failure: a Scale that cannot apply yields the StatusError
// kube-apiserver answers (400 for a missing or other name, 422 for a replica count that is not
// an integer); every write also checks that the replica counts are non-negative integers.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"
#include "local/store/patch.h"
#include "local/store/status_error.h"

namespace ringmaster::local {

// A CRD version's subresources.scale, or nullopt when it declares none.
std::optional<ScaleSubresource> scaleSubresourceOf(const nlohmann::json& crd_version);
// The problems of a CRD version's subresources.scale ("spec.versions[i].subresources.scale").
std::vector<StatusCause> scaleSubresourceCauses(const nlohmann::json& crd_version,
                                                const std::string& at);

// The object's Scale: its name, namespace, uid, resourceVersion and creationTimestamp, and the
// counts at the subresource's paths (0 where absent, as upstream).
nlohmann::json scaleOf(const ScaleSubresource& scale, const nlohmann::json& object);
// A Scale's text with its keys in kube-apiserver's order.
std::string scaleText(const nlohmann::json& scale);

// `object` with the replica count of `written` (a Scale sent by PUT, or the result of a patch
// of scaleOf(object)) at specReplicasPath, and the Scale's resourceVersion, if any, as the
// write's precondition. `name` is the URL's.
ApiResult<nlohmann::json> withScale(const ScaleSubresource& scale, nlohmann::json object,
                                    const nlohmann::json& written, const std::string& name);
// The same for a PATCH of the Scale: the patch applies to scaleOf(object). Custom resources
// take no strategic merge patch, their Scale neither.
ApiResult<nlohmann::json> withScalePatch(const ScaleSubresource& scale, nlohmann::json object,
                                         PatchType type, std::string_view patch,
                                         const std::string& name);

// What every write of a resource with a scale subresource must hold: the counts at its paths
// are non-negative integers that fit an int32 (only the status path's on a status write), and
// the selector, if any, is a string. Fields are named by their paths (".spec.replicas").
std::vector<StatusCause> scaleCauses(const ScaleSubresource& scale, const nlohmann::json& object,
                                     bool status_write);

}  // namespace ringmaster::local
