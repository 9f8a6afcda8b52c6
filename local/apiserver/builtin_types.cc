#include "local/apiserver/builtin_types.h"

#include <tuple>

namespace ringmaster::local {
namespace {

ApiResource builtin(std::string group, std::string plural, std::string kind, bool namespaced,
                    std::vector<std::string> short_names,
                    std::vector<std::string> categories = {}) {
  ApiResource r;
  r.type.group = std::move(group);
  r.type.version = "v1";
  r.type.resource = std::move(plural);
  r.type.kind = std::move(kind);
  r.type.namespaced = namespaced;
  r.type.builtin = true;
  r.type.tracks_generation = false;
  r.type.strategic_merge_patch = true;
  r.short_names = std::move(short_names);
  r.categories = std::move(categories);
  return r;
}

}  // namespace

ResourceKey crdKey() { return {"apiextensions.k8s.io", "customresourcedefinitions"}; }

std::vector<ApiResource> builtinResources() {
  std::vector<ApiResource> out;

  auto pods = builtin("", "pods", "Pod", true, {"po"}, {"all"});
  pods.type.has_status_subresource = true;
  pods.type.graceful_deletion = true;
  pods.type.return_deleted_object = true;
  pods.type.selectable_fields = {"spec.nodeName",           "status.phase",
                                 "spec.restartPolicy",      "spec.schedulerName",
                                 "spec.serviceAccountName", "status.podIP"};
  pods.printer = TablePrinter::kPod;
  out.push_back(pods);

  auto services = builtin("", "services", "Service", true, {"svc"}, {"all"});
  services.type.has_status_subresource = true;
  services.printer = TablePrinter::kService;
  out.push_back(services);

  auto cms = builtin("", "configmaps", "ConfigMap", true, {"cm"});
  cms.printer = TablePrinter::kConfigMap;
  out.push_back(cms);

  auto secrets = builtin("", "secrets", "Secret", true, {});
  secrets.type.selectable_fields = {"type"};
  secrets.printer = TablePrinter::kSecret;
  out.push_back(secrets);

  auto events = builtin("", "events", "Event", true, {"ev"});
  events.type.selectable_fields = {"involvedObject.kind",
                                   "involvedObject.namespace",
                                   "involvedObject.name",
                                   "involvedObject.uid",
                                   "involvedObject.apiVersion",
                                   "involvedObject.resourceVersion",
                                   "involvedObject.fieldPath",
                                   "reason",
                                   "reportingComponent",
                                   "source",
                                   "type"};
  events.printer = TablePrinter::kEvent;
  out.push_back(events);

  auto namespaces = builtin("", "namespaces", "Namespace", false, {"ns"});
  namespaces.type.has_status_subresource = true;
  namespaces.type.selectable_fields = {"status.phase"};
  namespaces.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  namespaces.printer = TablePrinter::kNamespace;
  out.push_back(namespaces);

  auto nodes = builtin("", "nodes", "Node", false, {"no"});
  nodes.type.has_status_subresource = true;
  nodes.printer = TablePrinter::kNode;
  out.push_back(nodes);

  auto accounts = builtin("", "serviceaccounts", "ServiceAccount", true, {"sa"});
  accounts.printer = TablePrinter::kServiceAccount;
  out.push_back(accounts);

  // RBAC objects are stored as a real server stores them (Helm charts create them); what the
  // server authorizes does not depend on them.
  out.push_back(builtin("rbac.authorization.k8s.io", "roles", "Role", true, {}));
  out.push_back(builtin("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, {}));
  out.push_back(builtin("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, {}));
  out.push_back(
      builtin("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false, {}));

  // Workloads: the local controllers (local/controllers) turn a Deployment into a ReplicaSet and
  // a ReplicaSet into pods.
  for (auto [plural, kind, short_name] : {std::tuple{"deployments", "Deployment", "deploy"},
                                          std::tuple{"replicasets", "ReplicaSet", "rs"}}) {
    auto workload = builtin("apps", plural, kind, true, {short_name}, {"all"});
    workload.type.has_status_subresource = true;
    workload.type.tracks_generation = true;
    workload.printer =
        std::string(kind) == "Deployment" ? TablePrinter::kDeployment : TablePrinter::kReplicaSet;
    out.push_back(workload);
  }

  // Stored, not enforced (local pods share the host's network): the operator creates one per
  // job, as on a real cluster.
  out.push_back(builtin("networking.k8s.io", "networkpolicies", "NetworkPolicy", true, {"netpol"}));

  auto leases = builtin("coordination.k8s.io", "leases", "Lease", true, {});
  leases.type.strategic_merge_patch = true;
  out.push_back(leases);

  auto crds = builtin("apiextensions.k8s.io", "customresourcedefinitions",
                      "CustomResourceDefinition", false, {"crd", "crds"}, {"api-extensions"});
  crds.type.has_status_subresource = true;
  crds.type.tracks_generation = true;
  crds.type.strategic_merge_patch = false;  // upstream: CRDs are not a strategic-merge kind
  out.push_back(crds);
  return out;
}

}  // namespace ringmaster::local
