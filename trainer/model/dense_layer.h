#pragma once
// Fully connected layer y = x W^T + b, optionally followed by ReLU (fused into the bias pass).
// W is [out, in] (PyTorch's layout), b is [out]. One sgemm per pass: forward, dW, dx.
//
// Ownership: keeps no activations of its own (the model owns in/out); parameters are views
// into the model's flat buffers (bind()). Thread-safety: none. Failure: none.

#include <string>

#include "trainer/model/layer.h"

namespace ringmaster::trainer::model {

class DenseLayer : public Layer {
 public:
  DenseLayer(std::string name, int in, int out, bool relu);

  size_t inputSize() const override { return in_; }
  size_t outputSize() const override { return out_; }
  std::vector<ParamSpec> paramSpecs() const override;
  void bind(float* params, float* grads) override;
  void forward(const float* in, float* out, int batch) override;
  void backwardParams(const float* in, const float* out, float* dout, int batch) override;
  void backwardInput(const float* in, const float* out, float* dout, float* din,
                     int batch) override;

 private:
  std::string name_;
  int in_, out_;
  bool relu_;
  float* w_ = nullptr;   // [out, in]
  float* b_ = nullptr;   // [out]
  float* dw_ = nullptr;  // [out, in]
  float* db_ = nullptr;  // [out]
};

}  // namespace ringmaster::trainer::model
