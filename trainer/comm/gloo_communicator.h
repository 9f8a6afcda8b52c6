#pragma once
// The "gloo" backend: Gloo's ring allreduce over its TCP transport, with rendezvous through our
// rendezvous::Store (GlooStoreAdapter) and connectFullMesh.
//
// create() protocol (keys under "gloo/" in the given store):
//   1. every rank sets "joined/<rank>" and waits for all N; a missing rank is named in the
//      timeout error ("rank(s) 3 did not join within 2000 ms")
//   2. a TCP device bound to the configured interface / hostname
//   3. gloo::rendezvous::Context::connectFullMesh (Gloo's own keys "rank_<r>" and "<r>")
// allreduceSum keeps one Gloo setup per buffer (pointer and size), so repeated allreduces of the
// same buffers (gradient buckets) reuse them: the segmented ring of gloo::allreduce (pipelined,
// the same bits on every rank for any world size), for every size. AllreduceOptions::timeout
// applies; 0 means GlooConfig::timeout.
//
// Ownership: owns the Gloo context and device; does not keep the store after create().
// Thread-safety: one thread at a time (Communicator contract). Failure: Gloo throws; every
// exception is caught here and returned as a Status naming rank, call, tag and byte count
// (kTimeout for timeouts, kUnavailable for I/O errors). After a failed collective the
// communicator is broken: later calls fail fast with the first error.

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <string>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"
#include "trainer/comm/communicator.h"

namespace gloo {
class AllreduceOptions;
namespace rendezvous {
class Context;
}
namespace transport {
class Device;
}
}  // namespace gloo

namespace ringmaster::trainer::comm {

struct GlooConfig {
  int rank = 0;
  int size = 1;
  rendezvous::Store* store = nullptr;  // not owned; used during create() only
  // Where peers reach this rank. `iface` (e.g. "eth0") wins when set; else `hostname` (name or
  // address) is resolved and bound; empty resolves this machine's hostname.
  std::string hostname;
  std::string iface;
  // Rendezvous timeout and the default for collectives whose options say 0.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};

// "127.0.0.1" when `master_addr` is a loopback name or address (all ranks on this machine),
// else "" (bind to what this machine's hostname resolves to).
std::string defaultGlooHostname(const std::string& master_addr);

class GlooCommunicator final : public Communicator {
 public:
  static core::Result<std::unique_ptr<GlooCommunicator>> create(const GlooConfig& config);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }
  std::string allreduceAlgorithm(size_t) const override { return "segmented_ring"; }

  core::Status allreduceSum(float* data, size_t count, const AllreduceOptions& opts) override;
  core::Status broadcast(void* data, size_t bytes, int root) override;
  core::Status barrier() override;
  // Gloo's unbound buffers; the n-th message from one rank to another uses slot n of a prefix
  // Gloo's collectives do not use, so both sides match it without a handshake.
  core::Status send(const void* data, size_t bytes, int peer,
                    const PointToPointOptions& opts) override;
  core::Status recv(void* data, size_t bytes, int peer, const PointToPointOptions& opts) override;
  // Posts the send on its unbound buffer; Gloo's transport thread writes it once the peer has
  // posted the matching receive.
  core::Result<std::unique_ptr<PendingSend>> startSend(const void* data, size_t bytes, int peer,
                                                       const PointToPointOptions& opts) override;

  // How many buffers have a kept allreduce setup (tests check reuse).
  size_t cachedBufferCountForTesting() const { return cache_.size(); }

 private:
  struct CachedAllreduce;  // pointer, count and their Gloo allreduce options
  class GlooSend;          // a posted send's buffer, waited on in wait()
  static constexpr size_t kMaxCachedBuffers = 64;

  GlooCommunicator(int rank, int size, std::chrono::milliseconds timeout,
                   std::shared_ptr<gloo::transport::Device> device,
                   std::shared_ptr<gloo::rendezvous::Context> context);
  // Runs a Gloo call; turns an exception into a Status with `what` and marks us broken.
  template <typename Fn>
  core::Status guarded(const std::string& what, Fn&& fn);
  gloo::AllreduceOptions& allreduceFor(float* data, size_t count);

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::list<CachedAllreduce> cache_;       // most recently used first
  core::Status broken_;                    // the first failure; later calls return it
  std::vector<uint32_t> sent_, received_;  // messages per peer so far: the next slot
};

}  // namespace ringmaster::trainer::comm
