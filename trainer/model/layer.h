#pragma once
// The layer seam inside the model (not part of the trainer's API). A layer maps a batch of
// per-sample rows of inputSize() floats to rows of outputSize() floats and owns any workspace
// it needs, sized for max_batch at construction. Its parameters live in the model's flat
// buffers: bind() hands it its slice of params and grads.
//
// Backward is split in two so the model can announce a layer's gradients as ready between
// them: backwardParams() writes the parameter gradients (overwriting them, or adding to them so
// that micro-batches accumulate without a pass of their own), backwardInput() then
// writes the gradient w.r.t. the input. Both receive the same in/out of the last forward.
//
// Thread-safety: none. Failure: none at run time (shapes are checked when the model is built).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringmaster::trainer::model {

// Where a tensor-parallel layer's part sits in the whole tensor: rows [row0, row0 + rows) and
// columns [col0, col0 + cols) of a [full_rows, full_cols] matrix (a bias is one row). The init
// draws the whole tensor and keeps the block, so the parts of all ranks are the unsplit values.
struct TensorBlock {
  size_t full_rows = 0, full_cols = 0;
  size_t row0 = 0, rows = 0, col0 = 0, cols = 0;
};

struct ParamSpec {
  std::string name;  // "fc1.weight"
  size_t count;      // of this rank's part
  int fan_in;        // of the whole layer, for the init bound 1/sqrt(fan_in)
  std::optional<TensorBlock> block = std::nullopt;  // set when the layer holds a part
};

// This rank's place in a tensor-parallel group: `rank` of `size` ranks split each layer pair.
struct TensorShard {
  int rank = 0;
  int size = 1;
};

class Layer {
 public:
  virtual ~Layer() = default;

  virtual size_t inputSize() const = 0;                   // floats per sample
  virtual size_t outputSize() const = 0;                  // floats per sample
  virtual std::vector<ParamSpec> paramSpecs() const = 0;  // weight then bias

  // params/grads point at this layer's slice (sum of paramSpecs() counts) of the flat buffers.
  virtual void bind(float* params, float* grads) = 0;

  // out[batch * outputSize()] from in[batch * inputSize()].
  virtual void forward(const float* in, float* out, int batch) = 0;
  // dout: d(loss)/d(out); the layer may overwrite it (it becomes the pre-activation gradient),
  // and backwardInput() relies on what backwardParams() left there.
  virtual void backwardParams(const float* in, const float* out, float* dout, int batch,
                              bool accumulate) = 0;
  // din[batch * inputSize()] = d(loss)/d(in). Call after backwardParams().
  virtual void backwardInput(const float* in, const float* out, float* dout, float* din,
                             int batch) = 0;

  // What forward leaves for backward beyond in and out (max_batch rows' worth), in bytes; 0 for
  // layers that keep nothing. A pipeline stage keeps several micro-batches in flight, so it
  // gives each its own copy: useState() makes forward write, and backward read, `state` until
  // the next call (by default the layer's own buffer).
  virtual size_t stateBytes() const { return 0; }
  virtual void useState(uint8_t* state) { (void)state; }

  // Tensor parallelism (Megatron's MLP): a row-parallel layer's forward leaves each rank a
  // partial sum of the output; the caller sums it over the group and then calls
  // finishForward() (bias, ReLU). A column-parallel layer's input gradient is partial; the
  // caller sums it over the group after backwardInput().
  virtual bool reducesOutput() const { return false; }
  virtual void finishForward(float* out, int batch) {
    (void)out;
    (void)batch;
  }
  virtual bool reducesInputGradient() const { return false; }
};

}  // namespace ringmaster::trainer::model
