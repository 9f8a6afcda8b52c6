#pragma once
// The OpenAPI v3 component schemas the server publishes under /openapi/v3/<gv> (discovery.cc
// builds the documents): the apimachinery meta types, hand-written schemas of the built-in kinds
// (openapi_builtin.inc: enough for `kubectl explain pod.spec.containers`), and each custom
// resource's openAPIV3Schema with the standard apiVersion/kind/metadata fields, as
// kube-apiserver's CRD publisher does. kubectl explain finds a kind's
// schema by its x-kubernetes-group-version-kind.
//
// Thread-safety: pure (the built-in table is parsed once, thread-safely). Failure: none.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/apiserver/api_resource.h"

namespace ringmaster::local {

// "io.k8s.api.core.v1.Pod", "io.k8s.api.coordination.v1.Lease",
// "dev.ringmaster.v1alpha1.TrainingJob" (custom resources: the group reversed).
std::string openApiSchemaName(const ApiResource& resource);

// components.schemas of the document for one group/version.
nlohmann::json openApiComponents(const std::vector<ApiResource>& resources,
                                 const std::string& group, const std::string& version);

}  // namespace ringmaster::local
