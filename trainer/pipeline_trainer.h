#pragma once
// Pipeline-parallel training of one rank on the CPU (spec.trainer.parallelism.pipeline): rank s
// of a world of S runs stage s, the layers its partition gives it, under the same training loop
// as data parallelism (training_loop.h) with a pipeline step engine:
//   - partition: the user's, or rank 0 measures every layer's forward + backward on a
//     micro-batch and cuts where the slowest stage is fastest (pipeline/partition.h), then
//     broadcasts the cut so every stage builds the same one;
//   - a step: every stage takes the same mini-batch from one sampler (the first reads its
//     images, the last its labels) and runs its schedule (pipeline/stage_executor.h), then steps
//     its own optimizer on its own parameters;
//   - evaluation: the test set flows forward through the stages; the last scores it;
//   - checkpoints: every stage writes its own under <checkpoint.path>/stage-<s>-of-<S>. On
//     start each stage finds its newest; the stages agree on the newest step all of them hold
//     (a crash between two stages' writes leaves one a step ahead) and resume there together.
//
// Ownership: borrows everything in TrainerContext. Thread-safety: one per rank; ranks may be
// threads of one process (tests). Failure: the first error, naming the stage; a world whose
// size is not the stage count is kInvalidArgument.

#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/config.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer {

// Trains this rank's stage; its final parameters go to *stage_params when non-null.
core::Result<TrainSummary> trainPipelineStage(const TrainerConfig& config,
                                              const TrainerContext& ctx,
                                              std::vector<float>* stage_params);

}  // namespace ringmaster::trainer
