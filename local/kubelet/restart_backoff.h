#pragma once
// Restart back-off of a crashed container, the kubelet's CrashLoopBackOff: the delay before
// restart n (n = 1 for the first restart) is initial * 2^(n-1), capped at `max`. A container
// that ran for at least `reset_after` before it exited starts over at `initial`.
//
// Thread-safety: plain value. Failure: none.

#include <chrono>
#include <string>

namespace ringmaster::local::kubelet {

struct BackoffPolicy {
  std::chrono::milliseconds initial{1'000};
  std::chrono::milliseconds max{10'000};
  std::chrono::milliseconds reset_after{60'000};
};

class RestartBackoff {
 public:
  explicit RestartBackoff(BackoffPolicy policy = {}) : policy_(policy) {}
  // The delay before the next start of a container that just exited after running `ran`.
  std::chrono::milliseconds next(std::chrono::milliseconds ran);
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  int failures_ = 0;
};

// Which exits restart: Always -> every exit, OnFailure -> non-zero exits, Never -> none.
bool shouldRestart(const std::string& restart_policy, int exit_code);

}  // namespace ringmaster::local::kubelet
