#pragma once
// The "tcp" backend: our own transport for ranks in different pods, one TCP connection per pair
// of ranks, driven without helper threads by the calling thread (non-blocking sockets, poll).
//
// create() protocol (keys under "tcp/" in the given store, which proves membership):
//   1. every rank listens on `hostname` (an ephemeral port) and sets "addr/<rank>" = host:port;
//      rank 0 sets "token", 32 random bytes;
//   2. each rank dials every lower rank and says hello (magic, its rank, the world size, the
//      token); it accepts one connection from every higher rank, reading hellos as they come,
//      so that a stranger (silent, or with a wrong magic, token, size or rank) holds up nobody
//      and is dropped.
// allreduceSum picks by size: up to tcpDoublingMaxBytes(world) (or what setDoublingMaxBytes
// set: autotune's knob), recursive doubling (log2 N
// exchanges of the whole vector; ranks beyond the largest power of two first fold into a partner
// and get the result back); from 4 ranks on and up to kTcpHalvingDoublingMaxBytes,
// halving-doubling (reduce-scatter by recursive halving, then all-gather by recursive doubling:
// 2 log2 N steps moving the ring's bytes; folded the same way); above, the ring (reduce-scatter
// then all-gather, each step sending to the right neighbour while receiving from the left). The
// ring streams: what arrives from the left is summed a segment at a time and forwarded to the
// right at once, within a step and from reduce-scatter into all-gather, so every link stays busy
// and the data stays in cache. Every rank ends with the same bits: each sum is computed once
// (ring, halving) or by both partners over the same two operands (doubling, a + b == b + a).
//
// Ownership: owns its sockets; does not keep the store after create().
// Thread-safety: one thread at a time (Communicator contract), except that a PendingSend of
// startSend() writes from its own thread; point-to-point messages and collectives must not be in
// flight on the same communicator at once. Failure: a Status naming the rank, the call, its tag
// and size, and the peer (kTimeout when a peer is silent past the timeout, kUnavailable when it
// closed its connection). After an error the communicator closes every connection, so that the
// other ranks fail at once too instead of waiting for their timeouts; later calls fail fast.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"

namespace ringmaster::trainer::comm {

// Largest allreduce (bytes) that takes halving-doubling rather than the ring in worlds of 4 ranks
// or more: there the ring's 2(N-1) steps cost more than halving-doubling's 2 log2 N for the same
// bytes on the wire (8 ranks across namespaces: the ring was at 0.79-0.98x Open MPI from 1 to
// 16 MiB).
inline constexpr size_t kTcpHalvingDoublingMaxBytes = 16 << 20;

// Largest allreduce (bytes) that takes recursive doubling rather than the ring in a world of
// `world` ranks: 16 KiB per rank, at most 256 KiB. Doubling needs log2 N steps but moves the
// whole vector in each and sums it only once it has arrived; the ring needs 2(N-1) steps. Across
// network namespaces on 10 Gbit/s links the ring took over between 32 and 64 KiB with 2 ranks,
// 64 and 128 KiB with 4, 128 and 256 KiB with 8 (bench/allreduce/netns.sh).
constexpr size_t tcpDoublingMaxBytes(int world) {
  return std::min<size_t>(size_t{16 << 10} * static_cast<size_t>(world), size_t{256} << 10);
}

struct TcpConfig {
  int rank = 0;
  int size = 1;
  rendezvous::Store* store = nullptr;  // not owned; used during create() only
  // The address peers dial to reach this rank (a name or an address); empty: this machine's
  // hostname.
  std::string hostname;
  // Rendezvous timeout, and the default for calls whose options say 0.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

class TcpCommunicator final : public Communicator {
 public:
  static core::Result<std::unique_ptr<TcpCommunicator>> create(const TcpConfig& config);
  ~TcpCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "tcp"; }
  std::string allreduceAlgorithm(size_t bytes) const override;
  std::optional<size_t> doublingMaxBytes() const override { return doubling_max_bytes_.load(); }
  core::Status setDoublingMaxBytes(size_t bytes) override;

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override;
  core::Status broadcast(void* data, size_t bytes, int root) override;
  core::Status barrier() override;
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override;
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override;
  core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes, int peer,
                                                       const PointToPointOptions& opts) override;

 private:
  class Send;
  using Clock = std::chrono::steady_clock;

  TcpCommunicator(int rank, int size, std::chrono::milliseconds timeout, std::vector<int> fds);

  // One non-blocking send()/recv() on the connection to `peer`: the bytes moved, 0 when the
  // socket would block, or the error (which fails the communicator).
  core::Result<size_t> sendSome(int peer, const char* data, size_t bytes, const std::string& what);
  core::Result<size_t> recvSome(int peer, char* data, size_t bytes, const std::string& what);
  // How a loop over sockets waits when nothing moved: it spins briefly (a small message's answer
  // usually comes within that), then sleeps in poll(); false once the deadline has passed.
  class Waiter {
   public:
    explicit Waiter(Clock::time_point deadline) : deadline_(deadline) {}
    void progressed() { idle_since_ = Clock::now(); }
    // `out`: a socket to write to, `in`: one to read from (-1: none; they may be the same).
    core::Result<bool> wait(int out, int in);

   private:
    Clock::time_point deadline_;
    Clock::time_point idle_since_ = Clock::now();
  };
  // Sends `send_bytes` of `send_data` to rank `to` while receiving `recv_bytes` into `recv_data`
  // from rank `from` (-1: that direction idle). `on_received(total)` runs as bytes arrive.
  core::Status transfer(int to, const char* send_data, size_t send_bytes, int from, char* recv_data,
                        size_t recv_bytes, Clock::time_point deadline, const std::string& what,
                        const std::function<void(size_t)>& on_received = {});
  // transfer() both ways with `partner`, writing in this call's turn on that connection.
  core::Status exchange(int partner, const char* out, size_t out_bytes, char* in, size_t in_bytes,
                        Clock::time_point deadline, const std::string& what,
                        const std::function<void(size_t)>& on_received = {});
  // exchange() that sums the partner's `floats` floats into `mine` (mine + theirs) a segment at a
  // time as they arrive; `mine` must not overlap what is sent.
  core::Status exchangeAndSum(int partner, const char* out, size_t out_bytes, float* mine,
                              size_t floats, Clock::time_point deadline, const std::string& what);
  // Runs `among` over the largest power of two of ranks, pow2. Each rank beyond it hands its
  // vector to rank - pow2, which sums it into its own first and sends the result back at the end.
  core::Status folded(float* data, size_t count, Clock::time_point deadline,
                      const std::string& what, const std::function<core::Status(int pow2)>& among);
  core::Status recursiveDoubling(float* data, size_t count, Clock::time_point deadline,
                                 const std::string& what);
  core::Status ring(float* data, size_t count, Clock::time_point deadline, const std::string& what);
  core::Status halvingDoubling(float* data, size_t count, Clock::time_point deadline,
                               const std::string& what);
  // Writers to one connection go in the order they took their tickets (SendQueue).
  uint64_t takeTicket(int peer);
  void awaitTurn(int peer, uint64_t ticket);
  void endTurn(int peer);
  core::Status sendInTurn(const void* data, size_t bytes, int peer, uint64_t ticket,
                          Clock::time_point deadline, const std::string& what);
  // The first error, recorded; every connection is shut down so that the peers learn at once.
  core::Status fail(core::Status error);
  core::Status usable(const std::string& what) const;
  Clock::time_point deadlineFor(std::chrono::milliseconds timeout) const;

  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  // Written between calls by the training thread, read by whichever thread calls allreduce.
  std::atomic<size_t> doubling_max_bytes_;
  std::vector<int> fds_;  // by rank; -1 for this rank
  struct SendQueue;
  std::unique_ptr<SendQueue[]> queues_;  // by rank
  std::vector<float> scratch_;
  mutable std::mutex broken_mu_;
  core::Status broken_;
};

}  // namespace ringmaster::trainer::comm
