#include "trainer/comm/mpi_communicator.h"

// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ringmaster/core/fnv.h"
#include "ringmaster/core/log.h"
#include "trainer/comm/call_context.h"

// Checks an MPI call's return code; on failure returns a Status with `ctx` and MPI's message.
#define RM_MPI_CHECK(call, ctx)                                                                \
  do {                                                                                         \
    const int rm_mpi_rc_ = (call);                                                             \
    if (rm_mpi_rc_ != MPI_SUCCESS)                                                             \
      return ::ringmaster::trainer::comm::mpiError(rm_mpi_rc_, std::string(ctx) + ": " #call); \
  } while (0)

namespace ringmaster::trainer::comm {
namespace {

using Clock = std::chrono::steady_clock;

core::Status mpiError(int rc, const std::string& what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) {
    return core::internalError(what + ": MPI error " + std::to_string(rc));
  }
  return core::unavailable(what + ": " + std::string(text, len));
}

const char* threadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

// MPI counts are int: large buffers go in pieces of at most this many elements.
constexpr size_t kMaxMpiCount = static_cast<size_t>(INT_MAX) / 2;

}  // namespace

struct MpiCommunicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  bool we_initialized = false;
};

core::Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create() {
  auto state = std::make_unique<State>();
  int initialized = 0;
  int finalized = 0;
  RM_MPI_CHECK(MPI_Initialized(&initialized), "mpi init");
  RM_MPI_CHECK(MPI_Finalized(&finalized), "mpi init");
  if (finalized) return core::internalError("mpi init: MPI was already finalized in this process");
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    RM_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "mpi init");
    state->we_initialized = true;
  } else {
    RM_MPI_CHECK(MPI_Query_thread(&provided), "mpi init");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    if (state->we_initialized) MPI_Finalize();
    return core::unavailable(std::string("mpi init: need MPI_THREAD_SERIALIZED, MPI provides ") +
                             threadLevelName(provided));
  }
  // Errors come back as codes instead of aborting the job.
  RM_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "mpi init");
  RM_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &state->comm), "mpi init");
  RM_MPI_CHECK(MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN), "mpi init");
  int rank = 0;
  int size = 0;
  RM_MPI_CHECK(MPI_Comm_rank(state->comm, &rank), "mpi init");
  RM_MPI_CHECK(MPI_Comm_size(state->comm, &size), "mpi init");
  RM_LOG(DEBUG, COMM) << "mpi: rank " << rank << "/" << size << ", thread level "
                      << threadLevelName(provided);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(state), rank, size));
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<State> state, int rank, int size)
    : state_(std::move(state)), rank_(rank), size_(size) {}

MpiCommunicator::~MpiCommunicator() {
  if (state_->comm != MPI_COMM_NULL) {
    const int rc = MPI_Comm_free(&state_->comm);
    if (rc != MPI_SUCCESS) {
      RM_LOG(WARN, COMM)
          << mpiError(rc, "rank " + std::to_string(rank_) + ": MPI_Comm_free").message();
    }
  }
  if (state_->we_initialized) {
    int finalized = 0;
    if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) {
      const int rc = MPI_Finalize();
      if (rc != MPI_SUCCESS) {
        RM_LOG(WARN, COMM)
            << mpiError(rc, "rank " + std::to_string(rank_) + ": MPI_Finalize").message();
      }
    }
  }
}

core::Status MpiCommunicator::allreduceSum(float* data, size_t count,
                                           const AllreduceOptions& opts) {
  const auto start = Clock::now();
  const size_t bytes = count * sizeof(float);
  const std::string what = describeRankCall(rank_, "allreduceSum", opts.tag, bytes);
  for (size_t done = 0; done < count; done += kMaxMpiCount) {
    const int n = static_cast<int>(std::min(kMaxMpiCount, count - done));
    RM_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, n, MPI_FLOAT, MPI_SUM, state_->comm),
                 what);
  }
  countAllreduce(bytes, start);
  return core::Status::Ok();
}

core::Status MpiCommunicator::broadcast(void* data, size_t bytes, int root) {
  const std::string what =
      describeRankCall(rank_, "broadcast from rank " + std::to_string(root), "", bytes);
  if (root < 0 || root >= size_) return core::invalidArgument(what + ": root out of range");
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += kMaxMpiCount) {
    const int n = static_cast<int>(std::min(kMaxMpiCount, bytes - done));
    RM_MPI_CHECK(MPI_Bcast(p + done, n, MPI_BYTE, root, state_->comm), what);
  }
  return core::Status::Ok();
}

core::Result<std::unique_ptr<MpiCommunicator>> MpiCommunicator::split(const std::string& name,
                                                                      int rank, int size) {
  const std::string what = "rank " + std::to_string(rank_) + ": communicator group " + name;
  // The name's hash as a non-negative int: MPI wants colours >= 0.
  const uint32_t colour = core::fnv1a32(name);
  auto state = std::make_unique<State>();
  RM_MPI_CHECK(
      MPI_Comm_split(state_->comm, static_cast<int>(colour & 0x3fffffff), rank, &state->comm),
      what);
  RM_MPI_CHECK(MPI_Comm_set_errhandler(state->comm, MPI_ERRORS_RETURN), what);
  int got_rank = 0, got_size = 0;
  RM_MPI_CHECK(MPI_Comm_rank(state->comm, &got_rank), what);
  RM_MPI_CHECK(MPI_Comm_size(state->comm, &got_size), what);
  // Built before the checks: its destructor frees the split communicator on every path.
  auto group =
      std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(state), got_rank, got_size));
  if (got_rank != rank || got_size != size) {
    return core::internalError(what + ": MPI_Comm_split made rank " + std::to_string(got_rank) +
                               " of " + std::to_string(got_size) + ", want " +
                               std::to_string(rank) + " of " + std::to_string(size));
  }
  return group;
}

core::Status MpiCommunicator::barrier() {
  RM_MPI_CHECK(MPI_Barrier(state_->comm), "rank " + std::to_string(rank_) + ": barrier");
  return core::Status::Ok();
}

namespace {

// The tag of point-to-point messages (collectives do not use tags).
constexpr int kPointToPointTag = 0x5250;

}  // namespace

namespace {

// MPI_Isend's requests, one per chunk, completed together.
class MpiSend final : public PendingSend {
 public:
  MpiSend(std::vector<MPI_Request> requests, std::string what)
      : requests_(std::move(requests)), what_(std::move(what)) {}
  ~MpiSend() override { (void)wait(); }

  core::Status wait() override {
    if (requests_.empty()) return result_;
    const int rc =
        MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    if (rc != MPI_SUCCESS) result_ = mpiError(rc, what_ + ": MPI_Waitall");
    return result_;
  }

 private:
  std::vector<MPI_Request> requests_;
  std::string what_;
  core::Status result_;
};

}  // namespace

core::Result<std::unique_ptr<PendingSend>> MpiCommunicator::startSend(
    const void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
  std::string what = describePointToPoint("send to", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  const char* p = static_cast<const char*>(data);
  std::vector<MPI_Request> requests;
  size_t done = 0;
  do {  // an empty message is one empty chunk, so that the receiver matches it
    const int n = static_cast<int>(std::min(kMaxMpiCount, bytes - done));
    MPI_Request request;
    const int rc = MPI_Isend(p + done, n, MPI_BYTE, peer, kPointToPointTag, state_->comm, &request);
    if (rc != MPI_SUCCESS) {
      // Chunks already posted finish (or fail) on their own; their status adds nothing.
      (void)MpiSend(std::move(requests), what).wait();
      return mpiError(rc, what + ": MPI_Isend");
    }
    requests.push_back(request);
    done += static_cast<size_t>(n);
  } while (done < bytes);
  return std::unique_ptr<PendingSend>(std::make_unique<MpiSend>(std::move(requests), what));
}

core::Status MpiCommunicator::send(const void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  RM_ASSIGN_OR_RETURN(std::unique_ptr<PendingSend> pending, startSend(data, bytes, peer, opts));
  return pending->wait();
}

core::Status MpiCommunicator::recv(void* data, size_t bytes, int peer,
                                   const PointToPointOptions& opts) {
  const std::string what = describePointToPoint("receive from", peer, opts, bytes);
  RM_RETURN_IF_ERROR(checkPeer(peer, what));
  char* p = static_cast<char*>(data);
  size_t done = 0;
  do {
    const int n = static_cast<int>(std::min(kMaxMpiCount, bytes - done));
    MPI_Status status;
    const int rc = MPI_Recv(p + done, n, MPI_BYTE, peer, kPointToPointTag, state_->comm, &status);
    if (rc != MPI_SUCCESS) {
      int error_class = 0;
      MPI_Error_class(rc, &error_class);
      if (error_class == MPI_ERR_TRUNCATE) {
        return core::invalidArgument(what + ": rank " + std::to_string(peer) +
                                     " sent a longer message");
      }
      return mpiError(rc, what);
    }
    int got = 0;
    RM_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got), what);
    if (got != n) {
      return core::invalidArgument(what + ": rank " + std::to_string(peer) + " sent " +
                                   std::to_string(done + static_cast<size_t>(got)) + " bytes");
    }
    done += static_cast<size_t>(n);
  } while (done < bytes);
  return core::Status::Ok();
}

}  // namespace ringmaster::trainer::comm
