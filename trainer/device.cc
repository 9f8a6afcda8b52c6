#include "trainer/device.h"

namespace ringmaster::trainer {

core::Result<DeviceChoice> resolveDevice(const std::string& requested, const GpuAvailability& gpu,
                                         int local_rank) {
  DeviceChoice choice;
  const int visible_gpus = gpu.module_loaded ? gpu.visible_gpus : 0;
  const std::string gpus = std::to_string(visible_gpus) + " GPU" + (visible_gpus == 1 ? "" : "s");
  if (requested == "cpu") {
    choice.reason = "device cpu";
    return choice;
  }
  if (requested != "cuda" && requested != "auto")
    return core::invalidArgument("trainer.device: must be auto, cpu or cuda, got '" + requested +
                                 "'");
  if (requested == "auto" && (!gpu.module_loaded || visible_gpus == 0)) {
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
  choice.reason = requested + ": " + gpus + " visible, using GPU " + std::to_string(local_rank);
  return choice;
}

}  // namespace ringmaster::trainer
