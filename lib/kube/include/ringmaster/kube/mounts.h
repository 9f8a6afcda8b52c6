#pragma once
// Which of a container's volume mounts holds a path: the deepest mount at or above it, as the
// container sees its filesystem. A mount that only shares a prefix holds nothing (/pbtx is not
// under /pbt). The local cluster finds a checkpoint's claim with it, the operator a pbt
// population's shared directory.
//
// Thread-safety: pure functions. Failure: none (nullopt when no mount holds the path).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ringmaster/kube/pod.h"

namespace ringmaster::kube {

struct MountHolding {
  const VolumeMount* mount = nullptr;  // into the vector given
  std::filesystem::path rest;          // the path below the mount's path ("." when equal)
};

std::optional<MountHolding> mountHolding(const std::vector<VolumeMount>& mounts,
                                         const std::string& path);

}  // namespace ringmaster::kube
