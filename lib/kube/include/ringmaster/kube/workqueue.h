#pragma once
// WorkQueue: the controller work queue of client-go / controller-runtime, keyed by strings
// ("<namespace>/<name>"):
//   - deduplicating: a key added several times before it is handed out is handed out once;
//   - a key being processed (get() returned it, done() not yet called) is never handed to a
//     second worker; if it is added meanwhile it is queued again when done() is called;
//   - addAfter(key, d) makes it ready after d (the earliest of several pending delays wins; d <= 0
//     is add(key));
//   - addRateLimited(key) = addAfter(key, base_delay * 2^failures(key)) capped at max_delay,
//     then failures(key)++; forget(key) resets the count (call it when a reconcile succeeds);
//   - shutDown(): get() hands out what is ready, then returns nullopt; adds are ignored.
// Delays are measured on the injected Clock; tests use tryGet() after advancing a FakeClock.
//
// Ownership: borrows the Clock, which must outlive the queue. Thread-safety: every method may
// be called from any thread; get() blocks (many workers may wait at once). Failure: none; a
// key added after shutDown() is dropped.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "ringmaster/kube/clock.h"

namespace ringmaster::kube {

class WorkQueue {
 public:
  struct Options {
    std::chrono::milliseconds base_delay{5};         // controller-runtime's defaults
    std::chrono::milliseconds max_delay{1'000'000};  // 1000 s
  };

  explicit WorkQueue(Clock& clock = realClock()) : WorkQueue(clock, Options{}) {}
  WorkQueue(Clock& clock, Options options);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void add(const std::string& key);
  void addAfter(const std::string& key, std::chrono::nanoseconds delay);
  void addRateLimited(const std::string& key);
  void forget(const std::string& key);
  int numRequeues(const std::string& key) const;

  // The next ready key, waiting for one; nullopt once shut down and drained.
  std::optional<std::string> get();
  // The next ready key now, or nullopt.
  std::optional<std::string> tryGet();
  // Marks `key` processed; re-queues it if it was added while processing.
  void done(const std::string& key);

  void shutDown();
  bool shuttingDown() const;
  size_t len() const;      // ready keys (the depth metric)
  size_t waiting() const;  // keys with a pending delay

 private:
  void addLocked(const std::string& key);
  void promoteDueLocked();
  std::optional<std::string> popLocked();

  Clock& clock_;
  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::set<std::string> dirty_;                      // queued or to be re-queued after done()
  std::set<std::string> processing_;                 // handed out, done() not yet called
  std::map<std::string, Clock::TimePoint> waiting_;  // delayed keys and when they are due
  // The same delays ordered by due time (client-go keeps a heap): a get() looks at the earliest
  // only, instead of every delayed key (a thousand running jobs each wait for their next refresh).
  std::set<std::pair<Clock::TimePoint, std::string>> by_due_;
  std::map<std::string, int> failures_;
  bool shutting_down_ = false;
};

}  // namespace ringmaster::kube
