#pragma once
// WorkerPod: what the operator keeps of each pod it owns. A pass reads a pod's identity, owner,
// attempt, phase, readiness, scheduling, exit, termination message, what keeps it from running
// and the rendezvous secret in its worker's environment; workerPodOf() derives those facts once,
// as the pod enters the cache, so that the cache holds them and not the pod. A decoded kube::Pod
// with its containers, statuses and conditions is about ten times larger: watching 1,000 jobs x 4
// workers, the pods were most of the operator's memory.
//
// Thread-safety: a value type; workerPodOf() is pure. Failure: none (a field the pod lacks stays
// empty).

#include <cstdint>
#include <optional>
#include <string>

#include "operator/cache_trim.h"
#include "ringmaster/kube/pod.h"

namespace ringmaster::op {

// What keeps a pod from running that waiting alone will not cure, as its kubelet or scheduler
// reports it: PodScheduled False/Unschedulable, or a container waiting with a reason other than
// ContainerCreating/PodInitializing (CreateContainerConfigError, ImagePullBackOff, ...).
struct PodProblem {
  std::string reason;
  std::string message;  // "pod <name>: <what the kubelet said>"
  bool operator==(const PodProblem&) const = default;
};

// Its key and controller as for any child of a job (OwnedChild), and the facts of a pod.
struct WorkerPod : OwnedChild {
  std::string uid;
  int attempt = -1;      // its attempt label (-1 when missing or malformed)
  bool standby = false;  // an elastic job's placeholder beyond the world (kStandbyLabel)
  std::optional<kube::Time> created;
  bool terminating = false;  // the API server is deleting it (deletionTimestamp)
  // status.phase, except that a pod whose worker container has terminated while the job's
  // sidecars still run is Succeeded or Failed by the worker's exit code: the rank is done.
  std::string phase;
  bool sidecars_running = false;  // that case: the pod itself still runs
  std::string reason;             // status.reason (Evicted, ...)
  bool ready = false;             // condition Ready True
  bool scheduled = false;         // bound to a node, or PodScheduled True
  std::string pod_ip;
  // The worker container's exit code, finish time and termination message once it terminated
  // (the code and message fall back to any container's).
  std::optional<int32_t> exit_code;
  std::optional<kube::Time> finished_at;
  std::optional<std::string> termination_message;
  std::optional<PodProblem> problem;
  // The first of spec.schedulingGates ("" when none): a queue has not admitted the pod yet.
  std::string scheduling_gate;
  std::optional<std::string> store_secret;  // the rendezvous secret in its worker's environment

  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  bool operator==(const WorkerPod&) const = default;
};

WorkerPod workerPodOf(const kube::Pod& pod);

}  // namespace ringmaster::op
