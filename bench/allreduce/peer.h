#pragma once
// One rank of one allreduce implementation under test. The bench loop in main.cc only sees
// this interface, so every implementation is timed by the same code.
//
// Ownership: each peer owns its library state (communicator, Gloo context, MPI). Thread-safety:
// main thread only. Failure: Status with context; library exceptions are caught in the peer.

#include <cstddef>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"

namespace ringmaster::bench {

class Peer {
 public:
  virtual ~Peer() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum across ranks. Implementations keep per-buffer setup between calls.
  virtual core::Status allreduce(float* data, size_t count) = 0;
  virtual core::Status barrier() = 0;
};

// Rank, world size and rendezvous from the torchrun-style environment.
struct PeerEnv {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string store_dir;  // gloo-raw: a directory for Gloo's FileStore
  // The address other ranks reach this one at (empty: loopback for gloo-raw, the communicator's
  // own choice for ours); one per network namespace in the multi-host benchmark.
  std::string host;
  // ours-shm tuning (0: the communicator's defaults).
  size_t shm_slot_bytes = 0;
  size_t shm_direct_max_bytes = 0;
};

// Our communicator through makeCommunicator with the given backend ("shm", "gloo").
core::Result<std::unique_ptr<Peer>> makeOursPeer(const std::string& backend, const PeerEnv& env);
// Gloo's classic ring (gloo::AllreduceRing<float>) over its TCP transport, no code of ours.
core::Result<std::unique_ptr<Peer>> makeGlooRawPeer(const PeerEnv& env);
// MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD; rank and size from mpirun.
core::Result<std::unique_ptr<Peer>> makeMpiPeer();

}  // namespace ringmaster::bench
