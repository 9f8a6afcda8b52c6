#include "ringmaster/kube/mounts.h"

#include <iterator>

namespace ringmaster::kube {

std::optional<MountHolding> mountHolding(const std::vector<VolumeMount>& mounts,
                                         const std::string& path) {
  std::optional<MountHolding> best;
  std::ptrdiff_t best_steps = 0;  // directories from the best mount's path down to `path`
  for (const VolumeMount& m : mounts) {
    if (m.mount_path.empty()) continue;
    const std::filesystem::path rest =
        std::filesystem::path(path).lexically_relative(m.mount_path).lexically_normal();
    if (rest.empty() || *rest.begin() == "..") continue;  // not at or below this mount
    const std::ptrdiff_t steps = rest == "." ? 0 : std::distance(rest.begin(), rest.end());
    if (!best || steps < best_steps) {  // fewer steps down: a deeper mount
      best = MountHolding{&m, rest};
      best_steps = steps;
    }
  }
  return best;
}

}  // namespace ringmaster::kube
