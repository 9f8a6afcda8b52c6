#pragma once
// The bounded-staleness (SSP) gate of parameter-server training: how far a worker may run ahead
// of the slowest live worker before it has to wait.
//
// Steps count from 0. A worker's clock is how many steps it has completed, which is also the
// index of the step it runs next. With bound s, a worker may start step n iff
// n - min(live clocks) <= s. s = 0 is lockstep (sync/BSP: step n starts only once every live
// worker has completed n steps); async has no bound. A worker that leaves no longer counts
// toward the minimum, so a dead straggler does not hold the others back.
//
// StalenessClock is the pure state machine; StalenessGate wraps it for threads that block.
//
// Thread-safety: StalenessClock is a value type with no locking; StalenessGate is safe to call
// from any thread. Failure: kInvalidArgument (negative or backward clock, bad consistency text),
// kNotFound (unknown worker), kAlreadyExists (worker joins twice), and from waiting kTimeout at
// the deadline, kCancelled when stopped, kNotFound when the waiter itself was removed.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::ps {

using WorkerId = int;

struct Consistency {
  // Steps a worker may run ahead of the slowest live one; nullopt: no bound (async). Not negative.
  std::optional<int64_t> max_staleness;

  static Consistency sync() { return {0}; }
  static Consistency async() { return {std::nullopt}; }
  static Consistency bounded(int64_t s) { return {s}; }

  // Every worker at the same step (a bound of 0; a negative one reads as 0).
  bool isSync() const { return max_staleness && *max_staleness <= 0; }

  bool operator==(const Consistency&) const = default;
};

// "sync", "async", or a bound as a non-negative integer ("0" is sync).
core::Result<Consistency> parseConsistency(std::string_view text);
std::string toString(const Consistency& consistency);

// A worker's standing on one server: live at its clock, or not live (gone, or a process started
// again after it died) and the clock the server would join it at.
struct WorkerStanding {
  bool live = false;
  int64_t clock = 0;
  bool operator==(const WorkerStanding&) const = default;
};

class StalenessClock {
 public:
  // A negative bound is read as 0.
  explicit StalenessClock(Consistency consistency);

  const Consistency& consistency() const { return consistency_; }

  // Adds a live worker at `clock`, by default the current minimum (or, with no live worker, the
  // last minimum there was). A clock below the minimum holds the others back until it catches up.
  core::Status join(WorkerId worker, std::optional<int64_t> clock = std::nullopt);
  // The worker stops counting (it died or finished).
  core::Status leave(WorkerId worker);
  // The worker has completed `clock` steps; clocks never go back. Not checked against the bound:
  // the caller is expected to have waited.
  core::Status advance(WorkerId worker, int64_t clock);

  std::optional<int64_t> clockOf(WorkerId worker) const;
  // The slowest live worker's clock; nullopt when none is live.
  std::optional<int64_t> minClock() const;
  // Where join() puts a worker by default: the slowest live clock, or the last there was.
  int64_t joinClock() const { return minClock().value_or(last_min_); }
  size_t liveWorkers() const { return clocks_.size(); }

  // Whether a live worker may start step `step` now (always, with no live worker).
  bool mayStart(int64_t step) const;
  // Staleness of an update computed at step `step`: step minus the slowest live worker's clock,
  // at least 0 (a worker behind the minimum, e.g. one already removed, counts as 0).
  int64_t staleness(int64_t step) const;

 private:
  Consistency consistency_;
  std::map<WorkerId, int64_t> clocks_;
  std::multiset<int64_t> sorted_;  // the live clocks, for the minimum
  int64_t last_min_ = 0;
};

class StalenessGate {
 public:
  explicit StalenessGate(Consistency consistency) : clock_(consistency) {}

  core::Status join(WorkerId worker, std::optional<int64_t> clock = std::nullopt);
  // Both wake waiters whose bound may now be met.
  core::Status advance(WorkerId worker, int64_t clock);
  core::Status remove(WorkerId worker);

  // Blocks until `worker` may start step `step`. Ok once allowed; kTimeout at `deadline`;
  // kCancelled when `stop` is requested; kNotFound if `worker` is not (or no longer) live.
  core::Status waitUntilAllowed(WorkerId worker, int64_t step,
                                std::chrono::steady_clock::time_point deadline,
                                std::stop_token stop = {});

  int64_t staleness(int64_t step) const;
  StalenessClock snapshot() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable_any changed_;
  StalenessClock clock_;
};

}  // namespace ringmaster::trainer::ps
