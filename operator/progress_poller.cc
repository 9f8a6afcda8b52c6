#include "operator/progress_poller.h"

#include <algorithm>
#include <vector>

namespace ringmaster::op {

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
  auto [it, added] = targets_.try_emplace(Address{host, port});
  it->second.asked = Clock::now();
  if (added) {
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
    const Clock::time_point forget_before = now - keep_ * interval_;
    std::vector<Address> due;
    Clock::time_point next = now + interval_;
    for (auto it = targets_.begin(); it != targets_.end();) {
      if (it->second.asked < forget_before) {
        it = targets_.erase(it);
        continue;
      }
      if (it->second.due <= now) {
        due.push_back(it->first);
      } else {
        next = std::min(next, it->second.due);
      }
      ++it;
    }
    if (due.empty()) {
      asked_.wait_until(lock, stop, next, [&] { return fresh_; });
      continue;
    }
    // The reads run unlocked: read() answers from the last reading meanwhile.
    for (const Address& address : due) {
      if (stop.stop_requested()) return;
      lock.unlock();
      core::Result<kube::TrainingProgress> reading = source_.read(address.first, address.second);
      lock.lock();
      if (auto it = targets_.find(address); it != targets_.end()) {
        it->second.last = std::move(reading);
        it->second.due = Clock::now() + interval_;
      }
    }
  }
}

}  // namespace ringmaster::op
