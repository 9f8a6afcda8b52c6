#include "trainer/ps/staleness_gate.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

namespace ringmaster::trainer::ps {
namespace {

std::string workerName(WorkerId worker) { return "worker " + std::to_string(worker); }

}  // namespace

core::Result<Consistency> parseConsistency(std::string_view text) {
  if (text == "sync") return Consistency::sync();
  if (text == "async") return Consistency::async();
  int64_t bound = -1;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), bound);
  if (text.empty() || err != std::errc() || end != text.data() + text.size() || bound < 0) {
    return core::invalidArgument("consistency: want sync, async or a staleness bound >= 0, got \"" +
                                 std::string(text) + "\"");
  }
  return Consistency::bounded(bound);
}

std::string toString(const Consistency& consistency) {
  if (!consistency.max_staleness) return "async";
  if (*consistency.max_staleness == 0) return "sync";
  return "staleness " + std::to_string(*consistency.max_staleness);
}

StalenessClock::StalenessClock(Consistency consistency) : consistency_(consistency) {
  if (consistency_.max_staleness && *consistency_.max_staleness < 0) {
    consistency_.max_staleness = 0;
  }
}

core::Status StalenessClock::join(WorkerId worker, std::optional<int64_t> clock) {
  if (clocks_.contains(worker)) {
    return {core::Code::kAlreadyExists, workerName(worker) + ": already live"};
  }
  const int64_t start = clock.value_or(joinClock());
  if (start < 0) {
    return core::invalidArgument(workerName(worker) + ": clock must be >= 0, got " +
                                 std::to_string(start));
  }
  clocks_.emplace(worker, start);
  sorted_.insert(start);
  last_min_ = *sorted_.begin();
  return core::Status::Ok();
}

core::Status StalenessClock::leave(WorkerId worker) {
  auto it = clocks_.find(worker);
  if (it == clocks_.end()) return core::notFound(workerName(worker) + ": not live");
  sorted_.erase(sorted_.find(it->second));
  clocks_.erase(it);
  if (!sorted_.empty()) last_min_ = *sorted_.begin();
  return core::Status::Ok();
}

core::Status StalenessClock::advance(WorkerId worker, int64_t clock) {
  auto it = clocks_.find(worker);
  if (it == clocks_.end()) return core::notFound(workerName(worker) + ": not live");
  if (clock < it->second) {
    return core::invalidArgument(workerName(worker) + ": clock would go back from " +
                                 std::to_string(it->second) + " to " + std::to_string(clock));
  }
  sorted_.erase(sorted_.find(it->second));
  sorted_.insert(clock);
  it->second = clock;
  last_min_ = *sorted_.begin();
  return core::Status::Ok();
}

std::optional<int64_t> StalenessClock::clockOf(WorkerId worker) const {
  auto it = clocks_.find(worker);
  if (it == clocks_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> StalenessClock::minClock() const {
  if (sorted_.empty()) return std::nullopt;
  return *sorted_.begin();
}

bool StalenessClock::mayStart(int64_t step) const {
  if (!consistency_.max_staleness || sorted_.empty()) return true;
  return step - *sorted_.begin() <= *consistency_.max_staleness;
}

int64_t StalenessClock::staleness(int64_t step) const {
  if (sorted_.empty()) return 0;
  return std::max<int64_t>(0, step - *sorted_.begin());
}

core::Status StalenessGate::join(WorkerId worker, std::optional<int64_t> clock) {
  std::lock_guard lock(mu_);
  return clock_.join(worker, clock);
}

core::Status StalenessGate::advance(WorkerId worker, int64_t clock) {
  core::Status status;
  {
    std::lock_guard lock(mu_);
    status = clock_.advance(worker, clock);
  }
  changed_.notify_all();
  return status;
}

core::Status StalenessGate::remove(WorkerId worker) {
  core::Status status;
  {
    std::lock_guard lock(mu_);
    status = clock_.leave(worker);
  }
  changed_.notify_all();
  return status;
}

core::Status StalenessGate::waitUntilAllowed(WorkerId worker, int64_t step,
                                             std::chrono::steady_clock::time_point deadline,
                                             std::stop_token stop) {
  std::unique_lock lock(mu_);
  const auto live = [&] { return clock_.clockOf(worker).has_value(); };
  const bool done =
      changed_.wait_until(lock, stop, deadline, [&] { return !live() || clock_.mayStart(step); });
  if (!live()) return core::notFound(workerName(worker) + ": not live");
  if (done) return core::Status::Ok();
  const std::string where = workerName(worker) + ": step " + std::to_string(step);
  if (stop.stop_requested()) return core::cancelled(where + ": stopped while waiting");
  return core::timeoutError(where + " still waits for the slowest worker (clock " +
                            std::to_string(clock_.minClock().value_or(0)) + ", " +
                            toString(clock_.consistency()) + ")");
}

int64_t StalenessGate::staleness(int64_t step) const {
  std::lock_guard lock(mu_);
  return clock_.staleness(step);
}

StalenessClock StalenessGate::snapshot() const {
  std::lock_guard lock(mu_);
  return clock_;
}

}  // namespace ringmaster::trainer::ps
