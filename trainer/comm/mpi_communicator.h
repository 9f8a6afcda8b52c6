#pragma once
// The "mpi" backend (built only when Open MPI is found: RM_HAVE_MPI): MPI_Allreduce in place on
// a duplicate of MPI_COMM_WORLD. Rank and size come from MPI (mpirun).
//
// Ownership: initializes MPI (MPI_Init_thread, at least MPI_THREAD_SERIALIZED) if nobody has,
// and then finalizes it when destroyed; MPI cannot be initialized again after that, so create
// at most one MpiCommunicator per process (and its groups with split()). Owns its duplicated (or
// split) MPI communicator.
// Thread-safety: one thread at a time (Communicator contract; SERIALIZED is all that needs).
// Failure: every MPI call is checked; errors are returned (MPI_ERRORS_RETURN) as a Status that
// names the rank, the call and MPI's error string. MPI has no per-call timeout:
// AllreduceOptions::timeout is ignored.

#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm {

class MpiCommunicator final : public Communicator {
 public:
  static core::Result<std::unique_ptr<MpiCommunicator>> create();
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  std::string allreduceAlgorithm(size_t) const override { return "auto"; }

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override;
  core::Status broadcast(void* data, size_t bytes, int root) override;
  core::Status barrier() override;
  // MPI_Send/MPI_Recv on this communicator's own tag, in chunks MPI's int count can hold; the
  // receiver checks each chunk's size. MPI has no timeout: a missing peer blocks (the launcher's
  // hang detection ends such a gang).
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override;
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override;
  // MPI_Isend per chunk; wait() is MPI_Waitall.
  core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes, int peer,
                                                       const PointToPointOptions& opts) override;

  // The group `name` of which this rank is `rank` of `size`, split off this communicator
  // (MPI_Comm_split, colour from the name, key the rank). Collective: every rank of this
  // communicator calls it, in the same order, each with the group it belongs to. A group whose
  // size or ranks come out otherwise (two names of one colour) is an error naming it. Groups must
  // be destroyed before the communicator they were split from.
  core::Result<std::unique_ptr<MpiCommunicator>> split(const std::string& name, int rank, int size);

 private:
  struct State;  // the MPI_Comm, kept out of this header so it needs no <mpi.h>
  MpiCommunicator(std::unique_ptr<State> state, int rank, int size);

  std::unique_ptr<State> state_;
  int rank_;
  int size_;
};

}  // namespace ringmaster::trainer::comm
