#pragma once
// Kubernetes protobuf request bodies (`Content-Type: application/vnd.kubernetes.protobuf`) for
// the kinds kubectl's imperative generators send (`kubectl create namespace|configmap|secret|
// serviceaccount|role|clusterrole|rolebinding|clusterrolebinding|token`) and the DeleteOptions
// typed clients send with a DELETE (Helm deleting its release Secrets). Field numbers are the
// API's generated.proto ones, checked against what kubectl 1.32 sends.
// The body is "k8s\0" + runtime.Unknown{typeMeta, raw}; raw is the
// object's generated.proto message. Decoded into the JSON the rest of the server handles.
// Other kinds are not decoded (the caller answers 415 as a JSON-only kube-apiserver does).
//
// Thread-safety: pure. Failure: nullopt for a body that is not one of those kinds or malformed.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace ringmaster::local {

inline constexpr const char* kProtobufContentType = "application/vnd.kubernetes.protobuf";

std::optional<nlohmann::json> decodeProtobufBody(std::string_view body);

}  // namespace ringmaster::local
