#pragma once
// The trainer's network on the GPU: the same MLP or CNN, parameter layout and initialization as
// model::Model (trainer/model/model.h), so checkpoints move between the CPU and GPU paths and
// one step can be compared with the CPU's.
//
//   conv blocks (cnn): patch rows by an im2col kernel, one cuBLASLt GEMM per block for the
//             conv ([pixels, cout]), then one kernel for bias + ReLU + 2x2 max-pool that keeps
//             where each output came from (conv_math.h); backward scatters through that route,
//             takes the weight and bias gradient in one GEMM and the input gradient with a GEMM
//             and a col2im gather (no atomics).
//   forward:  per layer one cuBLASLt GEMM with the bias (and the ReLU of hidden layers) fused
//             into its epilogue; the last layer writes fp32 logits, which one fused
//             softmax-cross-entropy kernel turns into the loss and its gradient.
//   backward: per layer, last first: the weight-gradient GEMM with the bias gradient fused
//             (epilogue BGRADB), then on_ready(layer) -- the trainer records an event there, so
//             the allreduce of that layer's bucket starts while the rest of backward runs --
//             then the input-gradient GEMM and the ReLU's gradient. The ReLU gradient stays a
//             kernel of its own: cuBLASLt's mask epilogues (RELU_AUX_BIAS forward, DRELU or
//             DRELU_BGRAD in the input gradient) were tried and ran slower on an H200 (the
//             784-8192x3-10 bf16 MLP at batch 4096: 631-640k samples/s against 673-676k).
//   Where cuBLASLt offers no algorithm for a fused epilogue (it depends on types and
//   alignment), the GEMM runs plain and a small kernel adds the bias or sums its gradient; the
//   start-up log says which.
//
// Precision: fp32 (no TF32: the same arithmetic as the CPU's sgemm) or bf16 (bf16 weights copy,
// activations and activation gradients; fp32 accumulation, fp32 logits, fp32 master weights and
// fp32 weight gradients). bf16 has fp32's exponent range, so no loss scaling is needed.
//
// Ownership: owns its parameters (fp32), gradients (fp32), the bf16 copy, activations and GEMM
// plans, all in device memory sized at create() for max_batch; the cuBLASLt handle and the
// workspace are borrowed and must outlive it. Every call enqueues on the given stream.
// Thread-safety: none; one per rank. Failure: create() and the per-batch-size plan set-up
// return the cuBLASLt/CUDA error naming the layer and the GEMM.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/gpu/conv_math.h"
#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/gemm_plan.h"
#include "trainer/gpu/kernels.h"
#include "trainer/model/model.h"

namespace ringmaster::trainer::gpu {

class GpuModel {
 public:
  // Copies host_model's parameters (built from the same config) to the device; the GPU model
  // takes batches of up to max_batch (the host model's own batch size does not matter).
  static core::Result<std::unique_ptr<GpuModel>> create(model::Model& host_model,
                                                        const model::ModelConfig& config,
                                                        Precision precision, int max_batch,
                                                        GemmWorkspace workspace,
                                                        cudaStream_t stream);
  ~GpuModel();
  GpuModel(const GpuModel&) = delete;
  GpuModel& operator=(const GpuModel&) = delete;

  float* params() const { return params_.data(); }
  float* grads() const { return grads_.data(); }
  uint16_t* bf16Params() const { return bf16_params_.data(); }  // null in fp32 mode
  size_t numParams() const { return params_.size(); }
  size_t inputSize() const { return input_size_; }
  int numClasses() const { return widths_.back(); }
  int maxBatch() const { return max_batch_; }
  Precision precision() const { return precision_; }
  // Conv blocks, then dense layers: the granularity at which backward reports.
  int numLayers() const { return static_cast<int>(convs_.size()) + denseLayers(); }
  // First flat index of layer i's parameters (weight then bias).
  size_t layerOffset(int layer) const;

  // Where the trainer writes a batch: [maxBatch][inputSize] in precision(), and its labels.
  void* input() const { return convs_.empty() ? acts_[0].data() : conv_input_.data(); }
  int32_t* labels() const { return labels_.data(); }
  const float* logits() const { return reinterpret_cast<const float*>(acts_.back().data()); }

  // Sets up (once per batch size) the GEMM plans for batches of n; forward/backward do it on
  // first use, but plan set-up is host work best done before a CUDA graph capture.
  core::Status prepare(int n);

  // Logits of the n samples in input(); then the fused loss: adds loss_weight * loss and the
  // hits to *totals and, when `train`, writes d(mean loss)/d(logits) for backward().
  core::Status forwardLoss(int n, bool train, double loss_weight, LossTotals* totals,
                           cudaStream_t stream);
  // Backward of the last forwardLoss(n, train=true). on_ready(layer) runs (on the host, while
  // enqueueing) right after the layer's gradient GEMMs were enqueued, last layer first.
  core::Status backward(int n, cudaStream_t stream, const std::function<void(int layer)>& on_ready);

  // Refreshes the bf16 copy from the fp32 parameters (after loading a checkpoint); no-op in fp32.
  void syncBf16Params(cudaStream_t stream);
  // A line for the start-up log: which epilogues are fused.
  std::string describe() const;

 private:
  struct LayerPlans;
  struct ConvBlock {
    ConvShape shape;
    size_t offset = 0;   // flat index of the weight [cout][k][k][cin]; the bias follows
    void* in = nullptr;  // the block's input batch (NCHW): conv_input_ or the previous out
    DeviceBuffer<uint8_t> cols, z, out;  // patch rows, conv output [pixels][cout], pooled NCHW
    DeviceBuffer<uint8_t> route;         // per pooled output: window position or 4 (ReLU off)
  };
  GpuModel() = default;
  int denseLayers() const { return static_cast<int>(widths_.size()) - 1; }
  size_t denseCount(int layer) const;
  core::Status prepareConvs(int n, std::vector<std::unique_ptr<LayerPlans>>* plans);
  core::Status forwardConvs(int n, cudaStream_t stream);
  core::Status backwardConvs(int n, cudaStream_t stream,
                             const std::function<void(int layer)>& on_ready);
  // Dense layer `layer`'s weight as the GEMMs read it, and its forward bias.
  const void* weightsForGemm(int layer) const;
  const void* biasForForward(int layer) const;
  // A flat-buffer weight as the GEMMs read it (the bf16 copy in bf16 mode).
  const void* gemmWeights(size_t offset) const;

  Precision precision_ = Precision::kFp32;
  GemmWorkspace workspace_;
  size_t input_size_ = 0;  // floats per sample
  std::vector<ConvBlock> convs_;
  DeviceBuffer<uint8_t> conv_input_;          // the batch (cnn)
  DeviceBuffer<uint8_t> dz_, dcols_, dconv_;  // conv backward scratch, shared by the blocks
  // Dense layers: input (the flattened convs' output, or the batch), hidden..., classes.
  std::vector<int> widths_;
  std::vector<size_t> offsets_;  // flat offset of each dense layer's weight; its bias follows
  int max_batch_ = 0;
  DeviceBuffer<float> params_, grads_;
  DeviceBuffer<uint16_t> bf16_params_;
  std::vector<DeviceBuffer<uint8_t>> acts_;  // [0] input, [i + 1] layer i's output (last: fp32)
  DeviceBuffer<uint8_t> dacts_[2];           // activation gradients, ping-pong
  DeviceBuffer<uint8_t> dlogits_;
  DeviceBuffer<int32_t> labels_;
  // By batch size: the conv blocks' plans, then the dense layers'.
  std::map<int, std::vector<std::unique_ptr<LayerPlans>>> plans_;
  int fused_forward_ = 0, fused_bias_grad_ = 0, gemms_planned_ = 0;
};

}  // namespace ringmaster::trainer::gpu
