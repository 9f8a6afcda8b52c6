// The entry point of libringmaster-trainer-cuda.so: the GpuModule (trainer/gpu_module.h) over
// the GPU trainer, GPU pipeline stages, the nccl communicator and the CUDA runtime.
#include <cuda_runtime.h>

#include <string>

#include "trainer/comm/nccl_communicator.h"
#include "trainer/cuda/cuda_status.h"
#include "trainer/gpu/gpu_device_stage.h"
#include "trainer/gpu/gpu_trainer.h"
#include "trainer/gpu_module.h"

namespace ringmaster::trainer::gpu {
namespace {

class CudaModule final : public GpuModule {
 public:
  int visibleGpuCount() override { return cudaDeviceCount(); }
  core::Status selectDevice(int ordinal) override {
    return cudaStatus(cudaSetDevice(ordinal), "selecting GPU " + std::to_string(ordinal));
  }
  core::Result<std::unique_ptr<comm::Communicator>> makeNcclCommunicator(
      const comm::NcclConfig& config) override {
    return comm::makeNcclCommunicator(config);
  }
  core::Result<TrainSummary> train(const contract::TrainerSettings& settings,
                                   TrainerContext ctx) override {
    GpuTrainer trainer(settings, ctx);
    return trainer.run();
  }
  core::Result<std::unique_ptr<DeviceStage>> makePipelineStage(model::ModelStage& host,
                                                               int slots) override {
    return makeGpuDeviceStage(host, slots);
  }
};

}  // namespace
}  // namespace ringmaster::trainer::gpu

extern "C" __attribute__((visibility("default"))) ringmaster::trainer::GpuModule*
ringmaster_gpu_module(const ringmaster::trainer::GpuModuleAbi* caller) {
  using namespace ringmaster::trainer;
  if (caller == nullptr || !sameGpuModuleAbi(*caller, thisGpuModuleAbi())) return nullptr;
  static gpu::CudaModule module;
  return &module;
}
