#pragma once
// Which collective backend a rank may use with which device, and what `auto` means: the one
// place the operator (admitting a TrainingJob), the trainer (choosing its device and its
// communicator) and the CRD's description take these rules from.
//   - nccl moves GPU memory: it needs the GPU, so it pins device auto to cuda, and refuses
//     device cpu and the splits that train on the CPU only (tensor parallelism, PipeDream).
//   - shm, tcp, gloo and mpi read host memory: they pin device auto to cpu and refuse cuda.
//   - auto: NCCL on the GPU; on the CPU, MPI under mpirun, one rank alone needs none, else
//     shared memory where every rank shares the host and the tcp transport otherwise.
//   - launcher mpi: backend auto or mpi (mpirun starts the ranks; on the GPU auto is NCCL).
//   - device auto with backend auto: one model takes the GPU where there is one; a split model
//     stays on the CPU (its GPU path, pipeline stages of an MLP, is asked for with device cuda
//     or backend nccl).
//
// Thread-safety: pure functions. Failure: backendError's message, naming the fields.

#include <cstdint>
#include <string>

namespace ringmaster::contract {

// The CRD's description of spec.backend, these rules in a user's words (the CRD holds it as is;
// a test compares them).
inline constexpr const char* kBackendDescription =
    "Collective backend of the trainer. auto: NCCL when it trains on GPUs; on CPUs, MPI under "
    "launcher mpi, else shared memory when every rank runs on one host, and Ringmaster's own TCP "
    "transport otherwise. nccl (GPUs only; it puts device auto on the GPU), tcp, gloo (Gloo's TCP "
    "ring) or mpi (host memory: they put device auto on the CPU and refuse device cuda) force "
    "one.";

// A rank's backend as asked for, with what constrains it. Spellings as the spec has them.
struct BackendUse {
  std::string backend = "auto";     // auto | nccl | shm | tcp | gloo | mpi | inproc
  std::string device = "auto";      // auto | cpu | cuda (the request, or the resolved device)
  std::string launcher = "native";  // native | mpi
  int64_t pipeline_stages = 1;
  int64_t tensor = 1;
  std::string pipeline_schedule;  // "pipedream" matters: its stages train on the CPU
};

// Why `use` cannot run, naming spec.backend's partner field ("" when it can). Unknown spellings
// are not judged here (the enums' validation reports them).
std::string backendError(const BackendUse& use);

// The device request a rank resolves against its machine (trainer/device.h) once its backend is
// taken into account: cpu, cuda, or auto (the GPU where there is one).
std::string deviceRequest(const BackendUse& use);

// What `auto` runs once the device is known.
enum class AutoBackend { kNccl, kMpi, kSingleRank, kShmElseTcp };
AutoBackend autoBackend(bool cuda, bool under_mpirun_with_mpi, int world_size);

// Whether `backend` reads host memory (shm, tcp, gloo, mpi, inproc).
bool isHostBackend(const std::string& backend);

}  // namespace ringmaster::contract
