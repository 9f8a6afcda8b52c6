#pragma once
// Helpers shared by the model tests: deterministic random data and tolerance checks.

#include <cmath>
#include <cstdint>
#include <vector>

#include "trainer/model/init.h"

namespace ringmaster::trainer::model::testing {

inline std::vector<float> randomFloats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed, 99);
  std::vector<float> v(n);
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

inline std::vector<int32_t> randomLabels(size_t n, int classes, uint64_t seed) {
  Rng rng(seed, 98);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = static_cast<int32_t>(rng.next() % classes);
  return v;
}

// |a - b| <= atol + rtol * max(|a|, |b|)
inline bool near(double a, double b, double atol, double rtol) {
  return std::fabs(a - b) <= atol + rtol * std::max(std::fabs(a), std::fabs(b));
}

}  // namespace ringmaster::trainer::model::testing
