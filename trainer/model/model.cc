#include "trainer/model/model.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "trainer/model/check.h"
#include "trainer/model/conv_layer.h"
#include "trainer/model/dense_layer.h"
#include "trainer/model/init.h"
#include "trainer/model/layer.h"
#include "trainer/model/softmax_cross_entropy.h"

namespace ringmaster::trainer::model {
namespace {

constexpr int kConvKernel = 5;
// sgemm takes int dimensions; keep every matrix and the flat buffers well inside that.
constexpr size_t kMaxElements = size_t{1} << 31;

// kind + index, e.g. "fc2" or "-c16". (Built by append: GCC 12 at -O3 warns falsely on
// "short literal" + std::string&&.)
std::string layerName(const char* kind, int index) {
  std::string name = kind;
  name += std::to_string(index);
  return name;
}

core::Status positive(const std::string& field, int value) {
  if (value >= 1) return core::Status::Ok();
  return core::invalidArgument(field + ": must be >= 1, got " + std::to_string(value));
}

}  // namespace

Model::~Model() = default;

core::Result<std::unique_ptr<Model>> Model::create(const ModelConfig& config, uint64_t seed,
                                                   int max_batch) {
  std::unique_ptr<Model> m(new Model());
  RM_RETURN_IF_ERROR(m->build(config, seed, max_batch));
  return m;
}

core::Status Model::build(const ModelConfig& config, uint64_t seed, int max_batch) {
  RM_RETURN_IF_ERROR(positive("max_batch", max_batch));
  RM_RETURN_IF_ERROR(positive("model.inputChannels", config.input_channels));
  RM_RETURN_IF_ERROR(positive("model.inputHeight", config.input_height));
  RM_RETURN_IF_ERROR(positive("model.inputWidth", config.input_width));
  if (config.num_classes < 2) {
    return core::invalidArgument("model.numClasses: must be >= 2, got " +
                                 std::to_string(config.num_classes));
  }
  const int c0 = config.input_channels, h0 = config.input_height, w0 = config.input_width;
  if (static_cast<size_t>(c0) * h0 >= kMaxElements ||
      static_cast<size_t>(c0) * h0 * w0 >= kMaxElements) {
    return core::invalidArgument("model: input " + std::to_string(c0) + "x" + std::to_string(h0) +
                                 "x" + std::to_string(w0) + " is too large");
  }
  input_size_ = static_cast<size_t>(c0) * h0 * w0;
  if (input_size_ * max_batch >= kMaxElements) {
    return core::invalidArgument("max_batch: " + std::to_string(max_batch) + " samples of " +
                                 std::to_string(input_size_) + " floats is too large");
  }
  num_classes_ = config.num_classes;
  max_batch_ = max_batch;

  int fc_index = 0;
  auto add_dense = [&](int in, int out, bool relu) {
    layers_.push_back(std::make_unique<DenseLayer>(layerName("fc", ++fc_index), in, out, relu));
  };
  if (config.type == "mlp") {
    signature_ = "mlp:" + std::to_string(input_size_);
    int width = static_cast<int>(input_size_);
    for (size_t i = 0; i < config.hidden.size(); ++i) {
      RM_RETURN_IF_ERROR(positive("model.hidden[" + std::to_string(i) + "]", config.hidden[i]));
      add_dense(width, config.hidden[i], /*relu=*/true);
      width = config.hidden[i];
      signature_ += layerName("-", width);
    }
    add_dense(width, num_classes_, /*relu=*/false);
  } else if (config.type == "cnn") {
    if (config.conv_channels.empty()) {
      return core::invalidArgument("model.convChannels: a cnn needs at least one conv block");
    }
    signature_ = "cnn:" + std::to_string(c0) + "x" + std::to_string(h0) + "x" + std::to_string(w0);
    int c = c0, h = h0, w = w0;
    for (size_t i = 0; i < config.conv_channels.size(); ++i) {
      const std::string field = "model.convChannels[" + std::to_string(i) + "]";
      RM_RETURN_IF_ERROR(positive(field, config.conv_channels[i]));
      if (h < 2 || w < 2) {
        return core::invalidArgument(field + ": the input is " + std::to_string(h) + "x" +
                                     std::to_string(w) + " here, too small for a 2x2 max-pool");
      }
      const size_t patch_rows = static_cast<size_t>(kConvKernel) * kConvKernel * c * h * w;
      const size_t conv_out = static_cast<size_t>(config.conv_channels[i]) * h * w;
      if (patch_rows >= kMaxElements || conv_out * max_batch >= kMaxElements) {
        return core::invalidArgument(field + ": " + std::to_string(config.conv_channels[i]) +
                                     " channels on " + std::to_string(h) + "x" + std::to_string(w) +
                                     " with max_batch " + std::to_string(max_batch) +
                                     " is too large");
      }
      layers_.push_back(
          std::make_unique<ConvReluPoolLayer>(layerName("conv", static_cast<int>(i) + 1), c, h, w,
                                              config.conv_channels[i], kConvKernel, max_batch));
      c = config.conv_channels[i];
      h /= 2;
      w /= 2;
      signature_ += layerName("-c", c);
    }
    int width = c * h * w;
    if (config.cnn_hidden < 0) {
      return core::invalidArgument("model.cnnHidden: must be >= 0 (0 = none), got " +
                                   std::to_string(config.cnn_hidden));
    }
    if (config.cnn_hidden > 0) {
      add_dense(width, config.cnn_hidden, /*relu=*/true);
      width = config.cnn_hidden;
      signature_ += layerName("-h", width);
    }
    add_dense(width, num_classes_, /*relu=*/false);
  } else {
    return core::invalidArgument("model.type: expected \"mlp\" or \"cnn\", got \"" + config.type +
                                 "\"");
  }
  signature_ += layerName("-", num_classes_);

  // Flat layout: layers in forward order, each its weight then its bias.
  size_t total = 0, max_act = 0, max_din = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layer_offset_.push_back(total);
    size_t count = 0;
    for (const ParamSpec& p : layers_[i]->paramSpecs()) {
      views_.push_back({p.name, total + count, p.count});
      count += p.count;
    }
    layer_count_.push_back(count);
    total += count;
    max_act = std::max({max_act, layers_[i]->inputSize(), layers_[i]->outputSize()});
    if (i > 0) max_din = std::max(max_din, layers_[i]->inputSize());
  }
  if (total >= kMaxElements || max_act * max_batch >= kMaxElements) {
    return core::invalidArgument("model: " + signature_ + " with max_batch " +
                                 std::to_string(max_batch) + " is too large (" +
                                 std::to_string(total) + " parameters)");
  }
  params_ = AlignedFloats(total);
  grads_ = AlignedFloats(total);
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->bind(params_.data() + layer_offset_[i], grads_.data() + layer_offset_[i]);
  }
  // One PRNG stream per tensor: resizing one layer leaves the others' init unchanged.
  size_t tensor = 0;
  for (const auto& layer : layers_) {
    for (const ParamSpec& p : layer->paramSpecs()) {
      Rng rng(seed, tensor);
      kaimingUniformInit(params_.span().subspan(views_[tensor].offset, p.count), p.fan_in, rng);
      ++tensor;
    }
  }

  const size_t mb = static_cast<size_t>(max_batch);
  acts_.emplace_back(mb * input_size_);
  for (const auto& layer : layers_) acts_.emplace_back(mb * layer->outputSize());
  for (AlignedFloats& d : dacts_) d = AlignedFloats(mb * max_din);
  dlogits_ = AlignedFloats(mb * num_classes_);
  return core::Status::Ok();
}

void Model::forwardLayers(const float* x, int batch) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(i == 0 ? x : acts_[i].data(), acts_[i + 1].data(), batch);
  }
}

float Model::forwardLoss(const float* x, const int32_t* labels, int batch, int* correct) {
  RM_MODEL_CHECK(batch >= 1 && batch <= max_batch_, "forwardLoss batch %d outside [1, %d]", batch,
                 max_batch_);
  // Our own copy: backward needs the input, and the caller may refill its buffer meanwhile.
  std::memcpy(acts_[0].data(), x, sizeof(float) * input_size_ * batch);
  forwardLayers(acts_[0].data(), batch);
  const double loss = softmaxCrossEntropy(acts_.back().data(), labels, batch, num_classes_,
                                          dlogits_.data(), correct);
  last_batch_ = batch;
  return static_cast<float>(loss / batch);
}

int Model::evaluate(const float* x, const int32_t* labels, int batch, double* loss_sum) {
  last_batch_ = 0;  // the activations no longer belong to the last forwardLoss
  int hits = 0;
  double loss = 0.0;
  for (int n0 = 0; n0 < batch; n0 += max_batch_) {
    const int n = std::min(max_batch_, batch - n0);
    forwardLayers(x + static_cast<size_t>(n0) * input_size_, n);
    int slice_hits = 0;
    loss += softmaxCrossEntropy(acts_.back().data(), labels + n0, n, num_classes_, nullptr,
                                &slice_hits);
    hits += slice_hits;
  }
  if (loss_sum != nullptr) *loss_sum += loss;
  return hits;
}

void Model::backward(const std::function<void(size_t offset, size_t count)>& on_ready) {
  RM_MODEL_CHECK(last_batch_ > 0, "backward() needs a forwardLoss() after the last evaluate()");
  const int batch = last_batch_;
  float* dout = dlogits_.data();
  int next = 0;
  for (size_t i = layers_.size(); i-- > 0;) {
    const float* in = acts_[i].data();
    const float* out = acts_[i + 1].data();
    layers_[i]->backwardParams(in, out, dout, batch);
    // The range is final: the caller may reduce it while we go on toward the input.
    if (on_ready) on_ready(layer_offset_[i], layer_count_[i]);
    if (i > 0) {
      float* din = dacts_[next].data();
      layers_[i]->backwardInput(in, out, dout, din, batch);
      dout = din;
      next ^= 1;
    }
  }
}

}  // namespace ringmaster::trainer::model
