#pragma once
// What the .cu files of trainer/gpu share: the launch shape of grid-stride loops and element
// access to fp32 or bf16 buffers as float. Device code only (include from .cu files).

#include <cuda_bf16.h>

#include <algorithm>
#include <cstddef>

namespace ringmaster::trainer::gpu {

inline constexpr int kThreads = 256;

// Grid for a grid-stride loop over `count` elements: enough blocks to fill the GPU, no more.
inline unsigned gridFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<size_t>(blocks, 1, 65535));
}

__device__ __forceinline__ float load(const float* p, size_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, size_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store(float* p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, size_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

}  // namespace ringmaster::trainer::gpu

// for (size_t i ...) over [0, count) with the launch's whole grid.
#define RM_GRID_STRIDE(i, count)                                                           \
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < (count); \
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
