#pragma once
// Seed-deterministic parameter init. We own the generator (SplitMix64) and the float
// conversion, so the same seed gives bit-identical parameters with any compiler or standard
// library (std::uniform_real_distribution is implementation-defined).
//
// Thread-safety: Rng is a value type; one per thread. Failure: none.

#include <cstdint>
#include <span>

namespace ringmaster::trainer::model {

class Rng {
 public:
  // Independent streams from one seed: Rng(seed, 0), Rng(seed, 1), ...
  explicit Rng(uint64_t seed, uint64_t stream = 0);
  uint64_t next();
  // Uniform in [lo, hi] from 24 random bits.
  float uniform(float lo, float hi);

 private:
  uint64_t state_;
};

// PyTorch's default Linear/Conv init (kaiming_uniform with a = sqrt(5), which reduces to this
// bound, and the same bound for biases): out[i] ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void kaimingUniformInit(std::span<float> out, int fan_in, Rng& rng);

}  // namespace ringmaster::trainer::model
