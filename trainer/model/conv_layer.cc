#include "trainer/model/conv_layer.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "trainer/model/pool.h"

namespace ringmaster::trainer::model {

ConvReluPoolLayer::ConvReluPoolLayer(std::string name, int cin, int h, int w, int cout, int k,
                                     int max_batch, size_t cols_budget_floats)
    : name_(std::move(name)),
      g_{cin, h, w, k},
      cout_(cout),
      ph_(h / 2),
      pw_(w / 2),
      kdim_(k * k * cin) {
  const size_t per_sample = static_cast<size_t>(kdim_) * h * w;
  chunk_ = static_cast<int>(std::clamp<size_t>(cols_budget_floats / per_sample, 1, max_batch));
  xpad_ = AlignedFloats(g_.paddedSize() * chunk_);
  dxpad_ = AlignedFloats(g_.paddedSize() * chunk_);
  cols_ = AlignedFloats(per_sample * chunk_);
  z_ = AlignedFloats(static_cast<size_t>(cout_) * h * w * chunk_);
  pooled_ = AlignedFloats(outputSize());
  own_route_.resize(static_cast<size_t>(max_batch) * outputSize());
  route_ = own_route_.data();
}

std::vector<ParamSpec> ConvReluPoolLayer::paramSpecs() const {
  return {{name_ + ".weight", static_cast<size_t>(cout_) * kdim_, kdim_},
          {name_ + ".bias", static_cast<size_t>(cout_), kdim_}};
}

void ConvReluPoolLayer::bind(float* params, float* grads) {
  w_ = params;
  b_ = params + static_cast<size_t>(cout_) * kdim_;
  dw_ = grads;
  db_ = grads + static_cast<size_t>(cout_) * kdim_;
}

void ConvReluPoolLayer::unroll(const float* in, int n0, int s) {
  nchwToPaddedNhwc(g_, in + n0 * inputSize(), s, xpad_.data());
  im2col(g_, xpad_.data(), s, cols_.data());
}

void ConvReluPoolLayer::forward(const float* in, float* out, int batch) {
  const size_t hw = static_cast<size_t>(g_.h) * g_.w;
  const int phw = ph_ * pw_;
  for (int n0 = 0; n0 < batch; n0 += chunk_) {
    const int s = std::min(chunk_, batch - n0);
    unroll(in, n0, s);
    // z[pixels, cout] = cols[pixels, kdim] * W^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(hw) * s, cout_, kdim_,
                1.0f, cols_.data(), kdim_, w_, kdim_, 0.0f, z_.data(), cout_);
    for (int n = 0; n < s; ++n) {
      const size_t sample = static_cast<size_t>(n0 + n) * outputSize();
      poolForward(z_.data() + n * hw * cout_, b_, g_.h, g_.w, cout_, pooled_.data(),
                  route_ + sample);
      transpose(pooled_.data(), phw, cout_, out + sample);  // -> NCHW
    }
  }
}

void ConvReluPoolLayer::scatterPoolGrad(const float* dout, int n0, int s, bool add_bias_grad) {
  const size_t hw = static_cast<size_t>(g_.h) * g_.w;
  const int phw = ph_ * pw_;
  // Odd sizes leave a last row/column that no window covers: its gradient is 0.
  if (g_.h % 2 != 0 || g_.w % 2 != 0) std::memset(z_.data(), 0, sizeof(float) * hw * s * cout_);
  for (int n = 0; n < s; ++n) {
    const size_t sample = static_cast<size_t>(n0 + n) * outputSize();
    transpose(dout + sample, cout_, phw, pooled_.data());  // NCHW -> [ph*pw, cout]
    poolBackward(pooled_.data(), route_ + sample, g_.h, g_.w, cout_, z_.data() + n * hw * cout_,
                 add_bias_grad ? db_ : nullptr);
  }
}

void ConvReluPoolLayer::backwardParams(const float* in, const float* out, float* dout, int batch,
                                       bool accumulate) {
  const int hw = g_.h * g_.w;
  if (!accumulate) std::memset(db_, 0, sizeof(float) * cout_);  // scatterPoolGrad adds into it
  for (int n0 = 0; n0 < batch; n0 += chunk_) {
    const int s = std::min(chunk_, batch - n0);
    unroll(in, n0, s);
    scatterPoolGrad(dout, n0, s, /*add_bias_grad=*/true);
    // dW[cout, kdim] (+)= dz^T[cout, pixels] * cols[pixels, kdim]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, cout_, kdim_, hw * s, 1.0f, z_.data(),
                cout_, cols_.data(), kdim_, n0 == 0 && !accumulate ? 0.0f : 1.0f, dw_, kdim_);
  }
}

void ConvReluPoolLayer::backwardInput(const float* in, const float* out, float* dout, float* din,
                                      int batch) {
  const int hw = g_.h * g_.w;
  for (int n0 = 0; n0 < batch; n0 += chunk_) {
    const int s = std::min(chunk_, batch - n0);
    scatterPoolGrad(dout, n0, s, /*add_bias_grad=*/false);
    // dcols[pixels, kdim] = dz[pixels, cout] * W[cout, kdim]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, hw * s, kdim_, cout_, 1.0f, z_.data(),
                cout_, w_, kdim_, 0.0f, cols_.data(), kdim_);
    std::memset(dxpad_.data(), 0, sizeof(float) * g_.paddedSize() * s);
    col2imAdd(g_, cols_.data(), s, dxpad_.data());
    paddedNhwcToNchw(g_, dxpad_.data(), s, din + n0 * inputSize());
  }
}

}  // namespace ringmaster::trainer::model
