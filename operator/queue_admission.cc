#include "operator/queue_admission.h"

#include <algorithm>

#include "operator/validate.h"

namespace ringmaster::op {

std::string podGroupName(const kube::TrainingJob& job, int attempt) {
  return job.metadata.name + "-" + std::to_string(attempt);
}

void joinQueuePodGroup(const kube::TrainingJob& job, int attempt, kube::Pod& pod) {
  if (!pod.metadata.labels.count(kQueueNameLabel)) return;
  pod.metadata.labels[kPodGroupNameLabel] = podGroupName(job, attempt);
  pod.metadata.annotations[kPodGroupTotalCountAnnotation] =
      std::to_string(settingsOf(job.spec).gangPods());
  pod.metadata.annotations[kRetriableInGroupAnnotation] = "false";
  auto& gates = pod.spec.scheduling_gates;
  const bool gated = std::any_of(gates.begin(), gates.end(),
                                 [](const auto& g) { return g.name == kAdmissionGate; });
  if (!gated) gates.push_back(kube::PodSchedulingGate{kAdmissionGate, {}});
}

}  // namespace ringmaster::op
