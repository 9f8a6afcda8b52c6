#pragma once
// Liveness and progress of one rank, published through the rendezvous store so that every
// launcher of the gang can tell a rank that is frozen (its beats stop) from ranks that are alive
// but waiting for it (their beats go on, their step does not).
//
// Key layout, under a per-attempt prefix "<job>/attempt-<A>":
//   heartbeat/<rank>/beats   counter: +1 per interval while the process runs
//   heartbeat/<rank>/step    decimal text: the last step the rank completed
//   heartbeat/<rank>/done    "1" once the publisher is destroyed (the rank finished; its beats
//                            stop on purpose)
// Both are read with add(key, 0), which never blocks: an absent key reads as 0 beats, i.e. "this
// rank never reported" (a user command that does not publish heartbeats is never judged).
//
// Observers compare values they read over time with their own clock; no wall-clock time goes
// through the store, so skewed clocks between pods do not matter.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::rendezvous {

std::string heartbeatBeatsKey(int rank);
std::string heartbeatStepKey(int rank);
std::string heartbeatDoneKey(int rank);

struct Heartbeat {
  int64_t beats = 0;  // 0: never reported
  int64_t step = 0;
  bool done = false;
};

// Reads rank's heartbeat from a store scoped to the attempt, without waiting. Failure: store
// errors, with the rank as context.
core::Result<Heartbeat> readHeartbeat(Store& store, int rank);

// Publishes `step()` and one beat for `rank` under "<prefix>/": the first before the constructor
// returns, then every `interval` from its own thread, until destroyed. The first is synchronous
// because a rank that never reported is not judged (it may still be loading): a rank frozen
// right after it started training, before a background thread's first beat, would otherwise
// never be named.
//
// Ownership: owns `store` (give it a dedicated client: a store call blocked elsewhere must not
// hold up the beats) and the thread. Thread-safety: `step` is called from the publisher's thread
// and must be thread-safe. Failure: the first store error (the constructor's included) is logged
// once (WARN) and publishing stops; the process goes on (a lost store is the launcher's to judge,
// not the trainer's).
class HeartbeatPublisher {
 public:
  HeartbeatPublisher(std::unique_ptr<Store> store, std::string prefix, int rank,
                     std::function<int64_t()> step, std::chrono::milliseconds interval);
  ~HeartbeatPublisher();
  HeartbeatPublisher(const HeartbeatPublisher&) = delete;
  HeartbeatPublisher& operator=(const HeartbeatPublisher&) = delete;

 private:
  void loop();
  core::Status publishOnce();
  // Marks publishing failed and logs why (unless stopping). With mu_ held, or before the thread.
  void giveUp(const core::Status& why);

  std::unique_ptr<Store> store_;
  PrefixStore scoped_;  // over store_
  int rank_;
  std::function<int64_t()> step_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  bool failed_ = false;    // guarded by mu_; written by the thread before it ends
  std::thread thread_;
};

}  // namespace ringmaster::rendezvous
