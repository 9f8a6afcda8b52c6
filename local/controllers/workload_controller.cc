#include "local/controllers/workload_controller.h"

#include "ringmaster/core/json.h"
#include "ringmaster/core/log.h"

namespace ringmaster::local::controllers {
namespace {

using json = nlohmann::json;

const ResourceKey kDeployments{"apps", "deployments"};
const ResourceKey kReplicaSets{"apps", "replicasets"};
const ResourceKey kPods{"", "pods"};

std::string metaString(const json& obj, const char* key) {
  auto meta = obj.find("metadata");
  return meta == obj.end() ? "" : core::stringMember(*meta, key);
}

bool isTerminating(const json& obj) {
  return obj.contains("metadata") && obj["metadata"].contains("deletionTimestamp");
}

std::string describe(const char* kind, const json& obj) {
  return std::string(kind) + " " + metaString(obj, "namespace") + "/" + metaString(obj, "name");
}

}  // namespace

WorkloadController::WorkloadController(ObjectStore& store, Clock clock)
    : store_(store), clock_(std::move(clock)) {}

size_t WorkloadController::sync() {
  size_t writes = 0;
  for (const ResourceKey* key : {&kDeployments, &kReplicaSets}) {
    auto list = store_.list(*key, "", {});
    if (!list.ok()) continue;  // the type is not registered (a store without workloads)
    for (const auto& item : list->items) {
      if (isTerminating(item->object)) continue;
      writes += key == &kDeployments ? syncDeployment(item->object) : syncReplicaSet(item->object);
    }
  }
  return writes;
}

std::vector<json> WorkloadController::controlledBy(const ResourceKey& key, const std::string& ns,
                                                   const std::string& owner_uid) const {
  std::vector<json> out;
  auto list = store_.list(key, ns, {});
  if (!list.ok()) return out;
  for (const auto& item : list->items) {
    const json& meta = item->object["metadata"];
    if (!meta.contains("ownerReferences") || !meta["ownerReferences"].is_array()) continue;
    for (const auto& ref : meta["ownerReferences"]) {
      if (ref.value("controller", false) && ref.value("uid", "") == owner_uid) {
        out.push_back(item->object);
        break;
      }
    }
  }
  return out;
}

size_t WorkloadController::writeStatus(const ResourceKey& key, const json& object,
                                       const json& status) {
  if (object.contains("status") && object["status"] == status) return 0;
  auto written = store_.mutate(key, metaString(object, "namespace"), metaString(object, "name"),
                               [&](json& obj) -> std::optional<StatusError> {
                                 obj["status"] = status;
                                 return std::nullopt;
                               });
  if (!written.ok()) {
    RM_LOG(WARN, LOCAL) << "workloads: status of " << key.qualified() << " "
                        << metaString(object, "namespace") << "/" << metaString(object, "name")
                        << ": " << written.error().message();
    return 0;
  }
  return 1;
}

size_t WorkloadController::syncDeployment(const json& deployment) {
  const std::string ns = metaString(deployment, "namespace");
  const auto owned = controlledBy(kReplicaSets, ns, metaString(deployment, "uid"));
  const DeploymentPlan plan = planDeployment(deployment, owned, clock_());
  size_t writes = 0;
  if (plan.create) {
    auto created = store_.create(kReplicaSets, ns, *plan.create);
    if (created.ok()) {
      ++writes;
      RM_LOG(INFO, LOCAL) << "workloads: " << describe("Deployment", deployment)
                          << ": created ReplicaSet " << metaString(*plan.create, "name");
    } else if (created.error().code() != 409) {
      RM_LOG(WARN, LOCAL) << "workloads: " << describe("Deployment", deployment)
                          << ": creating ReplicaSet " << metaString(*plan.create, "name") << ": "
                          << created.error().message();
    }
  }
  for (const auto& [name, replicas] : plan.scale) {
    const int want = replicas;  // clang before 16 cannot capture a structured binding
    auto scaled =
        store_.mutate(kReplicaSets, ns, name, [&](json& rs) -> std::optional<StatusError> {
          rs["spec"]["replicas"] = want;
          return std::nullopt;
        });
    if (scaled.ok()) {
      ++writes;
      RM_LOG(INFO, LOCAL) << "workloads: " << describe("Deployment", deployment)
                          << ": scaled ReplicaSet " << name << " to " << replicas;
    } else {
      RM_LOG(WARN, LOCAL) << "workloads: scaling ReplicaSet " << ns << "/" << name << ": "
                          << scaled.error().message();
    }
  }
  DeleteOptions background;
  background.propagation_policy = "Background";
  for (const auto& name : plan.remove) {
    if (store_.remove(kReplicaSets, ns, name, background).ok()) ++writes;
  }
  return writes + writeStatus(kDeployments, deployment, plan.status);
}

size_t WorkloadController::syncReplicaSet(const json& replica_set) {
  const std::string ns = metaString(replica_set, "namespace");
  const auto pods = controlledBy(kPods, ns, metaString(replica_set, "uid"));
  const ReplicaSetPlan plan = planReplicaSet(replica_set, pods, clock_());
  size_t writes = 0;
  for (int i = 0; i < plan.create; ++i) {
    auto created = store_.create(kPods, ns, podFor(replica_set));
    if (!created.ok()) {
      RM_LOG(WARN, LOCAL) << "workloads: " << describe("ReplicaSet", replica_set)
                          << ": creating a pod: " << created.error().message();
      break;
    }
    ++writes;
    RM_LOG(INFO, LOCAL) << "workloads: " << describe("ReplicaSet", replica_set) << ": created pod "
                        << metaString(created.value()->object, "name");
  }
  for (const auto& name : plan.remove) {
    if (store_.remove(kPods, ns, name, {}).ok()) {
      ++writes;
      RM_LOG(INFO, LOCAL) << "workloads: " << describe("ReplicaSet", replica_set)
                          << ": deleted pod " << name;
    }
  }
  return writes + writeStatus(kReplicaSets, replica_set, plan.status);
}

}  // namespace ringmaster::local::controllers
