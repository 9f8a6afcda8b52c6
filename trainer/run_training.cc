#include "trainer/run_training.h"

#if RM_HAVE_CUDA
#include <cuda_runtime.h>

#include "trainer/gpu/cuda_status.h"
#include "trainer/gpu/gpu_trainer.h"
#endif

namespace ringmaster::trainer {

#if RM_HAVE_CUDA
bool cudaBuilt() { return true; }
int visibleGpuCount() { return gpu::cudaDeviceCount(); }
core::Status selectDevice(const DeviceChoice& device) {
  if (!device.cuda) return core::Status::Ok();
  return gpu::cudaStatus(cudaSetDevice(device.ordinal),
                         "selecting GPU " + std::to_string(device.ordinal));
}
#else
bool cudaBuilt() { return false; }
int visibleGpuCount() { return 0; }
core::Status selectDevice(const DeviceChoice& device) {
  if (!device.cuda) return core::Status::Ok();
  return core::invalidArgument("this ringmaster-trainer was built without CUDA");
}
#endif

core::Result<TrainSummary> runTraining(const TrainerConfig& config, const DeviceChoice& device,
                                       TrainerContext context) {
#if RM_HAVE_CUDA
  if (device.cuda) {
    gpu::GpuTrainer trainer(config, context);
    return trainer.run();
  }
#else
  if (device.cuda) return core::invalidArgument("this ringmaster-trainer was built without CUDA");
#endif
  Trainer trainer(config, context);
  return trainer.run();
}

}  // namespace ringmaster::trainer
