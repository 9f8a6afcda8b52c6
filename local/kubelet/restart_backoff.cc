#include "local/kubelet/restart_backoff.h"

#include <algorithm>

namespace ringmaster::local::kubelet {

std::chrono::milliseconds RestartBackoff::next(std::chrono::milliseconds ran) {
  if (ran >= policy_.reset_after) failures_ = 0;
  ++failures_;
  std::chrono::milliseconds delay = policy_.initial;
  for (int i = 1; i < failures_ && delay < policy_.max; ++i) delay *= 2;
  return std::min(delay, policy_.max);
}

bool shouldRestart(const std::string& restart_policy, int exit_code) {
  if (restart_policy == "Never") return false;
  if (restart_policy == "OnFailure") return exit_code != 0;
  return true;  // Always, the default
}

}  // namespace ringmaster::local::kubelet
