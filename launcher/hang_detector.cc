#include "launcher/hang_detector.h"

#include "ringmaster/core/log.h"

namespace ringmaster::launcher {
namespace {

using std::chrono::milliseconds;

int64_t wholeSeconds(milliseconds d) { return d.count() / 1000; }

}  // namespace

std::string Hang::message() const {
  return "rank " + std::to_string(rank) + " (pod " + std::to_string(pod) + ") stuck at step " +
         std::to_string(step) + " for " + std::to_string(wholeSeconds(stuck_for)) + " s (" + why +
         ")";
}

std::optional<std::string> publishedHang(rendezvous::Store& attempt_store) {
  if (!attempt_store.wait({kHangKey}, milliseconds(0)).ok()) return std::nullopt;
  core::Result<rendezvous::Bytes> verdict = attempt_store.get(kHangKey, milliseconds(0));
  if (!verdict.ok()) return std::nullopt;
  return rendezvous::toString(*verdict);
}

HangJudge::HangJudge(int world_size, int local_world_size, milliseconds timeout)
    : local_world_size_(local_world_size), timeout_(timeout), ranks_(world_size) {}

void HangJudge::observe(int rank, const rendezvous::Heartbeat& hb, Clock::time_point now) {
  RankState& s = ranks_.at(static_cast<size_t>(rank));
  if (hb.beats == 0) return;  // never reported
  if (!s.seen) {
    s.seen = true;
    s.last = hb;
    s.beat_changed = s.step_changed = now;
    return;
  }
  if (hb.beats != s.last.beats) s.beat_changed = now;
  if (hb.step != s.last.step) s.step_changed = now;
  s.last = hb;
}

std::optional<Hang> HangJudge::judge(Clock::time_point now) const {
  auto since = [now](Clock::time_point t) {
    return std::chrono::duration_cast<milliseconds>(now - t);
  };
  auto hangOf = [&](size_t r, std::string why) {
    const RankState& s = ranks_[r];
    return Hang{static_cast<int>(r), static_cast<int>(r) / local_world_size_, s.last.step,
                since(s.step_changed), std::move(why)};
  };
  // Frozen: the rank silent the longest.
  std::optional<size_t> frozen;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& s = ranks_[r];
    if (!s.seen || s.last.done || since(s.beat_changed) < timeout_) continue;
    if (!frozen || s.beat_changed < ranks_[*frozen].beat_changed) frozen = r;
  }
  if (frozen) {
    return hangOf(*frozen, "no heartbeat for " +
                               std::to_string(wholeSeconds(since(ranks_[*frozen].beat_changed))) +
                               " s");
  }
  // Stalled: everyone alive and training, nobody advancing.
  std::optional<size_t> lowest;
  Clock::time_point last_progress{};
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& s = ranks_[r];
    if (!s.seen || s.last.done || s.last.step < 1) return std::nullopt;
    last_progress = std::max(last_progress, s.step_changed);
    if (!lowest || s.last.step < ranks_[*lowest].last.step) lowest = r;
  }
  if (!lowest || since(last_progress) < timeout_) return std::nullopt;
  return hangOf(*lowest, "alive, but no rank advanced for " +
                             std::to_string(wholeSeconds(since(last_progress))) +
                             " s; the others wait for the lowest step");
}

HangMonitor::HangMonitor(std::unique_ptr<rendezvous::Store> store, std::string attempt_prefix,
                         HangJudge judge, milliseconds poll,
                         std::function<void(const Hang&)> on_hang)
    : store_(std::move(store)),
      scoped_(store_.get(), std::move(attempt_prefix)),
      judge_(std::move(judge)),
      poll_(poll),
      on_hang_(std::move(on_hang)) {
  thread_ = std::thread([this] { loop(); });
}

HangMonitor::~HangMonitor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HangMonitor::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const auto now = HangJudge::Clock::now();
    for (int r = 0; r < judge_.worldSize(); ++r) {
      core::Result<rendezvous::Heartbeat> hb = rendezvous::readHeartbeat(scoped_, r);
      if (!hb.ok()) {
        lock.lock();
        if (!stopping_) {
          RM_LOG(WARN, LAUNCH) << "hang detection off: " << hb.status().message();
        }
        return;
      }
      judge_.observe(r, *hb, now);
    }
    if (std::optional<Hang> hang = judge_.judge(now)) {
      // Published before anything is stopped, so that whoever sees the effects can read why.
      core::Status st = scoped_.set(kHangKey, rendezvous::toBytes(hang->message()));
      if (!st.ok()) RM_LOG(WARN, LAUNCH) << "could not publish the hang: " << st.message();
      on_hang_(*hang);
      return;
    }
    lock.lock();
    cv_.wait_for(lock, poll_, [this] { return stopping_; });
  }
}

}  // namespace ringmaster::launcher
