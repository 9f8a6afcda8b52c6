#pragma once
// The layer seam inside the model (not part of the trainer's API). A layer maps a batch of
// per-sample rows of inputSize() floats to rows of outputSize() floats and owns any workspace
// it needs, sized for max_batch at construction. Its parameters live in the model's flat
// buffers: bind() hands it its slice of params and grads.
//
// Backward is split in two so the model can announce a layer's gradients as ready between
// them: backwardParams() writes the parameter gradients (overwriting), backwardInput() then
// writes the gradient w.r.t. the input. Both receive the same in/out of the last forward.
//
// Thread-safety: none. Failure: none at run time (shapes are checked when the model is built).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringmaster::trainer::model {

struct ParamSpec {
  std::string name;  // "fc1.weight"
  size_t count;
  int fan_in;  // for the init bound 1/sqrt(fan_in)
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
  virtual void backwardParams(const float* in, const float* out, float* dout, int batch) = 0;
  // din[batch * inputSize()] = d(loss)/d(in). Call after backwardParams().
  virtual void backwardInput(const float* in, const float* out, float* dout, float* din,
                             int batch) = 0;

  // What forward leaves for backward beyond in and out (max_batch rows' worth), in bytes; 0 for
  // layers that keep nothing. A pipeline stage keeps several micro-batches in flight, so it
  // gives each its own copy: useState() makes forward write, and backward read, `state` until
  // the next call (by default the layer's own buffer).
  virtual size_t stateBytes() const { return 0; }
  virtual void useState(uint8_t* state) { (void)state; }
};

}  // namespace ringmaster::trainer::model
