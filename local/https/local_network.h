#pragma once
// The addresses `ringmaster local`'s parts agree on. The kubelet attaches pods in network
// namespaces of their own to a bridge on kDefaultPodCidr, whose gateway, the host's end of the
// bridge, is kDefaultPodGateway; the API server listens there too (and its certificate names
// that address), so that a pod reaches the API server as a pod on a cluster reaches
// $KUBERNETES_SERVICE_HOST.

namespace ringmaster::local {

inline constexpr const char* kDefaultPodCidr = "10.244.0.0/16";
inline constexpr const char* kDefaultPodGateway = "10.244.0.1";

}  // namespace ringmaster::local
