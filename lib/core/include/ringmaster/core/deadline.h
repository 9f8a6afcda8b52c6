#pragma once
// Time left until a steady-clock deadline, for the waits that slice or poll toward one.
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

}  // namespace ringmaster::core
