#pragma once
// One pipeline stage of an MLP on the GPU: the dense layers [first, end) that a host ModelStage
// of the same config holds, with the same parameters (copied from it) and layout, run by the
// same stage executor (pipeline/stage_executor.h) through model::StageCompute. The executor's
// link enqueues the stage's NCCL sends and receives on the stage's stream, between the passes
// enqueued here, so nothing in a step waits for the host.
//
// Per slot (micro-batch in flight), all fp32, allocated at create() (the slots are the
// schedule's peak, so this is the peak):
//   acts[0]       the stage's input rows (the first stage uploads the batch there; others receive)
//   acts[i + 1]   layer i's output; the last is what forward() returns and the stage sends on
//   dout          d(loss)/d(output): received from the next stage, or the loss's gradient
//   din           d(loss)/d(input): what backward() returns and the stage sends back (not on the
//                 first stage)
// Per layer, as in GpuModel: a forward GEMM with the bias (and the ReLU of hidden layers) in its
// epilogue; in backward the weight-gradient GEMM adds to the gradients (beta 1) and a kernel
// adds the bias gradient, so micro-batches accumulate with no pass of their own; then the
// input-gradient GEMM and the ReLU's gradient. A stage whose last layer is hidden takes the
// ReLU's gradient of what it received first.
// GEMMs are planned per (slot, rows, weight version) on first use, with cuBLASLt's heuristic
// choice only: planning then neither waits for the device (whose stream may be waiting on a
// neighbour's message) nor writes the accumulating gradients.
//
// fp32 only (bf16 stages and tensor-parallel GPU stages are not built).
//
// Ownership: owns its device memory; borrows the cuBLASLt handle, workspace and stream, which
// must outlive it. Thread-safety: none; one per rank. Failure: create() returns
// kInvalidArgument for what it does not run (a CNN, tensor parallelism) and CUDA errors naming
// the buffer; a failed launch or plan later is kept in status() (StageCompute's contract).

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/gpu/device_buffer.h"
#include "trainer/gpu/gemm_plan.h"
#include "trainer/gpu/kernels.h"
#include "trainer/model/model_stage.h"
#include "trainer/model/stage_compute.h"

namespace ringmaster::trainer::gpu {

class GpuStage final : public model::StageCompute {
 public:
  // The stage `host` holds (its layers, micro-batch rows and parameters), with `slots` slots,
  // on the current device; enqueues the parameters' upload on `stream`.
  static core::Result<std::unique_ptr<GpuStage>> create(model::ModelStage& host, int slots,
                                                        GemmWorkspace workspace,
                                                        cudaStream_t stream);
  ~GpuStage() override;
  GpuStage(const GpuStage&) = delete;
  GpuStage& operator=(const GpuStage&) = delete;

  int slots() const override { return static_cast<int>(slots_.size()); }
  int microBatch() const override { return micro_batch_; }
  size_t inputSize() const override { return static_cast<size_t>(widths_.front()); }
  size_t outputSize() const override { return static_cast<size_t>(widths_.back()); }
  float* input(int slot) override;
  void loadInput(int slot, const float* samples, int rows) override;
  const float* forward(int slot, int rows) override;
  void addLoss(int slot, const int32_t* labels, int rows, float grad_scale) override;
  void addEvaluationLoss(int slot, const int32_t* labels, int rows) override;
  model::StageLosses takeLosses() override;
  float* outputGrad(int slot) override;
  const float* backward(int slot, int rows) override;
  void zeroGrads() override;
  const core::Status& status() const override { return status_; }
  std::span<float> weightVersion(int version) override;
  void useWeights(std::span<float> weights) override;
  void copyWeights(std::span<const float> from, std::span<float> to) override;

  // Device memory: the stage's fp32 parameters (weight version 0) and gradients.
  float* params() const { return params_.data(); }
  float* grads() const { return grads_.data(); }
  size_t numParams() const { return params_.size(); }
  cudaStream_t stream() const { return stream_; }
  size_t activationBytes() const { return activation_bytes_; }
  // A line for the start-up log: the layers, and how many forward epilogues are fused.
  std::string describe() const;

 private:
  struct Slot {
    std::vector<DeviceBuffer<float>> acts;  // [0] input, [i + 1] layer i's output
    DeviceBuffer<float> dout, din;
    DeviceBuffer<int32_t> labels;
    int rows = 0;  // of the last forward; 0: nothing to backpropagate
  };
  struct LayerPlans;
  using PlanKey = std::tuple<int, int, const float*>;  // slot, rows, weights

  GpuStage() = default;
  int layers() const { return static_cast<int>(offsets_.size()); }
  // The plans of every layer for the slot at `rows` on the weights in use; null after a failure.
  const std::vector<std::unique_ptr<LayerPlans>>* plansFor(int slot, int rows);
  core::Status plan(int slot, int rows, std::vector<std::unique_ptr<LayerPlans>>* plans);
  // d(loss)/d(pre-activation) of layer i in backward: the slot's dout for the last, else the
  // scratch the layer above's input-gradient GEMM writes (and the ReLU's gradient then fixes).
  float* dz(Slot& s, int layer) const;
  bool relu(int layer) const { return layer + 1 < layers() || !ends_network_; }
  Slot& slot(int index);
  // Keeps the first error; true when `s` is ok.
  bool keep(const core::Status& s);
  bool keepCuda(cudaError_t e, const std::string& what);

  std::string signature_;
  int first_layer_ = 0;
  bool starts_network_ = false, ends_network_ = false;
  int micro_batch_ = 0;
  std::vector<int> widths_;      // the stage's input, then each layer's output
  std::vector<size_t> offsets_;  // flat offset of each layer's weight [out][in]; its bias follows
  GemmWorkspace workspace_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer<float> params_, grads_;
  std::vector<DeviceBuffer<float>> versions_;  // weight versions 1..n
  const float* weights_ = nullptr;             // the version the layers compute with
  std::vector<Slot> slots_;
  DeviceBuffer<float> scratch_[2];  // input gradients between the stage's layers
  DeviceBuffer<LossTotals> totals_;
  std::map<PlanKey, std::vector<std::unique_ptr<LayerPlans>>> plans_;
  size_t activation_bytes_ = 0;
  int fused_forward_ = 0, planned_layers_ = 0;
  core::Status status_;
};

}  // namespace ringmaster::trainer::gpu
