#include "local/apiserver/rbac.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

using json = nlohmann::json;

RequestInfo resource(std::string verb, std::string group, std::string resource, std::string ns,
                     std::string name = "", std::string sub = "") {
  RequestInfo info;
  info.resource_request = true;
  info.verb = std::move(verb);
  info.group = std::move(group);
  info.resource = std::move(resource);
  info.namespace_name = std::move(ns);
  info.name = std::move(name);
  info.subresource = std::move(sub);
  return info;
}

RequestInfo nonResource(std::string verb) {
  RequestInfo info;
  info.verb = std::move(verb);
  return info;
}

// The operator's grants as the chart writes them (cut down), a namespaced Role bound to a test
// account, and a ClusterRole bound to a group within one namespace only.
RbacObjects policy() {
  RbacObjects o;
  o.cluster_roles.push_back(json::parse(R"({"metadata":{"name":"op"},"rules":[
    {"apiGroups":["ringmaster.dev"],"resources":["trainingjobs"],"verbs":["get","list","watch"]},
    {"apiGroups":["ringmaster.dev"],"resources":["trainingjobs/status"],"verbs":["update"]},
    {"apiGroups":[""],"resources":["pods"],"verbs":["create","delete"]},
    {"apiGroups":[""],"resources":["configmaps"],"resourceNames":["only-this"],"verbs":["get"]},
    {"nonResourceURLs":["/metrics","/debug/*"],"verbs":["get"]}]})"));
  o.cluster_roles.push_back(json::parse(R"({"metadata":{"name":"reader"},"rules":[
    {"apiGroups":["*"],"resources":["*/log"],"verbs":["*"]}]})"));
  o.cluster_role_bindings.push_back(json::parse(R"({"metadata":{"name":"op"},
    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"op"},
    "subjects":[{"kind":"ServiceAccount","name":"operator","namespace":"system"}]})"));
  o.roles.push_back(json::parse(R"({"metadata":{"name":"lease","namespace":"system"},"rules":[
    {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get","update"]}]})"));
  o.role_bindings.push_back(json::parse(R"({"metadata":{"name":"lease","namespace":"system"},
    "roleRef":{"kind":"Role","name":"lease"},
    "subjects":[{"kind":"ServiceAccount","name":"operator"}]})"));
  o.role_bindings.push_back(json::parse(R"({"metadata":{"name":"logs","namespace":"team-a"},
    "roleRef":{"kind":"ClusterRole","name":"reader"},
    "subjects":[{"kind":"Group","name":"system:serviceaccounts:team-a"},
                {"kind":"User","name":"alice"}]})"));
  return o;
}

TEST(Rbac, AllowsExactlyWhatTheBindingsGrant) {
  const UserInfo op = userInfoFor("system:serviceaccount:system:operator");
  const UserInfo team = userInfoFor("system:serviceaccount:team-a:builder");
  const UserInfo other = userInfoFor("system:serviceaccount:team-b:builder");
  const UserInfo alice = userInfoFor("alice");
  struct Case {
    const char* name;
    const UserInfo& user;
    RequestInfo info;
    std::string path;
    bool allowed;
  };
  const Case cases[] = {
      {"cluster role, any namespace", op, resource("list", "ringmaster.dev", "trainingjobs", "x"),
       "", true},
      {"cluster role, cluster scope", op, resource("watch", "ringmaster.dev", "trainingjobs", ""),
       "", true},
      {"verb not granted", op, resource("delete", "ringmaster.dev", "trainingjobs", "x", "j"), "",
       false},
      {"subresource granted on its own", op,
       resource("update", "ringmaster.dev", "trainingjobs", "x", "j", "status"), "", true},
      {"resource grant does not cover a subresource", op,
       resource("get", "ringmaster.dev", "trainingjobs", "x", "j", "status"), "", false},
      {"other group", op, resource("list", "", "trainingjobs", "x"), "", false},
      {"secrets never granted", op, resource("list", "", "secrets", ""), "", false},
      {"resourceNames: the named one", op, resource("get", "", "configmaps", "x", "only-this"), "",
       true},
      {"resourceNames: another", op, resource("get", "", "configmaps", "x", "other"), "", false},
      {"resourceNames: a list", op, resource("list", "", "configmaps", "x"), "", false},
      {"role in its namespace", op,
       resource("update", "coordination.k8s.io", "leases", "system", "l"), "", true},
      {"role elsewhere", op, resource("update", "coordination.k8s.io", "leases", "other", "l"), "",
       false},
      {"non-resource URL", op, nonResource("get"), "/metrics", true},
      {"non-resource prefix", op, nonResource("get"), "/debug/pprof", true},
      {"non-resource not granted", op, nonResource("get"), "/logs", false},
      {"discovery for everyone authenticated", other, nonResource("get"), "/apis/apps/v1", true},
      {"version for everyone authenticated", other, nonResource("get"), "/version", true},
      {"discovery is read only", other, nonResource("post"), "/api", false},
      {"group subject, */log, in the binding's namespace", team,
       resource("get", "", "pods", "team-a", "p", "log"), "", true},
      {"cluster role through a role binding stays in its namespace", team,
       resource("get", "", "pods", "team-b", "p", "log"), "", false},
      {"another namespace's accounts are not in the group", other,
       resource("get", "", "pods", "team-a", "p", "log"), "", false},
      {"user subject", alice, resource("get", "", "pods", "team-a", "p", "log"), "", true},
      {"the admin may do everything", userInfoFor(std::string(kAdminUser)),
       resource("delete", "", "secrets", "kube-system", "s"), "", true},
      {"anonymous is not authenticated", userInfoFor(std::string(kAnonymousUser)),
       nonResource("get"), "/api", false},
  };
  const RbacObjects objects = policy();
  for (const auto& c : cases) {
    EXPECT_EQ(rbacAllows(c.user, c.info, c.path, objects), c.allowed) << c.name;
  }
}

TEST(Rbac, ABindingToAMissingRoleGrantsNothing) {
  RbacObjects objects = policy();
  objects.cluster_roles.clear();
  EXPECT_FALSE(rbacAllows(userInfoFor("system:serviceaccount:system:operator"),
                          resource("list", "ringmaster.dev", "trainingjobs", "x"), "", objects));
}

TEST(Rbac, UserInfoCarriesKubernetesGroups) {
  const UserInfo sa = userInfoFor("system:serviceaccount:ns1:build");
  EXPECT_EQ(sa.groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ns1",
                                      "system:authenticated"}));
  EXPECT_EQ(userInfoFor(std::string(kAdminUser)).groups,
            (std::vector<std::string>{"system:masters", "system:authenticated"}));
}

}  // namespace
}  // namespace ringmaster::local
