#include "trainer/device.h"

#include <optional>

#include "ringmaster/contract/backend_rules.h"
#include "ringmaster/contract/spelling.h"

namespace ringmaster::trainer {

core::Result<contract::Device> requestedDevice(const std::string& backend,
                                               const contract::TrainerSettings& settings) {
  contract::BackendUse use;
  use.backend = backend;
  use.device = contract::name(settings.device);
  use.pipeline_stages = settings.pipeline.stages;
  use.tensor = settings.tensor;
  use.pipeline_schedule = contract::name(settings.pipeline.schedule);
  if (std::string why = contract::backendError(use); !why.empty()) {
    return core::invalidArgument("backend " + backend + ": " + why);
  }
  // The rules speak the spec's spellings; read their answer back as the enum.
  constexpr contract::Device kDevices[] = {contract::Device::kAuto, contract::Device::kCpu,
                                           contract::Device::kCuda};
  return contract::parseSpelling(std::optional<std::string>(contract::deviceRequest(use)), kDevices,
                                 contract::Device::kAuto);
}

core::Result<DeviceChoice> resolveDevice(contract::Device requested, const GpuAvailability& gpu,
                                         int local_rank) {
  DeviceChoice choice;
  const int visible_gpus = gpu.module_loaded ? gpu.visible_gpus : 0;
  const std::string gpus = std::to_string(visible_gpus) + " GPU" + (visible_gpus == 1 ? "" : "s");
  if (requested == contract::Device::kCpu) {
    choice.reason = "device cpu";
    return choice;
  }
  if (requested == contract::Device::kAuto && (!gpu.module_loaded || visible_gpus == 0)) {
    choice.reason = gpu.module_loaded ? "auto: no GPU visible" : "auto: " + gpu.why_not;
    return choice;
  }
  if (!gpu.module_loaded) return core::invalidArgument("trainer.device: cuda, but " + gpu.why_not);
  if (visible_gpus == 0)
    return core::invalidArgument(
        "trainer.device: cuda, but no GPU is visible (no driver, or CUDA_VISIBLE_DEVICES hides "
        "them; a TrainingJob needs resources.limits nvidia.com/gpu)");
  if (local_rank >= visible_gpus)
    return core::invalidArgument("trainer.device: local rank " + std::to_string(local_rank) +
                                 " has no GPU of its own (" + gpus +
                                 " visible; one rank per GPU: procsPerReplica <= GPUs per pod)");
  choice.cuda = true;
  choice.ordinal = local_rank;
  choice.reason = std::string(contract::name(requested)) + ": " + gpus + " visible, using GPU " +
                  std::to_string(local_rank);
  return choice;
}

core::Status checkPrecision(contract::Precision precision, const DeviceChoice& choice) {
  if (choice.cuda || precision == contract::Precision::kFp32) return core::Status::Ok();
  return core::invalidArgument(std::string("trainer.precision: ") + contract::name(precision) +
                               " needs the GPU, and this rank trains on the CPU (" + choice.reason +
                               ")");
}

}  // namespace ringmaster::trainer
