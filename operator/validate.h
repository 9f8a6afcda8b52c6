#pragma once
// Defaulting and validation of a TrainingJob spec: what the CRD schema (crds/trainingjob.yaml)
// already enforces, checked again for objects that slipped past it (an API server without schema
// enforcement, an older CRD), plus the rules a schema cannot express (volume mounts naming
// volumes, reserved environment names, the operator's default image). A job that fails here
// ends Failed with reason InvalidSpec and a message naming each field; nothing is created.
//
// Thread-safety: pure functions. Failure: validate() returns the list of field errors;
// defaultAndValidate() folds them into one InvalidArgument Status.

#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {

inline constexpr int32_t kMaxWorldSize = 4096;
inline constexpr int32_t kMaxProcsPerReplica = 64;
inline constexpr int32_t kDefaultScheduleTimeoutSeconds = 300;
inline constexpr int32_t kDefaultBackoffLimit = 3;

// Bounds the model's size: weights, gradients and optimizer state (~16 bytes a parameter)
// live on every rank; 100M parameters is ~1.6 GB each.
inline constexpr int64_t kMaxModelParameters = 100'000'000;

struct ValidateOptions {
  std::string default_image;  // the operator's --trainer-image; "" = none
  // The cluster admin's --allow-host-path: spec.volumes may use hostPath (the node's files).
  bool allow_host_path = false;
};

struct FieldError {
  std::string field;    // "spec.replicas"
  std::string message;  // "must be at least 1, got 0"
  bool operator==(const FieldError&) const = default;
};

// The spec with every default of the CRD applied (and the operator's default image).
kube::TrainingJobSpec withDefaults(const kube::TrainingJobSpec& spec,
                                   const ValidateOptions& options);

// Every problem of a *defaulted* job; empty when it is valid.
std::vector<FieldError> validate(const kube::TrainingJob& job, const ValidateOptions& options = {});

// "spec.replicas: must be at least 1, got 0; spec.image: required ..."
std::string describe(const std::vector<FieldError>& errors);

// withDefaults + validate; InvalidArgument with describe() of the errors.
core::Result<kube::TrainingJobSpec> defaultAndValidate(const kube::TrainingJob& job,
                                                       const ValidateOptions& options);

// Parameters of spec.trainer.model as the trainer builds it for Fashion-MNIST (its defaults for
// what the spec leaves out).
int64_t modelParameters(const kube::ModelSpec& model);

}  // namespace ringmaster::op
