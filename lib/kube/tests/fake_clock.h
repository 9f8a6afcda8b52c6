#pragma once
// FakeClock: time that moves only when a test calls advance(). Thread-safe (atomics).

#include <atomic>

#include "ringmaster/kube/clock.h"

namespace ringmaster::kube::testing {

class FakeClock : public Clock {
 public:
  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(mono_.load())); }
  WallTime wallNow() const override {
    return WallTime(
        std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(wall_.load())));
  }
  void advance(std::chrono::nanoseconds d) {
    mono_ += d.count();
    wall_ += d.count();
  }

 private:
  std::atomic<int64_t> mono_{1'000'000'000};
  // 2026-11-22T02:00:00Z
  std::atomic<int64_t> wall_{int64_t{1795312800} * 1'000'000'000};
};

}  // namespace ringmaster::kube::testing
