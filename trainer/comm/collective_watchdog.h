#pragma once
// CollectiveWatchdog: the thread that keeps asynchronous collectives from hanging a rank. GPU
// collectives (NCCL) complete on the device long after the host enqueued them, and a dead or
// stuck peer shows up only as work that never finishes or as an error NCCL reports later. The
// watchdog polls a probe every `poll` interval:
//   - the probe reports a failure (an asynchronous NCCL error)          -> fail
//   - work is pending and has made no progress for `timeout` since armed -> fail (kTimeout)
// Failing calls `abort` once (ncclCommAbort: the stuck kernels exit, so a host thread blocked
// in a stream synchronize wakes up) and keeps the error for error(). If the owner has not
// called acknowledge() within `exit_grace` after that -- its thread is stuck somewhere the
// abort did not reach -- `terminate` runs (by default it logs and _exits with
// kRetryableExitCode, so the operator restarts the gang instead of the job hanging).
//
// Thread-safety: arm/disarm/acknowledge/error may be called from any thread; the hooks run on
// the watchdog's own thread. Failure: error() returns kUnavailable (probe) or kTimeout.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::comm {

// 128 + SIGALRM, as the launcher's hang verdict: retryable under every restart policy.
inline constexpr int kRetryableExitCode = 142;

class CollectiveWatchdog {
 public:
  enum class State { kIdle, kPending, kFailed };
  struct Probe {
    State state = State::kIdle;
    uint64_t progress = 0;  // grows when pending work completes (resets the timeout)
    std::string error;      // kFailed: what went wrong
  };
  struct Hooks {
    std::function<Probe()> probe;
    std::function<void(const core::Status&)> abort;
    std::function<void(const core::Status&)> terminate;  // empty: log and _exit(142)
  };

  // `name` prefixes every message ("rank 3 nccl").
  CollectiveWatchdog(std::string name, std::chrono::milliseconds timeout,
                     std::chrono::milliseconds poll, std::chrono::milliseconds exit_grace,
                     Hooks hooks);
  ~CollectiveWatchdog();  // stops and joins the thread (no hook runs after it returns)
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  // Work described by `what` ("step 1200", "NCCL init") was enqueued: the timeout runs from
  // now (or keeps running from an earlier arm that is still pending).
  void arm(const std::string& what);
  // Nothing is outstanding any more (the host saw it complete).
  void disarm();
  // The owner saw error() and is shutting down: terminate will not run.
  void acknowledge();
  // Ok while healthy; the first failure afterwards.
  core::Status error() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }

 private:
  void loop();
  void fail(core::Status status);

  const std::string name_;
  const std::chrono::milliseconds timeout_, poll_, exit_grace_;
  Hooks hooks_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool armed_ = false;
  std::string armed_what_;
  std::chrono::steady_clock::time_point armed_since_;
  uint64_t last_progress_ = 0;
  bool acknowledged_ = false;
  core::Status error_;
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

}  // namespace ringmaster::trainer::comm
