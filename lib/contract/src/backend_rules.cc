#include "ringmaster/contract/backend_rules.h"

namespace ringmaster::contract {

bool isHostBackend(const std::string& backend) {
  return backend == "shm" || backend == "tcp" || backend == "gloo" || backend == "mpi" ||
         backend == "inproc";
}

std::string backendError(const BackendUse& use) {
  const std::string& b = use.backend;
  if (use.launcher == "mpi" && b != "auto" && b != "mpi") {
    return "must be auto or mpi when spec.launcher is mpi, got \"" + b + "\"";
  }
  if (b == "nccl") {
    if (use.device == "cpu") return "nccl needs the GPU, and spec.trainer.device is cpu";
    if (use.tensor > 1) {
      return "nccl needs the GPU, and tensor-parallel ranks train on the CPU; use auto, tcp, gloo "
             "or mpi";
    }
    if (use.pipeline_stages > 1 && use.pipeline_schedule == "pipedream") {
      return "nccl needs the GPU, and pipedream stages train on the CPU; use gpipe or 1f1b, or a "
             "host backend";
    }
  }
  if (isHostBackend(b) && use.device == "cuda") {
    return b +
           " reads host memory, and spec.trainer.device cuda keeps the gradients on the GPU; "
           "use nccl or auto";
  }
  return "";
}

std::string deviceRequest(const BackendUse& use) {
  if (use.device != "auto") return use.device;
  if (use.backend == "nccl") return "cuda";
  if (isHostBackend(use.backend)) return "cpu";
  const bool split = use.pipeline_stages > 1 || use.tensor > 1;
  return split ? "cpu" : "auto";
}

AutoBackend autoBackend(bool cuda, bool under_mpirun_with_mpi, int world_size) {
  if (cuda) return AutoBackend::kNccl;
  if (under_mpirun_with_mpi) return AutoBackend::kMpi;
  if (world_size == 1) return AutoBackend::kSingleRank;
  return AutoBackend::kShmElseTcp;
}

}  // namespace ringmaster::contract
