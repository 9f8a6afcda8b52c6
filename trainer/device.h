#pragma once
// Where a rank trains: the trainer's `device` setting resolved against this build and machine.
//   cpu   always the CPU path
//   cuda  the GPU path; an error when the GPU module cannot be loaded or no GPU is visible
//   auto  cuda when the GPU module loaded and a GPU is visible, else cpu
// With several visible GPUs, local rank k takes GPU k (under ringmaster-launcher each process
// sees one: CUDA_VISIBLE_DEVICES is its local rank). NCCL refuses two ranks on one GPU, so a
// local rank without a GPU of its own is an error rather than a silent share.
//
// Thread-safety: pure function. Failure: kInvalidArgument naming the setting and the reason.

#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer {

// What this process found of the GPU path (gpu_module.h's loader fills it in).
struct GpuAvailability {
  bool module_loaded = false;  // the GPU module and the CUDA libraries it needs are loaded
  std::string why_not;         // without the module: "no CUDA driver (...)", a loader error
  int visible_gpus = 0;
};

struct DeviceChoice {
  bool cuda = false;
  int ordinal = 0;     // the CUDA device index (cuda only)
  std::string reason;  // for the start-up log: "auto: 1 GPU visible"
};

core::Result<DeviceChoice> resolveDevice(const std::string& requested, const GpuAvailability& gpu,
                                         int local_rank);

}  // namespace ringmaster::trainer
