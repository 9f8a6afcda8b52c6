#pragma once
// Element-wise loops of the forward/backward pass, each one pass over memory, fusing what
// would otherwise be separate passes (bias + ReLU; ReLU mask + bias gradient). Built for
// AVX-512, AVX2 and baseline x86-64 and picked at load time (GCC target_clones), so the
// binary stays portable. Matrices are row-major [rows, cols].
//
// Thread-safety: pure functions. Failure: none.

namespace ringmaster::trainer::model::kernels {

// z[r][c] = max(z[r][c] + bias[c], 0)
void biasRelu(float* z, const float* bias, int rows, int cols);
// z[r][c] += bias[c]
void biasAdd(float* z, const float* bias, int rows, int cols);
// dz[r][c] = out[r][c] > 0 ? dz[r][c] : 0;  col_sums[c] = sum_r dz[r][c] (overwritten, or added
// to with accumulate)
void reluMaskColumnSums(float* dz, const float* out, float* col_sums, int rows, int cols,
                        bool accumulate);
// col_sums[c] = sum_r m[r][c] (overwritten, or added to with accumulate)
void columnSums(const float* m, float* col_sums, int rows, int cols, bool accumulate);

}  // namespace ringmaster::trainer::model::kernels
