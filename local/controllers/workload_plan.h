#pragma once
// What the local cluster's workload controllers decide, as pure functions of the objects they
// read: a ReplicaSet keeps `spec.replicas` pods of its template, a Deployment keeps one
// ReplicaSet per pod template (named by the template's hash) and scales the others to zero once
// the current one is available. This is the smallest behaviour that makes a Deployment mean
// what `kubectl rollout status` and `helm install --wait` expect of it; it is not
// kube-controller-manager's rolling update (no surge or unavailability stepping: the new
// ReplicaSet gets every replica at once, the old ones keep theirs until the new are available,
// or, with strategy Recreate, are scaled down at once).
//
// Thread-safety: pure. Failure: none; malformed objects read as empty.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::local::controllers {

using TimePoint = std::chrono::system_clock::time_point;

inline constexpr const char* kPodTemplateHashLabel = "pod-template-hash";
inline constexpr const char* kRevisionAnnotation = "deployment.kubernetes.io/revision";

// An int-or-string of a rolling update ("25%" or 1) resolved against `total`: percentages round
// up for maxSurge and down for maxUnavailable, as the Deployment controller rounds them.
int resolveIntOrPercent(const nlohmann::json& value, int total, bool round_up, int fallback);

// The Deployment's maxUnavailable (0 unless the strategy is RollingUpdate).
int maxUnavailable(const nlohmann::json& deployment);

// The label value that names a pod template: a hash of the template and the Deployment's
// collisionCount, in the alphabet Kubernetes uses for generated names (no vowels).
std::string podTemplateHash(const nlohmann::json& pod_template, int collision_count);

// Whether `pod` is Ready and has been for `min_ready_seconds` at `now`.
bool podReady(const nlohmann::json& pod);
bool podAvailable(const nlohmann::json& pod, int min_ready_seconds, TimePoint now);

struct ReplicaSetPlan {
  int create = 0;                   // pods to create from the template
  std::vector<std::string> remove;  // pods to delete, by name
  nlohmann::json status;            // the status the ReplicaSet should show
};

// `pods`: the pods this ReplicaSet controls (controller owner reference to its uid).
ReplicaSetPlan planReplicaSet(const nlohmann::json& replica_set,
                              const std::vector<nlohmann::json>& pods, TimePoint now);

// The pod a ReplicaSet creates: its template, owned by it (generateName "<rs>-").
nlohmann::json podFor(const nlohmann::json& replica_set);

struct DeploymentPlan {
  std::optional<nlohmann::json> create;  // a ReplicaSet for the current template, when none has it
  // ReplicaSets to resize: name -> replicas.
  std::vector<std::pair<std::string, int>> scale;
  std::vector<std::string> remove;  // old, empty ReplicaSets beyond revisionHistoryLimit
  nlohmann::json status;            // the status the Deployment should show
};

// `replica_sets`: those this Deployment controls.
DeploymentPlan planDeployment(const nlohmann::json& deployment,
                              const std::vector<nlohmann::json>& replica_sets, TimePoint now);

}  // namespace ringmaster::local::controllers
