#pragma once
// POST pods/{name}/binding: what kube-scheduler (or our kubelet) does to place a
// pod. Sets spec.nodeName and the PodScheduled=True condition in one write; answers 201 with a
// Status Success as kube-apiserver does.
//
// Thread-safety: bindPod may run concurrently (the store serializes; a racing write is retried).
// Failure: 404 for a missing pod, 409 Conflict when the pod is already bound or being deleted,
// 400 for a Binding that names another pod, 422 for a target that is not a Node.

#include <nlohmann/json.hpp>
#include <string>

#include "local/store/object_store.h"

namespace ringmaster::local {

// The body kube-apiserver answers a successful binding with (status code 201).
inline constexpr const char* kBindingSuccessBody =
    R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})";

// Binds the pod; returns the pod as written.
ApiResult<ObjectPtr> bindPod(ObjectStore& store, const std::string& ns, const std::string& name,
                             const nlohmann::json& binding, const std::string& now_text);

}  // namespace ringmaster::local
