#include "trainer/gpu/gpu_stage.h"

#include <algorithm>
#include <utility>

#include "trainer/model/check.h"

namespace ringmaster::trainer::gpu {

using core::Result;
using core::Status;

struct GpuStage::LayerPlans {
  GemmPlan forward;  // Y = W X (+ bias, ReLU)
  GemmPlan wgrad;    // dW += X dZ^T
  GemmPlan dgrad;    // dX = W dZ (not for the network's first layer)
};

GpuStage::~GpuStage() = default;

Result<std::unique_ptr<GpuStage>> GpuStage::create(model::ModelStage& host, int slots,
                                                   GemmWorkspace workspace, cudaStream_t stream) {
  const std::string& signature = host.networkSignature();
  if (signature.rfind("mlp:", 0) != 0) {
    return core::invalidArgument("pipeline stage on the GPU: " + signature +
                                 " is not an MLP; GPU stages run dense layers only");
  }
  if (host.tensorParallel()) {
    return core::invalidArgument(
        "pipeline stage on the GPU: parallelism.tensor above 1 is not built for GPU stages");
  }
  if (slots < 1) return core::invalidArgument("pipeline stage on the GPU: needs a slot");
  std::unique_ptr<GpuStage> s(new GpuStage());
  s->signature_ = signature;
  s->first_layer_ = host.firstLayer();
  s->starts_network_ = host.isFirst();
  s->ends_network_ = host.isLast();
  s->micro_batch_ = host.microBatch();
  s->workspace_ = workspace;
  s->stream_ = stream;
  // The host stage's views are weight [out][in], bias [out] per layer, in order.
  const auto& views = host.paramViews();
  s->widths_.push_back(static_cast<int>(host.inputSize()));
  for (size_t v = 0; v + 1 < views.size(); v += 2) {
    const size_t out = views[v + 1].count, in = static_cast<size_t>(s->widths_.back());
    if (out == 0 || views[v].count != in * out || views[v + 1].offset != views[v].offset + in * out)
      return core::internalError("pipeline stage on the GPU: the layout of " + views[v].name +
                                 " differs from " + signature + "'s dense layers");
    s->offsets_.push_back(views[v].offset);
    s->widths_.push_back(static_cast<int>(out));
  }
  if (views.size() % 2 != 0 || s->offsets_.empty() ||
      static_cast<size_t>(s->widths_.back()) != host.outputSize())
    return core::internalError("pipeline stage on the GPU: the stage's tensors are not " +
                               signature + "'s dense layers");

  const auto host_params = host.params();
  RM_RETURN_IF_ERROR(s->params_.allocate(host_params.size(), "stage parameters"));
  RM_RETURN_IF_ERROR(s->grads_.allocate(host_params.size(), "stage gradients", /*zero=*/true));
  RM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(s->params_.data(), host_params.data(), host_params.size() * sizeof(float),
                      cudaMemcpyHostToDevice, stream),
      "uploading the stage's parameters");
  s->weights_ = s->params_.data();
  const size_t mb = static_cast<size_t>(s->micro_batch_);
  int widest_inner = 1;
  for (int i = 1; i < s->layers(); ++i) widest_inner = std::max(widest_inner, s->widths_[i]);
  for (auto& d : s->scratch_) RM_RETURN_IF_ERROR(d.allocate(mb * widest_inner, "stage scratch"));
  RM_RETURN_IF_ERROR(s->totals_.allocate(1, "loss totals", /*zero=*/true));
  s->slots_.resize(static_cast<size_t>(slots));
  for (size_t k = 0; k < s->slots_.size(); ++k) {
    Slot& slot = s->slots_[k];
    const std::string what = "slot " + std::to_string(k) + " ";
    slot.acts.resize(s->widths_.size());
    for (size_t i = 0; i < slot.acts.size(); ++i) {
      RM_RETURN_IF_ERROR(slot.acts[i].allocate(mb * s->widths_[i], what + "activations"));
      s->activation_bytes_ += slot.acts[i].bytes();
    }
    RM_RETURN_IF_ERROR(slot.dout.allocate(mb * s->widths_.back(), what + "output gradient"));
    s->activation_bytes_ += slot.dout.bytes();
    if (!s->starts_network_) {
      RM_RETURN_IF_ERROR(slot.din.allocate(mb * s->widths_.front(), what + "input gradient"));
      s->activation_bytes_ += slot.din.bytes();
    }
    if (s->ends_network_) RM_RETURN_IF_ERROR(slot.labels.allocate(mb, what + "labels"));
  }
  return s;
}

bool GpuStage::keep(const Status& s) {
  if (!s.ok() && status_.ok()) status_ = s.withContext("pipeline stage on the GPU");
  return s.ok();
}

bool GpuStage::keepCuda(cudaError_t e, const std::string& what) {
  return keep(cudaStatus(e, what));
}

GpuStage::Slot& GpuStage::slot(int index) {
  RM_MODEL_CHECK(index >= 0 && index < slots(), "GPU stage slot %d outside [0, %d)", index,
                 slots());
  return slots_[static_cast<size_t>(index)];
}

float* GpuStage::input(int index) { return slot(index).acts[0].data(); }

void GpuStage::loadInput(int index, const float* samples, int rows) {
  RM_MODEL_CHECK(rows >= 0 && rows <= micro_batch_, "GPU stage input of %d rows outside [0, %d]",
                 rows, micro_batch_);
  // From pageable memory the copy is staged before it returns: the caller may reuse `samples`.
  keepCuda(cudaMemcpyAsync(input(index), samples, sizeof(float) * rows * inputSize(),
                           cudaMemcpyHostToDevice, stream_),
           "uploading the input rows");
}

float* GpuStage::dz(Slot& s, int layer) const {
  if (layer + 1 == layers()) return s.dout.data();
  return scratch_[(layers() - 2 - layer) % 2].data();
}

Status GpuStage::plan(int index, int rows, std::vector<std::unique_ptr<LayerPlans>>* plans) {
  Slot& s = slot(index);
  const int n = rows;
  for (int i = 0; i < layers(); ++i) {
    const int in = widths_[i], out = widths_[i + 1];
    const std::string name = "layer " + std::to_string(first_layer_ + i) + " (" +
                             std::to_string(in) + "->" + std::to_string(out) + ", slot " +
                             std::to_string(index) + ", " + std::to_string(n) + " rows)";
    const float* w = weights_ + offsets_[i];
    const float* bias = w + static_cast<size_t>(in) * out;
    float* dw = grads_.data() + offsets_[i];
    auto p = std::make_unique<LayerPlans>();
    // Row-major W[out][in] is column-major (in x out); rows [n][w] are column-major (w x n).
    RM_RETURN_IF_ERROR(
        p->forward.plan(workspace_,
                        {CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, CUDA_R_32F, CUDA_R_32F, in, in, out,
                         w, s.acts[i].data(), s.acts[i + 1].data(), bias,
                         relu(i) ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS},
                        name + " forward", GemmPlan::Choice::kHeuristic));
    RM_RETURN_IF_ERROR(
        p->wgrad.plan(workspace_,
                      {CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, CUDA_R_32F, CUDA_R_32F, in, out, in,
                       s.acts[i].data(), dz(s, i), dw, nullptr, CUBLASLT_EPILOGUE_DEFAULT},
                      name + " weight gradient", GemmPlan::Choice::kHeuristic));
    if (i > 0 || !starts_network_) {
      // Into the layer below's gradient, or what the stage sends back.
      float* dx = i > 0 ? dz(s, i - 1) : s.din.data();
      RM_RETURN_IF_ERROR(
          p->dgrad.plan(workspace_,
                        {CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, CUDA_R_32F, CUDA_R_32F, in, out, in,
                         w, dz(s, i), dx, nullptr, CUBLASLT_EPILOGUE_DEFAULT},
                        name + " input gradient", GemmPlan::Choice::kHeuristic));
    }
    fused_forward_ += p->forward.fused();
    planned_layers_ += 1;
    plans->push_back(std::move(p));
  }
  return Status::Ok();
}

const std::vector<std::unique_ptr<GpuStage::LayerPlans>>* GpuStage::plansFor(int index, int rows) {
  const PlanKey key{index, rows, weights_};
  auto it = plans_.find(key);
  if (it != plans_.end()) return &it->second;
  std::vector<std::unique_ptr<LayerPlans>> plans;
  if (!keep(plan(index, rows, &plans))) return nullptr;
  return &plans_.emplace(key, std::move(plans)).first->second;
}

const float* GpuStage::forward(int index, int rows) {
  RM_MODEL_CHECK(rows >= 1 && rows <= micro_batch_, "GPU stage forward of %d rows outside [1, %d]",
                 rows, micro_batch_);
  Slot& s = slot(index);
  const auto* plans = plansFor(index, rows);
  if (plans == nullptr) return nullptr;
  for (int i = 0; i < layers(); ++i) {
    const LayerPlans& p = *(*plans)[i];
    if (!keep(p.forward.run(workspace_, stream_))) return nullptr;
    if (!p.forward.fused()) {
      const float* bias = weights_ + offsets_[i] + static_cast<size_t>(widths_[i]) * widths_[i + 1];
      launchBiasActivation(s.acts[i + 1].data(), Precision::kFp32, bias, rows, widths_[i + 1],
                           relu(i), stream_);
    }
  }
  s.rows = rows;
  return s.acts.back().data();
}

void GpuStage::addLoss(int index, const int32_t* labels, int rows, float grad_scale) {
  RM_MODEL_CHECK(ends_network_, "addLoss() on a GPU stage that does not end the network");
  Slot& s = slot(index);
  RM_MODEL_CHECK(s.rows == rows, "addLoss() of %d rows after a forward of %d", rows, s.rows);
  if (!keepCuda(cudaMemcpyAsync(s.labels.data(), labels, sizeof(int32_t) * rows,
                                cudaMemcpyHostToDevice, stream_),
                "uploading labels"))
    return;
  launchSoftmaxCrossEntropy(s.acts.back().data(), s.labels.data(), rows, widths_.back(),
                            s.dout.data(), Precision::kFp32, 1.0, grad_scale, totals_.data(),
                            stream_);
}

void GpuStage::addEvaluationLoss(int index, const int32_t* labels, int rows) {
  RM_MODEL_CHECK(ends_network_, "addEvaluationLoss() on a GPU stage that does not end the network");
  Slot& s = slot(index);
  RM_MODEL_CHECK(s.rows == rows, "addEvaluationLoss() of %d rows after a forward of %d", rows,
                 s.rows);
  s.rows = 0;  // nothing to backpropagate
  if (!keepCuda(cudaMemcpyAsync(s.labels.data(), labels, sizeof(int32_t) * rows,
                                cudaMemcpyHostToDevice, stream_),
                "uploading labels"))
    return;
  launchSoftmaxCrossEntropy(s.acts.back().data(), s.labels.data(), rows, widths_.back(), nullptr,
                            Precision::kFp32, 1.0, 1.0f, totals_.data(), stream_);
}

model::StageLosses GpuStage::takeLosses() {
  if (!ends_network_) return {};
  LossTotals host{0, 0};
  keepCuda(cudaMemcpyAsync(&host, totals_.data(), sizeof host, cudaMemcpyDeviceToHost, stream_),
           "reading the losses");
  keepCuda(cudaStreamSynchronize(stream_), "waiting for the stage's stream");
  keepCuda(cudaMemsetAsync(totals_.data(), 0, sizeof host, stream_), "clearing the losses");
  return {host.loss_sum, static_cast<int>(host.hits)};
}

float* GpuStage::outputGrad(int index) { return slot(index).dout.data(); }

const float* GpuStage::backward(int index, int rows) {
  Slot& s = slot(index);
  RM_MODEL_CHECK(s.rows == rows && rows >= 1, "GPU stage backward of %d rows after a forward of %d",
                 rows, s.rows);
  const auto* plans = plansFor(index, rows);
  if (plans == nullptr) return nullptr;
  // A hidden last layer: what the next stage sent is the gradient after the ReLU.
  if (relu(layers() - 1))
    launchReluBackward(s.dout.data(), s.acts.back().data(),
                       static_cast<size_t>(rows) * widths_.back(), Precision::kFp32, stream_);
  for (int i = layers() - 1; i >= 0; --i) {
    const LayerPlans& p = *(*plans)[i];
    const int in = widths_[i], out = widths_[i + 1];
    if (!keep(p.wgrad.run(workspace_, stream_, /*beta=*/1.0f))) return nullptr;
    launchBiasGrad(dz(s, i), Precision::kFp32, rows, out,
                   grads_.data() + offsets_[i] + static_cast<size_t>(in) * out,
                   /*accumulate=*/true, stream_);
    if (i == 0 && starts_network_) break;
    if (!keep(p.dgrad.run(workspace_, stream_))) return nullptr;
    // Into the layer below's pre-activation gradient (the stage's own layers only: the
    // previous stage takes its ReLU's gradient itself).
    if (i > 0)
      launchReluBackward(dz(s, i - 1), s.acts[i].data(), static_cast<size_t>(rows) * in,
                         Precision::kFp32, stream_);
  }
  s.rows = 0;
  if (!keepCuda(cudaGetLastError(), "backward")) return nullptr;
  return starts_network_ ? nullptr : s.din.data();
}

void GpuStage::zeroGrads() {
  keepCuda(cudaMemsetAsync(grads_.data(), 0, grads_.bytes(), stream_), "zeroing gradients");
}

std::span<float> GpuStage::weightVersion(int version) {
  RM_MODEL_CHECK(version >= 0, "weight version %d", version);
  if (version == 0) return {params_.data(), params_.size()};
  while (versions_.size() < static_cast<size_t>(version)) {
    DeviceBuffer<float> v;
    if (!keep(v.allocate(params_.size(), "weight version " + std::to_string(versions_.size() + 1))))
      return {};
    versions_.push_back(std::move(v));
  }
  DeviceBuffer<float>& v = versions_[static_cast<size_t>(version - 1)];
  return {v.data(), v.size()};
}

void GpuStage::useWeights(std::span<float> weights) {
  RM_MODEL_CHECK(weights.size() == params_.size(), "useWeights of %zu floats, the stage has %zu",
                 weights.size(), params_.size());
  weights_ = weights.data();
}

void GpuStage::copyWeights(std::span<const float> from, std::span<float> to) {
  RM_MODEL_CHECK(from.size() == params_.size() && to.size() == params_.size(),
                 "copyWeights of %zu into %zu floats, the stage has %zu", from.size(), to.size(),
                 params_.size());
  keepCuda(
      cudaMemcpyAsync(to.data(), from.data(), from.size_bytes(), cudaMemcpyDeviceToDevice, stream_),
      "copying a weight version");
}

std::string GpuStage::describe() const {
  std::string text = "fp32 cuBLASLt stage ";
  for (size_t i = 0; i < widths_.size(); ++i) {
    if (i > 0) text += '-';
    text += std::to_string(widths_[i]);
  }
  text += " of " + signature_ + ", " + std::to_string(slots()) + " slots (" +
          std::to_string(static_cast<double>(activation_bytes_) / (1 << 20)) +
          " MiB); fused bias(+relu) " + std::to_string(fused_forward_) + "/" +
          std::to_string(planned_layers_) + " planned layers";
  return text;
}

}  // namespace ringmaster::trainer::gpu
