#pragma once
// Layout helpers for a stride-1, "same" convolution (odd k x k kernel, zero pad k/2) computed
// as one sgemm per chunk of samples over patch rows:
//   xpad: [samples, h + 2p, w + 2p, cin]  (NHWC with a zero border; p = k/2)
//   cols: [samples * h * w, k * k * cin]  (one row per output pixel, columns (ky, kx, ci))
//   cols[(n, y, x)][(ky, kx, ci)] = xpad[n][y + ky][x + kx][ci]
// NHWC makes each (pixel, ky) piece of a patch row one contiguous run of k * cin floats, so
// im2col is a few long copies per pixel instead of many short ones.
//
// Thread-safety: pure functions. Failure: none.

#include <cstddef>

namespace ringmaster::trainer::model {

struct ConvGeometry {
  int cin, h, w, k;
  int pad() const { return k / 2; }
  int paddedH() const { return h + 2 * pad(); }
  int paddedW() const { return w + 2 * pad(); }
  size_t paddedSize() const { return static_cast<size_t>(paddedH()) * paddedW() * cin; }
  size_t patchSize() const { return static_cast<size_t>(k) * k * cin; }
};

// Writes the interior of xpad from in [samples, cin, h, w]; the border is left as it is.
void nchwToPaddedNhwc(const ConvGeometry& g, const float* in, int samples, float* xpad);
// din [samples, cin, h, w] = the interior of dxpad.
void paddedNhwcToNchw(const ConvGeometry& g, const float* dxpad, int samples, float* din);
// cols from xpad (overwritten).
void im2col(const ConvGeometry& g, const float* xpad, int samples, float* cols);
// The adjoint of im2col: dxpad += each cols entry at the place it was copied from.
void col2imAdd(const ConvGeometry& g, const float* cols, int samples, float* dxpad);

}  // namespace ringmaster::trainer::model
