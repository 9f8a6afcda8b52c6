#pragma once
// Writes the kubeconfig that points kubectl (and any client-go or lib/kube client) at the local
// cluster: one cluster with the CA inline (certificate-authority-data), one user with the
// bearer token, one context, made current. Written atomically with mode 0600 (it holds the
// token).
//
// Thread-safety: no shared state. Failure: Status naming the path; invalid names are rejected.

#include <filesystem>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::local {

struct KubeconfigSpec {
  std::string server_url;  // "https://127.0.0.1:6443"
  std::string ca_pem;
  std::string token;
  std::string name = "ringmaster-local";  // cluster, user and context name
  std::string namespace_name = "default";
};

core::Result<std::string> renderKubeconfig(const KubeconfigSpec& spec);
core::Status writeKubeconfig(const std::filesystem::path& path, const KubeconfigSpec& spec);

}  // namespace ringmaster::local
