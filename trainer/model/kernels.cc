#include "trainer/model/kernels.h"

#include <cstring>

#include "trainer/model/multiversion.h"

namespace ringmaster::trainer::model::kernels {

RM_MULTIVERSION void biasRelu(float* z, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* __restrict row = z + static_cast<size_t>(r) * cols;
    const float* __restrict b = bias;
    for (int c = 0; c < cols; ++c) {
      const float v = row[c] + b[c];
      row[c] = v > 0.0f ? v : 0.0f;
    }
  }
}

RM_MULTIVERSION void biasAdd(float* z, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* __restrict row = z + static_cast<size_t>(r) * cols;
    const float* __restrict b = bias;
    for (int c = 0; c < cols; ++c) row[c] += b[c];
  }
}

RM_MULTIVERSION void reluMaskColumnSums(float* dz, const float* out, float* col_sums, int rows,
                                        int cols, bool accumulate) {
  float* __restrict sums = col_sums;
  if (!accumulate) std::memset(sums, 0, sizeof(float) * cols);
  for (int r = 0; r < rows; ++r) {
    float* __restrict d = dz + static_cast<size_t>(r) * cols;
    const float* __restrict o = out + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) {
      const float v = o[c] > 0.0f ? d[c] : 0.0f;
      d[c] = v;
      sums[c] += v;
    }
  }
}

RM_MULTIVERSION void columnSums(const float* m, float* col_sums, int rows, int cols,
                                bool accumulate) {
  float* __restrict sums = col_sums;
  if (!accumulate) std::memset(sums, 0, sizeof(float) * cols);
  for (int r = 0; r < rows; ++r) {
    const float* __restrict row = m + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) sums[c] += row[c];
  }
}

}  // namespace ringmaster::trainer::model::kernels
