#pragma once
// ringmaster.dev/v1alpha1 TrainingJob, plural trainingjobs, short name tj: the typed
// shape of crds/trainingjob.yaml (one field here per schema field there). spec.trainer is the
// built-in trainer's configuration (the keys trainer --config reads); a user program replaces it
// through spec.command. Fields the schema does not know survive in `extra`. Defaults and
// validation belong to the schema, the operator (operator/validate.h) and, for spec.trainer, the
// contract the operator and the trainer share (ringmaster/contract/trainer_spec.h); this is only
// the shape.
// Codecs and conventions: codec.h. Thread-safety: plain values, not synchronized.
// Failure: decode returns InvalidArgument naming the field path ("spec.replicas: expected
// integer, got string").

#include <cstdint>
#include <map>
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
  std::optional<int32_t> cnn_hidden;
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
  std::optional<std::string> type;  // sgd | adam
  std::optional<double> learning_rate;
  std::optional<double> momentum;
  std::optional<double> weight_decay;
  std::optional<std::string> schedule;  // constant | cosine
  std::optional<bool> nesterov;
  std::optional<double> beta1;
  std::optional<double> beta2;
  std::optional<double> epsilon;
  nlohmann::json extra;
  bool operator==(const OptimizerSpec&) const = default;
};

struct CheckpointSpec {
  std::optional<std::string> path;
  std::optional<int32_t> every_steps;
  std::optional<int32_t> keep;
  nlohmann::json extra;
  bool operator==(const CheckpointSpec&) const = default;
};

// Layers in stages on ranks of their own, each mini-batch in micro-batches.
struct PipelineSpec {
  std::optional<int32_t> stages;
  std::optional<int32_t> micro_batches;  // "microBatches"
  std::optional<std::string> schedule;   // gpipe | 1f1b
  std::vector<int32_t> partition;        // first layer of each stage; empty: balanced
  nlohmann::json extra;
  bool operator==(const PipelineSpec&) const = default;
};

// Parameter servers among the ranks: they hold the parameters and apply the optimizer; the
// other ranks train against them.
struct ParameterServerSpec {
  std::optional<int32_t> servers;
  std::optional<std::string> consistency;  // sync | async | bounded
  std::optional<int32_t> staleness;        // bounded: steps a worker may run ahead
  nlohmann::json extra;
  bool operator==(const ParameterServerSpec&) const = default;
};

// How the trainer's ranks split the work beyond data parallelism.
struct ParallelismSpec {
  std::optional<int32_t> tensor;  // ranks that split each MLP layer pair
  std::optional<PipelineSpec> pipeline;
  std::optional<ParameterServerSpec> parameter_server;  // "parameterServer"
  nlohmann::json extra;
  bool operator==(const ParallelismSpec&) const = default;
};

// Autotune: the trainer measures its step time under candidate settings of its performance
// knobs during the first steps (which train like any other) and trains on the fastest. An
// object so that its budget and space have a place; `autotune: {}` turns it on with the
// defaults.
struct AutotuneSpec {
  std::optional<int32_t> max_samples;       // "maxSamples": settings measured, the defaults too
  std::optional<int32_t> warmup_steps;      // "warmupSteps": discarded after each change
  std::optional<int32_t> measure_steps;     // "measureSteps": whose median is a sample
  std::vector<double> bucket_cap_mb;        // "bucketCapMB": the space; empty: the default grid
  std::vector<double> first_bucket_cap_mb;  // "firstBucketCapMB"
  std::vector<int32_t> micro_batches;       // "microBatches": a pipeline's; empty: the default
  std::vector<int32_t> blas_threads;        // "blasThreads": empty: the default
  std::vector<double> tcp_doubling_max_kb;  // "tcpDoublingMaxKB": empty: the default
  std::optional<std::string> log;           // a CSV of every sample (HOROVOD_AUTOTUNE_LOG's)
  std::optional<bool> retune;               // tune again though the checkpoint holds a choice
  nlohmann::json extra;
  bool operator==(const AutotuneSpec&) const = default;
};

// One hyperparameter: a field under the trial's spec.trainer and the values it takes, a range
// or a list of choices.
struct SearchParameterSpec {
  std::optional<std::string> path;  // "optimizer.learningRate"
  std::optional<double> min;        // a range's ends
  std::optional<double> max;
  std::optional<std::string> scale;  // linear | log
  std::optional<bool> integer;       // the range's values are whole numbers
  std::vector<nlohmann::json> choices;
  std::optional<int32_t> grid_points;  // "gridPoints": a range's values in a grid search
  nlohmann::json extra;
  bool operator==(const SearchParameterSpec&) const = default;
};

// Population-based training: this run is one member of a population that trains side by side
// and, after every epoch, meets in `directory` (a volume every member mounts): each member
// publishes its objective and a checkpoint, and the bottom quantile continues from a top
// member's weights and optimizer state with that member's values of `parameters` perturbed.
// An Experiment's pbt search writes it for each member.
struct PbtSpec {
  std::optional<std::string> directory;
  std::optional<std::string> member;
  std::vector<std::string> population;          // every member's name, this one's included
  std::vector<SearchParameterSpec> parameters;  // explored: optimizer fields
  std::optional<int64_t> seed;
  std::optional<double> quantile;
  std::optional<double> resample_probability;  // "resampleProbability"
  std::optional<std::string> metric;           // testAccuracy | loss
  std::optional<std::string> goal;             // maximize | minimize
  std::optional<int32_t> wait_seconds;         // "waitSeconds": for the others at an interval
  std::optional<int32_t> intervals;            // a program of the user's own: its runs
  nlohmann::json extra;
  bool operator==(const PbtSpec&) const = default;
};

// The built-in trainer (the trainer decodes its --config with this same codec).
struct TrainerSpec {
  std::optional<ModelSpec> model;
  std::optional<DatasetSpec> dataset;
  std::optional<int32_t> epochs;
  std::optional<int32_t> batch_size;  // per rank
  // "globalBatchSize": samples per step over all ranks, split evenly among however many there
  // are (instead of batchSize): what a job that changes its world keeps.
  std::optional<int32_t> global_batch_size;
  std::optional<OptimizerSpec> optimizer;
  std::optional<double> bucket_cap_mb;        // "bucketCapMB"
  std::optional<double> first_bucket_cap_mb;  // "firstBucketCapMB"
  std::optional<double> tcp_doubling_max_kb;  // "tcpDoublingMaxKB"
  std::optional<CheckpointSpec> checkpoint;
  std::optional<int64_t> seed;
  std::optional<int64_t> max_steps;
  std::optional<int32_t> log_every_steps;
  std::optional<int32_t> metrics_port;
  std::optional<int32_t> comm_timeout_seconds;
  std::optional<int32_t> blas_threads;
  std::optional<std::string> device;     // auto | cpu | cuda
  std::optional<std::string> precision;  // fp32 | bf16 (GPU)
  std::optional<bool> cuda_graph;        // "cudaGraph"
  std::optional<ParallelismSpec> parallelism;
  std::optional<AutotuneSpec> autotune;
  std::optional<PbtSpec> pbt;
  nlohmann::json extra;
  bool operator==(const TrainerSpec&) const = default;
};

struct SchedulingPolicy {
  std::optional<int32_t> schedule_timeout_seconds;
  std::optional<std::string> scheduler_name;
  nlohmann::json extra;
  bool operator==(const SchedulingPolicy&) const = default;
};

// How far an elastic job's world may shrink when pods are lost and grow back when capacity
// returns; spec.replicas is the world it starts at.
struct ElasticPolicy {
  std::optional<int32_t> min_replicas;
  std::optional<int32_t> max_replicas;  // defaults to spec.replicas
  nlohmann::json extra;
  bool operator==(const ElasticPolicy&) const = default;
};

// A role's pods beside the workers (TFJob's PS replicas): how many, and what they run with where
// it differs from the workers'.
struct RoleSpec {
  std::optional<int32_t> replicas;
  std::optional<ResourceRequirements> resources;  // default: spec.resources
  std::optional<PodTemplateSpec> pod_template;    // "template"; default: spec.template
  nlohmann::json extra;
  bool operator==(const RoleSpec&) const = default;
};

// The roles a job runs in pods of their own, beside spec.replicas worker pods.
struct Roles {
  std::optional<RoleSpec> ps;         // parameter servers
  std::optional<RoleSpec> chief;      // a user program's coordinator (TF_CONFIG's chief)
  std::optional<RoleSpec> evaluator;  // a user program's side evaluator (TF_CONFIG's evaluator)
  nlohmann::json extra;               // any other key: a role the operator refuses, naming it
  bool operator==(const Roles&) const = default;
};

struct TrainingJobSpec {
  std::optional<int32_t> replicas;
  std::optional<int32_t> procs_per_replica;
  std::optional<std::string> launcher;  // native | mpi
  std::optional<std::string> backend;   // auto | nccl | gloo | mpi
  std::optional<std::string> image;
  std::optional<ResourceRequirements> resources;
  std::optional<TrainerSpec> trainer;
  std::vector<std::string> command;  // a user program instead of the built-in trainer
  std::vector<EnvVar> env;
  std::vector<Volume> volumes;
  std::vector<VolumeMount> volume_mounts;
  std::optional<std::string> restart_policy;  // Never | OnFailure | ExitCode
  std::optional<int32_t> backoff_limit;
  std::optional<int64_t> active_deadline_seconds;
  // Seconds the other workers have to finish once one succeeded (0: no bound).
  std::optional<int32_t> finish_timeout_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<std::string> clean_pod_policy;  // None | Running | All
  std::optional<bool> suspend;
  std::optional<SchedulingPolicy> scheduling_policy;
  std::optional<ElasticPolicy> elastic;
  std::optional<Roles> roles;
  // The controller that reconciles this job; unset or ringmaster's own: the operator. Another
  // value (a multi-cluster dispatcher's, e.g. MultiKueue's) makes the operator leave it alone.
  std::optional<std::string> managed_by;
  // "template": what every worker pod adds to the pod the operator builds (where it runs, its
  // labels, sidecars, the worker container's resources, env and mounts).
  std::optional<PodTemplateSpec> pod_template;
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

// The pods of each role beside the workers, counted as status.replicas counts the workers'.
struct RoleStatuses {
  std::optional<ReplicaStatus> ps;
  std::optional<ReplicaStatus> chief;
  std::optional<ReplicaStatus> evaluator;
  nlohmann::json extra;
  bool operator==(const RoleStatuses&) const = default;
};

// A worker pod the operator replaced alone (a parameter-server job's worker: the servers and the
// other workers went on without a gang restart).
struct PodReplacement {
  std::optional<std::string> pod;
  std::optional<std::string> uid;  // the failed pod's, so that a pass never counts it twice
  std::optional<Time> time;
  std::optional<std::string> reason;  // why it failed, in its own words where it left some
  nlohmann::json extra;
  bool operator==(const PodReplacement&) const = default;
};

// One exploit of a population-based training member: after round `round` (epochs done) at
// `step` it continued from `source`'s weights, with these values.
struct PbtExploit {
  std::optional<int64_t> round;
  std::optional<int64_t> step;
  std::optional<std::string> source;
  std::optional<double> source_objective;  // "sourceObjective"
  std::optional<double> objective;         // what this member had reached
  std::map<std::string, nlohmann::json> parameters;
  nlohmann::json extra;
  bool operator==(const PbtExploit&) const = default;
};

// A population-based training member's outcome, from its final summary.
struct PbtProgress {
  std::optional<std::string> member;
  std::map<std::string, nlohmann::json> parameters;  // the values it ended on
  std::vector<PbtExploit> lineage;
  // "roundSeconds": what its rounds cost it (checkpoints, waiting for the others, exploits).
  std::optional<double> round_seconds;
  nlohmann::json extra;
  bool operator==(const PbtProgress&) const = default;
};

struct TrainingProgress {
  std::optional<int32_t> epoch;
  std::optional<int64_t> step;
  std::optional<double> loss;
  std::optional<double> samples_per_second;
  std::optional<double> allreduce_bus_bandwidth;  // bytes/s, nccl-tests busbw
  std::optional<double> test_accuracy;            // 0..1, after the last finished epoch
  // The checkpoint step the trainers started from; absent for a run from scratch.
  std::optional<int64_t> resumed_from_step;
  std::optional<PbtProgress> pbt;  // a population-based training member's
  nlohmann::json extra;
  bool operator==(const TrainingProgress&) const = default;
};

struct TrainingJobStatus {
  std::vector<Condition> conditions;
  // Pending | Running | Restarting | Succeeded | Failed | Suspended
  std::optional<std::string> phase;
  // Why the job is in that phase, where it needs saying (printer column REASON).
  std::optional<std::string> reason;
  std::optional<ReplicaStatus> replicas;  // the worker pods'
  std::optional<RoleStatuses> roles;      // each other role's pods
  std::optional<int32_t> restarts;        // gang restarts so far = the current attempt number
  // Worker pods in the current world: spec.replicas, or where an elastic job resized to.
  std::optional<int32_t> current_replicas;
  // The label selector of those pods (the scale subresource's, for autoscalers).
  std::optional<std::string> selector;
  std::optional<int32_t> world_size;
  std::optional<std::string> world;  // "<ready ranks>/<total ranks>" (printer column WORLD)
  std::optional<int32_t> schedule_retries;
  // Worker pods replaced alone so far (not gang restarts), and the latest of them.
  std::optional<int32_t> replaced_pods;
  std::vector<PodReplacement> replacements;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<Time> last_restart_time;  // when the gang was last released
  std::optional<TrainingProgress> progress;
  std::optional<int64_t> observed_generation;
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
RM_KUBE_DECLARE_CODEC(PipelineSpec);
RM_KUBE_DECLARE_CODEC(ParameterServerSpec);
RM_KUBE_DECLARE_CODEC(ParallelismSpec);
RM_KUBE_DECLARE_CODEC(AutotuneSpec);
RM_KUBE_DECLARE_CODEC(SearchParameterSpec);
RM_KUBE_DECLARE_CODEC(PbtSpec);
RM_KUBE_DECLARE_CODEC(TrainerSpec);
RM_KUBE_DECLARE_CODEC(SchedulingPolicy);
RM_KUBE_DECLARE_CODEC(ElasticPolicy);
RM_KUBE_DECLARE_CODEC(RoleSpec);
RM_KUBE_DECLARE_CODEC(Roles);
RM_KUBE_DECLARE_CODEC(TrainingJobSpec);
RM_KUBE_DECLARE_CODEC(ReplicaStatus);
RM_KUBE_DECLARE_CODEC(RoleStatuses);
RM_KUBE_DECLARE_CODEC(PodReplacement);
RM_KUBE_DECLARE_CODEC(PbtExploit);
RM_KUBE_DECLARE_CODEC(PbtProgress);
RM_KUBE_DECLARE_CODEC(TrainingProgress);
RM_KUBE_DECLARE_CODEC(TrainingJobStatus);
RM_KUBE_DECLARE_CODEC(TrainingJob);

}  // namespace ringmaster::kube
