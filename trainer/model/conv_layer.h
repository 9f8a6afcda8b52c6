#pragma once
// conv(k x k, stride 1, zero pad k/2) + bias + ReLU + maxpool(2x2, stride 2, floor), fused:
// pool(relu(z + b)) == relu(max(z) + b), so the epilogue of each conv sgemm writes only the
// pooled output and, per output, where its gradient goes: the window position of the max, or
// nowhere when the ReLU was off (pool.h). Nothing else is kept for backward (im2col is
// recomputed there: cheaper than storing it for the whole batch).
//
// In and out are NCHW per sample (in [cin, h, w], out [cout, h/2, w/2], PyTorch's flatten
// order). Inside, samples go in chunks whose im2col matrix fits a cache budget: the chunk is
// copied into a zero-bordered NHWC buffer, unrolled into patch rows (see im2col.h), and one
// sgemm per chunk computes [pixels, cout] (forward), dW, and d(patch rows) for the input.
// The weight is [cout, k, k, cin] (patch-row order; PyTorch's is [cout, cin, k, k]).
//
// Ownership: owns its workspace (padded input, patch rows, conv output of one chunk, pool
// routes), sized for max_batch at construction. Thread-safety: none. Failure: none.

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/aligned_buffer.h"
#include "trainer/model/im2col.h"
#include "trainer/model/layer.h"

namespace ringmaster::trainer::model {

class ConvReluPoolLayer : public Layer {
 public:
  // Default budget for one chunk's patch rows: 512 KiB of floats, well inside an L2 cache.
  static constexpr size_t kDefaultColsBudgetFloats = 128 * 1024;

  // k odd. cols_budget_floats: test knob; a tiny budget forces one sample per chunk.
  ConvReluPoolLayer(std::string name, int cin, int h, int w, int cout, int k, int max_batch,
                    size_t cols_budget_floats = kDefaultColsBudgetFloats);

  size_t inputSize() const override { return static_cast<size_t>(g_.cin) * g_.h * g_.w; }
  size_t outputSize() const override { return static_cast<size_t>(cout_) * ph_ * pw_; }
  std::vector<ParamSpec> paramSpecs() const override;
  void bind(float* params, float* grads) override;
  void forward(const float* in, float* out, int batch) override;
  void backwardParams(const float* in, const float* out, float* dout, int batch,
                      bool accumulate) override;
  void backwardInput(const float* in, const float* out, float* dout, float* din,
                     int batch) override;

  // The pool routes of the last forward.
  size_t stateBytes() const override { return own_route_.size(); }
  void useState(uint8_t* state) override { route_ = state != nullptr ? state : own_route_.data(); }

  int chunkSamples() const { return chunk_; }

 private:
  // Patch rows of samples [n0, n0 + s) into cols_.
  void unroll(const float* in, int n0, int s);
  // The pre-pool gradient of samples [n0, n0 + s) into z_ ([s*h*w, cout]); adds the bias
  // gradient into db_ when add_bias_grad.
  void scatterPoolGrad(const float* dout, int n0, int s, bool add_bias_grad);

  std::string name_;
  ConvGeometry g_;
  int cout_, ph_, pw_;  // pooled height/width
  int kdim_;            // k * k * cin
  int chunk_;           // samples per sgemm
  float* w_ = nullptr;  // [cout, k, k, cin]
  float* b_ = nullptr;  // [cout]
  float* dw_ = nullptr;
  float* db_ = nullptr;
  AlignedFloats xpad_;              // [chunk, h+2p, w+2p, cin]; the border stays zero
  AlignedFloats dxpad_;             // same shape: the input gradient before un-padding
  AlignedFloats cols_;              // [chunk*h*w, kdim]: patch rows, or their gradient
  AlignedFloats z_;                 // [chunk*h*w, cout]: conv output, or its gradient
  AlignedFloats pooled_;            // [ph*pw, cout]: one sample's output, or its gradient, in NHWC
  std::vector<uint8_t> own_route_;  // [max_batch, ph*pw, cout]: where the max was, or kReluOff
  uint8_t* route_ = nullptr;        // own_route_, or a pipeline slot's copy (useState)
};

}  // namespace ringmaster::trainer::model
