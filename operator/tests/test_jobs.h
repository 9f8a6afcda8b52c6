#pragma once
// Object builders shared by the operator tests.

#include <string>

#include "operator/validate.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op::testing {

// The API paths the fake API server answers for the default namespace.
inline const std::string kJobs = "/apis/ringmaster.dev/v1alpha1/namespaces/default/trainingjobs";
inline const std::string kPods = "/api/v1/namespaces/default/pods";

inline kube::TrainingJob makeJob(const std::string& name = "fmnist", int replicas = 2) {
  kube::TrainingJob job;
  kube::setTypeMeta(job);
  job.metadata.name = name;
  job.metadata.namespace_name = "default";
  job.metadata.uid = "job-uid-" + name;
  job.metadata.generation = 1;
  job.spec.replicas = replicas;
  job.spec.image = "ringmaster/trainer:0.1.0";
  return job;
}

inline kube::TrainingJob defaulted(kube::TrainingJob job) {
  job.spec = withDefaults(job.spec, ValidateOptions{});
  return job;
}

}  // namespace ringmaster::op::testing
