#pragma once
// What kube-apiserver fills in on the built-in kinds the product writes, so that an object reads
// back from the embedded server as it would from a real one: the API's defaults (v1
// SetDefaults_*), and what the admission plugins every cluster runs add (ServiceAccount's
// serviceAccountName, DefaultTolerationSeconds' tolerations, Priority's priority and
// preemptionPolicy, NamespaceLifecycle's name label). Pods also get their QoS class and their
// resource quantities checked (a 400 as kube-apiserver's decoder gives).
//
// A Service's cluster IP is allocated by the server (cluster_ip_allocator.h), which owns the
// range.
//
// Thread-safety: pure functions. Failure: only podQuantityError reports one; defaults never fail.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "local/store/status_error.h"

namespace ringmaster::local {

// Defaults for a Pod being created (`creating`) or updated. Idempotent.
void defaultPod(nlohmann::json& pod, bool creating);
// status.qosClass from the (defaulted) containers' requests and limits.
std::string podQosClass(const nlohmann::json& pod);
// The 400 kube-apiserver's decoder gives when a resource quantity of a container does not parse.
std::optional<StatusError> podQuantityError(const nlohmann::json& pod);

void defaultService(nlohmann::json& service);
// The 422 kube-apiserver's validation gives a Service with more than one port when one of them
// has no name ("spec.ports[0].name: Required value"); only that rule of its many.
std::optional<StatusError> serviceError(const nlohmann::json& service);
// core/v1 Events as kube-apiserver writes them back: eventTime (null), reportingComponent and
// reportingInstance ("") are present even when unset (their Go fields are not omitempty).
void defaultEvent(nlohmann::json& event);
// apps/v1 Deployments and ReplicaSets: replicas 1; the pod template's spec defaulted as a pod's
// is (without the pod-only enableServiceLinks and admission); a Deployment's strategy
// RollingUpdate with 25% maxUnavailable and maxSurge, revisionHistoryLimit 10,
// progressDeadlineSeconds 600; an empty status when `creating` (a ReplicaSet's with `replicas: 0`).
void defaultWorkload(nlohmann::json& workload, bool creating);
// core/v1 Nodes as kube-apiserver writes them back: spec {}, the zero values of the status'
// non-omitempty fields (conditions' heartbeat and transition times null, daemonEndpoints' port 0,
// every nodeInfo string ""). Not the NotReady taint its TaintNodesByCondition admission adds on
// create: no node lifecycle controller runs here to take it off again.
void defaultNode(nlohmann::json& node);

inline constexpr const char* kServiceAccountMountPath =
    "/var/run/secrets/kubernetes.io/serviceaccount";
// ServiceAccount admission on a new pod: unless it sets automountServiceAccountToken false or
// already mounts something there, a projected volume `kube-api-access-<suffix>` (a token of its
// ServiceAccount bound to the pod, the cluster CA from ConfigMap kube-root-ca.crt, the
// namespace) mounted read-only at kServiceAccountMountPath in every container. The account's
// own automountServiceAccountToken is not consulted.
void addServiceAccountVolume(nlohmann::json& pod, const std::string& suffix);
void defaultNamespace(nlohmann::json& ns, bool creating);

}  // namespace ringmaster::local
