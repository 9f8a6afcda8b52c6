#pragma once
// The trainer's configuration: the shape of a TrainingJob's `spec.trainer` (same
// keys), read from YAML and then overridden by flags. Unknown keys and bad values are errors that
// name the key path ("trainer.optimizer.momentum: must be in [0, 1)").
//
// Thread-safety: plain values. Failure: parse/validate return kInvalidArgument.

#include <cstdint>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer {

struct DatasetConfig {
  std::string name = "fashion-mnist";
  std::string path = "/usr/share/datasets/fashion-mnist";
};

struct CheckpointConfig {
  std::string path;           // empty: no checkpoints
  int64_t every_steps = 500;  // also written at the end of every epoch
  int64_t keep = 3;
};

struct TrainerConfig {
  model::ModelConfig model;
  DatasetConfig dataset;
  int64_t epochs = 5;
  int64_t batch_size = 128;  // per rank
  optim::OptimizerConfig optimizer;
  // Learning-rate schedule over the whole run (optimizer.schedule): constant, or cosine decay
  // from learningRate to 0 at the last step.
  std::string lr_schedule = "constant";
  double bucket_cap_mb = 25.0;
  // DDP-style small first bucket so communication starts while most of backward remains.
  double first_bucket_cap_mb = 1.0;
  CheckpointConfig checkpoint;
  uint64_t seed = 42;
  std::string backend = "auto";  // auto | nccl | gloo | mpi | shm | inproc
  // Where the model trains: auto (the GPU when this build has CUDA and one is visible), cpu, cuda.
  std::string device = "auto";
  // GPU arithmetic: fp32 (no TF32) or bf16 (bf16 GEMMs, fp32 master weights and accumulation).
  std::string precision = "fp32";
  bool cuda_graph = true;  // GPU: replay each full-batch step as one captured CUDA graph
  int64_t blas_threads = 1;
  int64_t metrics_port = -1;    // -1: no endpoint; 0: any free port
  int64_t max_steps = 0;        // stop after this many optimizer steps in total (0: no limit)
  int64_t log_every_steps = 0;  // 0: one line per epoch only
  int64_t comm_timeout_seconds = 300;
};

// Parses YAML text in the shape of spec.trainer. `source` names the file in errors.
core::Result<TrainerConfig> parseTrainerConfig(const std::string& yaml_text,
                                               const std::string& source);
core::Result<TrainerConfig> loadTrainerConfig(const std::string& path);
// Checks bounds and enums; errors name the key path.
core::Status validate(const TrainerConfig& config);
// One line for the start-up log.
std::string describe(const TrainerConfig& config);

}  // namespace ringmaster::trainer
