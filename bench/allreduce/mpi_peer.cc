// MPI_Allreduce as its users call it (the build has Open MPI).

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "bench/allreduce/peer.h"

namespace ringmaster::bench {
namespace {

core::Status mpiStatus(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return core::Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return core::unavailable(what + ": " + std::string(text, len));
}

class MpiPeer final : public Peer {
 public:
  MpiPeer(int rank, int size) : rank_(rank), size_(size) {}
  ~MpiPeer() override { MPI_Finalize(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  core::Status allreduce(float* data, size_t count) override {
    return mpiStatus(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                                   MPI_COMM_WORLD),
                     "MPI_Allreduce");
  }
  core::Status barrier() override { return mpiStatus(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  int rank_;
  int size_;
};

}  // namespace

core::Result<std::unique_ptr<Peer>> makeMpiPeer() {
  int provided = 0;
  RM_RETURN_IF_ERROR(mpiStatus(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
                               "MPI_Init_thread"));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 0;
  RM_RETURN_IF_ERROR(mpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"));
  RM_RETURN_IF_ERROR(mpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"));
  return std::unique_ptr<Peer>(std::make_unique<MpiPeer>(rank, size));
}

}  // namespace ringmaster::bench
