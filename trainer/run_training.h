#pragma once
// The one place that knows whether this build has the GPU path (#if RM_HAVE_CUDA lives here
// alone in the trainer): which device a rank can use and which training loop runs.
//
// Thread-safety: as the trainers. Failure: as resolveDevice (device.h) and the trainers.

#include "ringmaster/core/status.h"
#include "trainer/config.h"
#include "trainer/device.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer {

bool cudaBuilt();
// GPUs this process can see (0 without CUDA in the build, a driver or a GPU).
int visibleGpuCount();
// Makes the chosen GPU current for this thread (no-op for the CPU); before the communicator.
core::Status selectDevice(const DeviceChoice& device);
// Trains on `device`: the CPU Trainer or the GPU trainer.
core::Result<TrainSummary> runTraining(const TrainerConfig& config, const DeviceChoice& device,
                                       TrainerContext context);

}  // namespace ringmaster::trainer
