// Built instead of mpi_peer.cc when Open MPI was not found.

#include "bench/allreduce/peer.h"

namespace ringmaster::bench {

core::Result<std::unique_ptr<Peer>> makeMpiPeer() {
  return core::unavailable("this build has no MPI (Open MPI not found at configure time)");
}

}  // namespace ringmaster::bench
