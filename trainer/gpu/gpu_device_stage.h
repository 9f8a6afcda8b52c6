#pragma once
// The GPU module's DeviceStage (trainer/device_stage.h): a GpuStage with a stream, a cuBLASLt
// handle and a GEMM workspace of its own, on the current device.
//
// Ownership: owns all of them. Thread-safety: one per rank. Failure: CUDA/cuBLASLt errors naming
// what was being made or copied.

#include <memory>

#include "ringmaster/core/status.h"
#include "trainer/device_stage.h"
#include "trainer/model/model_stage.h"

namespace ringmaster::trainer::gpu {

// The stage `host` holds, with `slots` micro-batches in flight, its parameters uploaded.
core::Result<std::unique_ptr<DeviceStage>> makeGpuDeviceStage(model::ModelStage& host, int slots);

}  // namespace ringmaster::trainer::gpu
