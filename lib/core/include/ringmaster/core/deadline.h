#pragma once
// Time left until a steady-clock deadline, for the waits that slice or poll toward one, and time
// elapsed since a start, for what measures its own phases.
//
// Thread-safety: pure (reads the clock).

#include <algorithm>
#include <chrono>

namespace ringmaster::core {

// Whole milliseconds until `deadline`; zero once it has passed, never negative.
inline std::chrono::milliseconds millisecondsUntil(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()));
}

// Seconds from `start` to now.
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace ringmaster::core
