#include "operator/progress_poller.h"

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
    asked_.wait_for(lock, stop, interval_, [&] { return fresh_; });
    if (stop.stop_requested()) return;
    fresh_ = false;
    const Clock::time_point forget_before = Clock::now() - keep_ * interval_;
    std::vector<Address> due;
    for (auto it = targets_.begin(); it != targets_.end();) {
      if (it->second.asked < forget_before) {
        it = targets_.erase(it);
      } else {
        due.push_back(it++->first);
      }
    }
    // The reads run unlocked: read() answers from the last round meanwhile.
    for (const Address& address : due) {
      if (stop.stop_requested()) return;
      lock.unlock();
      core::Result<kube::TrainingProgress> reading = source_.read(address.first, address.second);
      lock.lock();
      if (auto it = targets_.find(address); it != targets_.end()) it->second.last = reading;
    }
  }
}

}  // namespace ringmaster::op
