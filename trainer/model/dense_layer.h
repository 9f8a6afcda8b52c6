#pragma once
// Fully connected layer y = x W^T + b, optionally followed by ReLU (fused into the bias pass).
// W is [out, in] (PyTorch's layout), b is [out]. One sgemm per pass: forward, dW, dx.
//
// Tensor parallelism splits a pair of layers over the T ranks of a group (Megatron's MLP):
//   column  rank t holds output rows [t * out/T, (t + 1) * out/T) of W and b: its forward is a
//           smaller dense layer (bias and ReLU included); its input gradient is partial, summed
//           over the group by the caller.
//   row     rank t holds input columns [t * in/T, (t + 1) * in/T) of W and the whole b: its
//           forward is the partial product only; the caller sums it over the group, then
//           finishForward() adds b and applies the ReLU. Backward needs nothing from the group.
//
// Ownership: keeps no activations of its own (the model owns in/out); parameters are views
// into the model's flat buffers (bind()). Thread-safety: none. Failure: none.

#include <string>

#include "trainer/model/layer.h"

namespace ringmaster::trainer::model {

enum class TensorRole { kNone, kColumn, kRow };

class DenseLayer : public Layer {
 public:
  // `in` and `out` are the whole layer's; with a role, this rank holds its part of `shard`.
  DenseLayer(std::string name, int in, int out, bool relu, TensorRole role = TensorRole::kNone,
             TensorShard shard = {});

  size_t inputSize() const override { return in_; }
  size_t outputSize() const override { return out_; }
  std::vector<ParamSpec> paramSpecs() const override;
  void bind(float* params, float* grads) override;
  void forward(const float* in, float* out, int batch) override;
  void backwardParams(const float* in, const float* out, float* dout, int batch,
                      bool accumulate) override;
  void backwardInput(const float* in, const float* out, float* dout, float* din,
                     int batch) override;
  bool reducesOutput() const override { return role_ == TensorRole::kRow; }
  void finishForward(float* out, int batch) override;
  bool reducesInputGradient() const override { return role_ == TensorRole::kColumn; }

 private:
  std::string name_;
  int full_in_, full_out_;  // the whole layer
  int in_, out_;            // this rank's part
  bool relu_;
  TensorRole role_;
  TensorShard shard_;
  float* w_ = nullptr;   // [out, in]
  float* b_ = nullptr;   // [out]
  float* dw_ = nullptr;  // [out, in]
  float* db_ = nullptr;  // [out]
};

}  // namespace ringmaster::trainer::model
