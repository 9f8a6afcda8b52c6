#include "trainer/model/init.h"

#include <cmath>

namespace ringmaster::trainer::model {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(uint64_t seed, uint64_t stream) : state_(mix(seed ^ mix(stream * kGolden + 1))) {}

uint64_t Rng::next() {
  state_ += kGolden;
  return mix(state_);
}

float Rng::uniform(float lo, float hi) {
  const double u = static_cast<double>(next() >> 40) * (1.0 / 16777216.0);  // [0, 1)
  return static_cast<float>(lo + (static_cast<double>(hi) - lo) * u);
}

void kaimingUniformInit(std::span<float> out, int fan_in, Rng& rng) {
  const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
  for (float& v : out) v = rng.uniform(-bound, bound);
}

}  // namespace ringmaster::trainer::model
