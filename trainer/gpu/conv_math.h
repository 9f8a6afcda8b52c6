#pragma once
// The index math of the GPU conv block (conv k x k, pad k/2, + bias + ReLU + 2x2 max-pool), one
// element at a time, shared by the kernels (conv_kernels.cu) and the host tests, which check it
// against the CPU layer (trainer/model/conv_layer.h, im2col.h, pool.h). Layouts as the CPU's:
//   input / pooled output  NCHW per sample
//   patch rows (cols)      row (n*h + y)*w + x, column (ky*k + kx)*cin + c   [pixels][kdim]
//   conv output z          [pixels][cout] (what the GEMM writes)
//   weight                 [cout][k][k][cin]
// Thread-safety: pure functions.

#include <cstdint>

#include "trainer/gpu/device_math.h"

namespace ringmaster::trainer::gpu {

struct ConvShape {
  int cin = 1, h = 1, w = 1, k = 5, cout = 1;
  RM_HD int pad() const { return k / 2; }
  RM_HD int kdim() const { return k * k * cin; }
  RM_HD int ph() const { return h / 2; }
  RM_HD int pw() const { return w / 2; }
};

// The input element (NCHW index) that patch row `row`, column `col` copies; -1 for padding.
RM_HD int64_t im2colSource(const ConvShape& s, int64_t row, int col) {
  const int x = static_cast<int>(row % s.w);
  const int64_t ny = row / s.w;
  const int y = static_cast<int>(ny % s.h);
  const int64_t n = ny / s.h;
  const int c = col % s.cin;
  const int kk = col / s.cin;
  const int yi = y + kk / s.k - s.pad(), xi = x + kk % s.k - s.pad();
  if (yi < 0 || yi >= s.h || xi < 0 || xi >= s.w) return -1;
  return ((n * s.cin + c) * s.h + yi) * s.w + xi;
}

// The CPU's pool with its tie-breaking: out = relu(max(z) + bias); *route is the window position
// (0..3, row-major) of the first maximum, or 4 where the ReLU was off.
RM_HD float poolElement(float z00, float z01, float z10, float z11, float bias, uint8_t* route) {
  const float m0 = z00 > z01 ? z00 : z01;
  const float m1 = z10 > z11 ? z10 : z11;
  const float best = m0 >= m1 ? m0 : m1;
  const uint8_t pos = z00 == best ? 0 : z01 == best ? 1 : z10 == best ? 2 : 3;
  const float a = best + bias;
  *route = a > 0.0f ? pos : 4;
  return a > 0.0f ? a : 0.0f;
}

// Row of z ([pixels][cout]) of window position `pos` (0..3) of pooled output (n, py, px).
RM_HD int64_t poolSourceRow(const ConvShape& s, int64_t n, int py, int px, int pos) {
  return (n * s.h + 2 * py + pos / 2) * s.w + 2 * px + pos % 2;
}

// d(input) at NCHW element (n, c, yi, xi): the sum over the patch rows and columns that copied
// it (the adjoint of im2colSource, gathered so that no two threads write one element).
template <typename T, typename Load>
RM_HD float col2imGather(const ConvShape& s, const T* dcols, int64_t n, int c, int yi, int xi,
                         Load load) {
  float sum = 0.0f;
  const int p = s.pad(), kdim = s.kdim();
  for (int ky = 0; ky < s.k; ++ky) {
    const int y = yi - ky + p;
    if (y < 0 || y >= s.h) continue;
    for (int kx = 0; kx < s.k; ++kx) {
      const int x = xi - kx + p;
      if (x < 0 || x >= s.w) continue;
      const int64_t row = (n * s.h + y) * s.w + x;
      sum += load(dcols, row * kdim + (ky * s.k + kx) * s.cin + c);
    }
  }
  return sum;
}

}  // namespace ringmaster::trainer::gpu
