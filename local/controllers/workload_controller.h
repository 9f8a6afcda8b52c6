#pragma once
// The local cluster's Deployment and ReplicaSet controllers: each pass reads every Deployment,
// ReplicaSet and the pods they control from the store and applies what workload_plan.h decides
// (create, scale, delete, status). The API server runs a pass when a Deployment, ReplicaSet or
// Pod changes (its store's commit listener) and each second with its garbage collector; the
// passes are level-triggered, so a missed change is caught on the next one.
// A Deployment's ReplicaSets and a ReplicaSet's pods are found by their controller owner
// reference; deleting the owner leaves them to the garbage collector.
//
// Thread-safety: not synchronized; one thread runs the passes. Failure: a write that fails is
// logged with the object it was for and retried on the next pass.

#include <functional>

#include "local/controllers/workload_plan.h"
#include "local/store/object_store.h"

namespace ringmaster::local::controllers {

class WorkloadController {
 public:
  using Clock = std::function<TimePoint()>;
  explicit WorkloadController(
      ObjectStore& store, Clock clock = [] { return std::chrono::system_clock::now(); });

  // One pass over every Deployment, then every ReplicaSet. Returns the writes it made.
  size_t sync();

 private:
  size_t syncDeployment(const nlohmann::json& deployment);
  size_t syncReplicaSet(const nlohmann::json& replica_set);
  // Objects of `key` in `ns` whose controller is `owner_uid`.
  std::vector<nlohmann::json> controlledBy(const ResourceKey& key, const std::string& ns,
                                           const std::string& owner_uid) const;
  // Writes `status` unless the object already shows it.
  size_t writeStatus(const ResourceKey& key, const nlohmann::json& object,
                     const nlohmann::json& status);

  ObjectStore& store_;
  Clock clock_;
};

}  // namespace ringmaster::local::controllers
