#include "ringmaster/kube/workqueue.h"

#include "ringmaster/core/backoff.h"

namespace ringmaster::kube {

WorkQueue::WorkQueue(Clock& clock, Options options) : clock_(clock), options_(options) {}

void WorkQueue::addLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key) != 0) return;
  dirty_.insert(key);
  if (processing_.count(key) != 0) return;  // done() queues it again
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  addLocked(key);
}

void WorkQueue::addAfter(const std::string& key, std::chrono::nanoseconds delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay <= std::chrono::nanoseconds(0)) {
    addLocked(key);
    return;
  }
  const Clock::TimePoint due = clock_.now() + delay;
  auto [it, inserted] = waiting_.emplace(key, due);
  if (!inserted) {
    if (due >= it->second) return;  // an earlier delay is already pending
    by_due_.erase({it->second, key});
    it->second = due;
  }
  by_due_.emplace(due, key);
  // Waiting get()s sleep until the earliest due time: only a new earliest changes that.
  if (by_due_.begin()->second == key) cv_.notify_all();
}

void WorkQueue::addRateLimited(const std::string& key) {
  std::chrono::nanoseconds delay;
  {
    std::lock_guard lock(mu_);
    int& failures = failures_[key];
    delay = core::backoffDelay({options_.base_delay, options_.max_delay, 0}, failures + 1);
    ++failures;
  }
  addAfter(key, delay);
}

void WorkQueue::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::numRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::promoteDueLocked() {
  const Clock::TimePoint now = clock_.now();
  while (!by_due_.empty() && by_due_.begin()->first <= now) {
    std::string key = by_due_.begin()->second;
    by_due_.erase(by_due_.begin());
    waiting_.erase(key);
    addLocked(key);
  }
}

std::optional<std::string> WorkQueue::popLocked() {
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  return key;
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mu_);
  while (true) {
    promoteDueLocked();
    if (std::optional<std::string> key = popLocked()) return key;
    if (shutting_down_) return std::nullopt;
    if (by_due_.empty()) {
      cv_.wait(lock);
    } else {
      // The injected clock's distance to the due time, waited on the real steady clock.
      cv_.wait_for(lock, by_due_.begin()->first - clock_.now());
    }
  }
}

std::optional<std::string> WorkQueue::tryGet() {
  std::lock_guard lock(mu_);
  promoteDueLocked();
  return popLocked();
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::shutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  waiting_.clear();
  by_due_.clear();
  cv_.notify_all();
}

bool WorkQueue::shuttingDown() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t WorkQueue::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_.size();
}

}  // namespace ringmaster::kube
