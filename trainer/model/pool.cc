#include "trainer/model/pool.h"

#include <cstddef>

#include "trainer/model/multiversion.h"

namespace ringmaster::trainer::model {

namespace {

// The channel loops, branch-free (selects only) and with restrict parameters, so that GCC
// vectorizes them in every target clone.

inline void poolChannels(const float* __restrict z00, const float* __restrict z01,
                         const float* __restrict z10, const float* __restrict z11,
                         const float* __restrict bias, float* __restrict out,
                         uint8_t* __restrict route, int c) {
  for (int j = 0; j < c; ++j) {
    const float m0 = z00[j] > z01[j] ? z00[j] : z01[j];
    const float m1 = z10[j] > z11[j] ? z10[j] : z11[j];
    const float best = m0 >= m1 ? m0 : m1;
    const uint8_t pos = z00[j] == best ? 0 : z01[j] == best ? 1 : z10[j] == best ? 2 : 3;
    const float a = best + bias[j];
    out[j] = a > 0.0f ? a : 0.0f;
    route[j] = a > 0.0f ? pos : kReluOff;
  }
}

inline void unpoolChannels(const float* __restrict g, const uint8_t* __restrict route,
                           float* __restrict d00, float* __restrict d01, float* __restrict d10,
                           float* __restrict d11, int c) {
  for (int j = 0; j < c; ++j) {
    const float d = g[j];
    const uint8_t pos = route[j];
    d00[j] = pos == 0 ? d : 0.0f;
    d01[j] = pos == 1 ? d : 0.0f;
    d10[j] = pos == 2 ? d : 0.0f;
    d11[j] = pos == 3 ? d : 0.0f;
  }
}

inline void addPassed(const float* __restrict g, const uint8_t* __restrict route,
                      float* __restrict dbias, int c) {
  for (int j = 0; j < c; ++j) dbias[j] += route[j] < kReluOff ? g[j] : 0.0f;
}

}  // namespace

RM_MULTIVERSION void poolForward(const float* z, const float* bias, int h, int w, int c,
                                 float* pooled, uint8_t* route) {
  const int ph = h / 2, pw = w / 2;
  const size_t row = static_cast<size_t>(w) * c;
  for (int py = 0; py < ph; ++py) {
    for (int px = 0; px < pw; ++px) {
      const float* z00 = z + 2 * py * row + static_cast<size_t>(2 * px) * c;
      const size_t at = (static_cast<size_t>(py) * pw + px) * c;
      poolChannels(z00, z00 + c, z00 + row, z00 + row + c, bias, pooled + at, route + at, c);
    }
  }
}

RM_MULTIVERSION void poolBackward(const float* dpooled, const uint8_t* route, int h, int w, int c,
                                  float* dz, float* dbias) {
  const int ph = h / 2, pw = w / 2;
  const size_t row = static_cast<size_t>(w) * c;
  for (int py = 0; py < ph; ++py) {
    for (int px = 0; px < pw; ++px) {
      float* d00 = dz + 2 * py * row + static_cast<size_t>(2 * px) * c;
      const size_t at = (static_cast<size_t>(py) * pw + px) * c;
      unpoolChannels(dpooled + at, route + at, d00, d00 + c, d00 + row, d00 + row + c, c);
      if (dbias != nullptr) addPassed(dpooled + at, route + at, dbias, c);
    }
  }
}

RM_MULTIVERSION void transpose(const float* from, int rows, int cols, float* to) {
  for (int i = 0; i < rows; ++i) {
    const float* __restrict src = from + static_cast<size_t>(i) * cols;
    for (int j = 0; j < cols; ++j) to[static_cast<size_t>(j) * rows + i] = src[j];
  }
}

}  // namespace ringmaster::trainer::model
