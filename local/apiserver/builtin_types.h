#pragma once
// The built-in resources the local cluster serves from its first start: core/v1 pods, services,
// configmaps, secrets, events, namespaces, nodes; coordination.k8s.io/v1 leases;
// apiextensions.k8s.io/v1 customresourcedefinitions. Discovery names follow kube-apiserver's.
//
// Thread-safety: pure. Failure: none.

#include <vector>

#include "local/apiserver/api_resource.h"

namespace ringmaster::local {

std::vector<ApiResource> builtinResources();
// The CRD resource's key (the API server reacts to writes of it).
ResourceKey crdKey();

}  // namespace ringmaster::local
