#include "trainer/device.h"

namespace ringmaster::trainer {

core::Result<DeviceChoice> resolveDevice(const std::string& requested, bool cuda_built,
                                         int visible_gpus, int local_rank) {
  DeviceChoice choice;
  const std::string gpus = std::to_string(visible_gpus) + " GPU" + (visible_gpus == 1 ? "" : "s");
  if (requested == "cpu") {
    choice.reason = "device cpu";
    return choice;
  }
  if (requested != "cuda" && requested != "auto")
    return core::invalidArgument("trainer.device: must be auto, cpu or cuda, got '" + requested +
                                 "'");
  if (requested == "auto" && (!cuda_built || visible_gpus == 0)) {
    choice.reason = cuda_built ? "auto: no GPU visible" : "auto: built without CUDA";
    return choice;
  }
  if (!cuda_built)
    return core::invalidArgument(
        "trainer.device: cuda, but this ringmaster-trainer was built without CUDA "
        "(RM_WITH_CUDA=OFF or no nvcc at build time)");
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
