#pragma once
// The trainer's configuration. Its training settings are a TrainingJob's `spec.trainer`: read
// from YAML of that shape (the ConfigMap's trainer.yaml, or any file passed with --config)
// through the API's codec (kube::TrainerSpec), overridden by flags, then defaulted and checked by
// the one contract the operator checks jobs with (ringmaster/contract/trainer_spec.h), whose
// typed settings the engines read as they are. Errors name the key path
// ("trainer.optimizer.momentum: must be in [0, 1), got 1.5").
//
// Thread-safety: plain values. Failure: the functions return kInvalidArgument.

#include <cstdint>
#include <string>

#include "ringmaster/contract/trainer_spec.h"
#include "ringmaster/core/status.h"
#include "ringmaster/kube/training_job.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"

namespace ringmaster::trainer {

// What one trainer process runs. Build it with trainerConfig(): a default-constructed one holds
// zeros, not the contract's defaults.
struct TrainerConfig {
  contract::TrainerSettings settings;  // spec.trainer, every default applied
  // Of the process, not of spec.trainer (spec.backend reaches the trainer through its
  // environment; the metrics endpoint through --metrics-port or the config's metricsPort).
  std::string backend = "auto";  // auto | nccl | tcp | gloo | mpi | shm | inproc
  // -1: no endpoint; 0: any free port (metrics_port.h; settings.metrics_port is one source).
  int64_t metrics_port = -1;
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
contract::TrainerSettings defaultTrainerSettings();
// One line for the start-up log.
std::string describe(const TrainerConfig& config);
// With global_batch_size set, sets batch_size to its share of `world` data-parallel ranks, so
// that a step trains the same samples whatever the world (the sampler's strided slices of one
// permutation). InvalidArgument naming trainer.globalBatchSize when it does not split evenly.
// Without it, leaves settings as they are.
core::Status resolveBatchSize(contract::TrainerSettings& settings, int world);

// The model and optimizer libraries' own configurations, built from the settings here alone.
model::ModelConfig modelConfig(const contract::TrainerSettings::Model& model);
optim::OptimizerConfig optimizerConfig(const contract::TrainerSettings::Optimizer& optimizer);

}  // namespace ringmaster::trainer
