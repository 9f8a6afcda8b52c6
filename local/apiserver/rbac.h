#pragma once
// Authorization by RBAC, as kube-apiserver's RBAC authorizer decides it: a request is allowed
// when a ClusterRoleBinding (anywhere) or a RoleBinding in the request's namespace binds one of
// the user's names (User, Group, ServiceAccount subjects) to a Role or ClusterRole with a rule
// that matches the request's verb, API group, resource[/subresource] and name, or its
// non-resource URL. Also as there: `system:masters` may do everything, and every authenticated
// user may read the discovery documents, /version, /openapi and the health endpoints (the
// bootstrap roles system:discovery and system:public-info-viewer, which the local server does
// not store as objects). ClusterRoles' aggregationRule is not evaluated: an aggregated role
// grants only the rules written into it.
//
// Thread-safety: pure functions. Failure: none; malformed objects grant nothing.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "local/https/auth.h"

namespace ringmaster::local {

struct UserInfo {
  std::string name;
  std::vector<std::string> groups;
};

// The user kube-apiserver would see: a ServiceAccount's token is in system:serviceaccounts and
// system:serviceaccounts:<namespace>; the local admin in system:masters; every one of them in
// system:authenticated; system:anonymous in system:unauthenticated.
UserInfo userInfoFor(const std::string& name);

struct RbacObjects {
  std::vector<nlohmann::json> cluster_roles;
  std::vector<nlohmann::json> cluster_role_bindings;
  std::vector<nlohmann::json> roles;
  std::vector<nlohmann::json> role_bindings;
};

// Whether RBAC allows `user` the request `info` on `path` (the URL path, for non-resource
// requests).
bool rbacAllows(const UserInfo& user, const RequestInfo& info, const std::string& path,
                const RbacObjects& objects);

}  // namespace ringmaster::local
