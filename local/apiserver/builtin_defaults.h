#pragma once
// What kube-apiserver fills in on the built-in kinds the product writes, so that an object reads
// back from the embedded server as it would from a real one: the API's defaults (v1
// SetDefaults_*), and what the admission plugins every cluster runs add (ServiceAccount's
// serviceAccountName, DefaultTolerationSeconds' tolerations, Priority's priority and
// preemptionPolicy, NamespaceLifecycle's name label). Pods also get their QoS class and their
// resource quantities checked (a 400 as kube-apiserver's decoder gives).
//
// Not done here, on purpose (docs/local-api-fidelity.md): the ServiceAccount token volume (the
// embedded server issues no ServiceAccount tokens) and a Service's cluster IP (nothing routes a
// virtual IP on a local node).
//
// Thread-safety: pure functions. Failure: only podQuantityError reports one; defaults never fail.

#include <nlohmann/json.hpp>
#include <optional>

#include "local/store/status_error.h"

namespace ringmaster::local {

// Defaults for a Pod being created (`creating`) or updated. Idempotent.
void defaultPod(nlohmann::json& pod, bool creating);
// status.qosClass from the (defaulted) containers' requests and limits.
std::string podQosClass(const nlohmann::json& pod);
// The 400 kube-apiserver's decoder gives when a resource quantity of a container does not parse.
std::optional<StatusError> podQuantityError(const nlohmann::json& pod);

void defaultService(nlohmann::json& service);
void defaultNamespace(nlohmann::json& ns, bool creating);

}  // namespace ringmaster::local
