#include "local/apiserver/rbac.h"

#include <algorithm>

#include "ringmaster/core/json.h"

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";

std::vector<std::string> strings(const json& obj, const char* key) {
  std::vector<std::string> out;
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_array()) return out;
  for (const auto& v : obj[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

bool has(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string metaField(const json& obj, const char* key) {
  return obj.is_object() && obj.contains("metadata") ? core::stringMember(obj["metadata"], key)
                                                     : "";
}

// A nonResourceURLs entry: exact, or a prefix ending in '*'.
bool urlMatches(const std::string& pattern, const std::string& path) {
  if (pattern == "*" || pattern == path) return true;
  return !pattern.empty() && pattern.back() == '*' &&
         path.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
}

bool ruleAllows(const json& rule, const RequestInfo& info, const std::string& path) {
  const auto verbs = strings(rule, "verbs");
  if (!has(verbs, info.verb) && !has(verbs, "*")) return false;
  if (!info.resource_request) {
    for (const auto& url : strings(rule, "nonResourceURLs")) {
      if (urlMatches(url, path)) return true;
    }
    return false;
  }
  const auto groups = strings(rule, "apiGroups");
  if (!has(groups, info.group) && !has(groups, "*")) return false;
  const auto resources = strings(rule, "resources");
  const bool resource_ok =
      has(resources, "*") ||
      (info.subresource.empty() ? has(resources, info.resource)
                                : has(resources, info.resource + "/" + info.subresource) ||
                                      has(resources, "*/" + info.subresource));
  if (!resource_ok) return false;
  const auto names = strings(rule, "resourceNames");
  return names.empty() || has(names, info.name);
}

bool subjectMatches(const json& subject, const UserInfo& user, const std::string& binding_ns) {
  const std::string kind = core::stringMember(subject, "kind");
  const std::string name = core::stringMember(subject, "name");
  if (kind == "User") return name == user.name;
  if (kind == "Group") return has(user.groups, name);
  if (kind == "ServiceAccount") {
    std::string ns = core::stringMember(subject, "namespace");
    if (ns.empty()) ns = binding_ns;
    return user.name == std::string(kServiceAccountPrefix) + ns + ":" + name;
  }
  return false;
}

bool bindsUser(const json& binding, const UserInfo& user) {
  const std::string ns = metaField(binding, "namespace");
  if (!binding.contains("subjects") || !binding["subjects"].is_array()) return false;
  return std::any_of(binding["subjects"].begin(), binding["subjects"].end(),
                     [&](const json& s) { return subjectMatches(s, user, ns); });
}

// The rules of the role `binding` refers to (a Role in the binding's namespace or a ClusterRole).
const json* roleOf(const json& binding, const RbacObjects& objects) {
  const json ref = binding.value("roleRef", json::object());
  const std::string kind = core::stringMember(ref, "kind");
  const std::string name = core::stringMember(ref, "name");
  const std::string ns = metaField(binding, "namespace");
  const auto& pool = kind == "ClusterRole" ? objects.cluster_roles : objects.roles;
  if (kind != "ClusterRole" && kind != "Role") return nullptr;
  for (const auto& role : pool) {
    if (metaField(role, "name") == name &&
        (kind == "ClusterRole" || metaField(role, "namespace") == ns)) {
      return &role;
    }
  }
  return nullptr;
}

bool roleAllows(const json* role, const RequestInfo& info, const std::string& path) {
  if (!role || !role->contains("rules") || !(*role)["rules"].is_array()) return false;
  return std::any_of((*role)["rules"].begin(), (*role)["rules"].end(),
                     [&](const json& rule) { return ruleAllows(rule, info, path); });
}

// system:discovery and system:public-info-viewer, bound to every authenticated user.
bool bootstrapAllows(const UserInfo& user, const RequestInfo& info, const std::string& path) {
  if (info.resource_request || info.verb != "get" || !has(user.groups, "system:authenticated")) {
    return false;
  }
  for (const char* url : {"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*",
                          "/version", "/version/", "/healthz", "/livez", "/readyz"}) {
    if (urlMatches(url, path)) return true;
  }
  return false;
}

}  // namespace

UserInfo userInfoFor(const std::string& name) {
  static const std::string kUnauthenticated = "system:unauthenticated";
  static const std::string kAuthenticated = "system:authenticated";
  static const std::string kMasters = "system:masters";
  static const std::string kServiceAccounts = "system:serviceaccounts";
  UserInfo user{name, {}};
  if (name == kAnonymousUser) {
    user.groups.push_back(kUnauthenticated);
    return user;
  }
  if (name == kAdminUser) user.groups.push_back(kMasters);
  if (name.rfind(kServiceAccountPrefix, 0) == 0) {
    const std::string rest = name.substr(kServiceAccountPrefix.size());
    user.groups.push_back(kServiceAccounts);
    user.groups.push_back(kServiceAccounts + ":" + rest.substr(0, rest.find(':')));
  }
  user.groups.push_back(kAuthenticated);
  return user;
}

bool rbacAllows(const UserInfo& user, const RequestInfo& info, const std::string& path,
                const RbacObjects& objects) {
  if (has(user.groups, "system:masters") || bootstrapAllows(user, info, path)) return true;
  for (const auto& binding : objects.cluster_role_bindings) {
    if (bindsUser(binding, user) && roleAllows(roleOf(binding, objects), info, path)) return true;
  }
  if (!info.resource_request || info.namespace_name.empty()) return false;
  for (const auto& binding : objects.role_bindings) {
    if (metaField(binding, "namespace") != info.namespace_name || !bindsUser(binding, user))
      continue;
    if (roleAllows(roleOf(binding, objects), info, path)) return true;
  }
  return false;
}

}  // namespace ringmaster::local
