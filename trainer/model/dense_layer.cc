#include "trainer/model/dense_layer.h"

#include <cblas.h>

#include <utility>

#include "trainer/model/kernels.h"

namespace ringmaster::trainer::model {

DenseLayer::DenseLayer(std::string name, int in, int out, bool relu)
    : name_(std::move(name)), in_(in), out_(out), relu_(relu) {}

std::vector<ParamSpec> DenseLayer::paramSpecs() const {
  return {{name_ + ".weight", static_cast<size_t>(out_) * in_, in_},
          {name_ + ".bias", static_cast<size_t>(out_), in_}};
}

void DenseLayer::bind(float* params, float* grads) {
  w_ = params;
  b_ = params + static_cast<size_t>(out_) * in_;
  dw_ = grads;
  db_ = grads + static_cast<size_t>(out_) * in_;
}

void DenseLayer::forward(const float* in, float* out, int batch) {
  // out[batch, out] = in[batch, in] * W^T
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out_, in_, 1.0f, in, in_, w_, in_,
              0.0f, out, out_);
  if (relu_) {
    kernels::biasRelu(out, b_, batch, out_);
  } else {
    kernels::biasAdd(out, b_, batch, out_);
  }
}

void DenseLayer::backwardParams(const float* in, const float* out, float* dout, int batch) {
  // dout becomes dz (the gradient before the ReLU); db = column sums of dz.
  if (relu_) {
    kernels::reluMaskColumnSums(dout, out, db_, batch, out_);
  } else {
    kernels::columnSums(dout, db_, batch, out_);
  }
  // dW[out, in] = dz^T[out, batch] * in[batch, in]
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_, in_, batch, 1.0f, dout, out_, in, in_,
              0.0f, dw_, in_);
}

void DenseLayer::backwardInput(const float* in, const float* out, float* dout, float* din,
                               int batch) {
  // din[batch, in] = dz[batch, out] * W[out, in]
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in_, out_, 1.0f, dout, out_, w_,
              in_, 0.0f, din, in_);
}

}  // namespace ringmaster::trainer::model
