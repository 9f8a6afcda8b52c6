#pragma once
// ServiceAccount tokens of the local cluster: what the TokenRequest API
// (POST .../serviceaccounts/NAME/token) issues and the server then accepts as the account's
// credentials, as kube-apiserver's bound tokens are. A token is a JWT (RFC 7519) with
// kube-apiserver's claims (iss, sub "system:serviceaccount:NS:NAME", aud, exp, iat, nbf and the
// kubernetes.io block naming the namespace, account and bound pod), signed with HMAC-SHA256
// under a key only the server holds (<data-dir>/sa.key). kube-apiserver signs with RS256 so that
// third parties can verify tokens from its published keys; no third party verifies these.
// A token is valid until it expires; the server does not check that its account and pod still
// exist.
//
// Thread-safety: immutable after construction. Failure: verify() returns nullopt for any token
// that is not one of ours, is malformed, or has expired.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringmaster::local {

inline constexpr std::string_view kServiceAccountIssuer = "https://kubernetes.default.svc";

struct ServiceAccountClaims {
  std::string namespace_name;
  std::string service_account;
  std::string service_account_uid;
  std::string pod_name;  // the bound pod ("" when not bound)
  std::string pod_uid;
  std::vector<std::string> audiences;
  std::chrono::system_clock::time_point expires;

  // "system:serviceaccount:<namespace>:<name>", the user the token authenticates as.
  std::string userName() const;
};

class ServiceAccountTokens {
 public:
  explicit ServiceAccountTokens(std::string key) : key_(std::move(key)) {}

  std::string issue(const ServiceAccountClaims& claims,
                    std::chrono::system_clock::time_point now) const;
  std::optional<ServiceAccountClaims> verify(std::string_view token,
                                             std::chrono::system_clock::time_point now) const;

 private:
  std::string sign(std::string_view signing_input) const;
  std::string key_;
};

}  // namespace ringmaster::local
