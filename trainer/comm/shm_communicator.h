#pragma once
// The "shm" backend: ranks on one host reduce through a POSIX shared-memory segment (the idea
// of NCCL's SHM transport), with no sockets and no kernel involvement on the fast path.
//
// Segment (created by rank 0, name published through the store, unlinked once all mapped):
//   header      magic, version, world size, token, slot size, abort flag, futex word
//   control[N]  per rank, one cache line: counters posted / reduced / done, and the descriptor
//               (call, bytes, root) of the step in each slot, for cross-checking calls
//   slots[N][2] per rank, two staging slots of slot_bytes (double-buffered pipeline)
//   channels    with point-to-point on, one ring (shm_channel.h) per ordered pair of ranks
// Every collective is a sequence of steps, one per slot-sized chunk; step g uses slot g % 2 and
// every counter counts steps. allreduceSum step g on rank r:
//   1. wait until done[q] >= g - 1 for all q (nobody still reads slot g % 2 from step g - 2)
//   2. copy what the others will read into my slot (small calls: the whole chunk; otherwise
//      every slice but mine); posted[r] = g + 1; wait until posted[q] >= g + 1 for all q
//   3a. small calls (<= direct_max_bytes, one step): sum the whole chunk over all ranks into my
//       buffer; done[r] = g + 1. One synchronization per call.
//   3b. otherwise (reduce-scatter): sum slice r over my buffer and the others' slots into my
//       buffer and my slot; reduced[r] = g + 1; wait until reduced[q] >= g + 1 for all q;
//       (allgather) copy slice q from slot q for every q != r; done[r] = g + 1.
// My own contribution is always read from my buffer, never through my slot: copying it in and
// reading it back cost more than half of the time on a 2-core VM, where every cache line that
// moves between cores is expensive.
// Sums run in rank order, so every rank gets bitwise identical results. Waiting spins briefly,
// then yields, then sleeps on a futex in the segment (publishers wake only if someone sleeps;
// a sleeper that misses its wake looks again after 1 ms).
//
// Point-to-point (ring_bytes > 0): a message is an 8-byte length, the payload and zeros up to a
// multiple of 8, streamed through the sender->receiver ring. A receive copies out as the bytes
// arrive. A started send (startSend) copies what fits and leaves the rest queued; every later
// call of this communicator (receives, sends, collectives, a PendingSend's wait) moves queued
// bytes on while it waits, so two neighbours sending to each other at once both progress, with
// no thread of its own. A message larger than the ring therefore finishes only once its sender
// calls in again: rings are sized (defaultShmRingBytes) so that a pipeline's activations
// usually fit whole.
//
// Ownership: owns its mapping of the segment; the store is used during create() only. A
// PendingSend borrows the communicator and must be waited for or destroyed before it.
// Thread-safety: one thread at a time (Communicator contract). Failure: a wait that passes the
// timeout returns kTimeout naming the ranks that did not arrive, the call, tag and size, and
// raises the segment's abort flag so the other ranks fail at once instead of waiting out their
// own timeouts; a rank whose process exited (kill(pid, 0), same PID namespace only) fails the wait
// within ~100 ms with kUnavailable naming it; mismatched calls across ranks fail with
// kInvalidArgument. After any error the
// communicator is broken. create() returns kUnavailable when some rank cannot map the segment
// (ranks on different hosts, no /dev/shm): every rank returns it, so all can fall back together.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"
#include "trainer/comm/shm_channel.h"
#include "trainer/comm/shm_segment.h"

namespace ringmaster::trainer::comm {

struct ShmConfig {
  int rank = 0;
  int size = 1;
  rendezvous::Store* store = nullptr;  // not owned; used during create() only
  // Setup timeout and the default for collectives whose options say 0.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // Staging slot per rank and pipeline stage; large calls go through in chunks of this size.
  size_t slot_bytes = 512 << 10;
  // Calls up to this size take the single-synchronization path (must be <= slot_bytes).
  size_t direct_max_bytes = 32 << 10;
  // How long a waiting rank spins before it yields, and then before it sleeps.
  std::chrono::microseconds spin{50};
  std::chrono::microseconds yield{2000};
  // Point-to-point ring per ordered pair of ranks, a multiple of 4096; 0: no point-to-point
  // messages (send and recv say so), and no ring memory.
  size_t ring_bytes = 0;
  // Test-only: this rank reports that it cannot map the segment (as a rank on another host
  // would), to exercise the fallback path.
  bool pretend_unreachable_for_testing = false;
};

// A ring size for point-to-point in a world of `size` ranks: 4 MiB per ordered pair, less when
// the pairs would take more than 32 MiB of /dev/shm together (never under 256 KiB).
size_t defaultShmRingBytes(int size);

class ShmCommunicator final : public Communicator {
 public:
  static core::Result<std::unique_ptr<ShmCommunicator>> create(const ShmConfig& config);
  ~ShmCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "shm"; }
  std::string allreduceAlgorithm(size_t bytes) const override;

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override;
  core::Status broadcast(void* data, size_t bytes, int root) override;
  core::Status barrier() override;
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override;
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override;
  core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes, int peer,
                                                       const PointToPointOptions& opts) override;

 private:
  struct Outgoing;   // a send whose bytes are not all in the ring yet
  class QueuedSend;  // the PendingSend of one
  struct Layout;     // where header, control blocks and slots live in the segment
  using Clock = std::chrono::steady_clock;
  // The call in progress, for error messages (turned into text only when something fails).
  struct Call {
    const char* name;
    std::string_view tag;
    size_t bytes;
    int root;  // broadcast root, else -1
    // Point-to-point calls say whom they talk to: their words, when set, replace the above.
    const std::string* description = nullptr;
  };

  ShmCommunicator(const ShmConfig& config, std::unique_ptr<ShmSegment> segment);

  // One step's bookkeeping: waits for the slot, records the descriptor.
  core::Status beginStep(uint32_t kind, uint64_t bytes, int root, Clock::time_point deadline,
                         const Call& call);
  // Waits until `which` counter of every rank reaches `target`.
  core::Status waitAll(int which, uint32_t target, Clock::time_point deadline, const Call& call);
  // The waiting every call shares: spins, yields, then sleeps on the segment's futex until
  // ready() (which may move queued sends on) says so; fails on the abort flag, at the deadline
  // (timedOut() says why) and when gone() names a rank that exited.
  template <typename Ready, typename TimedOut, typename Gone>
  core::Status waitUntil(Ready ready, Clock::time_point deadline, const Call& call,
                         TimedOut timedOut, Gone gone);
  // Moves queued sends' bytes into their rings, oldest first per peer.
  void progressSends();
  core::Status waitSent(Outgoing& message);
  core::Status checkPointToPoint(int peer, const std::string& what) const;
  void wakeSleepers();
  // Checks that every rank's descriptor for the current slot matches ours.
  core::Status checkDescriptors(const Call& call);
  std::string describe(const Call& call) const;  // "rank 1: allreduceSum 'tag' (4096 bytes)"
  core::Status brokenError(const Call& call) const;
  void publish(int which, uint32_t value);
  core::Status fail(core::Status status);  // records the first error and raises the abort flag
  // "rank Q (pid P)" for a rank whose `which` counter is short of `target` and whose process no
  // longer exists (checked only for ranks in this PID namespace).
  std::optional<std::string> goneRank(int which, uint32_t target) const;
  // "rank Q (pid P)" when rank q's process no longer exists (same PID namespace only).
  std::optional<std::string> exitedRank(int q) const;
  char* slot(int rank, int which_slot) const;

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const size_t slot_bytes_;
  const size_t direct_max_bytes_;
  // One synchronization for the whole call (step 3a) rather than reduce-scatter + all-gather.
  bool isDirect(size_t bytes) const { return bytes <= direct_max_bytes_; }
  const std::chrono::microseconds spin_;
  const std::chrono::microseconds yield_;
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<Layout> layout_;
  std::vector<const float*> inputs_;  // per-call scratch: one input pointer per rank
  const size_t ring_bytes_;
  std::vector<ShmChannel> to_;    // [peer]: my ring to peer (invalid for me or without rings)
  std::vector<ShmChannel> from_;  // [peer]: peer's ring to me
  std::vector<std::deque<std::shared_ptr<Outgoing>>> queued_;  // [peer], oldest first
  size_t queued_count_ = 0;
  uint32_t step_ = 0;     // steps completed by this rank (wraps; compared by difference)
  uint32_t reduced_ = 0;  // what this rank last published as its reduced and done counters
  uint32_t done_ = 0;
  core::Status broken_;  // first error
  uint64_t my_pid_namespace_ = 0;
};

}  // namespace ringmaster::trainer::comm
