#pragma once
// The collective-communication seam of the trainer. One Communicator per rank; the backend is
// chosen at run time (makeCommunicator in factory.h): shm (one host), tcp (our own transport
// across hosts), gloo, mpi (when started under mpirun), nccl (GPUs), inproc (ranks as threads,
// tests); rendezvous through rm::rendezvous.
//
// Thread-safety: a Communicator is used by one thread at a time (the trainer's communication
// thread); collectives must be called in the same order on every rank.
// Failure: calls return a Status naming the rank, the call and the size; after an error the
// communicator is unusable (peers may be gone) and the trainer exits.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/comm/call_context.h"

namespace ringmaster::trainer::comm {

struct PointToPointOptions {
  // Give up when the peer has not taken or sent the message for this long (0 = backend default).
  std::chrono::milliseconds timeout{0};
  // A caller-chosen tag that appears in error messages ("activations of micro-batch 3").
  std::string tag;
};

// A send that may still be in flight (Communicator::startSend): its buffer must stay valid and
// unchanged until wait() returns. Destroying it unwaited waits first (errors are then lost).
class PendingSend {
 public:
  virtual ~PendingSend() = default;
  // Ok once the data has left the buffer; the send's error otherwise (the same one every call).
  virtual core::Status wait() = 0;
};

struct AllreduceOptions {
  // Give up when a peer has not answered for this long (0 = backend default).
  std::chrono::milliseconds timeout{0};
  // A caller-chosen tag that appears in error messages ("bucket 3").
  std::string tag;
};

// Collectives on GPU memory (the nccl backend): enqueued on a CUDA stream, they complete on the
// device later; a watchdog (collective_watchdog.h) turns errors and stalls into asyncError().
// Streams are passed as void* (a cudaStream_t) so this header needs no CUDA.
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  // In-place average of `count` floats of device memory across ranks, enqueued on `stream`.
  virtual core::Status allreduceAverageAsync(float* device_data, size_t count, void* stream) = 0;
  // Everything enqueued on `stream` so far must finish within the collective timeout; `what`
  // names it in errors ("step 1200").
  virtual core::Status watch(void* stream, const std::string& what) = 0;
  // Ok while healthy; the first asynchronous failure (after which the communicator is aborted).
  virtual core::Status asyncError() const = 0;
  // Point-to-point on device memory, for pipeline stages: sends `send_bytes` at `send_data` to
  // rank `send_to` and receives `recv_bytes` into `recv_data` from rank `recv_from` as one
  // group enqueued on `stream`, so two neighbours sending to each other at once do not wait on
  // each other (-1 leaves that direction out). Between two ranks, messages arrive in the order
  // they were enqueued; a receive must be exactly as long as the message. Buffers must stay
  // valid until the stream has run past the call.
  virtual core::Status sendRecvAsync(const void* send_data, size_t send_bytes, int send_to,
                                     void* recv_data, size_t recv_bytes, int recv_from,
                                     void* stream) = 0;
};

struct CommStats {
  uint64_t allreduce_calls = 0;
  uint64_t allreduce_bytes = 0;    // payload bytes summed over calls (per rank)
  double allreduce_seconds = 0.0;  // wall time inside allreduce, summed
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "shm", "tcp", "gloo", "mpi", "nccl", "inproc", "single"
  virtual std::string backend() const = 0;
  // The algorithm allreduceSum runs for a call of `bytes` in this world, as the metrics name it
  // ("ring", "recursive_doubling", ...; "auto" where a library chooses inside the call).
  virtual std::string allreduceAlgorithm(size_t bytes) const = 0;

  // In-place sum of `count` floats across all ranks. `data` must stay valid until return.
  virtual core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) = 0;
  // Broadcast `bytes` bytes from `root` to every rank (used to sync initial parameters).
  virtual core::Status broadcast(void* data, size_t bytes, int root) = 0;
  virtual core::Status barrier() = 0;
  // Point-to-point, for the pipeline schedules (activations forward, gradients back): send()
  // hands `bytes` bytes to rank `peer` and returns once `data` may be reused; recv() takes the
  // next message from `peer`, which must be exactly `bytes` long. Between two ranks messages
  // arrive in the order they were sent. Backends without it (single; nccl, whose messages
  // are on device memory: DeviceCollectives::sendRecvAsync) say so with kInvalidArgument naming
  // the backend.
  virtual core::Status send(const void* data, size_t bytes, int peer,
                            const PointToPointOptions& opts) {
    (void)data;
    return noPointToPoint("send to", bytes, peer, opts);
  }
  virtual core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) {
    (void)data;
    return noPointToPoint("receive from", bytes, peer, opts);
  }
  // send() without waiting for the peer: backends whose sends complete only once the receiver
  // takes them (gloo, mpi) return at once, so a rank may receive while its own send is in flight,
  // which pipeline schedules need (two neighbours sending to each other at the same time would
  // otherwise both wait forever). The default sends before returning, right for backends whose
  // send() never waits for the receiver (inproc) and for those without point-to-point.
  virtual core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes,
                                                               int peer,
                                                               const PointToPointOptions& opts);

  // The GPU-memory collectives of this backend; null for host-memory backends.
  virtual DeviceCollectives* deviceCollectives() { return nullptr; }

  // The largest allreduce (bytes) that takes recursive doubling rather than the bandwidth-bound
  // algorithms, where the backend lets a caller tune it (autotune): tcp's; nullopt elsewhere
  // (one algorithm, or a library that chooses inside the call).
  virtual std::optional<size_t> doublingMaxBytes() const { return std::nullopt; }
  // Sets it from the next allreduce on; every rank must set the same, between the same two
  // calls. kInvalidArgument where doublingMaxBytes() is nullopt.
  virtual core::Status setDoublingMaxBytes(size_t bytes);

  const CommStats& stats() const { return stats_; }

 protected:
  // A send's or receive's words in errors: "rank 1: send to rank 2 'acts' (4096 bytes)";
  // `verb` is "send to" or "receive from".
  std::string describePointToPoint(const std::string& verb, int peer,
                                   const PointToPointOptions& opts, size_t bytes) const {
    return describeRankCall(rank(), verb + " rank " + std::to_string(peer), opts.tag, bytes);
  }
  // Why a send or receive cannot involve `peer` (out of the world, or this rank), or Ok.
  core::Status checkPeer(int peer, const std::string& what) const {
    if (peer < 0 || peer >= size() || peer == rank()) {
      return core::invalidArgument(what + ": peer " + std::to_string(peer) +
                                   " is not another rank of the world of " +
                                   std::to_string(size()));
    }
    return core::Status::Ok();
  }

  // One finished allreduce of `bytes` that began at `start`, into stats_.
  void countAllreduce(size_t bytes, std::chrono::steady_clock::time_point start) {
    stats_.allreduce_calls++;
    stats_.allreduce_bytes += bytes;
    stats_.allreduce_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  CommStats stats_;  // updated by implementations in allreduceSum

 private:
  core::Status noPointToPoint(const std::string& verb, size_t bytes, int peer,
                              const PointToPointOptions& opts) const {
    return core::invalidArgument(
        describePointToPoint(verb, peer, opts, bytes) + ": the " + backend() +
        " backend has no point-to-point messages; use shm, tcp, gloo or mpi");
  }
};

// nccl-tests' bus bandwidth for allreduce: bytes / seconds * 2 * (n - 1) / n.
inline double allreduceBusBandwidth(double bytes, double seconds, int n) {
  if (seconds <= 0 || n <= 1) return 0.0;
  return bytes / seconds * 2.0 * (n - 1) / n;
}

}  // namespace ringmaster::trainer::comm
