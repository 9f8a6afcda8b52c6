#pragma once
// Model-parallel training of one rank (spec.trainer.parallelism: pipeline stages and tensor
// ranks), on the CPU, or with its stage on a GPU (TrainerContext::make_device_stage).
// A world of D x S x T ranks holds D replicas of an S-stage pipeline whose stages are each split
// over T tensor ranks: rank ((d * S) + s) * T + t runs tensor rank t of stage s (the layers its
// partition gives it) of replica d, under the same training loop as data parallelism
// (training_loop.h) with a pipeline step engine (S = 1 is tensor parallelism alone):
//   - tensor groups: the T ranks of a stage sum their layer pairs' partial results over a group
//     of their own (model/model_stage.h, dense_layer.h); each sends to and receives from the same
//     tensor rank of the neighbouring stages;
//   - partition: the user's, or rank 0 measures every layer's forward + backward on a
//     micro-batch and cuts where the slowest stage is fastest (pipeline/partition.h), then
//     broadcasts the cut so every stage builds the same one;
//   - a step: every stage of a replica takes the same mini-batch from the replica's sampler
//     (the strided shard data parallelism gives rank d of D; the first stage reads its images,
//     the last its labels) and runs its schedule (pipeline/stage_executor.h); the D replicas of
//     each stage average their gradients over a group of their own (TrainerContext::make_group),
//     and each stage steps its own optimizer on its own parameters;
//   - pipedream: one 1F1B stream over the epoch instead of a flush per mini-batch; each
//     micro-batch's gradient (computed on the weights its forward used) steps the optimizer as
//     soon as its backward is done; the stream drains at the epoch's end, where alone it
//     checkpoints;
//   - evaluation: replica d's share of the test set flows forward through its stages; the last
//     scores it, and the totals are summed over the world;
//   - checkpoints: replica 0's stages write their own under <checkpoint.path>/stage-<s>-of-<S>
//     (with tensor ranks, -tensor-<t>-of-<T> after it).
//     On start each finds its newest; the stages agree on the newest step all of them hold (a
//     crash between two stages' writes leaves one a step ahead), resume there together, and
//     send what they read to their stage's other replicas.
//   - on a GPU (an MLP's stages, gpipe or 1f1b, no tensor ranks): the executor runs the device
//     stage (device_stage.h) and its messages travel in NCCL groups; the host stage keeps the
//     master weights, so after each mini-batch the gradients come down, the replicas average
//     them and the optimizer steps on the host, and the parameters go back up (the same code as
//     on the CPU; a device optimizer would save the two copies).
//
// Ownership: borrows everything in TrainerContext. Thread-safety: one per rank; ranks may be
// threads of one process (tests). Failure: the first error, naming the stage; a world whose
// size is not a multiple of the stage count is kInvalidArgument.

#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/config.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer {

// Whether `settings` split the model (pipeline stages or tensor ranks): every rank then trains
// its part with trainPipelineStage.
bool splitsModel(const contract::TrainerSettings& settings);

// The pipeline stage that rank `rank` of the world runs (the layout above); -1 when the model is
// not split.
int pipelineStageOf(const contract::TrainerSettings& settings, int rank);

// Trains this rank's stage; its final parameters go to *stage_params when non-null.
core::Result<TrainSummary> trainPipelineStage(const contract::TrainerSettings& settings,
                                              const TrainerContext& ctx,
                                              std::vector<float>* stage_params);

}  // namespace ringmaster::trainer
