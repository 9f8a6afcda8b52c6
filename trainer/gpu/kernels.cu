#include "trainer/gpu/kernel_util.cuh"
#include "trainer/gpu/kernels.h"

namespace ringmaster::trainer::gpu {
namespace {

template <typename T>
__global__ void gatherBatchKernel(const T* __restrict__ data, const int32_t* __restrict__ labels,
                                  int row_len, BatchSource source, int n, T* __restrict__ x,
                                  int32_t* __restrict__ y) {
  const int row = blockIdx.x;
  if (row >= n) return;
  const int64_t first =
      source.cursor != nullptr ? *source.cursor * source.batch : source.first_position;
  const auto position = static_cast<uint32_t>(source.rank + (first + row) * source.world);
  const uint32_t sample = source.perm != nullptr ? (*source.perm)(position) : position;
  const T* from = data + static_cast<size_t>(sample) * row_len;
  T* to = x + static_cast<size_t>(row) * row_len;
  for (int i = threadIdx.x; i < row_len; i += blockDim.x) to[i] = from[i];
  if (threadIdx.x == 0) y[row] = labels[sample];
}

__global__ void advanceKernel(StepCounters* c) {
  c->cursor += 1;
  c->step += 1;
  c->optimizer_steps += 1;
}

__global__ void sgdScalarsKernel(LrSchedule schedule, SgdScalars base, const StepCounters* c,
                                 SgdScalars* out) {
  SgdScalars s = base;
  s.lr = static_cast<float>(learningRateAt(schedule, c->step));
  *out = s;
}

__global__ void adamScalarsKernel(LrSchedule schedule, AdamHyper h, const StepCounters* c,
                                  AdamScalars* out) {
  *out = adamScalarsAt(learningRateAt(schedule, c->step), h.beta1, h.beta2, h.weight_decay,
                       h.epsilon, c->optimizer_steps + 1);
}

template <typename G>
__global__ void softmaxCrossEntropyKernel(const float* __restrict__ logits,
                                          const int32_t* __restrict__ labels, int n, int classes,
                                          G* __restrict__ dlogits, double loss_weight,
                                          float grad_scale, LossTotals* totals) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  float loss = 0.0f;
  int hit = 0;
  if (row < n) {
    G* drow = dlogits != nullptr ? dlogits + static_cast<size_t>(row) * classes : nullptr;
    loss = softmaxCrossEntropyRow(
        logits + static_cast<size_t>(row) * classes, classes, labels[row], grad_scale / n, drow,
        [](float d) {
          G out;
          store(&out, 0, d);
          return out;
        },
        &hit);
  }
  // One atomic per warp: sum the warp's rows first.
  for (int offset = 16; offset > 0; offset /= 2) {
    loss += __shfl_down_sync(0xffffffffu, loss, offset);
    hit += __shfl_down_sync(0xffffffffu, hit, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&totals->loss_sum, loss_weight * static_cast<double>(loss));
    atomicAdd(&totals->hits, static_cast<unsigned long long>(hit));
  }
}

template <typename T>
__global__ void reluBackwardKernel(T* __restrict__ dact, const T* __restrict__ act, size_t count) {
  RM_GRID_STRIDE(i, count) {
    if (!(load(act, i) > 0.0f)) store(dact, i, 0.0f);
  }
}

template <typename T>
__global__ void biasActivationKernel(T* __restrict__ y, const float* __restrict__ bias, int n,
                                     int width, bool relu) {
  const size_t count = static_cast<size_t>(n) * width;
  RM_GRID_STRIDE(i, count) {
    float v = load(y, i) + bias[i % width];
    if (relu) v = fmaxf(v, 0.0f);
    store(y, i, v);
  }
}

template <typename T>
__global__ void biasGradKernel(const T* __restrict__ dz, int n, int width,
                               float* __restrict__ dbias, bool accumulate) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= width) return;
  float sum = 0.0f;
  for (int b = 0; b < n; ++b) sum += load(dz, static_cast<size_t>(b) * width + o);
  dbias[o] = accumulate ? dbias[o] + sum : sum;
}

__global__ void sgdKernel(float* __restrict__ params, const float* __restrict__ grads,
                          float* __restrict__ momentum, size_t count,
                          const SgdScalars* __restrict__ scalars,
                          __nv_bfloat16* __restrict__ bf16_params) {
  const SgdScalars s = *scalars;
  RM_GRID_STRIDE(i, count) {
    float p = params[i];
    float buf = momentum != nullptr ? momentum[i] : 0.0f;
    sgdElement(&p, grads[i], &buf, s);
    params[i] = p;
    if (momentum != nullptr) momentum[i] = buf;
    if (bf16_params != nullptr) bf16_params[i] = __float2bfloat16_rn(p);
  }
}

__global__ void adamKernel(float* __restrict__ params, const float* __restrict__ grads,
                           float* __restrict__ m, float* __restrict__ v, size_t count,
                           const AdamScalars* __restrict__ scalars,
                           __nv_bfloat16* __restrict__ bf16_params) {
  const AdamScalars s = *scalars;
  RM_GRID_STRIDE(i, count) {
    float p = params[i], mi = m[i], vi = v[i];
    adamElement(&p, grads[i], &mi, &vi, s);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (bf16_params != nullptr) bf16_params[i] = __float2bfloat16_rn(p);
  }
}

__global__ void floatToBf16Kernel(const float* __restrict__ in, __nv_bfloat16* __restrict__ out,
                                  size_t count) {
  RM_GRID_STRIDE(i, count)
  out[i] = __float2bfloat16_rn(in[i]);
}

}  // namespace

void launchGatherBatch(const void* data, const int32_t* labels, int row_len, BatchSource source,
                       int n, void* x, int32_t* y, Precision precision, cudaStream_t stream) {
  if (n <= 0) return;
  if (precision == Precision::kBf16) {
    gatherBatchKernel<<<n, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(data), labels,
                                                  row_len, source, n,
                                                  static_cast<__nv_bfloat16*>(x), y);
  } else {
    gatherBatchKernel<<<n, kThreads, 0, stream>>>(static_cast<const float*>(data), labels, row_len,
                                                  source, n, static_cast<float*>(x), y);
  }
}

void launchAdvance(StepCounters* counters, cudaStream_t stream) {
  advanceKernel<<<1, 1, 0, stream>>>(counters);
}

void launchSgdScalars(LrSchedule schedule, SgdScalars base, const StepCounters* counters,
                      SgdScalars* out, cudaStream_t stream) {
  sgdScalarsKernel<<<1, 1, 0, stream>>>(schedule, base, counters, out);
}

void launchAdamScalars(LrSchedule schedule, AdamHyper hyper, const StepCounters* counters,
                       AdamScalars* out, cudaStream_t stream) {
  adamScalarsKernel<<<1, 1, 0, stream>>>(schedule, hyper, counters, out);
}

void launchSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int n, int classes,
                               void* dlogits, Precision dlogits_precision, double loss_weight,
                               float grad_scale, LossTotals* totals, cudaStream_t stream) {
  if (n <= 0) return;
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  if (dlogits_precision == Precision::kBf16) {
    softmaxCrossEntropyKernel<<<blocks, kThreads, 0, stream>>>(logits, labels, n, classes,
                                                               static_cast<__nv_bfloat16*>(dlogits),
                                                               loss_weight, grad_scale, totals);
  } else {
    softmaxCrossEntropyKernel<<<blocks, kThreads, 0, stream>>>(
        logits, labels, n, classes, static_cast<float*>(dlogits), loss_weight, grad_scale, totals);
  }
}

void launchReluBackward(void* dact, const void* act, size_t count, Precision precision,
                        cudaStream_t stream) {
  if (count == 0) return;
  if (precision == Precision::kBf16) {
    reluBackwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<__nv_bfloat16*>(dact), static_cast<const __nv_bfloat16*>(act), count);
  } else {
    reluBackwardKernel<<<gridFor(count), kThreads, 0, stream>>>(
        static_cast<float*>(dact), static_cast<const float*>(act), count);
  }
}

void launchBiasActivation(void* y, Precision precision, const float* bias, int n, int width,
                          bool relu, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(n) * width;
  if (count == 0) return;
  if (precision == Precision::kBf16) {
    biasActivationKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(y),
                                                                  bias, n, width, relu);
  } else {
    biasActivationKernel<<<gridFor(count), kThreads, 0, stream>>>(static_cast<float*>(y), bias, n,
                                                                  width, relu);
  }
}

void launchBiasGrad(const void* dz, Precision precision, int n, int width, float* dbias,
                    bool accumulate, cudaStream_t stream) {
  if (width <= 0) return;
  const unsigned blocks = static_cast<unsigned>((width + kThreads - 1) / kThreads);
  if (precision == Precision::kBf16) {
    biasGradKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(dz), n, width,
                                                    dbias, accumulate);
  } else {
    biasGradKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(dz), n, width, dbias,
                                                    accumulate);
  }
}

void launchSgdStep(float* params, const float* grads, float* momentum, size_t count,
                   const SgdScalars* scalars, uint16_t* bf16_params, cudaStream_t stream) {
  if (count == 0) return;
  sgdKernel<<<gridFor(count), kThreads, 0, stream>>>(params, grads, momentum, count, scalars,
                                                     reinterpret_cast<__nv_bfloat16*>(bf16_params));
}

void launchAdamStep(float* params, const float* grads, float* m, float* v, size_t count,
                    const AdamScalars* scalars, uint16_t* bf16_params, cudaStream_t stream) {
  if (count == 0) return;
  adamKernel<<<gridFor(count), kThreads, 0, stream>>>(
      params, grads, m, v, count, scalars, reinterpret_cast<__nv_bfloat16*>(bf16_params));
}

void launchFloatToBf16(const float* in, uint16_t* out, size_t count, cudaStream_t stream) {
  if (count == 0) return;
  floatToBf16Kernel<<<gridFor(count), kThreads, 0, stream>>>(
      in, reinterpret_cast<__nv_bfloat16*>(out), count);
}

}  // namespace ringmaster::trainer::gpu
