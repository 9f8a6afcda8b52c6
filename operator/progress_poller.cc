#include "operator/progress_poller.h"

#include <algorithm>

namespace ringmaster::op {

std::chrono::milliseconds progressInterval(std::chrono::milliseconds base, size_t running) {
  // Rounded up: never a read more a second than the budget.
  const auto reads = static_cast<int64_t>(kProgressReadsPerSecond);
  const auto spread =
      std::chrono::milliseconds((1000 * static_cast<int64_t>(running) + reads - 1) / reads);
  return std::max(base, spread);
}

ProgressPoller::ProgressPoller(ProgressSource& source, std::chrono::milliseconds interval, int keep)
    : source_(source),
      interval_(interval),
      keep_(keep),
      thread_([this](std::stop_token stop) { poll(stop); }) {}

ProgressPoller::~ProgressPoller() {
  thread_.request_stop();
  asked_.notify_all();
}

core::Result<kube::TrainingProgress> ProgressPoller::read(const std::string& host, int port) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = Clock::now();
  auto [it, added] = targets_.try_emplace(Address{host, port});
  it->second.asked = now;
  if (added) {
    schedule_.emplace(now, it->first);
    fresh_ = true;
    asked_.notify_all();
  }
  if (!it->second.last) {
    return core::unavailable("no reading of " + host + ":" + std::to_string(port) + " yet");
  }
  return *it->second.last;
}

size_t ProgressPoller::watched() const {
  std::lock_guard lock(mu_);
  return targets_.size();
}

void ProgressPoller::poll(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    fresh_ = false;
    const Clock::time_point now = Clock::now();
    const std::chrono::milliseconds interval = progressInterval(interval_, targets_.size());
    if (schedule_.empty() || schedule_.begin()->first > now) {
      const Clock::time_point next = schedule_.empty() ? now + interval : schedule_.begin()->first;
      asked_.wait_until(lock, stop, next, [&] { return fresh_; });
      continue;
    }
    const Address address = schedule_.begin()->second;
    schedule_.erase(schedule_.begin());
    auto target = targets_.find(address);
    if (target == targets_.end()) continue;
    if (target->second.asked < now - keep_ * interval) {
      targets_.erase(target);
      continue;
    }
    // The read runs unlocked: read() answers from the last reading meanwhile. Only this thread
    // erases targets, so the entry is still there afterwards.
    lock.unlock();
    core::Result<kube::TrainingProgress> reading = source_.read(address.first, address.second);
    lock.lock();
    target->second.last = std::move(reading);
    schedule_.emplace(Clock::now() + interval, address);
  }
}

}  // namespace ringmaster::op
