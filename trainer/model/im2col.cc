#include "trainer/model/im2col.h"

#include <cstring>

#include "trainer/model/multiversion.h"

namespace ringmaster::trainer::model {

RM_MULTIVERSION void nchwToPaddedNhwc(const ConvGeometry& g, const float* in, int samples,
                                      float* xpad) {
  const int p = g.pad(), wp = g.paddedW(), cin = g.cin;
  for (int n = 0; n < samples; ++n) {
    const float* src = in + static_cast<size_t>(n) * cin * g.h * g.w;
    float* dst = xpad + n * g.paddedSize();
    for (int y = 0; y < g.h; ++y) {
      float* __restrict row = dst + (static_cast<size_t>(y + p) * wp + p) * cin;
      for (int c = 0; c < cin; ++c) {
        const float* __restrict s = src + (static_cast<size_t>(c) * g.h + y) * g.w;
        for (int x = 0; x < g.w; ++x) row[x * cin + c] = s[x];
      }
    }
  }
}

RM_MULTIVERSION void paddedNhwcToNchw(const ConvGeometry& g, const float* dxpad, int samples,
                                      float* din) {
  const int p = g.pad(), wp = g.paddedW(), cin = g.cin;
  for (int n = 0; n < samples; ++n) {
    const float* src = dxpad + n * g.paddedSize();
    float* dst = din + static_cast<size_t>(n) * cin * g.h * g.w;
    for (int y = 0; y < g.h; ++y) {
      const float* __restrict row = src + (static_cast<size_t>(y + p) * wp + p) * cin;
      for (int c = 0; c < cin; ++c) {
        float* __restrict d = dst + (static_cast<size_t>(c) * g.h + y) * g.w;
        for (int x = 0; x < g.w; ++x) d[x] = row[x * cin + c];
      }
    }
  }
}

namespace {

// The patch-row copy with the run length known at compile time when kSeg > 0: for one input
// channel a run is only k floats, and a fixed-size copy is a couple of moves, not a loop.
template <int kSeg>
inline void im2colRuns(const ConvGeometry& g, const float* xpad, int samples, float* cols) {
  const int seg = kSeg > 0 ? kSeg : g.k * g.cin;  // one (ky) run: k pixels x cin channels
  const size_t row_stride = static_cast<size_t>(g.paddedW()) * g.cin;
  const size_t patch = g.patchSize();
  float* d = cols;
  for (int n = 0; n < samples; ++n) {
    const float* plane = xpad + n * g.paddedSize();
    for (int y = 0; y < g.h; ++y) {
      for (int x = 0; x < g.w; ++x) {
        const float* s = plane + y * row_stride + static_cast<size_t>(x) * g.cin;
        for (int ky = 0; ky < g.k; ++ky) {
          std::memcpy(d + ky * seg, s + ky * row_stride, sizeof(float) * seg);
        }
        d += patch;
      }
    }
  }
}

}  // namespace

RM_MULTIVERSION void im2col(const ConvGeometry& g, const float* xpad, int samples, float* cols) {
  if (g.cin == 1 && g.k == 5) {
    im2colRuns<5>(g, xpad, samples, cols);
  } else if (g.cin == 1 && g.k == 3) {
    im2colRuns<3>(g, xpad, samples, cols);
  } else {
    im2colRuns<0>(g, xpad, samples, cols);
  }
}

RM_MULTIVERSION void col2imAdd(const ConvGeometry& g, const float* cols, int samples,
                               float* dxpad) {
  const int seg = g.k * g.cin;
  const size_t row_stride = static_cast<size_t>(g.paddedW()) * g.cin;
  const size_t patch = g.patchSize();
  const float* s = cols;
  for (int n = 0; n < samples; ++n) {
    float* plane = dxpad + n * g.paddedSize();
    for (int y = 0; y < g.h; ++y) {
      for (int x = 0; x < g.w; ++x) {
        float* d = plane + y * row_stride + static_cast<size_t>(x) * g.cin;
        for (int ky = 0; ky < g.k; ++ky) {
          float* __restrict to = d + ky * row_stride;
          const float* __restrict from = s + ky * seg;
          for (int j = 0; j < seg; ++j) to[j] += from[j];
        }
        s += patch;
      }
    }
  }
}

}  // namespace ringmaster::trainer::model
