#pragma once
// spec.template: how a job's own pod template meets the worker pod the operator builds. The
// rules are written out in docs/pod-template.md; in short:
// - The template adds: labels and annotations; where the pod runs (nodeSelector, tolerations,
//   affinity, topologySpreadConstraints, priorityClassName, schedulingGates, runtimeClassName);
//   who it runs as (serviceAccountName, automountServiceAccountToken, imagePullSecrets, the pod's
//   securityContext, which overrides the operator's restricted defaults field by field); volumes,
//   initContainers and sidecar containers; and, in the container named "worker", the worker's
//   resources, env and volumeMounts.
// - The operator owns the rest of the worker container (image, command, ports, probes,
//   securityContext), the pod's identity and wiring (name, hostname, subdomain, restartPolicy,
//   nodeName, schedulerName, the ringmaster.dev/ labels, the gang scheduler's group label) and
//   the rank environment. A template value for any of those is refused naming the field, never
//   dropped.
// - The worker's env, volumes and mounts may come from the top-level spec.env, spec.volumes,
//   spec.volumeMounts as well; both are used, top level first, and a name given twice is refused.
//   spec.resources and the template's worker resources are one or the other.
//
// Thread-safety: pure functions. Failure: validatePodTemplate() reports field errors; the
// builders assume a spec it accepted.

#include <string>
#include <vector>

#include "ringmaster/contract/field_errors.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

// An item of the worker pod and where in the job it was given ("spec.env[2]",
// "spec.template.spec.containers[0].env[1]").
template <class T>
struct Given {
  std::string path;
  const T* item = nullptr;
};

// The worker container's additions from both places a job may give them, in the order the pod
// gets them. Points into `spec`, which must outlive it.
struct WorkerAdditions {
  std::vector<Given<kube::EnvVar>> env;
  std::vector<Given<kube::Volume>> volumes;
  std::vector<Given<kube::VolumeMount>> volume_mounts;
  Given<kube::ResourceRequirements> resources;  // item null: none
};
WorkerAdditions workerAdditions(const kube::TrainingJobSpec& spec);

// The template's container that configures the worker (named "worker"), or null.
const kube::Container* templateWorker(const kube::TrainingJobSpec& spec);

// Every problem of spec.template, and of job labels that would collide with the operator's.
// The worker's env, volumes and mounts from either place are checked by the caller through
// workerAdditions(); `metrics_port` is the trainer's (sidecars must not take it).
void validatePodTemplate(const kube::TrainingJob& job, int32_t metrics_port,
                         contract::FieldErrors& errors);

// Adds the template's pod-level fields, labels, annotations, volumes and extra containers to
// `pod` (built by buildWorkerPod, which adds the worker's own additions itself).
void applyPodTemplate(const kube::PodTemplateSpec& tmpl, kube::Pod& pod);

// Label keys the operator sets on the pods it builds (the ringmaster.dev/ keys and the gang
// scheduler's or queue's group label and annotation).
bool operatorOwnedLabel(const std::string& key);
bool operatorOwnedAnnotation(const std::string& key);

}  // namespace ringmaster::op
