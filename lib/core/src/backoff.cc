#include "ringmaster/core/backoff.h"

#include <algorithm>

namespace ringmaster::core {

std::chrono::milliseconds backoffDelay(const BackoffPolicy& policy, int failures) {
  std::chrono::milliseconds delay = policy.initial;
  for (int i = 1; i < failures && delay < policy.max; ++i) delay *= 2;
  return std::min(delay, policy.max);
}

std::chrono::milliseconds jittered(std::chrono::milliseconds delay, double jitter, double u) {
  if (jitter <= 0) return delay;
  const double extra = static_cast<double>(delay.count()) * std::min(jitter, 1.0) * u;
  return delay + std::chrono::milliseconds(static_cast<int64_t>(extra));
}

std::chrono::milliseconds Backoff::next() {
  ++failures_;
  const std::chrono::milliseconds delay = backoffDelay(policy_, failures_);
  if (policy_.jitter <= 0) return delay;
  if (!rng_) rng_.emplace(seed_ ? *seed_ : std::random_device{}());
  return jittered(delay, policy_.jitter, std::uniform_real_distribution<double>(0, 1)(*rng_));
}

}  // namespace ringmaster::core
