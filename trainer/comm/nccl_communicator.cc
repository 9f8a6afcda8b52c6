#include "trainer/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "ringmaster/core/log.h"
#include "ringmaster/rendezvous/broadcast_blob.h"
#include "trainer/comm/collective_watchdog.h"
#include "trainer/cuda/cuda_status.h"

namespace ringmaster::trainer::comm {
namespace {

using core::Result;
using core::Status;

// The watchdog polls this often; an abort follows a failure within one interval.
constexpr std::chrono::milliseconds kPoll{100};
// Time the trainer gets to notice an abort before the watchdog exits the process itself.
constexpr std::chrono::milliseconds kExitGrace{10000};
// Events in flight for watch(); the host waits for the oldest when all are in use.
constexpr size_t kEvents = 64;

Status ncclStatus(ncclResult_t r, const std::string& what, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess) return Status::Ok();
  std::string message = what + ": NCCL error " + ncclGetErrorString(r);
  if (comm != nullptr) {
    if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0')
      message += std::string(" (") + last + ")";
  }
  // A peer that died or a broken link (remote, system) is worth a retry; our own misuse is not.
  const bool retryable =
      r == ncclRemoteError || r == ncclSystemError || r == ncclUnhandledCudaError;
  return {retryable ? core::Code::kUnavailable : core::Code::kInternal, message};
}

class NcclCommunicatorImpl final : public Communicator, public DeviceCollectives {
 public:
  NcclCommunicatorImpl(const NcclConfig& config)
      : rank_(config.rank),
        size_(config.size),
        name_("rank " + std::to_string(config.rank) + " nccl") {
    watchdog_ = std::make_unique<CollectiveWatchdog>(
        name_, config.collective_timeout, kPoll, kExitGrace,
        CollectiveWatchdog::Hooks{
            [this] { return probe(); }, [this](const Status&) { abortComm(); }, {}});
  }

  ~NcclCommunicatorImpl() override {
    watchdog_.reset();  // no probe or abort from here on
    if (comm_ != nullptr) {
      if (aborted_.load()) {
        // ncclCommAbort already released it.
      } else {
        ncclCommFinalize(comm_);
        ncclCommDestroy(comm_);
      }
    }
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (staging_ != nullptr) cudaFree(staging_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Status init(const NcclConfig& config) {
    RM_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device_), name_ + ": current device");
    RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                            name_ + ": stream");
    for (size_t i = 0; i < kEvents; ++i) {
      cudaEvent_t e;
      RM_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                              name_ + ": event");
      events_.push_back(e);
      free_.push_back(e);
    }
    // The unique id: made by rank 0, handed out through the store.
    rendezvous::Bytes blob;
    if (rank_ == 0) {
      ncclUniqueId id;
      RM_RETURN_IF_ERROR(ncclStatus(ncclGetUniqueId(&id), name_ + ": ncclGetUniqueId"));
      blob.assign(reinterpret_cast<const char*>(&id),
                  reinterpret_cast<const char*>(&id) + sizeof id);
    }
    RM_ASSIGN_OR_RETURN(
        rendezvous::Bytes shared,
        rendezvous::broadcastBlob(*config.store, "nccl-unique-id", rank_, 0, blob, config.timeout));
    if (shared.size() != sizeof(ncclUniqueId))
      return core::internalError(name_ + ": the NCCL unique id from rank 0 has " +
                                 std::to_string(shared.size()) + " bytes, expected " +
                                 std::to_string(sizeof(ncclUniqueId)));
    ncclUniqueId id;
    std::memcpy(&id, shared.data(), sizeof id);
    // Blocking init; the watchdog exits the process if a peer never comes.
    watchdog_->arm("NCCL init (world " + std::to_string(size_) + ")");
    ncclComm_t comm = nullptr;
    const ncclResult_t r = ncclCommInitRank(&comm, size_, id, rank_);
    watchdog_->disarm();
    RM_RETURN_IF_ERROR(
        ncclStatus(r, name_ + ": ncclCommInitRank on device " + std::to_string(device_)));
    comm_ = comm;
    initialized_.store(true);
    RM_LOG(INFO, COMM) << name_ << ": communicator of " << size_ << " ranks on device " << device_;
    return Status::Ok();
  }

  // Communicator (host memory).
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  std::string allreduceAlgorithm(size_t) const override { return "auto"; }

  Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string what = "allreduce of " + std::to_string(count) + " floats" +
                             (opts.tag.empty() ? "" : " (" + opts.tag + ")");
    RM_RETURN_IF_ERROR(stage(data, count * sizeof(float), what, [&] {
      return ncclAllReduce(staging_, staging_, count, ncclFloat, ncclSum, comm_, stream_);
    }));
    stats_.allreduce_calls += 1;
    stats_.allreduce_bytes += count * sizeof(float);
    stats_.allreduce_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::Ok();
  }

  Status broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      return core::invalidArgument(name_ + ": broadcast root " + std::to_string(root) +
                                   " outside the world of " + std::to_string(size_));
    return stage(
        data, bytes,
        "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root),
        [&] { return ncclBroadcast(staging_, staging_, bytes, ncclUint8, root, comm_, stream_); });
  }

  Status barrier() override {
    float one = 1.0f;
    return allreduceSum(&one, 1, AllreduceOptions{{}, "barrier"});
  }

  DeviceCollectives* deviceCollectives() override { return this; }

  // DeviceCollectives.
  Status allreduceAverageAsync(float* device_data, size_t count, void* stream) override {
    RM_RETURN_IF_ERROR(asyncError());
    stats_.allreduce_calls += 1;
    stats_.allreduce_bytes += count * sizeof(float);
    // Every step calls this: the message is built only on failure.
    const ncclResult_t r = ncclAllReduce(device_data, device_data, count, ncclFloat, ncclAvg, comm_,
                                         static_cast<cudaStream_t>(stream));
    if (r != ncclSuccess)
      return ncclStatus(r, name_ + ": allreduce of " + std::to_string(count) + " floats", comm_);
    return Status::Ok();
  }

  Status watch(void* stream, const std::string& what) override {
    RM_RETURN_IF_ERROR(asyncError());
    cudaEvent_t event = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (free_.empty()) {
        // Every event is in flight: wait for the oldest (an abort releases this wait too).
        cudaEvent_t oldest = pending_.front();
        lock.unlock();
        cudaEventSynchronize(oldest);
        lock.lock();
        reclaimCompletedLocked();
        if (free_.empty()) return asyncErrorOr(name_ + ": " + what + ": no event came free");
      }
      event = free_.back();
      free_.pop_back();
    }
    const cudaError_t recorded = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (recorded != cudaSuccess) {
        free_.push_back(event);
      } else {
        pending_.push_back(event);
      }
    }
    RM_CUDA_RETURN_IF_ERROR(recorded, name_ + ": " + what + ": recording an event");
    watchdog_->arm(what);
    return Status::Ok();
  }

  Status asyncError() const override { return watchdog_->error(); }

  Status sendRecvAsync(const void* send_data, size_t send_bytes, int send_to, void* recv_data,
                       size_t recv_bytes, int recv_from, void* stream) override {
    RM_RETURN_IF_ERROR(asyncError());
    auto what = [&] {
      std::string w = name_ + ":";
      if (send_to >= 0)
        w += " send of " + std::to_string(send_bytes) + " bytes to rank " + std::to_string(send_to);
      if (send_to >= 0 && recv_from >= 0) w += " and";
      if (recv_from >= 0)
        w += " receive of " + std::to_string(recv_bytes) + " bytes from rank " +
             std::to_string(recv_from);
      return w;
    };
    for (int peer : {send_to, recv_from}) {
      if (peer != -1) RM_RETURN_IF_ERROR(checkPeer(peer, what()));
    }
    if (send_to < 0 && recv_from < 0) return Status::Ok();
    const auto s = static_cast<cudaStream_t>(stream);
    // One group: NCCL starts both together, which a send and a receive issued one after the
    // other on a stream would not (each rank's send would wait for the other's receive).
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess && send_to >= 0)
      r = ncclSend(send_data, send_bytes, ncclUint8, send_to, comm_, s);
    if (r == ncclSuccess && recv_from >= 0)
      r = ncclRecv(recv_data, recv_bytes, ncclUint8, recv_from, comm_, s);
    const ncclResult_t ended = ncclGroupEnd();  // closes the group even after a failed call
    if (r == ncclSuccess) r = ended;
    if (r != ncclSuccess) return ncclStatus(r, what(), comm_);
    return Status::Ok();
  }

 private:
  // Copies `bytes` of host memory to the device, runs `collective` on it, copies the result
  // back and waits (the watchdog bounds the wait).
  template <typename Collective>
  Status stage(void* host, size_t bytes, const std::string& what, Collective collective) {
    RM_RETURN_IF_ERROR(asyncError());
    if (bytes == 0) return Status::Ok();
    if (bytes > staging_bytes_) {
      if (staging_ != nullptr) cudaFree(staging_);
      staging_ = nullptr;
      staging_bytes_ = 0;
      RM_CUDA_RETURN_IF_ERROR(cudaMalloc(&staging_, bytes), name_ + ": staging buffer for " + what);
      staging_bytes_ = bytes;
    }
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging_, host, bytes, cudaMemcpyHostToDevice, stream_),
                            name_ + ": " + what + ": upload");
    RM_RETURN_IF_ERROR(ncclStatus(collective(), name_ + ": " + what, comm_));
    RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, staging_, bytes, cudaMemcpyDeviceToHost, stream_),
                            name_ + ": " + what + ": download");
    RM_RETURN_IF_ERROR(watch(stream_, what));
    const cudaError_t synced = cudaStreamSynchronize(stream_);
    RM_RETURN_IF_ERROR(asyncError());
    RM_CUDA_RETURN_IF_ERROR(synced, name_ + ": " + what);
    return Status::Ok();
  }

  Status asyncErrorOr(const std::string& fallback) const {
    Status s = asyncError();
    return s.ok() ? core::internalError(fallback) : s;
  }

  void reclaimCompletedLocked() {
    while (!pending_.empty() && cudaEventQuery(pending_.front()) == cudaSuccess) {
      free_.push_back(pending_.front());
      pending_.pop_front();
      ++progress_;
    }
  }

  CollectiveWatchdog::Probe probe() {
    CollectiveWatchdog::Probe p;
    if (!initialized_.load()) {
      p.state = CollectiveWatchdog::State::kPending;
      return p;
    }
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      p.state = CollectiveWatchdog::State::kFailed;
      p.error = ncclStatus(async, "asynchronous error", comm_).message();
      return p;
    }
    std::lock_guard<std::mutex> lock(mu_);
    reclaimCompletedLocked();
    p.progress = progress_;
    p.state =
        pending_.empty() ? CollectiveWatchdog::State::kIdle : CollectiveWatchdog::State::kPending;
    return p;
  }

  void abortComm() {
    if (!initialized_.load() || aborted_.exchange(true)) return;
    ncclCommAbort(comm_);
  }

  const int rank_, size_;
  const std::string name_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> initialized_{false}, aborted_{false};
  cudaStream_t stream_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  std::mutex mu_;
  std::vector<cudaEvent_t> events_;
  std::vector<cudaEvent_t> free_;
  std::deque<cudaEvent_t> pending_;
  uint64_t progress_ = 0;
  std::unique_ptr<CollectiveWatchdog> watchdog_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> makeNcclCommunicator(const NcclConfig& config) {
  if (config.store == nullptr)
    return core::invalidArgument("rank " + std::to_string(config.rank) +
                                 " nccl: needs a rendezvous store for the unique id");
  auto comm = std::make_unique<NcclCommunicatorImpl>(config);
  RM_RETURN_IF_ERROR(comm->init(config));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace ringmaster::trainer::comm
