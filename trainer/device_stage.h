#pragma once
// A pipeline stage on a GPU, as the CUDA-free pipeline trainer sees it (the GPU module makes it:
// gpu_module.h): the stage's arithmetic for the stage executor, the stream the executor's link
// enqueues its NCCL messages on, and the copies between the device's weights and the host
// stage that keeps the master copy. The optimizer, checkpoints and the replicas' averaging
// work on the host's, so they are the CPU path's own; each step costs a download of the
// gradients and an upload of the parameters.
//
// Thread-safety: one per rank. Failure: CUDA errors naming the copy; the arithmetic's are in
// compute().status().

#include <cstddef>
#include <span>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/model/stage_compute.h"

namespace ringmaster::trainer {

class DeviceStage {
 public:
  virtual ~DeviceStage() = default;
  virtual model::StageCompute& compute() = 0;
  // The cudaStream_t everything of the stage is enqueued on.
  virtual void* stream() = 0;
  // Waits for the stream, then copies the stage's gradients into `grads` (the host stage's
  // layout and size).
  virtual core::Status downloadGrads(std::span<float> grads) = 0;
  // Copies `params` into the stage's weights; what is enqueued after it computes with them.
  virtual core::Status uploadParams(std::span<const float> params) = 0;
  // Waits for everything enqueued on the stream: before a host-memory call on the world's
  // communicator, whose NCCL work must not run beside the stage's messages on another stream.
  virtual core::Status wait() = 0;
  virtual size_t activationBytes() const = 0;
  // For the start-up log: layers, slots, memory, fused epilogues.
  virtual std::string describe() const = 0;
};

}  // namespace ringmaster::trainer
