#include "trainer/model/model.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "trainer/model/check.h"
#include "trainer/model/layer.h"
#include "trainer/model/network.h"
#include "trainer/model/softmax_cross_entropy.h"

namespace ringmaster::trainer::model {

const char* modelKindName(ModelKind kind) { return kind == ModelKind::kCnn ? "cnn" : "mlp"; }

Model::~Model() = default;

core::Result<std::unique_ptr<Model>> Model::create(const ModelConfig& config, uint64_t seed,
                                                   int max_batch) {
  std::unique_ptr<Model> m(new Model());
  RM_RETURN_IF_ERROR(m->build(config, seed, max_batch));
  return m;
}

core::Status Model::build(const ModelConfig& config, uint64_t seed, int max_batch) {
  RM_ASSIGN_OR_RETURN(Network net, buildNetwork(config, max_batch));
  ParameterLayout layout = layoutParameters(net, 0, net.layers.size());
  layer_offset_ = std::move(layout.layer_offset);
  layer_count_ = std::move(layout.layer_count);
  views_ = std::move(layout.views);
  const size_t max_din = layout.max_inner_input;
  params_ = AlignedFloats(layout.total);
  grads_ = AlignedFloats(layout.total);
  initParameters(net, 0, net.layers.size(), seed, params_.span());

  layers_ = std::move(net.layers);
  signature_ = std::move(net.signature);
  input_size_ = net.input_size;
  num_classes_ = net.num_classes;
  max_batch_ = max_batch;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->bind(params_.data() + layer_offset_[i], grads_.data() + layer_offset_[i]);
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
    layers_[i]->backwardParams(in, out, dout, batch, /*accumulate=*/false);
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
