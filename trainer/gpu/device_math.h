#pragma once
// The arithmetic of the GPU step, one element or one row at a time, written once for the device
// kernels (kernels.cu) and the host unit tests (tests/device_math_test.cc): the tests check it
// against the CPU model and optimizers without a GPU, the kernels only add the indexing.
//
//   FeistelPermutation  the epoch's shuffle as a bijection on [0, n): index -> sample with no
//                       table and no sort, so a kernel computes any batch's samples on the spot
//   softmaxCrossEntropyRow  fused softmax + cross-entropy + its gradient for one sample
//   sgdElement / adamElement  the optimizers' update of one parameter (torch.optim semantics,
//                       as trainer/optim/optimizer.h)
//   toBf16Bits / fromBf16Bits  fp32 <-> bfloat16, round to nearest even (as __float2bfloat16_rn)
//
// Thread-safety: pure functions of their arguments.

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define RM_HD __host__ __device__ __forceinline__
#else
#define RM_HD inline
#endif

namespace ringmaster::trainer::gpu {

// SplitMix64: keys for the permutation rounds from (seed, epoch).
RM_HD uint64_t splitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A keyed permutation of [0, n): a 4-round balanced Feistel network on the smallest even number
// of bits that covers n, with cycle walking (re-encrypt until the value falls below n; from an
// x < n the walk ends at most in the cycle through x itself, and the domain is < 4n, so it takes
// fewer than 4 rounds on average). A Feistel network is a bijection whatever its round function.
//
// Sharding as trainer/data/sampler.h: rank r of W takes permutation positions r, r + W, ...
// of the first n - n mod W, so the union of the ranks' k-th batches is one big batch.
struct FeistelPermutation {
  static constexpr int kRounds = 4;
  uint32_t n = 1;
  uint32_t half_bits = 1;  // each half of the domain's bits
  uint32_t keys[kRounds] = {};

  static FeistelPermutation make(uint32_t n, uint64_t seed, int64_t epoch) {
    FeistelPermutation p;
    p.n = n < 1 ? 1 : n;
    uint32_t bits = 2;
    while (bits < 32 && (uint64_t{1} << bits) < p.n) bits += 2;
    p.half_bits = bits / 2;
    uint64_t state = splitMix64(seed ^ splitMix64(static_cast<uint64_t>(epoch) + 0x5EEDull));
    for (int i = 0; i < kRounds; ++i) {
      state = splitMix64(state);
      p.keys[i] = static_cast<uint32_t>(state >> 32);
    }
    return p;
  }

  RM_HD uint32_t round(uint32_t half, uint32_t key) const {
    uint32_t h = (half ^ key) * 0x9E3779B1u;  // a multiply-xorshift mix of (half, key)
    h ^= h >> 15;
    h *= 0x85EBCA77u;
    h ^= h >> 13;
    return h & ((1u << half_bits) - 1u);
  }

  RM_HD uint32_t encrypt(uint32_t x) const {
    const uint32_t mask = (1u << half_bits) - 1u;
    uint32_t left = x >> half_bits, right = x & mask;
    for (int i = 0; i < kRounds; ++i) {
      const uint32_t next = left ^ round(right, keys[i]);
      left = right;
      right = next;
    }
    return (left << half_bits) | right;
  }

  // The sample at position i (< n) of the epoch's order.
  RM_HD uint32_t operator()(uint32_t i) const {
    uint32_t x = encrypt(i);
    while (x >= n) x = encrypt(x);
    return x;
  }
};

// Softmax cross-entropy of one row of `classes` logits (LogitT: float, or anything convertible
// to float). Writes d(mean loss)/d(logits) = (softmax - onehot) * grad_scale into dlogits
// (skipped when null; grad_scale is 1/batch) and returns -log softmax[label]. *hit is 1 when the
// argmax (first maximum, as the CPU model) is the label.
template <typename LogitT, typename GradT, typename ToGrad>
RM_HD float softmaxCrossEntropyRow(const LogitT* z, int classes, int label, float grad_scale,
                                   GradT* dlogits, ToGrad to_grad, int* hit) {
  int best = 0;
  float max = static_cast<float>(z[0]);
  for (int c = 1; c < classes; ++c) {
    const float v = static_cast<float>(z[c]);
    if (v > max) {
      max = v;
      best = c;
    }
  }
  *hit = best == label ? 1 : 0;
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += expf(static_cast<float>(z[c]) - max);
  if (dlogits != nullptr) {
    const float scale = grad_scale / sum;
    for (int c = 0; c < classes; ++c) {
      float d = expf(static_cast<float>(z[c]) - max) * scale;
      if (c == label) d -= grad_scale;
      dlogits[c] = to_grad(d);
    }
  }
  return logf(sum) + max - static_cast<float>(z[label]);
}

struct SgdScalars {
  float lr, momentum, weight_decay;
  bool nesterov;
};

// torch.optim.SGD (dampening 0) for one parameter; `buf` is its momentum (unused at momentum 0).
RM_HD void sgdElement(float* p, float g, float* buf, const SgdScalars& s) {
  const float d = g + s.weight_decay * *p;
  if (s.momentum == 0.0f) {
    *p -= s.lr * d;
    return;
  }
  const float b = s.momentum * *buf + d;
  *buf = b;
  *p -= s.lr * (s.nesterov ? d + s.momentum * b : b);
}

struct AdamScalars {
  float beta1, beta2, weight_decay, epsilon;
  float step_size;              // lr / (1 - beta1^t)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

// torch.optim.Adam (L2 weight decay, not AdamW) for one parameter.
RM_HD void adamElement(float* p, float g, float* m, float* v, const AdamScalars& s) {
  const float grad = g + s.weight_decay * *p;
  const float mi = s.beta1 * *m + (1.0f - s.beta1) * grad;
  const float vi = s.beta2 * *v + (1.0f - s.beta2) * grad * grad;
  *m = mi;
  *v = vi;
  *p -= s.step_size * (mi / (sqrtf(vi) / s.bias_correction2_sqrt + s.epsilon));
}

// The learning rate at global step `step` (steps done before this one), as the CPU trainer's
// schedule: constant, or cosine decay from base_lr to 0 at total_steps.
struct LrSchedule {
  double base_lr = 0.1;
  double total_steps = 0;
  bool cosine = false;
};

RM_HD double learningRateAt(const LrSchedule& s, int64_t step) {
  if (!s.cosine || s.total_steps <= 0) return s.base_lr;
  return s.base_lr * 0.5 *
         (1.0 + cos(3.14159265358979323846 * static_cast<double>(step) / s.total_steps));
}

// Adam's scalars for its t-th update (t counts from 1), bias corrections in double as
// trainer/optim/adam.cc computes them.
RM_HD AdamScalars adamScalarsAt(double lr, double beta1, double beta2, double weight_decay,
                                double epsilon, int64_t t) {
  const double bc1 = 1.0 - pow(beta1, static_cast<double>(t));
  const double bc2 = 1.0 - pow(beta2, static_cast<double>(t));
  AdamScalars s;
  s.beta1 = static_cast<float>(beta1);
  s.beta2 = static_cast<float>(beta2);
  s.weight_decay = static_cast<float>(weight_decay);
  s.epsilon = static_cast<float>(epsilon);
  s.step_size = static_cast<float>(lr / bc1);
  s.bias_correction2_sqrt = static_cast<float>(sqrt(bc2));
  return s;
}

// fp32 -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
RM_HD uint16_t toBf16Bits(float f) {
#if defined(__CUDA_ARCH__)
  uint32_t u = __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
#endif
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

RM_HD float fromBf16Bits(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

}  // namespace ringmaster::trainer::gpu
