#pragma once
// The GPU step's own kernels (the GEMMs are cuBLASLt's, in gpu_model.cc). Each launch* enqueues
// on `stream` and returns at once; scalars that change from step to step (the cursor into the
// epoch, the learning rate) are read from device memory, so a captured CUDA graph replays the
// same launches step after step. The per-element math is device_math.h's.
//
// Layouts: a batch of activations is row-major [n][width] (column-major width x n, as cuBLASLt
// sees it); `Precision` says whether activations are fp32 or bf16. Parameters, gradients and
// optimizer state are always fp32 (bf16 mode keeps a bf16 copy of the parameters for the GEMMs).
//
// Thread-safety: none needed (stream-ordered). Failure: launch errors surface at the next
// synchronizing call (cudaStatus of cudaGetLastError / the stream).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trainer/gpu/conv_math.h"
#include "trainer/gpu/device_math.h"

namespace ringmaster::trainer::gpu {

enum class Precision { kFp32, kBf16 };
inline size_t elementBytes(Precision p) { return p == Precision::kBf16 ? 2 : 4; }
inline const char* precisionName(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

// Where one rank's batch comes from: sample positions rank + (first + i) * world of the epoch's
// order (`perm`, or the identity when null), first = *cursor * batch when cursor is set (the
// training graph), else first_position (evaluation).
struct BatchSource {
  const FeistelPermutation* perm = nullptr;  // device
  const int64_t* cursor = nullptr;           // device: batches done this epoch
  int64_t first_position = 0;
  int rank = 0, world = 1, batch = 0;
};

// x[i][:] = data[sample(i)][:], y[i] = labels[sample(i)] for i < n.
void launchGatherBatch(const void* data, const int32_t* labels, int row_len, BatchSource source,
                       int n, void* x, int32_t* y, Precision precision, cudaStream_t stream);
// The step's position, in device memory so a replayed graph moves on by itself.
struct StepCounters {
  int64_t cursor = 0;           // batches done in this epoch (BatchSource::cursor points here)
  int64_t step = 0;             // global steps done (the learning-rate schedule's argument)
  int64_t optimizer_steps = 0;  // updates done (Adam's t - 1)
};
// All three += 1; the last launch of a step.
void launchAdvance(StepCounters* counters, cudaStream_t stream);

struct LossTotals {
  double loss_sum;          // sum of loss_weight * row loss
  unsigned long long hits;  // argmax == label
};

// Fused softmax + cross-entropy over fp32 logits [n][classes]: adds loss_weight * loss of every
// row and the hits to *totals, and writes dlogits = grad_scale * (softmax - onehot) / n when
// dlogits is set (a pipeline's micro-batch scales its mean loss's gradient by its share).
void launchSoftmaxCrossEntropy(const float* logits, const int32_t* labels, int n, int classes,
                               void* dlogits, Precision dlogits_precision, double loss_weight,
                               float grad_scale, LossTotals* totals, cudaStream_t stream);

// dact[i] = 0 where act[i] <= 0: the ReLU's gradient taken through its output.
void launchReluBackward(void* dact, const void* act, size_t count, Precision precision,
                        cudaStream_t stream);
// Fallbacks for when cuBLASLt offers no fused epilogue: y[b][o] = act(y[b][o] + bias[o]) and
// dbias[o] = sum_b dz[b][o] (added to dbias when `accumulate`: a pipeline stage's micro-batches).
void launchBiasActivation(void* y, Precision precision, const float* bias, int n, int width,
                          bool relu, cudaStream_t stream);
void launchBiasGrad(const void* dz, Precision precision, int n, int width, float* dbias,
                    bool accumulate, cudaStream_t stream);

// The optimizers' per-step scalars (learning rate from the schedule; Adam's bias corrections)
// computed on the device from *counters into *out, which the update kernels read.
void launchSgdScalars(LrSchedule schedule, SgdScalars base, const StepCounters* counters,
                      SgdScalars* out, cudaStream_t stream);
struct AdamHyper {
  double beta1, beta2, weight_decay, epsilon;  // the config's doubles, as the CPU Adam uses them
};
void launchAdamScalars(LrSchedule schedule, AdamHyper hyper, const StepCounters* counters,
                       AdamScalars* out, cudaStream_t stream);

// One fused optimizer pass over the flat buffers; *scalars lives in device memory (refreshed
// before each step). bf16_params, when set, receives the updated parameters in bf16.
void launchSgdStep(float* params, const float* grads, float* momentum, size_t count,
                   const SgdScalars* scalars, uint16_t* bf16_params, cudaStream_t stream);
void launchAdamStep(float* params, const float* grads, float* m, float* v, size_t count,
                    const AdamScalars* scalars, uint16_t* bf16_params, cudaStream_t stream);

void launchFloatToBf16(const float* in, uint16_t* out, size_t count, cudaStream_t stream);

// The conv block (conv_math.h has the layouts), for a batch of n samples:
// cols [pixels][kdim] from the NCHW input;
void launchIm2col(const void* in, ConvShape shape, int n, void* cols, Precision precision,
                  cudaStream_t stream);
// pooled NCHW output and route from z [pixels][cout] + bias (relu(max + bias), the CPU's ties);
void launchConvPoolForward(const void* z, const float* bias, ConvShape shape, int n, void* out,
                           uint8_t* route, Precision precision, cudaStream_t stream);
// dz [pixels][cout] from the pooled gradient (NCHW) through the route (a dropped odd edge is
// left as it is: zero it first);
void launchConvPoolBackward(const void* dout, const uint8_t* route, ConvShape shape, int n,
                            void* dz, Precision precision, cudaStream_t stream);
// din (NCHW) = the adjoint of im2col applied to dcols.
void launchCol2im(const void* dcols, ConvShape shape, int n, void* din, Precision precision,
                  cudaStream_t stream);

}  // namespace ringmaster::trainer::gpu
