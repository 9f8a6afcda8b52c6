#pragma once
// Status derivation (pure): what a TrainingJob's pods say about it, in the shape of its status.
//   - conditions per Kubernetes conventions: one per type, lastTransitionTime kept while the
//     status (True/False) is unchanged, observedGeneration = the generation it was computed from;
//   - replicas {active, ready, succeeded, failed} of the current attempt, worldSize and the
//     printer column world "<ready ranks>/<total ranks>";
//   - Running is True only when every pod of the attempt is Ready, which the launcher reports
//     once all ranks joined the rendezvous (not merely when the pods exist);
//   - phase is the strongest true condition: Failed, Succeeded, Suspended, Running, Restarting,
//     else Pending.
// decide() (decide.h) decides the transitions (restart, fail, suspend); this file only observes and
// records them.
//
// Thread-safety: pure functions. Failure: none.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/conditions.h"
#include "operator/worker_pod.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// What a pod says, read once as it enters the cache (worker_pod.h): the rest of the operator
// reads WorkerPods.
bool podReady(const kube::Pod& pod);      // condition Ready True
bool podScheduled(const kube::Pod& pod);  // bound to a node or PodScheduled True
// The worker container's exit code when it terminated (falls back to any container).
std::optional<int32_t> exitCodeOf(const kube::Pod& pod);
// Of the failed pods (nullptr entries: missing), the one whose failure most likely caused the
// others': an exit code of its own (1-127) before a signal's or a lost peer's (128 and up), then
// the earliest finishedAt, then the lowest index; -1 when none failed.
int firstFailedReplica(const std::vector<const WorkerPod*>& pods);

// The worker container's termination message when it terminated with one (falls back to any
// container), as the kubelet reported it.
std::optional<std::string> terminationMessageOf(const kube::Pod& pod);

// The most of a termination message a condition or an Event carries.
inline constexpr size_t kMaxFoldedMessageBytes = 512;
// `message` as one line of at most `max_bytes` for a condition or an Event: its non-blank lines
// trimmed and joined with " | ", keeping the last lines that fit (a log tail ends with what
// matters); a last line longer than that keeps its start, cut on a UTF-8 boundary, plus "...".
std::string foldMessage(std::string_view message, size_t max_bytes = kMaxFoldedMessageBytes);

// The attempt label of a worker pod (-1 when missing or malformed).
int attemptOf(const kube::Pod& pod);

const kube::Condition* findCondition(const std::vector<kube::Condition>& conditions,
                                     std::string_view type);
const kube::Condition* findCondition(const kube::TrainingJobStatus& status, std::string_view type);
bool isTrue(const kube::TrainingJobStatus& status, std::string_view type);
bool isFinished(const kube::TrainingJobStatus& status);  // Succeeded or Failed is True

inline constexpr size_t kMaxConditionReason = 1024;
inline constexpr size_t kMaxConditionMessage = 32768;
std::string conditionReason(std::string reason);
std::string conditionMessage(std::string message);

// Sets condition `type` with every field metav1.Condition requires; keeps lastTransitionTime
// when its status does not change. A reason outside metav1's pattern (a CamelCase word) is
// reduced to its letters, digits and '_' (or "Unknown"), and a message is cut at metav1's
// 32768 bytes, so that the API server never refuses the status for it.
// Any kind's conditions (an Experiment's too) follow the same rules.
void setCondition(std::vector<kube::Condition>& conditions, std::string_view type, bool value,
                  std::string reason, std::string message, int64_t generation, kube::Time now);
void setCondition(kube::TrainingJobStatus& status, std::string_view type, bool value,
                  std::string reason, std::string message, int64_t generation, kube::Time now);

std::string phaseOf(const kube::TrainingJobStatus& status);
// status.reason for that phase: Failed -> the Failed condition's reason; Pending or Restarting
// -> why pods are not running (Created False, else Running False, unless merely RanksNotReady);
// otherwise none.
std::optional<std::string> reasonOf(const kube::TrainingJobStatus& status);

// What keeps the pod from running that waiting alone will not cure (PodProblem, worker_pod.h).
std::optional<PodProblem> podProblem(const kube::Pod& pod);

// Pod counts of each role of the gang.
struct RoleCounts {
  kube::ReplicaStatus workers;
  kube::ReplicaStatus ps;         // none for a job without ps pods
  kube::ReplicaStatus chief;      // none for a job without a chief pod
  kube::ReplicaStatus evaluator;  // none for a job without an evaluator pod
};
// Every count of every role 0 (set, not absent: the status says "none").
RoleCounts zeroCounts();
// status.replicas (the workers), status.roles.ps, .chief and .evaluator (a job with such pods),
// worldSize and world ("<ready ranks>/<total ranks>", every role's) from pod counts.
void setReplicaCounts(const kube::TrainingJob& job, const RoleCounts& counts,
                      kube::TrainingJobStatus& status);

// Replica counts, world, Created/Running (and Restarting cleared once Running) from the pods of
// the current attempt (nullptr entries: missing pods). `job` is defaulted.
void observePods(const kube::TrainingJob& job, const std::vector<const WorkerPod*>& pods,
                 kube::Time now, kube::TrainingJobStatus& status);

}  // namespace ringmaster::op
