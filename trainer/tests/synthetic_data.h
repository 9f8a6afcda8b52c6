#pragma once
// A data set for trainer tests that need no download: 28x28 "images" of noise in which the label
// picks which block of pixels is bright, separable enough to learn a little.

#include <cstdint>
#include <random>

#include "trainer/data/fashion_mnist.h"

namespace ringmaster::trainer::testing {

inline data::Dataset syntheticSet(size_t n, uint32_t seed) {
  data::Dataset d;
  d.rows = d.cols = 28;
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0, 1);
  d.images.resize(n * d.featureSize());
  d.labels.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng() % data::kFashionMnistClasses);
    d.labels[i] = label;
    float* row = d.images.data() + i * d.featureSize();
    for (size_t f = 0; f < d.featureSize(); ++f)
      row[f] = noise(rng) + (f / 78 == static_cast<size_t>(label) ? 0.4f : 0.0f);
  }
  return d;
}

}  // namespace ringmaster::trainer::testing
