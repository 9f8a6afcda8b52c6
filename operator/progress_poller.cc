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

ProgressPoller::ProgressPoller(ProgressSource& source, std::chrono::milliseconds interval)
    : source_(source), interval_(interval), thread_([this](std::stop_token stop) { poll(stop); }) {}

ProgressPoller::~ProgressPoller() {
  thread_.request_stop();
  asked_.notify_all();
}

core::Result<kube::TrainingProgress> ProgressPoller::read(const std::string& host, int port) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = Clock::now();
  auto [it, added] = targets_.try_emplace(Address{host, port});
  if (added) {
    it->second.due = now;
    schedule_.emplace(now, it->first);
    fresh_ = true;
    asked_.notify_all();
  }
  if (!it->second.last) {
    return core::unavailable("no reading of " + host + ":" + std::to_string(port) + " yet");
  }
  return *it->second.last;
}

void ProgressPoller::forget(const std::string& host, int port) {
  std::lock_guard lock(mu_);
  auto it = targets_.find(Address{host, port});
  if (it == targets_.end()) return;
  if (it->second.due) schedule_.erase({*it->second.due, it->first});
  targets_.erase(it);
}

bool ProgressPoller::onChange(ChangeListener listener) {
  std::lock_guard lock(listener_mu_);
  listener_ = std::move(listener);
  return true;
}

void ProgressPoller::tell(const Address& address) {
  std::lock_guard lock(listener_mu_);
  if (listener_) listener_(address);
}

size_t ProgressPoller::watched() const {
  std::lock_guard lock(mu_);
  return targets_.size();
}

size_t ProgressPoller::scheduled() const {
  std::lock_guard lock(mu_);
  return schedule_.size();
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
    targets_.at(address).due.reset();  // being read
    // The read runs unlocked: read() answers from the last reading meanwhile.
    lock.unlock();
    core::Result<kube::TrainingProgress> reading = source_.read(address.first, address.second);
    lock.lock();
    auto target = targets_.find(address);
    if (target == targets_.end()) continue;  // forgotten meanwhile
    // Only a successful reading that differs reaches the status; an error keeps the last one.
    std::optional<core::Result<kube::TrainingProgress>>& last = target->second.last;
    const bool changed = reading.ok() && (!last || !last->ok() || **last != *reading);
    last = std::move(reading);
    // Forgotten and asked for again meanwhile, it is scheduled already.
    if (!target->second.due) {
      target->second.due = Clock::now() + interval;
      schedule_.emplace(*target->second.due, address);
    }
    if (changed) {
      lock.unlock();
      tell(address);
      lock.lock();
    }
  }
}

}  // namespace ringmaster::op
