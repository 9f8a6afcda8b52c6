#pragma once
// The trainer's network: an MLP or a small CNN for 1x28x28 images, with fused softmax
// cross-entropy, forward/backward on the CPU through OpenBLAS sgemm.
//
//   MLP: [Linear+ReLU] per hidden width, then Linear to the classes.
//   CNN: per entry of conv_channels a block conv(5x5, pad 2)+ReLU+maxpool(2x2, floor), then an
//        optional Linear(cnn_hidden)+ReLU, then Linear to the classes.
//
// Parameters and gradients live in two flat float buffers with the same layout: each layer's
// weight then bias, layers in forward order, so later layers sit at higher offsets (see
// paramViews()). Linear weights are [out, in] as in PyTorch; conv weights are [out, kh, kw, in]
// (PyTorch: [out, in, kh, kw]). Init is PyTorch's default, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
// for weights and biases, from a seeded PRNG of our own.
//
// Ownership: a Model owns its parameters, gradients and every activation/workspace buffer,
// all sized at create() for max_batch; forwardLoss/backward/evaluate allocate nothing.
// forwardLoss copies the input batch, so the caller may reuse its buffer right away.
// Thread-safety: none; one Model per rank, used by one thread at a time. backward() runs the
// on_ready callback on the calling thread; the callback may hand the ready gradient range to
// another thread, which may read and write that range (and only that range) while backward
// continues: backward never touches a range after announcing it.
// Failure: create() returns kInvalidArgument naming the bad field as the TrainingJob spec
// spells it ("model.hidden[1]: must be >= 1, got 0", "model.convChannels[2]: ...").
// Broken call contracts (batch outside [1, max_batch] in forwardLoss, a label outside
// [0, num_classes), backward() without a preceding forwardLoss) are programming errors: the
// process prints the reason and aborts.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/model/aligned_buffer.h"

namespace ringmaster::trainer::model {

enum class ModelKind { kMlp, kCnn };
// "mlp" | "cnn": how signatures and messages spell it.
const char* modelKindName(ModelKind kind);

struct ModelConfig {
  ModelKind type = ModelKind::kMlp;
  std::vector<int> hidden = {512, 512};       // mlp hidden widths
  std::vector<int> conv_channels = {16, 32};  // cnn: conv(5x5, pad 2)+ReLU+maxpool(2) blocks
  int cnn_hidden = 0;  // optional FC hidden width for cnn before the classifier; 0 = none
  int input_channels = 1, input_height = 28, input_width = 28, num_classes = 10;
};

// One parameter tensor inside the flat buffer, e.g. {"fc1.weight", 0, 401408}.
struct ParamView {
  std::string name;
  size_t offset;
  size_t count;
};

class Layer;  // layer.h (private to the model)

class Model {
 public:
  // Builds the network for batches of up to max_batch samples; same config and seed give
  // bit-identical parameters on every rank.
  static core::Result<std::unique_ptr<Model>> create(const ModelConfig& config, uint64_t seed,
                                                     int max_batch);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::span<float> params() { return params_.span(); }                 // all parameters, contiguous
  std::span<float> grads() { return grads_.span(); }                   // same layout as params()
  const std::vector<ParamView>& paramViews() const { return views_; }  // forward order
  std::string signature() const { return signature_; }                 // "mlp:784-512-512-10"
  size_t inputSize() const { return input_size_; }                     // floats per sample
  int numClasses() const { return num_classes_; }
  int maxBatch() const { return max_batch_; }

  // Forward on x[batch * inputSize()] (row per sample); returns the mean softmax
  // cross-entropy and sets *correct (may be null) to the number of argmax hits. Keeps what
  // backward() needs. 1 <= batch <= maxBatch().
  float forwardLoss(const float* x, const int32_t* labels, int batch, int* correct);

  // Forward only; returns the number of argmax hits and adds the summed (not mean) loss to
  // *loss_sum when non-null. Any batch >= 0 (processed in slices of maxBatch()). Invalidates
  // the state of the last forwardLoss: call forwardLoss again before backward().
  int evaluate(const float* x, const int32_t* labels, int batch, double* loss_sum = nullptr);

  // Backward of the last forwardLoss: overwrites grads() with d(mean loss)/d(params). Calls
  // on_ready(offset, count) as soon as each layer's gradients are final, last layer first, so
  // the ranges arrive from the end of the buffer toward its start; together they cover the
  // buffer exactly once. on_ready may be empty.
  void backward(const std::function<void(size_t offset, size_t count)>& on_ready);

 private:
  Model() = default;
  core::Status build(const ModelConfig& config, uint64_t seed, int max_batch);
  void forwardLayers(const float* x, int batch);

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> layer_offset_;  // first flat index of each layer's parameters
  std::vector<size_t> layer_count_;   // number of parameters of each layer
  std::vector<ParamView> views_;
  std::string signature_;
  size_t input_size_ = 0;
  int num_classes_ = 0;
  int max_batch_ = 0;
  int last_batch_ = 0;  // batch of the last forwardLoss; 0 = nothing to backpropagate

  AlignedFloats params_, grads_;
  // acts_[0]: the input copy; acts_[i + 1]: layer i's output. dacts_: ping-pong gradients
  // w.r.t. activations; dlogits_: the loss gradient written by forwardLoss. All for max_batch_.
  std::vector<AlignedFloats> acts_;
  AlignedFloats dacts_[2];
  AlignedFloats dlogits_;
};

}  // namespace ringmaster::trainer::model
