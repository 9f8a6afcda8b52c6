#include "operator/worker_pod.h"

#include "operator/builders.h"
#include "operator/status.h"

namespace ringmaster::op {

WorkerPod workerPodOf(const kube::Pod& pod) {
  WorkerPod w;
  static_cast<OwnedChild&>(w) = ownedChildOf(pod.metadata);
  w.uid = pod.metadata.uid;
  w.attempt = attemptOf(pod);
  if (auto it = pod.metadata.labels.find(kStandbyLabel); it != pod.metadata.labels.end()) {
    w.standby = it->second == "true";
  }
  w.created = pod.metadata.creation_timestamp;
  w.terminating = pod.metadata.deletion_timestamp.has_value();
  w.phase = pod.status.phase;
  w.reason = pod.status.reason;
  w.ready = podReady(pod);
  w.scheduled = podScheduled(pod);
  w.pod_ip = pod.status.pod_ip;
  w.exit_code = exitCodeOf(pod);
  std::optional<int32_t> worker_exit;
  bool others_running = false;
  for (const kube::ContainerStatus& cs : pod.status.container_statuses) {
    if (!cs.state) continue;
    if (cs.name == kWorkerContainer && cs.state->terminated) {
      w.finished_at = cs.state->terminated->finished_at;
      worker_exit = cs.state->terminated->exit_code;
    } else if (cs.name != kWorkerContainer && cs.state->running) {
      others_running = true;
    }
  }
  if (worker_exit && others_running && !w.finished()) {
    w.phase = *worker_exit == 0 ? "Succeeded" : "Failed";
    w.sidecars_running = true;
  }
  w.termination_message = terminationMessageOf(pod);
  w.problem = podProblem(pod);
  if (!pod.spec.scheduling_gates.empty()) w.scheduling_gate = pod.spec.scheduling_gates[0].name;
  w.store_secret = storeSecretOf(pod);
  return w;
}

}  // namespace ringmaster::op
