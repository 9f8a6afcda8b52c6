#include "trainer/gpu/gpu_model.h"

#include <algorithm>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::gpu {

using core::Result;
using core::Status;

namespace {

cudaDataType_t cudaType(Precision p) { return p == Precision::kBf16 ? CUDA_R_16BF : CUDA_R_32F; }

}  // namespace

struct GpuModel::LayerPlans {
  GemmPlan forward;  // Y = W X (+ bias, ReLU)
  GemmPlan wgrad;    // dW = X dZ^T (+ bias gradient)
  GemmPlan dgrad;    // dX = W dZ (layers after the first)
};

GpuModel::~GpuModel() = default;

size_t GpuModel::denseCount(int layer) const {
  const size_t in = static_cast<size_t>(widths_[layer]),
               out = static_cast<size_t>(widths_[layer + 1]);
  return in * out + out;
}

size_t GpuModel::layerOffset(int layer) const {
  const int convs = static_cast<int>(convs_.size());
  return layer < convs ? convs_[layer].offset : offsets_[layer - convs];
}

Result<std::unique_ptr<GpuModel>> GpuModel::create(model::Model& host_model,
                                                   const model::ModelConfig& config,
                                                   Precision precision, int max_batch,
                                                   GemmWorkspace workspace, cudaStream_t stream) {
  if (max_batch < 1) return core::invalidArgument("batch size must be >= 1");
  std::unique_ptr<GpuModel> m(new GpuModel());
  m->precision_ = precision;
  m->workspace_ = workspace;
  m->max_batch_ = max_batch;
  m->input_size_ = host_model.inputSize();
  const auto& views = host_model.paramViews();
  const std::string drifted = "GPU model layout differs from " + host_model.signature();

  // Conv blocks: shapes from the config, offsets (and the kernel size) from the host model.
  int dense_in = static_cast<int>(host_model.inputSize());
  if (config.type == model::ModelKind::kCnn) {
    int c = config.input_channels, h = config.input_height, w = config.input_width;
    for (size_t j = 0; j < config.conv_channels.size(); ++j) {
      if (views.size() < 2 * (j + 1)) return core::internalError(drifted);
      ConvBlock block;
      const int cout = config.conv_channels[j];
      const size_t kk = views[2 * j].count / (static_cast<size_t>(cout) * c);
      int k = 1;
      while (static_cast<size_t>(k) * k < kk) ++k;
      if (static_cast<size_t>(k) * k != kk || views[2 * j + 1].count != static_cast<size_t>(cout))
        return core::internalError(drifted);
      block.shape = ConvShape{c, h, w, k, cout};
      block.offset = views[2 * j].offset;
      m->convs_.push_back(std::move(block));
      c = cout;
      h /= 2;
      w /= 2;
    }
    dense_in = c * h * w;
    m->widths_.push_back(dense_in);
    if (config.cnn_hidden > 0) m->widths_.push_back(config.cnn_hidden);
  } else {
    m->widths_.push_back(dense_in);
    for (int h : config.hidden) m->widths_.push_back(h);
  }
  m->widths_.push_back(host_model.numClasses());
  const size_t convs = m->convs_.size();
  size_t offset = convs == 0 ? 0 : views[2 * convs].offset;
  for (int i = 0; i < m->denseLayers(); ++i) {
    m->offsets_.push_back(offset);
    offset += m->denseCount(i);
  }
  // The host model's views are weight, bias per layer in this order; anything else would mean
  // the layouts drifted apart.
  bool same = views.size() == 2 * (convs + static_cast<size_t>(m->denseLayers()));
  for (int i = 0; same && i < m->denseLayers(); ++i) {
    same = views[2 * (convs + i)].offset == m->offsets_[i] &&
           views[2 * (convs + i) + 1].count == static_cast<size_t>(m->widths_[i + 1]);
  }
  if (!same || offset != host_model.params().size()) return core::internalError(drifted);

  const size_t count = offset;
  const size_t b = static_cast<size_t>(m->max_batch_);
  const size_t e = elementBytes(precision);
  RM_RETURN_IF_ERROR(m->params_.allocate(count, "parameters"));
  RM_RETURN_IF_ERROR(m->grads_.allocate(count, "gradients", /*zero=*/true));
  auto host_params = host_model.params();
  RM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(m->params_.data(), host_params.data(),
                                          count * sizeof(float), cudaMemcpyHostToDevice, stream),
                          "uploading parameters");
  if (precision == Precision::kBf16) {
    RM_RETURN_IF_ERROR(m->bf16_params_.allocate(count, "bf16 parameters"));
    m->syncBf16Params(stream);
  }
  const int layers = m->denseLayers();
  m->acts_.resize(layers + 1);
  RM_RETURN_IF_ERROR(m->acts_[0].allocate(b * m->widths_[0] * e, "input batch"));
  int widest = 0;
  for (int i = 0; i < layers; ++i) {
    const bool last = i + 1 == layers;
    const size_t bytes = b * m->widths_[i + 1] * (last ? sizeof(float) : e);
    RM_RETURN_IF_ERROR(
        m->acts_[i + 1].allocate(bytes, "activations of layer " + std::to_string(i)));
    widest = std::max(widest, m->widths_[i]);
  }
  for (auto& d : m->dacts_) RM_RETURN_IF_ERROR(d.allocate(b * widest * e, "activation gradients"));
  RM_RETURN_IF_ERROR(m->dlogits_.allocate(b * m->widths_.back() * e, "logit gradients"));
  RM_RETURN_IF_ERROR(m->labels_.allocate(b, "labels"));
  if (!m->convs_.empty()) {
    RM_RETURN_IF_ERROR(m->conv_input_.allocate(b * m->input_size_ * e, "input batch"));
    size_t dz = 0, dcols = 0, dconv = b * m->widths_[0] * e;
    for (size_t j = 0; j < convs; ++j) {
      ConvBlock& block = m->convs_[j];
      const ConvShape& sh = block.shape;
      const size_t pixels = b * sh.h * sh.w;
      const std::string what = "conv block " + std::to_string(j);
      block.in = j == 0 ? m->conv_input_.data() : m->convs_[j - 1].out.data();
      RM_RETURN_IF_ERROR(block.cols.allocate(pixels * sh.kdim() * e, what + " patch rows"));
      RM_RETURN_IF_ERROR(block.z.allocate(pixels * sh.cout * e, what + " output"));
      const size_t pooled = b * sh.cout * sh.ph() * sh.pw();
      // The last block pools straight into the dense layers' input.
      if (j + 1 < convs) RM_RETURN_IF_ERROR(block.out.allocate(pooled * e, what + " pooled"));
      RM_RETURN_IF_ERROR(block.route.allocate(pooled, what + " pool routes"));
      dz = std::max(dz, pixels * sh.cout * e);
      if (j > 0) {
        dcols = std::max(dcols, pixels * sh.kdim() * e);
        dconv = std::max(dconv, b * sh.cin * sh.h * sh.w * e);
      }
    }
    RM_RETURN_IF_ERROR(m->dz_.allocate(dz, "conv output gradients"));
    RM_RETURN_IF_ERROR(m->dcols_.allocate(dcols, "patch row gradients"));
    RM_RETURN_IF_ERROR(m->dconv_.allocate(dconv, "conv activation gradients"));
  }
  RM_RETURN_IF_ERROR(m->prepare(m->max_batch_));
  RM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "setting up the GPU model");
  return m;
}

const void* GpuModel::gemmWeights(size_t offset) const {
  if (precision_ == Precision::kBf16) return bf16_params_.data() + offset;
  return params_.data() + offset;
}

const void* GpuModel::weightsForGemm(int layer) const { return gemmWeights(offsets_[layer]); }

const void* GpuModel::biasForForward(int layer) const {
  const size_t bias = offsets_[layer] + static_cast<size_t>(widths_[layer]) * widths_[layer + 1];
  const bool last = layer + 1 == denseLayers();
  // The bias has the GEMM output's type: bf16 for hidden layers in bf16 mode, else fp32.
  if (precision_ == Precision::kBf16 && !last) return bf16_params_.data() + bias;
  return params_.data() + bias;
}

Status GpuModel::prepareConvs(int n, std::vector<std::unique_ptr<LayerPlans>>* plans) {
  const cudaDataType_t ab = cudaType(precision_);
  for (size_t j = 0; j < convs_.size(); ++j) {
    const ConvBlock& block = convs_[j];
    const ConvShape& sh = block.shape;
    const int pixels = n * sh.h * sh.w, kdim = sh.kdim(), cout = sh.cout;
    const std::string name = "conv block " + std::to_string(j) + " (" + std::to_string(sh.cin) +
                             "->" + std::to_string(cout) + ", batch " + std::to_string(n) + ")";
    const size_t bias = block.offset + static_cast<size_t>(cout) * kdim;
    auto p = std::make_unique<LayerPlans>();
    // The conv is the dense GEMM over pixels: z (cout x pixels) = W^T-op (W: kdim x cout) *
    // cols (kdim x pixels); bias, ReLU and pool follow in one kernel.
    RM_RETURN_IF_ERROR(p->forward.plan(workspace_,
                                       {CUBLAS_OP_T, CUBLAS_OP_N, cout, pixels, kdim, ab, ab, kdim,
                                        kdim, cout, gemmWeights(block.offset), block.cols.data(),
                                        block.z.data(), nullptr, CUBLASLT_EPILOGUE_DEFAULT},
                                       name + " forward"));
    // dW (kdim x cout) = cols (kdim x pixels) * dz^T; the bias gradient sums dz over pixels.
    RM_RETURN_IF_ERROR(
        p->wgrad.plan(workspace_,
                      {CUBLAS_OP_N, CUBLAS_OP_T, kdim, cout, pixels, ab, CUDA_R_32F, kdim, cout,
                       kdim, block.cols.data(), dz_.data(), grads_.data() + block.offset,
                       grads_.data() + bias, CUBLASLT_EPILOGUE_BGRADB},
                      name + " weight gradient"));
    if (j > 0) {
      // dcols (kdim x pixels) = W (kdim x cout) * dz (cout x pixels).
      RM_RETURN_IF_ERROR(p->dgrad.plan(workspace_,
                                       {CUBLAS_OP_N, CUBLAS_OP_N, kdim, pixels, cout, ab, ab, kdim,
                                        cout, kdim, gemmWeights(block.offset), dz_.data(),
                                        dcols_.data(), nullptr, CUBLASLT_EPILOGUE_DEFAULT},
                                       name + " input gradient"));
    }
    fused_bias_grad_ += p->wgrad.fused();
    gemms_planned_ += 1;
    plans->push_back(std::move(p));
  }
  return Status::Ok();
}

Status GpuModel::prepare(int n) {
  if (n < 1 || n > max_batch_)
    return core::invalidArgument("batch " + std::to_string(n) + " outside [1, " +
                                 std::to_string(max_batch_) + "]");
  if (plans_.count(n)) return Status::Ok();
  const cudaDataType_t ab = cudaType(precision_);
  std::vector<std::unique_ptr<LayerPlans>> plans;
  RM_RETURN_IF_ERROR(prepareConvs(n, &plans));
  const int layers = denseLayers();
  for (int i = 0; i < layers; ++i) {
    const int in = widths_[i], out = widths_[i + 1];
    const bool last = i + 1 == layers;
    const std::string name = "layer " + std::to_string(i) + " (" + std::to_string(in) + "->" +
                             std::to_string(out) + ", batch " + std::to_string(n) + ")";
    const cudaDataType_t y_type = last ? CUDA_R_32F : ab;
    auto p = std::make_unique<LayerPlans>();
    const size_t bias = offsets_[i] + static_cast<size_t>(in) * out;
    // Row-major W[out][in] is column-major (in x out); a batch [n][w] is column-major (w x n).
    // forward: Y (out x n) = W^T-op(A = W as in x out) * X (in x n); bias per row of Y.
    RM_RETURN_IF_ERROR(
        p->forward.plan(workspace_,
                        {CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, ab, y_type, in, in, out,
                         weightsForGemm(i), acts_[i].data(), acts_[i + 1].data(), biasForForward(i),
                         last ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS},
                        name + " forward"));
    // wgrad: dW (in x out, fp32) = X (in x n) * dZ^T (dZ: out x n); bias gradient over n.
    const void* dz = last ? dlogits_.data() : dacts_[(layers - 1 - i) % 2].data();
    RM_RETURN_IF_ERROR(p->wgrad.plan(
        workspace_,
        {CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, ab, CUDA_R_32F, in, out, in, acts_[i].data(), dz,
         grads_.data() + offsets_[i], grads_.data() + bias, CUBLASLT_EPILOGUE_BGRADB},
        name + " weight gradient"));
    // dgrad: dX (in x n) = W (in x out) * dZ (out x n); the first layer's only feeds the convs.
    if (i > 0 || !convs_.empty()) {
      void* dx = i > 0 ? dacts_[(layers - i) % 2].data() : dconv_.data();
      RM_RETURN_IF_ERROR(
          p->dgrad.plan(workspace_,
                        {CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, ab, ab, in, out, in,
                         weightsForGemm(i), dz, dx, nullptr, CUBLASLT_EPILOGUE_DEFAULT},
                        name + " input gradient"));
    }
    fused_forward_ += p->forward.fused();
    fused_bias_grad_ += p->wgrad.fused();
    gemms_planned_ += 1;
    plans.push_back(std::move(p));
  }
  plans_[n] = std::move(plans);
  return Status::Ok();
}

Status GpuModel::forwardConvs(int n, cudaStream_t stream) {
  const auto& plans = plans_[n];
  for (size_t j = 0; j < convs_.size(); ++j) {
    const ConvBlock& block = convs_[j];
    const ConvShape& sh = block.shape;
    launchIm2col(block.in, sh, n, block.cols.data(), precision_, stream);
    RM_RETURN_IF_ERROR(plans[j]->forward.run(workspace_, stream));
    void* out = j + 1 < convs_.size() ? block.out.data() : acts_[0].data();
    launchConvPoolForward(block.z.data(),
                          params_.data() + block.offset + static_cast<size_t>(sh.cout) * sh.kdim(),
                          sh, n, out, block.route.data(), precision_, stream);
  }
  return Status::Ok();
}

Status GpuModel::forwardLoss(int n, bool train, double loss_weight, LossTotals* totals,
                             cudaStream_t stream) {
  RM_RETURN_IF_ERROR(prepare(n));
  RM_RETURN_IF_ERROR(forwardConvs(n, stream));
  const auto& plans = plans_[n];
  const size_t first_dense = convs_.size();
  for (int i = 0; i < denseLayers(); ++i) {
    const LayerPlans& p = *plans[first_dense + i];
    const bool last = i + 1 == denseLayers();
    RM_RETURN_IF_ERROR(p.forward.run(workspace_, stream));
    if (!p.forward.fused()) {
      const size_t bias = offsets_[i] + static_cast<size_t>(widths_[i]) * widths_[i + 1];
      launchBiasActivation(acts_[i + 1].data(), last ? Precision::kFp32 : precision_,
                           params_.data() + bias, n, widths_[i + 1], !last, stream);
    }
  }
  launchSoftmaxCrossEntropy(logits(), labels_.data(), n, numClasses(),
                            train ? dlogits_.data() : nullptr, precision_, loss_weight, 1.0f,
                            totals, stream);
  return Status::Ok();
}

Status GpuModel::backwardConvs(int n, cudaStream_t stream,
                               const std::function<void(int)>& on_ready) {
  const auto& plans = plans_[n];
  const size_t e = elementBytes(precision_);
  for (int j = static_cast<int>(convs_.size()) - 1; j >= 0; --j) {
    const ConvBlock& block = convs_[j];
    const ConvShape& sh = block.shape;
    const int pixels = n * sh.h * sh.w;
    // dconv_ holds d(pooled output); an odd edge that no window covers gets no gradient.
    if (sh.h % 2 != 0 || sh.w % 2 != 0)
      RM_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(dz_.data(), 0, static_cast<size_t>(pixels) * sh.cout * e, stream),
          "conv block " + std::to_string(j) + ": zeroing the odd edge");
    launchConvPoolBackward(dconv_.data(), block.route.data(), sh, n, dz_.data(), precision_,
                           stream);
    const LayerPlans& p = *plans[j];
    float* dbias = grads_.data() + block.offset + static_cast<size_t>(sh.cout) * sh.kdim();
    RM_RETURN_IF_ERROR(p.wgrad.run(workspace_, stream));
    if (!p.wgrad.fused())
      launchBiasGrad(dz_.data(), precision_, pixels, sh.cout, dbias, false, stream);
    if (on_ready) on_ready(j);
    if (j > 0) {
      RM_RETURN_IF_ERROR(p.dgrad.run(workspace_, stream));
      // d(this block's input) = d(the previous block's pooled output), into dconv_ (read above).
      launchCol2im(dcols_.data(), sh, n, dconv_.data(), precision_, stream);
    }
  }
  return Status::Ok();
}

Status GpuModel::backward(int n, cudaStream_t stream, const std::function<void(int)>& on_ready) {
  RM_RETURN_IF_ERROR(prepare(n));
  const auto& plans = plans_[n];
  const int layers = denseLayers();
  const int first_dense = static_cast<int>(convs_.size());
  for (int i = layers - 1; i >= 0; --i) {
    const LayerPlans& p = *plans[first_dense + i];
    const bool last = i + 1 == layers;
    const int in = widths_[i], out = widths_[i + 1];
    const size_t bias = offsets_[i] + static_cast<size_t>(in) * out;
    void* dz = last ? dlogits_.data() : dacts_[(layers - 1 - i) % 2].data();
    RM_RETURN_IF_ERROR(p.wgrad.run(workspace_, stream));
    if (!p.wgrad.fused())
      launchBiasGrad(dz, precision_, n, out, grads_.data() + bias, false, stream);
    if (on_ready) on_ready(first_dense + i);
    // The first dense layer's input gradient only feeds the conv blocks (whose ReLU is in the
    // pool's route); the others' pass the previous layer's ReLU.
    if (i > 0 || first_dense > 0) RM_RETURN_IF_ERROR(p.dgrad.run(workspace_, stream));
    if (i > 0)
      launchReluBackward(dacts_[(layers - i) % 2].data(), acts_[i].data(),
                         static_cast<size_t>(n) * in, precision_, stream);
  }
  return backwardConvs(n, stream, on_ready);
}

void GpuModel::syncBf16Params(cudaStream_t stream) {
  if (precision_ == Precision::kBf16)
    launchFloatToBf16(params_.data(), bf16_params_.data(), params_.size(), stream);
}

std::string GpuModel::describe() const {
  return std::string(precisionName(precision_)) + " cuBLASLt GEMMs; fused epilogues: bias(+relu) " +
         std::to_string(fused_forward_) + "/" + std::to_string(gemms_planned_) +
         ", bias gradient " + std::to_string(fused_bias_grad_) + "/" +
         std::to_string(gemms_planned_);
}

}  // namespace ringmaster::trainer::gpu
