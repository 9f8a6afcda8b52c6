#pragma once
// Data-parallel training on one GPU per rank, run by the same training loop as the CPU
// (training_loop.h) with the GPU step engine, behind the same settings,
// TrainerContext and TrainSummary as the CPU Trainer (trainer.h), with the same checkpoints,
// resume, evaluation and log lines.
//
// Per step, all on the device with nothing waited for by the host:
//   gather the batch (the data sets live in GPU memory; the epoch's shuffle is a Feistel
//   permutation evaluated in the gather kernel) -> forward + fused loss -> backward; as each
//   layer's gradients are final an event is recorded and the communication stream, waiting on
//   it, allreduces (NCCL, average) the gradient buckets that became complete -> the compute
//   stream waits for the last bucket -> the optimizer's scalars and one fused update (writing
//   the bf16 copy too) -> the step counters advance.
// Full batches are captured once as a CUDA graph and replayed (settings.cuda_graph); the cursor,
// step and learning rate are device memory, so the same graph serves every step and epoch. The
// short last batch of an epoch runs eagerly. Every 50th step of an epoch runs eagerly with timing
// events, which give the allreduce time and how much of it backward hid (overlap).
//
// The host runs at most 64 steps ahead (the communicator's watch events); it synchronizes at
// epoch ends (loss, evaluation), at checkpoints and for --log-every-steps.
//
// Ownership: borrows everything in TrainerContext; ctx.comm must be the nccl backend
// (deviceCollectives() set). Thread-safety: one per rank. Failure: run() returns CUDA/cuBLASLt
// errors with the layer or step, and the communicator's asynchronous error (kUnavailable /
// kTimeout: retryable) when NCCL failed or stalled.

#include <memory>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/config.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer::gpu {

class GpuTrainer {
 public:
  // The current CUDA device is the rank's (cudaSetDevice before).
  GpuTrainer(contract::TrainerSettings settings, TrainerContext context);
  ~GpuTrainer();
  core::Result<TrainSummary> run();
  // Final fp32 parameters (after run()), copied to the host.
  std::vector<float> parameters() const;

  struct State;  // the device resources (gpu_trainer.cc); public for its step engine

 private:
  contract::TrainerSettings settings_;
  TrainerContext ctx_;
  std::unique_ptr<State> state_;
};

}  // namespace ringmaster::trainer::gpu
