#include "trainer/model/dense_layer.h"

#include <cblas.h>

#include <utility>

#include "trainer/model/kernels.h"

namespace ringmaster::trainer::model {

DenseLayer::DenseLayer(std::string name, int in, int out, bool relu, TensorRole role,
                       TensorShard shard)
    : name_(std::move(name)),
      full_in_(in),
      full_out_(out),
      in_(role == TensorRole::kRow ? in / shard.size : in),
      out_(role == TensorRole::kColumn ? out / shard.size : out),
      relu_(relu),
      role_(role),
      shard_(shard) {}

std::vector<ParamSpec> DenseLayer::paramSpecs() const {
  ParamSpec weight{name_ + ".weight", static_cast<size_t>(out_) * in_, full_in_};
  ParamSpec bias{name_ + ".bias", static_cast<size_t>(out_), full_in_};
  const size_t fi = static_cast<size_t>(full_in_), fo = static_cast<size_t>(full_out_);
  const size_t t = static_cast<size_t>(shard_.rank);
  if (role_ == TensorRole::kColumn) {
    weight.block = TensorBlock{fo, fi, t * out_, static_cast<size_t>(out_), 0, fi};
    bias.block = TensorBlock{1, fo, 0, 1, t * out_, static_cast<size_t>(out_)};
  } else if (role_ == TensorRole::kRow) {
    weight.block = TensorBlock{fo, fi, 0, fo, t * in_, static_cast<size_t>(in_)};
  }
  return {weight, bias};
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
  // A row-parallel part is a partial sum: bias and ReLU wait for the group's (finishForward).
  if (role_ != TensorRole::kRow) finishForward(out, batch);
}

void DenseLayer::finishForward(float* out, int batch) {
  if (relu_) {
    kernels::biasRelu(out, b_, batch, out_);
  } else {
    kernels::biasAdd(out, b_, batch, out_);
  }
}

void DenseLayer::backwardParams(const float* in, const float* out, float* dout, int batch,
                                bool accumulate) {
  // dout becomes dz (the gradient before the ReLU); db (+)= column sums of dz.
  if (relu_) {
    kernels::reluMaskColumnSums(dout, out, db_, batch, out_, accumulate);
  } else {
    kernels::columnSums(dout, db_, batch, out_, accumulate);
  }
  // dW[out, in] (+)= dz^T[out, batch] * in[batch, in]
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out_, in_, batch, 1.0f, dout, out_, in, in_,
              accumulate ? 1.0f : 0.0f, dw_, in_);
}

void DenseLayer::backwardInput(const float* in, const float* out, float* dout, float* din,
                               int batch) {
  // din[batch, in] = dz[batch, out] * W[out, in]
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in_, out_, 1.0f, dout, out_, w_,
              in_, 0.0f, din, in_);
}

}  // namespace ringmaster::trainer::model
