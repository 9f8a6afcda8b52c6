#pragma once
// ringmaster.dev/v1alpha1 TrainingJob (DESIGN §4), plural trainingjobs, short name tj.
// The spec carries both DESIGN §4's built-in trainer (trainer.model/dataset/optimizer/...) and
// the user-program form the reference CRD uses (trainer.image/command/args/env/resources,
// k8s-reference/b-crd.md); status carries DESIGN's replicas/progress and the reference CRD's
// printer-column fields (worldSize, epoch, loss). Defaults and validation belong to the operator;
// this is only the typed shape.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path ("spec.replicas: expected
// integer, got string").

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/meta.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::kube {

struct ModelSpec {
  std::optional<std::string> type;  // mlp | cnn
  std::vector<int32_t> hidden;      // MLP hidden layer widths
  std::vector<int32_t> channels;    // CNN channels per block
  nlohmann::json extra;
  bool operator==(const ModelSpec&) const = default;
};

struct DatasetSpec {
  std::optional<std::string> name;  // fashion-mnist
  std::optional<std::string> path;
  nlohmann::json extra;
  bool operator==(const DatasetSpec&) const = default;
};

struct OptimizerSpec {
  std::optional<std::string> type;  // sgd | adamw
  std::optional<double> learning_rate;
  std::optional<double> momentum;
  std::optional<double> weight_decay;
  std::optional<std::string> schedule;
  nlohmann::json extra;
  bool operator==(const OptimizerSpec&) const = default;
};

struct CheckpointSpec {
  std::optional<std::string> path;
  std::optional<int32_t> every_steps;
  nlohmann::json extra;
  bool operator==(const CheckpointSpec&) const = default;
};

struct TrainerSpec {
  // The built-in trainer (DESIGN §4).
  std::optional<ModelSpec> model;
  std::optional<DatasetSpec> dataset;
  std::optional<int32_t> epochs;
  std::optional<int32_t> batch_size;  // per rank
  std::optional<OptimizerSpec> optimizer;
  std::optional<double> bucket_cap_mb;  // "bucketCapMB"
  std::optional<CheckpointSpec> checkpoint;
  // A user program (the reference CRD's trainer object).
  std::optional<std::string> image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::optional<ResourceRequirements> resources;
  nlohmann::json extra;
  bool operator==(const TrainerSpec&) const = default;
};

struct SchedulingPolicy {
  std::optional<int32_t> schedule_timeout_seconds;
  std::optional<std::string> scheduler_name;
  nlohmann::json extra;
  bool operator==(const SchedulingPolicy&) const = default;
};

struct TrainingJobSpec {
  std::optional<int32_t> replicas;
  std::optional<int32_t> procs_per_replica;
  std::optional<std::string> launcher;  // native | mpi
  std::optional<std::string> backend;   // auto | nccl | gloo | mpi
  std::optional<std::string> image;
  std::optional<ResourceRequirements> resources;
  std::optional<TrainerSpec> trainer;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<Volume> volumes;
  std::optional<std::string> restart_policy;  // Never | OnFailure | ExitCode
  std::optional<int32_t> backoff_limit;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<std::string> clean_pod_policy;  // None | Running | All
  std::optional<bool> suspend;
  std::optional<SchedulingPolicy> scheduling_policy;
  nlohmann::json extra;
  bool operator==(const TrainingJobSpec&) const = default;
};

struct ReplicaStatus {
  std::optional<int32_t> active;
  std::optional<int32_t> succeeded;
  std::optional<int32_t> failed;
  std::optional<int32_t> ready;
  nlohmann::json extra;
  bool operator==(const ReplicaStatus&) const = default;
};

struct TrainingProgress {
  std::optional<int32_t> epoch;
  std::optional<int64_t> step;
  std::optional<double> loss;
  std::optional<double> samples_per_second;
  std::optional<double> allreduce_bus_bandwidth;  // bytes/s, nccl-tests busbw
  nlohmann::json extra;
  bool operator==(const TrainingProgress&) const = default;
};

struct TrainingJobStatus {
  std::vector<Condition> conditions;
  std::optional<std::string> phase;
  std::optional<ReplicaStatus> replicas;
  std::optional<int32_t> restarts;
  std::optional<int32_t> attempt;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<TrainingProgress> progress;
  std::optional<int64_t> observed_generation;
  // The reference CRD's printer columns (b-crd.md).
  std::optional<int32_t> world_size;
  std::optional<int32_t> epoch;
  std::optional<double> loss;
  nlohmann::json extra;
  bool operator==(const TrainingJobStatus&) const = default;
};

struct TrainingJob {
  static constexpr const char* kApiVersion = "ringmaster.dev/v1alpha1";
  static constexpr const char* kKind = "TrainingJob";

  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  TrainingJobSpec spec;
  TrainingJobStatus status;
  nlohmann::json extra;
  bool operator==(const TrainingJob&) const = default;
};

RM_KUBE_DECLARE_CODEC(ModelSpec);
RM_KUBE_DECLARE_CODEC(DatasetSpec);
RM_KUBE_DECLARE_CODEC(OptimizerSpec);
RM_KUBE_DECLARE_CODEC(CheckpointSpec);
RM_KUBE_DECLARE_CODEC(TrainerSpec);
RM_KUBE_DECLARE_CODEC(SchedulingPolicy);
RM_KUBE_DECLARE_CODEC(TrainingJobSpec);
RM_KUBE_DECLARE_CODEC(ReplicaStatus);
RM_KUBE_DECLARE_CODEC(TrainingProgress);
RM_KUBE_DECLARE_CODEC(TrainingJobStatus);
RM_KUBE_DECLARE_CODEC(TrainingJob);

}  // namespace ringmaster::kube
