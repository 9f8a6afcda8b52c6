#pragma once
// Authentication as kube-apiserver (anonymous auth on, the default) answers it:
//   - `Authorization: Bearer <the token>`  -> the admin user;
//   - another bearer token that `token_user` knows (a ServiceAccount token) -> that user;
//   - a bearer token that does not match   -> 401 with the minimal Status;
//   - no credentials (or a non-Bearer scheme) -> `system:anonymous`, which may read the public
//     paths /healthz, /livez, /readyz (and below) and /version, and gets 403 Forbidden with
//     RBAC's message everywhere else (f5a).
//
// Thread-safety: immutable after construction. Failure: none; decisions are values.

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "local/https/http_message.h"

namespace ringmaster::local {

inline constexpr std::string_view kAdminUser = "ringmaster-local-admin";
inline constexpr std::string_view kAnonymousUser = "system:anonymous";

// The user a bearer token other than the admin's stands for; nullopt: not a token we issued.
using TokenUserFn = std::function<std::optional<std::string>(std::string_view token)>;

class BearerAuthenticator {
 public:
  enum class Decision { kAdmin, kUser, kAnonymous, kInvalidToken };
  struct Result {
    Decision decision;
    std::string user;  // who the request is from, for kAdmin and kUser
  };

  explicit BearerAuthenticator(std::string token, TokenUserFn token_user = nullptr)
      : token_(std::move(token)), token_user_(std::move(token_user)) {}
  Result check(const Request& request) const;

 private:
  std::string token_;
  TokenUserFn token_user_;
};

// What kube-apiserver's RequestInfoFactory makes of a request: a resource request
// (/api/v1/namespaces/ns/pods/name/log: verb get, resource pods, subresource log, ...) or a
// non-resource one (/version, /api, /apis/<group>/<version>: verb = the method, lower case).
struct RequestInfo {
  bool resource_request = false;
  std::string verb;  // get list watch create update patch delete deletecollection
  std::string group;
  std::string namespace_name;
  std::string resource;
  std::string subresource;
  std::string name;
};
RequestInfo requestInfo(const Request& request);

// Whether `system:anonymous` may read `path` (system:public-info-viewer).
bool isPublicPath(std::string_view path);

// A compact v1 Status body with fields in kube-apiserver's order and its trailing newline.
// `details_json` is a JSON object or empty (then no "details" field).
std::string statusBody(int code, std::string_view reason, std::string_view message,
                       std::string_view details_json = {});
// {"kind":"Status",...,"message":"Unauthorized","reason":"Unauthorized","code":401}
std::string unauthorizedBody();
// RBAC's 403 for `system:anonymous` on `request`, e.g. `trainingjobs.ringmaster.dev is
// forbidden: User "system:anonymous" cannot list resource "trainingjobs" in API group
// "ringmaster.dev" in the namespace "default"`.
std::string anonymousForbiddenBody(const Request& request);
// The same for any user (RBAC's words name the user as given).
std::string forbiddenBody(const Request& request, std::string_view user_name);

}  // namespace ringmaster::local
