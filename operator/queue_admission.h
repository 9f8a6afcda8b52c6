#pragma once
// Admission by Kueue through its plain-pod groups: a job whose pods carry the label
// kueue.x-k8s.io/queue-name (a job label propagates to them, or the pod template sets it) is
// admitted as one group. Each attempt's pods form a group named "<job>-<attempt>" (label
// kueue.x-k8s.io/pod-group-name) of `replicas` pods (annotation
// kueue.x-k8s.io/pod-group-total-count) that ends when one of them fails
// (kueue.x-k8s.io/retriable-in-group "false"), and are created gated (scheduling gate
// kueue.x-k8s.io/admission, which Kueue's webhook would add too): no pod starts until Kueue
// has quota for the whole gang and removes the gates. docs/kueue.md says how a cluster admin
// enables it and what was tested how.
//
// Thread-safety: pure functions. Failure: none.

#include <string>

#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

inline constexpr const char* kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kPodGroupNameLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr const char* kPodGroupTotalCountAnnotation = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr const char* kAdmissionGate = "kueue.x-k8s.io/admission";
// "false": a failed pod ends its group (and frees its quota) instead of waiting for a
// replacement in the same group; the operator's gang restart makes a new group.
inline constexpr const char* kRetriableInGroupAnnotation = "kueue.x-k8s.io/retriable-in-group";

// The pod group of `job`'s attempt `attempt`: "<job>-<attempt>".
std::string podGroupName(const kube::TrainingJob& job, int attempt);

// When `pod` (built for attempt `attempt`, template applied) names a queue: its group label
// and total count, and the admission gate. Otherwise `pod` is left as it is.
void joinQueuePodGroup(const kube::TrainingJob& job, int attempt, kube::Pod& pod);

}  // namespace ringmaster::op
