#pragma once
// Hang detection for the whole gang, run by every launcher (so every pod's log names the rank).
//
// Input: each rank's heartbeat (rendezvous/heartbeat.h), published by the trainer every
// interval from its own thread: `beats` go on while the process runs, `step` moves when it
// trains. Every launcher reads all ranks through the store and judges by its own clock:
//   frozen   a rank that has reported, is not done, and whose beats have not changed for
//            --hang-timeout: the process no longer runs (SIGSTOP, a dead node, a wedged
//            kernel call). In data parallelism the others then wait for it inside allreduce
//            (beats go on, steps do not): the frozen rank is the one to name.
//   stalled  every rank alive and past step 0, none done, and no rank's step changed for the
//            timeout (e.g. a deadlock inside a collective): the rank with the lowest step (the
//            one the others wait for; ties: the lowest rank) is named.
// Ranks that never reported (a user command without heartbeats, a trainer still loading) are
// not judged. Verdict line: "rank R (pod X) stuck at step S for T s (...)", S being the last
// step the rank reported (heartbeats come every interval, so it may lag by one interval).
//
// The first launcher to reach a verdict publishes it ("launcher/hang" under the attempt prefix)
// before it stops its processes. The others' processes may then fail (their peers vanish)
// before their own monitor reaches the verdict: a launcher whose processes failed reads the
// published verdict (publishedHang) and reports the hang too. Every launcher then exits with
// kHangExitCode (see main.cc), a retryable 128+N code, so the operator restarts the gang
// instead of waiting forever.

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/core/status.h"
#include "ringmaster/rendezvous/heartbeat.h"
#include "ringmaster/rendezvous/store.h"

namespace ringmaster::launcher {

inline constexpr char kHangKey[] = "launcher/hang";

// 128 + SIGALRM: "a timer ran out" — a hang, or a rendezvous that did not complete in time.
inline constexpr int kHangExitCode = 128 + SIGALRM;

struct Hang {
  int rank = 0;
  int pod = 0;
  int64_t step = 0;
  std::chrono::milliseconds stuck_for{0};  // since its step last changed
  std::string why;                         // "no heartbeat for 5 s" / "no rank advanced for 5 s"
  std::string message() const;             // "rank 1 (pod 0) stuck at step 12 for 6 s (...)"
};

// The verdict, from observations alone (no store, no threads): unit tests drive it with a
// scripted clock. Thread-safety: none (one monitor thread owns it). Failure: none.
class HangJudge {
 public:
  using Clock = std::chrono::steady_clock;
  HangJudge(int world_size, int local_world_size, std::chrono::milliseconds timeout);
  void observe(int rank, const rendezvous::Heartbeat& hb, Clock::time_point now);
  std::optional<Hang> judge(Clock::time_point now) const;
  int worldSize() const { return static_cast<int>(ranks_.size()); }

 private:
  struct RankState {
    bool seen = false;
    rendezvous::Heartbeat last;
    Clock::time_point beat_changed{}, step_changed{};
  };
  int local_world_size_;
  std::chrono::milliseconds timeout_;
  std::vector<RankState> ranks_;
};

// The verdict another launcher published, if any (store already scoped to the attempt).
// Never waits; a store error reads as "none".
std::optional<std::string> publishedHang(rendezvous::Store& attempt_store);

// Polls every rank's heartbeat every `poll`; on a verdict publishes it (kHangKey) and calls
// `on_hang` (once, from its thread). Ownership: owns the store (a client of its own) and the
// thread; the destructor stops and joins. Thread-safety: on_hang must be thread-safe. Failure: a
// store error is logged once and ends monitoring (the store is gone with pod 0: the gang is ending
// anyway).
class HangMonitor {
 public:
  HangMonitor(std::unique_ptr<rendezvous::Store> store, std::string attempt_prefix, HangJudge judge,
              std::chrono::milliseconds poll, std::function<void(const Hang&)> on_hang);
  ~HangMonitor();
  HangMonitor(const HangMonitor&) = delete;
  HangMonitor& operator=(const HangMonitor&) = delete;

 private:
  void loop();

  std::unique_ptr<rendezvous::Store> store_;
  rendezvous::PrefixStore scoped_;
  HangJudge judge_;
  std::chrono::milliseconds poll_;
  std::function<void(const Hang&)> on_hang_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace ringmaster::launcher
