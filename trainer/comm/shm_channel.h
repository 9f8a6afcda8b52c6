#pragma once
// One direction of point-to-point traffic between two ranks on a host: a single-producer,
// single-consumer byte ring in shared memory. The producer copies into free space and then
// raises `written`; the consumer copies out of what is readable and then raises `read`. Both
// counters only grow (64 bits never wrap in practice), so free space is capacity - (written -
// read) without a full/empty ambiguity, and neither side ever takes a lock or waits here:
// waiting for space or data is the caller's business (ShmCommunicator's spin, yield, futex).
//
// Ownership: a view; the counters and the ring live in a segment the caller maps. Thread-safety:
// one producer thread (in any process) and one consumer thread at a time. Failure: none here;
// the caller bounds its waits.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ringmaster::trainer::comm {

// Each counter on its own cache line: producer and consumer never write the same line.
struct alignas(64) ShmChannelCounters {
  std::atomic<uint64_t> written{0};           // bytes the producer has put in, ever
  alignas(64) std::atomic<uint64_t> read{0};  // bytes the consumer has taken out, ever
};

class ShmChannel {
 public:
  ShmChannel() = default;
  ShmChannel(ShmChannelCounters* counters, char* ring, size_t capacity)
      : counters_(counters), ring_(ring), capacity_(capacity) {}

  bool valid() const { return counters_ != nullptr; }
  size_t capacity() const { return capacity_; }

  // Producer: copies up to `bytes` of `data` into the ring; returns how many it took (0 when
  // full). A null `data` writes zeros (padding).
  size_t write(const void* data, size_t bytes);
  // Consumer: what may be read now.
  size_t readable() const;
  // Consumer: copies up to `bytes` out of the ring into `out`; returns how many. A null `out`
  // skips them (padding).
  size_t read(void* out, size_t bytes);

 private:
  ShmChannelCounters* counters_ = nullptr;
  char* ring_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace ringmaster::trainer::comm
