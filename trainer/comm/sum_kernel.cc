// Blocked so that the compiler keeps a block of partial sums in registers and vectorizes the
// loops, while `out` may still alias an input (every block is read completely before it is
// written).

#include "trainer/comm/sum_kernel.h"

namespace ringmaster::trainer::comm {
namespace {

constexpr size_t kBlock = 32;  // floats: 8 SSE or 4 AVX registers of partial sums

template <bool kTwice>
void sumBlocked(float* out_a, float* out_b, const float* const* in, int n, size_t count) {
  size_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    float acc[kBlock];
    for (size_t j = 0; j < kBlock; ++j) acc[j] = in[0][i + j];
    for (int k = 1; k < n; ++k) {
      const float* src = in[k] + i;
      for (size_t j = 0; j < kBlock; ++j) acc[j] += src[j];
    }
    for (size_t j = 0; j < kBlock; ++j) out_a[i + j] = acc[j];
    if constexpr (kTwice) {
      for (size_t j = 0; j < kBlock; ++j) out_b[i + j] = acc[j];
    }
  }
  for (; i < count; ++i) {
    float acc = in[0][i];
    for (int k = 1; k < n; ++k) acc += in[k][i];
    out_a[i] = acc;
    if constexpr (kTwice) out_b[i] = acc;
  }
}

}  // namespace

void sumArrays(float* out, const float* const* in, int n, size_t count) {
  if (n <= 0 || count == 0) return;
  sumBlocked<false>(out, nullptr, in, n, count);
}

void sumArraysTwice(float* out_a, float* out_b, const float* const* in, int n, size_t count) {
  if (n <= 0 || count == 0) return;
  if (out_b == nullptr) {
    sumBlocked<false>(out_a, nullptr, in, n, count);
  } else {
    sumBlocked<true>(out_a, out_b, in, n, count);
  }
}

}  // namespace ringmaster::trainer::comm
