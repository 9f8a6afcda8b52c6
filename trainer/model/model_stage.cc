#include "trainer/model/model_stage.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "trainer/model/check.h"
#include "trainer/model/layer.h"
#include "trainer/model/network.h"
#include "trainer/model/softmax_cross_entropy.h"

namespace ringmaster::trainer::model {

ModelStage::~ModelStage() = default;

core::Result<int> ModelStage::layerCount(const ModelConfig& config) {
  RM_ASSIGN_OR_RETURN(Network net, buildNetwork(config, 1));
  return static_cast<int>(net.layers.size());
}

core::Result<std::unique_ptr<ModelStage>> ModelStage::create(const ModelConfig& config,
                                                             uint64_t seed, int micro_batch,
                                                             int first_layer, int end_layer,
                                                             int slots, TensorShard shard) {
  RM_ASSIGN_OR_RETURN(Network net, buildNetwork(config, micro_batch, shard));
  const int layers = static_cast<int>(net.layers.size());
  if (first_layer < 0 || end_layer > layers || first_layer >= end_layer) {
    return core::invalidArgument("pipeline stage: layers [" + std::to_string(first_layer) + ", " +
                                 std::to_string(end_layer) + ") are not a non-empty range of the " +
                                 std::to_string(layers) + " layers of " + net.signature);
  }
  if (slots < 1) {
    return core::invalidArgument("pipeline stage: needs at least one micro-batch slot, got " +
                                 std::to_string(slots));
  }
  if (shard.size > 1 && first_layer % 2 != 0) {
    return core::invalidArgument("pipeline stage: layer " + std::to_string(first_layer) +
                                 " is the second of a tensor-parallel pair; a stage starts at an "
                                 "even layer when parallelism.tensor is above 1");
  }
  std::unique_ptr<ModelStage> s(new ModelStage());
  s->tensor_parallel_ = shard.size > 1;
  s->signature_ = net.signature;
  s->first_layer_ = static_cast<size_t>(first_layer);
  s->last_ = end_layer == layers;
  s->micro_batch_ = micro_batch;
  s->num_classes_ = net.num_classes;
  s->input_size_ = net.layers[first_layer]->inputSize();
  s->output_size_ = net.layers[end_layer - 1]->outputSize();

  ParameterLayout layout = layoutParameters(net, first_layer, end_layer);
  s->layer_offset_ = std::move(layout.layer_offset);
  s->views_ = std::move(layout.views);
  const size_t total = layout.total, max_din = layout.max_inner_input;
  s->params_ = AlignedFloats(total);
  s->grads_ = AlignedFloats(total);
  initParameters(net, first_layer, end_layer, seed, s->params_.span());
  for (int i = first_layer; i < end_layer; ++i) {
    s->layers_.push_back(std::move(net.layers[i]));
  }
  // Layers add their gradients into grads_ (backwardParams' accumulate): micro-batches sum
  // there with no pass of their own.
  for (size_t i = 0; i < s->layers_.size(); ++i) {
    s->layers_[i]->bind(s->params_.data() + s->layer_offset_[i],
                        s->grads_.data() + s->layer_offset_[i]);
  }
  for (AlignedFloats& d : s->dscratch_)
    d = AlignedFloats(static_cast<size_t>(micro_batch) * max_din);
  s->slots_.resize(static_cast<size_t>(slots));
  return s;
}

ModelStage::Slot& ModelStage::slot(int index) {
  RM_MODEL_CHECK(index >= 0 && index < slots(), "stage slot %d outside [0, %d)", index, slots());
  Slot& s = slots_[static_cast<size_t>(index)];
  if (s.acts.empty()) {
    const size_t mb = static_cast<size_t>(micro_batch_);
    s.acts.emplace_back(mb * input_size_);
    for (const auto& layer : layers_) s.acts.emplace_back(mb * layer->outputSize());
    s.dout = AlignedFloats(mb * output_size_);
    if (!isFirst()) s.din = AlignedFloats(mb * input_size_);
    size_t floats = s.dout.size() + s.din.size();
    for (const AlignedFloats& a : s.acts) floats += a.size();
    activation_bytes_ += floats * sizeof(float);
    for (const auto& layer : layers_) {
      s.state.emplace_back(layer->stateBytes());
      activation_bytes_ += layer->stateBytes();
    }
  }
  return s;
}

void ModelStage::useSlotState(Slot& s) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!s.state[i].empty()) layers_[i]->useState(s.state[i].data());
  }
}

float* ModelStage::input(int index) { return slot(index).acts[0].data(); }

void ModelStage::loadInput(int index, const float* samples, int rows) {
  RM_MODEL_CHECK(rows >= 0 && rows <= micro_batch_, "stage input of %d rows outside [0, %d]", rows,
                 micro_batch_);
  std::copy(samples, samples + static_cast<size_t>(rows) * input_size_, input(index));
}

const float* ModelStage::forward(int index, int batch) {
  RM_MODEL_CHECK(batch >= 1 && batch <= micro_batch_, "stage forward batch %d outside [1, %d]",
                 batch, micro_batch_);
  Slot& s = slot(index);
  useSlotState(s);
  for (size_t i = 0; i < layers_.size(); ++i) {
    float* out = s.acts[i + 1].data();
    layers_[i]->forward(s.acts[i].data(), out, batch);
    if (layers_[i]->reducesOutput()) {
      reduce(out, static_cast<size_t>(batch) * layers_[i]->outputSize());
      layers_[i]->finishForward(out, batch);
    }
  }
  s.batch = batch;
  return s.acts.back().data();
}

double ModelStage::loss(int index, const int32_t* labels, int batch, float grad_scale,
                        int* correct) {
  Slot& s = slot(index);
  RM_MODEL_CHECK(last_, "loss() on a stage that does not end the network");
  RM_MODEL_CHECK(s.batch == batch, "loss() of batch %d after a forward of %d", batch, s.batch);
  const double sum = softmaxCrossEntropy(s.acts.back().data(), labels, batch, num_classes_,
                                         s.dout.data(), correct);
  if (grad_scale != 1.0f) {
    float* d = s.dout.data();
    const size_t n = static_cast<size_t>(batch) * output_size_;
    for (size_t i = 0; i < n; ++i) d[i] *= grad_scale;
  }
  return sum;
}

double ModelStage::evaluationLoss(int index, const int32_t* labels, int batch, int* correct) {
  Slot& s = slot(index);
  RM_MODEL_CHECK(last_, "evaluationLoss() on a stage that does not end the network");
  RM_MODEL_CHECK(s.batch == batch, "evaluationLoss() of batch %d after a forward of %d", batch,
                 s.batch);
  s.batch = 0;  // nothing to backpropagate
  return softmaxCrossEntropy(s.acts.back().data(), labels, batch, num_classes_, nullptr, correct);
}

void ModelStage::addLoss(int index, const int32_t* labels, int rows, float grad_scale) {
  int correct = 0;
  losses_.loss_sum += loss(index, labels, rows, grad_scale, &correct);
  losses_.correct += correct;
}

void ModelStage::addEvaluationLoss(int index, const int32_t* labels, int rows) {
  int correct = 0;
  losses_.loss_sum += evaluationLoss(index, labels, rows, &correct);
  losses_.correct += correct;
}

StageLosses ModelStage::takeLosses() { return std::exchange(losses_, {}); }

float* ModelStage::outputGrad(int index) { return slot(index).dout.data(); }

const float* ModelStage::backward(int index, int batch) {
  Slot& s = slot(index);
  RM_MODEL_CHECK(s.batch == batch && batch > 0, "stage backward of batch %d after a forward of %d",
                 batch, s.batch);
  useSlotState(s);
  float* dout = s.dout.data();
  int next = 0;
  for (size_t i = layers_.size(); i-- > 0;) {
    const float* in = s.acts[i].data();
    const float* out = s.acts[i + 1].data();
    layers_[i]->backwardParams(in, out, dout, batch, /*accumulate=*/!zero_pending_);
    if (i == 0 && isFirst()) break;
    float* din = i == 0 ? s.din.data() : dscratch_[next].data();
    layers_[i]->backwardInput(in, out, dout, din, batch);
    if (layers_[i]->reducesInputGradient()) {
      reduce(din, static_cast<size_t>(batch) * layers_[i]->inputSize());
    }
    dout = din;
    next ^= 1;
  }
  zero_pending_ = false;  // every layer wrote its gradients
  s.batch = 0;
  return isFirst() ? nullptr : s.din.data();
}

std::vector<double> ModelStage::measureLayerSeconds(int repeats) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  Slot& s = slot(0);
  const int batch = micro_batch_;
  // Any values do: the cost of a dense or conv pass does not depend on them.
  float* in = s.acts[0].data();
  for (size_t i = 0; i < s.acts[0].size(); ++i) in[i] = 0.01f * static_cast<float>(i % 13);
  std::fill(s.dout.span().begin(), s.dout.span().end(), 0.001f);
  useSlotState(s);
  std::vector<double> best(layers_.size(), std::numeric_limits<double>::infinity());
  std::vector<double> forward(layers_.size());
  for (int r = 0; r < std::max(1, repeats); ++r) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      const auto t0 = Clock::now();
      layers_[i]->forward(s.acts[i].data(), s.acts[i + 1].data(), batch);
      // Timing only: a row-parallel part's group sum is left out.
      if (layers_[i]->reducesOutput()) layers_[i]->finishForward(s.acts[i + 1].data(), batch);
      forward[i] = seconds(t0, Clock::now());
    }
    float* dout = s.dout.data();
    int next = 0;
    for (size_t i = layers_.size(); i-- > 0;) {
      const auto t0 = Clock::now();
      layers_[i]->backwardParams(s.acts[i].data(), s.acts[i + 1].data(), dout, batch,
                                 /*accumulate=*/true);
      float* din = i == 0 ? nullptr : dscratch_[next].data();
      if (din != nullptr) {
        layers_[i]->backwardInput(s.acts[i].data(), s.acts[i + 1].data(), dout, din, batch);
      }
      best[i] = std::min(best[i], forward[i] + seconds(t0, Clock::now()));
      if (din != nullptr) {
        dout = din;
        next ^= 1;
      }
    }
    std::fill(s.dout.span().begin(), s.dout.span().end(), 0.001f);
  }
  s.batch = 0;
  zeroGrads();
  return best;
}

void ModelStage::reduce(float* data, size_t count) {
  RM_MODEL_CHECK(reducer_, "a tensor-parallel stage needs setTensorReducer()");
  if (!tensor_status_.ok()) return;  // the group is broken; the step fails anyway
  tensor_status_ = reducer_(data, count);
}

void ModelStage::useWeights(std::span<float> weights) {
  RM_MODEL_CHECK(weights.size() == params_.size(), "useWeights of %zu floats, the stage has %zu",
                 weights.size(), params_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->bind(weights.data() + layer_offset_[i], grads_.data() + layer_offset_[i]);
  }
}

std::span<float> ModelStage::weightVersion(int version) {
  RM_MODEL_CHECK(version >= 0, "weight version %d", version);
  if (version == 0) return params_.span();
  while (versions_.size() < static_cast<size_t>(version)) versions_.emplace_back(params_.size());
  return versions_[static_cast<size_t>(version - 1)].span();
}

void ModelStage::copyWeights(std::span<const float> from, std::span<float> to) {
  RM_MODEL_CHECK(from.size() == params_.size() && to.size() == params_.size(),
                 "copyWeights of %zu into %zu floats, the stage has %zu", from.size(), to.size(),
                 params_.size());
  std::copy(from.begin(), from.end(), to.begin());
}

void ModelStage::zeroGrads() { zero_pending_ = true; }

void ModelStage::clearGrads() {
  if (!zero_pending_) return;
  std::fill(grads_.span().begin(), grads_.span().end(), 0.0f);
  zero_pending_ = false;
}

std::span<float> ModelStage::grads() {
  clearGrads();
  return grads_.span();
}

}  // namespace ringmaster::trainer::model
