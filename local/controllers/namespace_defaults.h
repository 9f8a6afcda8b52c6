#pragma once
// What kube-controller-manager puts in every namespace, kept there by the local cluster: the
// ServiceAccount `default` (pods run as it unless they name another) and the ConfigMap
// `kube-root-ca.crt` holding the cluster's CA certificate (pods find it in their ServiceAccount
// volume and verify the API server with it). Each pass creates what is missing in every active
// namespace and rewrites the ConfigMap when the CA changed; terminating namespaces are left alone.
//
// Thread-safety: not synchronized; one thread runs the passes. Failure: a failed write is logged
// with the namespace and retried on the next pass.

#include <string>

#include "local/store/object_store.h"

namespace ringmaster::local::controllers {

inline constexpr const char* kRootCaConfigMap = "kube-root-ca.crt";
inline constexpr const char* kDefaultServiceAccount = "default";

class NamespaceDefaults {
 public:
  NamespaceDefaults(ObjectStore& store, std::string ca_pem);

  // One pass over every namespace. Returns the writes it made.
  size_t sync();

 private:
  size_t ensure(const std::string& ns);

  ObjectStore& store_;
  std::string ca_pem_;
};

}  // namespace ringmaster::local::controllers
