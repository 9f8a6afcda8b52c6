#include "trainer/gpu/kernel_util.cuh"
#include "trainer/gpu/kernels.h"

namespace ringmaster::trainer::gpu {
namespace {

template <typename T>
__global__ void im2colKernel(const T* __restrict__ in, ConvShape s, size_t count,
                             T* __restrict__ cols) {
  const int kdim = s.kdim();
  RM_GRID_STRIDE(k, count) {
    const auto i = static_cast<int64_t>(k);
    const int64_t src = im2colSource(s, i / kdim, static_cast<int>(i % kdim));
    cols[i] = src >= 0 ? in[src] : T(0.0f);
  }
}

// One thread per pooled output (n, c, py, px), NCHW order.
template <typename T>
__global__ void poolForwardKernel(const T* __restrict__ z, const float* __restrict__ bias,
                                  ConvShape s, size_t count, T* __restrict__ out,
                                  uint8_t* __restrict__ route) {
  const int ph = s.ph(), pw = s.pw();
  RM_GRID_STRIDE(k, count) {
    const auto i = static_cast<int64_t>(k);
    const int px = static_cast<int>(i % pw);
    const int py = static_cast<int>((i / pw) % ph);
    const int c = static_cast<int>((i / (static_cast<int64_t>(pw) * ph)) % s.cout);
    const int64_t n = i / (static_cast<int64_t>(pw) * ph * s.cout);
    float v[4];
    for (int pos = 0; pos < 4; ++pos)
      v[pos] = load(z, poolSourceRow(s, n, py, px, pos) * s.cout + c);
    uint8_t r;
    store(out, i, poolElement(v[0], v[1], v[2], v[3], bias[c], &r));
    route[i] = r;
  }
}

template <typename T>
__global__ void poolBackwardKernel(const T* __restrict__ dout, const uint8_t* __restrict__ route,
                                   ConvShape s, size_t count, T* __restrict__ dz) {
  const int ph = s.ph(), pw = s.pw();
  RM_GRID_STRIDE(k, count) {
    const auto i = static_cast<int64_t>(k);
    const int px = static_cast<int>(i % pw);
    const int py = static_cast<int>((i / pw) % ph);
    const int c = static_cast<int>((i / (static_cast<int64_t>(pw) * ph)) % s.cout);
    const int64_t n = i / (static_cast<int64_t>(pw) * ph * s.cout);
    const float g = load(dout, i);
    const uint8_t r = route[i];
    for (int pos = 0; pos < 4; ++pos)
      store(dz, poolSourceRow(s, n, py, px, pos) * s.cout + c, pos == r ? g : 0.0f);
  }
}

// One thread per input element (n, c, y, x), NCHW order.
template <typename T>
__global__ void col2imKernel(const T* __restrict__ dcols, ConvShape s, size_t count,
                             T* __restrict__ din) {
  RM_GRID_STRIDE(k, count) {
    const auto i = static_cast<int64_t>(k);
    const int x = static_cast<int>(i % s.w);
    const int y = static_cast<int>((i / s.w) % s.h);
    const int c = static_cast<int>((i / (static_cast<int64_t>(s.w) * s.h)) % s.cin);
    const int64_t n = i / (static_cast<int64_t>(s.w) * s.h * s.cin);
    store(din, i,
          col2imGather(s, dcols, n, c, y, x, [](const T* p, int64_t j) { return load(p, j); }));
  }
}

}  // namespace

void launchIm2col(const void* in, ConvShape s, int n, void* cols, Precision precision,
                  cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(n) * s.h * s.w * s.kdim();
  if (count <= 0) return;
  if (precision == Precision::kBf16) {
    im2colKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(in), s,
                                                          count, static_cast<__nv_bfloat16*>(cols));
  } else {
    im2colKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const float*>(in), s, count,
                                                          static_cast<float*>(cols));
  }
}

void launchConvPoolForward(const void* z, const float* bias, ConvShape s, int n, void* out,
                           uint8_t* route, Precision precision, cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(n) * s.cout * s.ph() * s.pw();
  if (count <= 0) return;
  if (precision == Precision::kBf16) {
    poolForwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(z), bias, s, count, static_cast<__nv_bfloat16*>(out),
        route);
  } else {
    poolForwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<const float*>(z), bias, s, count, static_cast<float*>(out), route);
  }
}

void launchConvPoolBackward(const void* dout, const uint8_t* route, ConvShape s, int n, void* dz,
                            Precision precision, cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(n) * s.cout * s.ph() * s.pw();
  if (count <= 0) return;
  if (precision == Precision::kBf16) {
    poolBackwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(dout), route, s, count, static_cast<__nv_bfloat16*>(dz));
  } else {
    poolBackwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<const float*>(dout), route, s, count, static_cast<float*>(dz));
  }
}

void launchCol2im(const void* dcols, ConvShape s, int n, void* din, Precision precision,
                  cudaStream_t stream) {
  const int64_t count = static_cast<int64_t>(n) * s.cin * s.h * s.w;
  if (count <= 0) return;
  if (precision == Precision::kBf16) {
    col2imKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(dcols), s, count, static_cast<__nv_bfloat16*>(din));
  } else {
    col2imKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<const float*>(dcols), s,
                                                          count, static_cast<float*>(din));
  }
}

}  // namespace ringmaster::trainer::gpu
