#pragma once
// KubeConfig: where the API server is and how to authenticate to it, resolved from (first that
// applies wins, as client-go does):
//   1. an explicit path (--kubeconfig),
//   2. $KUBECONFIG (the first file of a colon-separated list),
//   3. in-cluster: $KUBERNETES_SERVICE_HOST/_PORT and the service-account directory
//      (/var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}),
//   4. ~/.kube/config.
// From a kubeconfig file: the current context (or an override), its cluster (server,
// certificate-authority, certificate-authority-data, tls-server-name), its user (token,
// tokenFile, client-certificate(-data), client-key(-data)) and namespace. Relative file paths
// are relative to the kubeconfig's directory. TLS verification is never skipped:
// `insecure-skip-tls-verify: true` is refused with an error saying so.
//
// Tokens from a file (in-cluster, tokenFile) are re-read on every request through
// bearerToken(): the kubelet rotates projected service-account tokens.
//
// Thread-safety: KubeConfig is a plain value; bearerToken() reads a file and is reentrant.
// Failure: errors name the file and the key ("/home/u/.kube/config: users[0].user.tokenFile:
// cannot read /x: No such file or directory").

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::kube {

inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
  std::string server;           // "https://10.96.0.1:443"
  std::string ca_pem;           // the cluster CA; empty: the system trust store verifies
  std::string tls_server_name;  // overrides the name checked in the server certificate
  std::string token;            // a static bearer token
  std::string token_file;       // re-read on every request when set (wins over `token`)
  std::string client_cert_pem;  // client-certificate authentication (optional)
  std::string client_key_pem;
  std::string namespace_name = "default";
  std::string source;  // the file it came from, or "in-cluster"

  // The bearer token to send now ("" when none): token_file's content (trimmed) if set.
  core::Result<std::string> bearerToken() const;
};

// Where loadKubeConfig looks. fromEnvironment() fills it from the process environment.
struct KubeConfigSources {
  std::string explicit_path;   // --kubeconfig
  std::string kubeconfig_env;  // $KUBECONFIG
  std::string service_host;    // $KUBERNETES_SERVICE_HOST
  std::string service_port;    // $KUBERNETES_SERVICE_PORT
  std::filesystem::path service_account_dir{std::string(kServiceAccountDir)};
  std::string home;     // $HOME
  std::string context;  // a context to use instead of current-context

  static KubeConfigSources fromEnvironment(std::string explicit_path = {});
};

core::Result<KubeConfig> loadKubeConfig(const KubeConfigSources& sources);

// One kubeconfig file; `context` "" means its current-context.
core::Result<KubeConfig> loadKubeConfigFile(const std::filesystem::path& path,
                                            const std::string& context = {});

// The in-cluster configuration: https://<host>:<port>, the CA and namespace from `dir`, the
// token re-read from <dir>/token.
core::Result<KubeConfig> loadInClusterConfig(const std::string& host, const std::string& port,
                                             const std::filesystem::path& dir);

}  // namespace ringmaster::kube
