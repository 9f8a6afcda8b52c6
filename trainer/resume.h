#pragma once
// What both trainers (CPU: trainer.h, GPU: gpu/gpu_trainer.h) share around checkpoints: where
// training stands, the resume-or-sync at start and writing a checkpoint. The GPU trainer
// keeps a host mirror (a model::Model and an optim::Optimizer) that it copies its device state
// into before saving and out of after restoring.
//
// Thread-safety: one call per rank at a time. Failure: restoreOrSync returns checkpoint I/O and
// communication errors; saveCheckpoint the write error naming the step.

#include <cstdint>
#include <span>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/comm/communicator.h"
#include "trainer/config.h"
#include "trainer/model/model.h"
#include "trainer/optim/optimizer.h"
#include "trainer/trainer_metrics.h"

namespace ringmaster::trainer {

// Where training stands; what a checkpoint records and a resume restores.
struct Position {
  int64_t epoch = 0;          // epochs completed
  int64_t step = 0;           // global optimizer steps completed
  int64_t step_in_epoch = 0;  // steps of the current epoch completed
};

// True when `pos` leaves no step to train: every epoch done, or max_steps reached. A run that
// resumes there (a job re-created over the checkpoint volume of a finished one) evaluates the
// restored model instead of reporting an empty run.
bool trainingComplete(const contract::TrainerSettings& settings, const Position& pos);

// Rank 0 loads the newest valid checkpoint (if any) and every rank receives its contents, or
// rank 0's freshly initialized parameters when there is none. Sets *pos and *resumed_from (the
// step resumed at) after a resume.
core::Status restoreOrSync(const contract::TrainerSettings& settings, comm::Communicator& comm,
                           model::Model& model, optim::Optimizer& optimizer, Position* pos,
                           int64_t* resumed_from);

// Writes model and optimizer at `pos` to settings.checkpoint.path (rank 0 calls it).
core::Status saveCheckpoint(const contract::TrainerSettings& settings, model::Model& model,
                            optim::Optimizer& optimizer, const Position& pos,
                            TrainerMetrics* metrics);

// The same for any parameters: `params` (of the model `signature` names) and the optimizer's
// state at `pos`, into `dir`, keeping settings.checkpoint.keep files. Counts the write in
// `metrics` (optional). A pipeline stage writes its layers this way.
core::Status writeTrainingCheckpoint(const contract::TrainerSettings& settings,
                                     const std::string& dir, const std::string& signature,
                                     std::span<const float> params, optim::Optimizer& optimizer,
                                     const Position& pos, TrainerMetrics* metrics);

// Whether `ck` holds as many parameters as `params_count` and state of `optimizer`'s type and
// shape, so that it can resume them.
bool checkpointFits(const checkpoint::Checkpoint& ck, size_t params_count,
                    optim::Optimizer& optimizer);

}  // namespace ringmaster::trainer
