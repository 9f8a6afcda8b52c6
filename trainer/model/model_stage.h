#pragma once
// One pipeline stage's part of the network: the contiguous layers [first, end) of the network a
// ModelConfig describes, run on micro-batches. Parameters are exactly the whole network's values
// for those layers (network.h), so S stages together start where one Model starts.
//
// Activations are kept per slot: the executor maps each micro-batch in flight to a slot
// (micro-batch m -> m % slots), and a slot's buffers are allocated the first time it is used,
// so activationBytes() is what the schedule really held at its peak. Per slot:
//   input    the stage's input rows (the first stage copies the data there; others receive)
//   acts     each layer's output; the last one is what forward() returns (sent on)
//   dout     d(loss)/d(output) (received from the next stage, or written by loss())
//   din      d(loss)/d(input), what backward() returns (sent back; kept until the slot is reused)
// Parameter gradients accumulate over micro-batches (+=) until zeroGrads(): one optimizer step
// per mini-batch, the same as a Model on the whole mini-batch up to float rounding. zeroGrads()
// costs no pass over memory: the next backward overwrites instead of adding (and grads() zeroes
// them itself if no backward came in between). An overwrite is a GEMM with beta = 0, which
// OpenBLAS runs as a zeroing pass over the matrix and then an add: slower than adding by that
// pass, on the backward that starts every pipeline's drain. clearGrads() writes the zeros
// earlier, while the stage waits for a neighbour anyway.
//
// Ownership: owns parameters, gradients and every slot's buffers. Thread-safety: none (one
// stage per rank). Failure: create() returns kInvalidArgument naming the field; broken call
// contracts (a slot or batch out of range, backward before forward) abort with the reason.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/model/aligned_buffer.h"
#include "trainer/model/layer.h"
#include "trainer/model/model.h"
#include "trainer/model/stage_compute.h"

namespace ringmaster::trainer::model {

class ModelStage final : public StageCompute {
 public:
  // Layers [first_layer, end_layer) of `config`'s network, micro-batches of up to `micro_batch`
  // rows, `slots` micro-batches in flight at most.
  // With a tensor shard of T > 1 ranks the stage holds this rank's parts of the MLP's layer
  // pairs (dense_layer.h), and a stage must not cut a pair in two (first_layer even).
  static core::Result<std::unique_ptr<ModelStage>> create(const ModelConfig& config, uint64_t seed,
                                                          int micro_batch, int first_layer,
                                                          int end_layer, int slots,
                                                          TensorShard shard = {});
  // How many layers `config`'s network has (what a partition splits).
  static core::Result<int> layerCount(const ModelConfig& config);
  ~ModelStage() override;
  ModelStage(const ModelStage&) = delete;
  ModelStage& operator=(const ModelStage&) = delete;

  bool isFirst() const { return first_layer_ == 0; }
  // The stage's layers [firstLayer(), endLayer()) of the whole network.
  int firstLayer() const { return static_cast<int>(first_layer_); }
  int endLayer() const { return static_cast<int>(first_layer_ + layers_.size()); }
  bool isLast() const { return last_; }
  size_t inputSize() const override { return input_size_; }
  size_t outputSize() const override { return output_size_; }
  int microBatch() const override { return micro_batch_; }
  // The whole network's ("mlp:784-512-512-10"), as Model::signature() says it.
  const std::string& networkSignature() const { return signature_; }
  int slots() const override { return static_cast<int>(slots_.size()); }
  std::span<float> params() { return params_.span(); }
  std::span<float> grads();
  // This stage's tensors with offsets into params(); names as in the whole network ("fc3.bias").
  const std::vector<ParamView>& paramViews() const { return views_; }

  // Where slot `slot`'s input rows go before forward().
  float* input(int slot) override;
  void loadInput(int slot, const float* samples, int rows) override;
  // Runs the stage's layers on the slot's input; returns its output rows.
  const float* forward(int slot, int batch) override;
  // Last stage: softmax cross-entropy of the slot's output (logits); returns the summed loss and
  // sets *correct (may be null). Writes d(loss)/d(logits) of the mean loss times `grad_scale`
  // into the slot's dout: with grad_scale = batch / mini-batch the micro-batches' gradients sum
  // to the mini-batch mean's.
  double loss(int slot, const int32_t* labels, int batch, float grad_scale, int* correct);
  // Last stage, evaluation: the summed loss of the slot's output and *correct, no gradient.
  double evaluationLoss(int slot, const int32_t* labels, int batch, int* correct);
  // loss() and evaluationLoss() added to the stage's losses (StageCompute).
  void addLoss(int slot, const int32_t* labels, int rows, float grad_scale) override;
  void addEvaluationLoss(int slot, const int32_t* labels, int rows) override;
  StageLosses takeLosses() override;
  // Where slot `slot`'s d(loss)/d(output) rows go before backward() (stages but the last).
  float* outputGrad(int slot) override;
  // Adds the slot's parameter gradients to grads(); returns d(loss)/d(input), valid until the
  // slot is used again, or nullptr on the first stage (nothing to send back).
  const float* backward(int slot, int batch) override;
  void zeroGrads() override;
  void clearGrads() override;
  // Makes the layers compute with `weights` (params()' layout) instead of params() until called
  // again with params(): a backward on stashed weights without copying them in and out.
  void useWeights(std::span<float> weights) override;
  std::span<float> weightVersion(int version) override;
  void copyWeights(std::span<const float> from, std::span<float> to) override;

  // Seconds of forward plus backward of each of this stage's layers on a full micro-batch, the
  // fastest of `repeats` runs: what a balanced partition weighs layers by. Uses slot 0 and
  // leaves the gradients zeroed.
  std::vector<double> measureLayerSeconds(int repeats);

  // Sums `count` floats over the tensor-parallel group, in place (the caller's communicator).
  using TensorReducer = std::function<core::Status(float* data, size_t count)>;
  // Needed when the stage holds split layers; forward() and backward() call it where a layer
  // pair needs the group's sum. Its first error is kept: check status() after each call.
  void setTensorReducer(TensorReducer reducer) { reducer_ = std::move(reducer); }
  bool tensorParallel() const { return tensor_parallel_; }
  // Ok, or the reducer's first error (the stage's results since then are not to be used).
  const core::Status& status() const override { return tensor_status_; }

  // Bytes of activation buffers allocated so far (the peak: slots are never freed).
  size_t activationBytes() const { return activation_bytes_; }

 private:
  struct Slot {
    std::vector<AlignedFloats> acts;  // [0] input, [i + 1] layer i's output
    AlignedFloats dout, din;
    std::vector<std::vector<uint8_t>> state;  // per layer: what its forward kept (stateBytes)
    int batch = 0;                            // of the last forward; 0 = nothing to backpropagate
  };
  ModelStage() = default;
  Slot& slot(int index);
  void reduce(float* data, size_t count);  // through reducer_, keeping its first error
  void useSlotState(Slot& s);              // points every layer at the slot's saved state

  std::vector<std::unique_ptr<Layer>> layers_;
  std::string signature_;
  size_t first_layer_ = 0;
  bool last_ = false;
  size_t input_size_ = 0, output_size_ = 0;
  int num_classes_ = 0;
  int micro_batch_ = 0;
  std::vector<size_t> layer_offset_;
  std::vector<ParamView> views_;
  AlignedFloats params_, grads_;
  AlignedFloats dscratch_[2];  // gradients between this stage's layers
  std::vector<Slot> slots_;
  size_t activation_bytes_ = 0;
  bool tensor_parallel_ = false;
  bool zero_pending_ = false;  // zeroGrads() since the last backward: grads_ hold stale values
  TensorReducer reducer_;
  core::Status tensor_status_;
  StageLosses losses_;
  std::vector<AlignedFloats> versions_;  // weight versions 1..n
};

}  // namespace ringmaster::trainer::model
