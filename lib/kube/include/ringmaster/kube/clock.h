#pragma once
// Clock: the time source of the workqueue and leader election, injected so that tests move
// time by hand (tests/fake_clock.h) instead of sleeping.
//   now()      monotonic time for delays and deadlines
//   wallNow()  wall-clock time for timestamps written to the API (Lease renewTime, Events)
//
// Thread-safety: implementations are safe to call from any thread. Failure: none.

#include <chrono>

namespace ringmaster::kube {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
  virtual WallTime wallNow() const = 0;
};

class RealClock : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
  WallTime wallNow() const override { return std::chrono::system_clock::now(); }
};

// A process-wide RealClock (stateless, so sharing it hides nothing).
inline Clock& realClock() {
  static RealClock clock;
  return clock;
}

}  // namespace ringmaster::kube
