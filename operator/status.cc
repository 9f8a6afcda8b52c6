#include "operator/status.h"

#include "operator/builders.h"
#include "ringmaster/core/flags.h"

namespace ringmaster::op {

bool podReady(const kube::Pod& pod) {
  for (const kube::Condition& c : pod.status.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;
}

bool podScheduled(const kube::Pod& pod) {
  if (!pod.spec.node_name.empty()) return true;
  for (const kube::Condition& c : pod.status.conditions) {
    if (c.type == "PodScheduled") return c.status == "True";
  }
  return false;
}

bool podFinished(const kube::Pod& pod) {
  return pod.status.phase == "Succeeded" || pod.status.phase == "Failed";
}

std::optional<int32_t> exitCodeOf(const kube::Pod& pod) {
  std::optional<int32_t> any;
  for (const kube::ContainerStatus& cs : pod.status.container_statuses) {
    if (!cs.state || !cs.state->terminated) continue;
    if (cs.name == kWorkerContainer) return cs.state->terminated->exit_code;
    if (!any) any = cs.state->terminated->exit_code;
  }
  return any;
}

int attemptOf(const kube::Pod& pod) {
  auto it = pod.metadata.labels.find(kAttemptLabel);
  if (it == pod.metadata.labels.end()) return -1;
  core::Result<int64_t> n = core::parseInt(it->second);
  return n.ok() && *n >= 0 && *n < (1 << 30) ? static_cast<int>(*n) : -1;
}

const kube::Condition* findCondition(const kube::TrainingJobStatus& status, std::string_view type) {
  for (const kube::Condition& c : status.conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool isTrue(const kube::TrainingJobStatus& status, std::string_view type) {
  const kube::Condition* c = findCondition(status, type);
  return c != nullptr && c->status == "True";
}

bool isFinished(const kube::TrainingJobStatus& status) {
  return isTrue(status, kSucceeded) || isTrue(status, kFailed);
}

void setCondition(kube::TrainingJobStatus& status, std::string_view type, bool value,
                  std::string reason, std::string message, int64_t generation, kube::Time now) {
  const std::string text = value ? "True" : "False";
  kube::Condition* c = nullptr;
  for (kube::Condition& existing : status.conditions) {
    if (existing.type == type) c = &existing;
  }
  if (c == nullptr) {
    status.conditions.emplace_back();
    c = &status.conditions.back();
    c->type = std::string(type);
  }
  if (c->status != text || !c->last_transition_time) c->last_transition_time = now;
  c->status = text;
  c->reason = std::move(reason);
  c->message = std::move(message);
  c->observed_generation = generation;
}

std::string phaseOf(const kube::TrainingJobStatus& status) {
  if (isTrue(status, kFailed)) return "Failed";
  if (isTrue(status, kSucceeded)) return "Succeeded";
  if (isTrue(status, kSuspended)) return "Suspended";
  if (isTrue(status, kRunning)) return "Running";
  if (isTrue(status, kRestarting)) return "Restarting";
  return "Pending";
}

void observePods(const kube::TrainingJob& job, const std::vector<const kube::Pod*>& pods,
                 kube::Time now, kube::TrainingJobStatus& status) {
  const int replicas = job.spec.replicas.value_or(1);
  const int procs = job.spec.procs_per_replica.value_or(1);
  const int64_t generation = job.metadata.generation.value_or(0);
  kube::ReplicaStatus counts;
  counts.active = 0;
  counts.ready = 0;
  counts.succeeded = 0;
  counts.failed = 0;
  int existing = 0;
  for (const kube::Pod* pod : pods) {
    if (pod == nullptr) continue;
    ++existing;
    if (pod->status.phase == "Succeeded") {
      ++*counts.succeeded;
    } else if (pod->status.phase == "Failed") {
      ++*counts.failed;
    } else {
      ++*counts.active;
      if (pod->status.phase == "Running" && podReady(*pod)) ++*counts.ready;
    }
  }
  status.replicas = counts;
  status.world_size = replicas * procs;
  status.world = std::to_string(*counts.ready * procs) + "/" + std::to_string(replicas * procs);
  if (!status.restarts) status.restarts = 0;
  if (existing > 0 && !isTrue(status, kCreated)) {
    setCondition(status, kCreated, true, "WorkersCreated",
                 "created " + std::to_string(replicas) + " worker pods", generation, now);
  }
  // A rank that finished first still joined: the job stays Running while the others finish
  // (instead of flapping to Pending for the last seconds of a successful run).
  const bool all_ready =
      *counts.ready == replicas || (isTrue(status, kRunning) && *counts.failed == 0 &&
                                    *counts.ready + *counts.succeeded == replicas);
  if (all_ready) {
    setCondition(status, kRunning, true, "AllRanksJoined",
                 "all " + std::to_string(replicas * procs) + " ranks joined the rendezvous",
                 generation, now);
    if (isTrue(status, kRestarting)) {
      setCondition(status, kRestarting, false, "AllRanksJoined",
                   "attempt " + std::to_string(*status.restarts) + " is running", generation, now);
    }
  } else if (findCondition(status, kRunning) != nullptr || existing > 0) {
    setCondition(status, kRunning, false, "RanksNotReady",
                 std::to_string(*counts.ready * procs) + "/" + std::to_string(replicas * procs) +
                     " ranks joined the rendezvous",
                 generation, now);
  }
  status.phase = phaseOf(status);
}

}  // namespace ringmaster::op
