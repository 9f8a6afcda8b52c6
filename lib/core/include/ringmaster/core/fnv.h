#pragma once
// FNV-1a, 32 bits: a short, stable hash of a name (not for security or hash tables under
// attack). Written here because it is four lines and no linked library exposes it; Kubernetes
// names pod templates with it.
//
// Thread-safety: pure.

#include <cstdint>
#include <string_view>

namespace ringmaster::core {

inline uint32_t fnv1a32(std::string_view text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

}  // namespace ringmaster::core
