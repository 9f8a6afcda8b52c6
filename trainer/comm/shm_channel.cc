#include "trainer/comm/shm_channel.h"

#include <algorithm>
#include <cstring>

namespace ringmaster::trainer::comm {

size_t ShmChannel::write(const void* data, size_t bytes) {
  // Only this side raises `written`: its own value needs no ordering.
  const uint64_t written = counters_->written.load(std::memory_order_relaxed);
  const uint64_t read = counters_->read.load(std::memory_order_acquire);
  const size_t n = std::min<size_t>(bytes, capacity_ - (written - read));
  const size_t at = written % capacity_;
  const size_t first = std::min(n, capacity_ - at);  // up to the end of the ring, then from 0
  const char* src = static_cast<const char*>(data);
  if (src != nullptr) {
    std::memcpy(ring_ + at, src, first);
    std::memcpy(ring_, src + first, n - first);
  } else {
    std::memset(ring_ + at, 0, first);
    std::memset(ring_, 0, n - first);
  }
  if (n > 0) counters_->written.store(written + n, std::memory_order_release);
  return n;
}

size_t ShmChannel::readable() const {
  return counters_->written.load(std::memory_order_acquire) -
         counters_->read.load(std::memory_order_relaxed);
}

size_t ShmChannel::read(void* out, size_t bytes) {
  const uint64_t read = counters_->read.load(std::memory_order_relaxed);
  const uint64_t written = counters_->written.load(std::memory_order_acquire);
  const size_t n = std::min<size_t>(bytes, written - read);
  const size_t at = read % capacity_;
  const size_t first = std::min(n, capacity_ - at);
  if (char* dst = static_cast<char*>(out); dst != nullptr) {
    std::memcpy(dst, ring_ + at, first);
    std::memcpy(dst + first, ring_, n - first);
  }
  if (n > 0) counters_->read.store(read + n, std::memory_order_release);
  return n;
}

}  // namespace ringmaster::trainer::comm
