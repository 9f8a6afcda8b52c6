#pragma once
// The GPU path as the CUDA-free trainer sees it. The CUDA code (trainer/gpu, the nccl
// communicator) is built into a separate module, libringmaster-trainer-cuda.so, that the
// trainer loads with dlopen only when a rank is to train on a GPU.
//
// Why a module and not a link-time dependency: the CUDA libraries bring large static TLS blocks
// (cuBLASLt alone ~92 KiB) that glibc carves out of every thread's stack when they are loaded at
// start-up, and a library thread started with a small fixed stack then fails to start. Loaded with
// dlopen, their TLS is allocated per thread on demand instead; a CPU rank, the CPU image and a
// machine without a GPU never load CUDA at all.
//
// Where the module is: $RINGMASTER_GPU_MODULE, else <dir of the trainer>/../lib/ringmaster/.
// It resolves the trainer's own symbols (config, model, logging, metrics, communicators) from
// the executable, which exports them, so there is one copy of each in the process; the entry
// point refuses a module built from another source tree (GpuModuleAbi).
//
// Thread-safety: loadGpuModule is called once, from main; the module's calls follow the
// trainers'. Failure: loadGpuModule says why the module is not usable (missing, a CUDA library
// that cannot be loaded, an ABI mismatch) in GpuAvailability::why_not, never an exception.

#include <cstddef>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/nccl_communicator.h"
#include "trainer/config.h"
#include "trainer/device.h"
#include "trainer/trainer.h"

namespace ringmaster::trainer {

class GpuModule {
 public:
  // Usable CUDA devices (0 where there is no driver or no GPU; never an error).
  virtual int visibleGpuCount() = 0;
  // Makes GPU `ordinal` current for the calling thread, before the communicator is built.
  virtual core::Status selectDevice(int ordinal) = 0;
  // The nccl backend on the current device (comm::CommConfig::make_nccl).
  virtual core::Result<std::unique_ptr<comm::Communicator>> makeNcclCommunicator(
      const comm::NcclConfig& config) = 0;
  // GPU training (trainer/gpu/gpu_trainer.h); ctx.comm is the nccl backend.
  virtual core::Result<TrainSummary> train(const contract::TrainerSettings& settings,
                                           TrainerContext ctx) = 0;
  // A pipeline stage on the current device (TrainerContext::make_device_stage).
  virtual core::Result<std::unique_ptr<DeviceStage>> makePipelineStage(model::ModelStage& host,
                                                                       int slots) = 0;

 protected:
  ~GpuModule() = default;  // the module owns it for the life of the process
};

// What the trainer and the module must agree on: the module's entry returns null on mismatch.
struct GpuModuleAbi {
  int version;
  size_t trainer_settings_size;
  size_t trainer_context_size;
  size_t train_summary_size;
  size_t nccl_config_size;
  const char* compiler;
};

inline constexpr int kGpuModuleAbiVersion = 3;
inline constexpr char kGpuModuleEntry[] = "ringmaster_gpu_module";
inline constexpr char kGpuModuleFile[] = "libringmaster-trainer-cuda.so";

inline GpuModuleAbi thisGpuModuleAbi() {
  return {kGpuModuleAbiVersion, sizeof(contract::TrainerSettings), sizeof(TrainerContext),
          sizeof(TrainSummary), sizeof(comm::NcclConfig),          __VERSION__};
}
inline bool sameGpuModuleAbi(const GpuModuleAbi& a, const GpuModuleAbi& b) {
  return a.version == b.version && a.trainer_settings_size == b.trainer_settings_size &&
         a.trainer_context_size == b.trainer_context_size &&
         a.train_summary_size == b.train_summary_size && a.nccl_config_size == b.nccl_config_size &&
         std::string(a.compiler) == b.compiler;
}

using GpuModuleEntry = GpuModule* (*)(const GpuModuleAbi* caller);

struct LoadedGpu {
  GpuAvailability availability;
  GpuModule* module = nullptr;  // set when availability.module_loaded
};

// device cpu: loads nothing. auto: looks for the CUDA driver first (libcuda.so.1) and loads
// nothing without one. cuda: always tries the module, so the user learns exactly what is
// missing. The module, once loaded, stays for the life of the process.
LoadedGpu loadGpuModule(contract::Device device);

// Where loadGpuModule looks for the module.
std::string gpuModulePath();

}  // namespace ringmaster::trainer
