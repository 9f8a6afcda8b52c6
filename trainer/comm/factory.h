#pragma once
// Picks and builds the Communicator for this rank at run time. The only file that knows which
// backends were compiled in (#if RM_HAVE_MPI lives in factory.cc alone).
//
// backend:
//   "auto"   device cuda: nccl (any world size). Under mpirun: mpi. Otherwise a world of 1: single
//            (no store, no network); else shm when every rank can map one shared-memory segment
//            (same host), else tcp.
//   "shm"    shared memory, fails unless every rank can map the segment
//   "tcp"    our own TCP transport (tcp_communicator.h)
//   "gloo"   Gloo's ring over its TCP transport
//   "mpi"    MPI_Allreduce (only when built with Open MPI; rank and size come from mpirun)
//   "inproc" ranks as threads of this process sharing `inproc_group` (tests)
//   "nccl"   NCCL on GPU memory (device cuda only), built by `make_nccl`: the GPU module's
//            (trainer/gpu_module.h), so that this library never links CUDA
// Rendezvous (shm, tcp, gloo): through `store` when given; otherwise a TcpStoreClient to
// master_addr:master_port, where rank 0 first tries to host the TcpStoreServer itself (so the
// trainer works without the launcher) and simply connects when the port is taken; with
// host_store false (RINGMASTER_USE_AGENT_STORE=1: the launcher hosts it) every rank only connects.
// Keys live under "<key_prefix>/comm/": one communicator per prefix and store (a second one
// with the same prefix would read the first one's keys).
//
// A world of one on nccl bootstraps through a private in-memory store.
// Ownership: the returned communicator owns any store client/server the factory made; a
// caller's `store` is not owned and is used only while makeCommunicator runs.
// Thread-safety: makeCommunicator is safe to call from several threads (one per rank).
// Failure: a Status naming the rank and the backend (kInvalidArgument for a bad config,
// kUnavailable for a backend not built in, kTimeout for peers that do not show up).

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/nccl_communicator.h"

namespace ringmaster::trainer::comm {

class InProcGroup;

using NcclFactory =
    std::function<core::Result<std::unique_ptr<Communicator>>(const NcclConfig& config)>;

struct CommConfig {
  std::string backend = "auto";  // auto | nccl | shm | gloo | mpi | inproc | tcp
  std::string device = "cpu";    // where the gradients live: cpu | cuda (resolved, not auto)
  // nccl: how long collectives may make no progress before the communicator is aborted.
  std::chrono::milliseconds collective_timeout{std::chrono::minutes(5)};
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // What every connection to the store proves it knows (see rendezvous/tcp_store.h).
  std::string store_secret;
  // Rank 0 hosts the store when it can. False: the launcher hosts it, every rank connects.
  bool host_store = true;
  std::string key_prefix;  // e.g. "<job>/<attempt>"; empty: keys start at "comm/"
  // Rendezvous timeout, and the default for collectives whose options say 0.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  rendezvous::Store* store = nullptr;  // optional, not owned
  // tcp, gloo: the address peers reach this rank at (the pod's IP); empty means
  // defaultGlooHostname(master_addr).
  std::string host;
  std::string gloo_iface;  // gloo: the interface to bind instead (see GlooConfig)
  // shm: staging slot size and the single-synchronization threshold (see ShmConfig).
  size_t shm_slot_bytes = 512 << 10;
  size_t shm_direct_max_bytes = 32 << 10;
  // tcp: the largest allreduce that takes recursive doubling (setDoublingMaxBytes); 0: the
  // transport's own (tcpDoublingMaxBytes). A pipeline's groups inherit the world's.
  size_t tcp_doubling_max_bytes = 0;
  // Test-only: this rank claims it cannot map the shm segment (see ShmConfig).
  bool shm_pretend_unreachable_for_testing = false;
  // The caller sends and receives (pipeline stages): shm then maps a ring per pair of ranks
  // (defaultShmRingBytes), which it otherwise leaves out.
  bool point_to_point = false;
  // inproc: the group shared by the ranks of this process.
  std::shared_ptr<InProcGroup> inproc_group;
  // nccl: builds the communicator on the current device; unset, nccl is unavailable.
  NcclFactory make_nccl;
};

core::Result<std::unique_ptr<Communicator>> makeCommunicator(const CommConfig& config);

// True when mpirun started this process (contract::startedByMpirun: Open MPI's rank set, RANK
// not), as the rank environment is read.
bool runningUnderMpirun();

// Whether this build includes the MPI backend.
bool mpiBackendBuilt();

// Under mpirun, the group `name` (this rank is `rank` of `size`) split off `world`, which must be
// the mpi backend's communicator (MpiCommunicator::split: every rank of the world calls it, in
// the same order). kUnavailable without the MPI backend, kInvalidArgument for another backend.
core::Result<std::unique_ptr<Communicator>> makeMpiGroup(Communicator& world,
                                                         const std::string& name, int rank,
                                                         int size);

}  // namespace ringmaster::trainer::comm
