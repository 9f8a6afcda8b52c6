#pragma once
// Retry delays: the first `initial`, doubling each failure, capped at `max`, and spread by up to
// `jitter` (0.5: up to 50% longer, like client-go's wait.Jitter) so that many clients that lost
// the same server do not all come back in the same instant. Every retry loop of the repository
// takes its delays from here.
//
//   core::Backoff backoff({.initial = 100ms, .max = 2s, .jitter = 0.5});
//   for (;;) { if (try()) break; sleep(backoff.next()); }
//
// Thread-safety: Backoff is one loop's state (not shared); backoffDelay is pure. Failure: none.

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace ringmaster::core {

struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{10'000};
  double jitter = 0;  // 0 (none) .. 1 (up to twice the delay); applied after the cap
};

// The delay before retry number `failures` (1 = after the first failure) without jitter:
// initial * 2^(failures - 1), at most max; initial for failures < 1.
std::chrono::milliseconds backoffDelay(const BackoffPolicy& policy, int failures);

// `delay` lengthened by jitter * delay * u, for u uniform in [0, 1).
std::chrono::milliseconds jittered(std::chrono::milliseconds delay, double jitter, double u);

class Backoff {
 public:
  // Without a seed, one is drawn from std::random_device at the first jittered delay: a loop
  // that never fails (most API requests) pays nothing for its Backoff.
  explicit Backoff(BackoffPolicy policy, std::optional<uint64_t> seed = std::nullopt)
      : policy_(policy), seed_(seed) {}

  // The delay to wait now, and one failure more for the next call.
  std::chrono::milliseconds next();
  // After a success: the next delay is `initial` again.
  void reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  std::optional<uint64_t> seed_;
  std::optional<std::mt19937_64> rng_;  // made at the first jittered delay
  int failures_ = 0;
};

}  // namespace ringmaster::core
