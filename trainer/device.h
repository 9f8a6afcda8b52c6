#pragma once
// Where a rank trains: the trainer's `device` setting, pinned by its backend (the contract's
// rules, ringmaster/contract/backend_rules.h, which the operator admitted the job by), then
// resolved against this build and machine.
//   cpu   always the CPU path
//   cuda  the GPU path; an error when the GPU module cannot be loaded or no GPU is visible
//   auto  cuda when the GPU module loaded and a GPU is visible, else cpu
// With several visible GPUs, local rank k takes GPU k (under ringmaster-launcher each process
// sees one: CUDA_VISIBLE_DEVICES is its local rank). NCCL refuses two ranks on one GPU, so a
// local rank without a GPU of its own is an error rather than a silent share.
//
// Thread-safety: pure functions. Failure: kInvalidArgument naming the setting and the reason.

#include <string>

#include "ringmaster/contract/trainer_spec.h"
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

// The device `settings` ask for on `backend` (the process's: auto, nccl, tcp, ...): the backend
// pins auto (nccl to cuda, a host backend to cpu), and a split model with both on auto stays on
// the CPU. "backend <backend>: <why>" when the backend cannot train these settings.
core::Result<contract::Device> requestedDevice(const std::string& backend,
                                               const contract::TrainerSettings& settings);

core::Result<DeviceChoice> resolveDevice(contract::Device requested, const GpuAvailability& gpu,
                                         int local_rank);

// Whether `precision` can run where `choice` trains: bf16 needs the GPU (the contract refuses
// it with device cpu; with device auto only the machine tells).
core::Status checkPrecision(contract::Precision precision, const DeviceChoice& choice);

}  // namespace ringmaster::trainer
