#pragma once
// The trainer's configuration. Its training settings are a TrainingJob's `spec.trainer`: read
// from YAML of that shape (the ConfigMap's trainer.yaml, or any file passed with --config)
// through the API's codec (kube::TrainerSpec), overridden by flags, then defaulted and checked by
// the one contract the operator checks jobs with (ringmaster/contract/trainer_spec.h). Errors
// name the key path ("trainer.optimizer.momentum: must be in [0, 1), got 1.5").
//
// Thread-safety: plain values. Failure: the functions return kInvalidArgument.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer {

struct DatasetConfig {
  std::string name;
  std::string path;
};

struct CheckpointConfig {
  std::string path;         // empty: no checkpoints
  int64_t every_steps = 0;  // also written at the end of every epoch
  int64_t keep = 0;
};

// Pipeline parallelism (spec.trainer.parallelism.pipeline); stages 1 is plain data parallelism.
struct PipelineConfig {
  int stages = 1;
  int micro_batches = 1;          // per mini-batch
  std::string schedule = "1f1b";  // gpipe | 1f1b
  std::vector<int> partition;     // first layer of each stage; empty: measured and balanced
};

// What one trainer process runs. Build it with trainerConfig() or defaultTrainerConfig(): the
// zeros below are not defaults, the contract's are.
struct TrainerConfig {
  model::ModelConfig model;
  DatasetConfig dataset;
  int64_t epochs = 0;
  int64_t batch_size = 0;  // per data-parallel replica (every pipeline stage sees it)
  // > 0: samples per step over all ranks; resolveBatchSize() makes batch_size its share.
  int64_t global_batch_size = 0;
  optim::OptimizerConfig optimizer;
  // Learning-rate schedule over the whole run (optimizer.schedule): constant, or cosine decay
  // from learningRate to 0 at the last step.
  std::string lr_schedule;
  double bucket_cap_mb = 0;
  double first_bucket_cap_mb = 0;
  CheckpointConfig checkpoint;
  uint64_t seed = 0;
  // Where the model trains: auto (the GPU when this build has CUDA and one is visible), cpu, cuda.
  std::string device;
  // GPU arithmetic: fp32 (no TF32) or bf16 (bf16 GEMMs, fp32 master weights and accumulation).
  std::string precision;
  bool cuda_graph = false;  // GPU: replay each full-batch step as one captured CUDA graph
  int64_t blas_threads = 0;
  int64_t max_steps = 0;        // stop after this many optimizer steps in total (0: no limit)
  int64_t log_every_steps = 0;  // 0: one line per epoch only
  int64_t comm_timeout_seconds = 0;
  PipelineConfig pipeline;
  int tensor = 1;  // ranks that split each MLP layer pair (spec.trainer.parallelism.tensor)
  // Of the process, not of spec.trainer (spec.backend reaches the trainer through its
  // environment; the metrics endpoint through --metrics-port or the config's metricsPort).
  std::string backend = "auto";  // auto | nccl | tcp | gloo | mpi | shm | inproc
  int64_t metrics_port = -1;     // -1: no endpoint; 0: any free port
};

// YAML in the shape of spec.trainer (or a document whose only key is `trainer`), decoded with
// the API's codec; `source` names the file in errors. Checks nothing but the shape.
core::Result<kube::TrainerSpec> parseTrainerSpec(const std::string& yaml_text,
                                                 const std::string& source);
core::Result<kube::TrainerSpec> loadTrainerSpec(const std::string& path);
// `spec` defaulted and checked by the contract; errors name "trainer.<key>" (every problem).
core::Result<TrainerConfig> trainerConfig(const kube::TrainerSpec& spec);
// parseTrainerSpec, then trainerConfig: a document's settings as the trainer runs them.
core::Result<TrainerConfig> parseTrainerConfig(const std::string& yaml_text,
                                               const std::string& source);
// An empty spec.trainer's settings.
TrainerConfig defaultTrainerConfig();
// One line for the start-up log.
std::string describe(const TrainerConfig& config);
// With global_batch_size set, sets batch_size to its share of `world` data-parallel ranks, so
// that a step trains the same samples whatever the world (the sampler's strided slices of one
// permutation). InvalidArgument naming trainer.globalBatchSize when it does not split evenly.
// Without it, leaves config as it is.
core::Status resolveBatchSize(TrainerConfig& config, int world);

}  // namespace ringmaster::trainer
