#include "trainer/gpu/gpu_model.h"

#include <algorithm>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::gpu {

using core::Result;
using core::Status;

namespace {

cudaDataType_t cudaType(Precision p) { return p == Precision::kBf16 ? CUDA_R_16BF : CUDA_R_32F; }

// The alignment cuBLASLt may assume for a pointer: the largest power of two dividing it, at
// most 256 (its default assumption, which our flat-buffer offsets do not always meet).
uint32_t alignmentOf(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address == 0) return 256;
  return static_cast<uint32_t>(std::min<uintptr_t>(address & (~address + 1), 256));
}

const char* epilogueName(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "relu+bias";
    case CUBLASLT_EPILOGUE_BIAS:
      return "bias";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "bias-gradient";
    default:
      return "none";
  }
}

}  // namespace

// One planned GEMM D = op(A) op(B) (column-major, beta = 0) with its chosen algorithm, on the
// operands it was planned for (the model's buffers never move).
struct GpuModel::Gemm {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool fused = false;  // the requested epilogue runs inside the GEMM
  const void *a_ptr = nullptr, *b_ptr = nullptr;
  void* d_ptr = nullptr;
  std::string name;  // for errors: "layer 2 (512->10, batch 128) forward"

  Gemm() = default;
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  ~Gemm() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
  }

  struct Spec {
    cublasOperation_t op_a, op_b;
    int m, n, k;
    cudaDataType_t ab_type, d_type;
    int lda, ldb, ldd;
    // A, B, D and the bias (or bias-gradient) pointer, fixed for the model's lifetime.
    const void *a_ptr, *b_ptr;
    void* d_ptr;
    const void* bias_ptr;
    cublasLtEpilogue_t epilogue;
  };

  // Plans the GEMM with `epilogue`; when cuBLASLt has no algorithm for it, plans it plain
  // (fused = false) and the caller adds the epilogue's work with a kernel.
  Status plan(const GemmWorkspace& ws, const Spec& s, const std::string& what) {
    a_ptr = s.a_ptr;
    b_ptr = s.b_ptr;
    d_ptr = s.d_ptr;
    name = what;
    // Epilogues read or write the bias vector with vector loads: offer them aligned vectors only.
    if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT && alignmentOf(s.bias_ptr) < 16) {
      fused = false;
      return planWith(ws, s, CUBLASLT_EPILOGUE_DEFAULT, what);
    }
    Status fused_try = planWith(ws, s, s.epilogue, what);
    if (fused_try.ok()) {
      fused = s.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
      return fused_try;
    }
    if (s.epilogue == CUBLASLT_EPILOGUE_DEFAULT) return fused_try;
    fused = false;
    return planWith(ws, s, CUBLASLT_EPILOGUE_DEFAULT, what);
  }

 private:
  Status planWith(const GemmWorkspace& ws, const Spec& s, cublasLtEpilogue_t epilogue,
                  const std::string& what) {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    desc = nullptr;
    a = b = d = nullptr;
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                              what + ": matmul descriptor");
    RM_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &s.op_a, sizeof s.op_a),
        what + ": transa");
    RM_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &s.op_b, sizeof s.op_b),
        what + ": transb");
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                             &epilogue, sizeof epilogue),
                              what + ": epilogue");
    if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
      RM_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s.bias_ptr,
                                         sizeof s.bias_ptr),
          what + ": bias pointer");
      // The bias gradient is written in fp32 (the gradient buffer); a forward bias has the
      // output's type.
      const cudaDataType_t bias_type = epilogue == CUBLASLT_EPILOGUE_BGRADB ? CUDA_R_32F : s.d_type;
      RM_CUBLAS_RETURN_IF_ERROR(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                         sizeof bias_type),
          what + ": bias type");
    }
    const int a_rows = s.op_a == CUBLAS_OP_N ? s.m : s.k,
              a_cols = s.op_a == CUBLAS_OP_N ? s.k : s.m;
    const int b_rows = s.op_b == CUBLAS_OP_N ? s.k : s.n,
              b_cols = s.op_b == CUBLAS_OP_N ? s.n : s.k;
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&a, s.ab_type, a_rows, a_cols, s.lda),
                              what + ": layout of A");
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&b, s.ab_type, b_rows, b_cols, s.ldb),
                              what + ": layout of B");
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d, s.d_type, s.m, s.n, s.ldd),
                              what + ": layout of D");

    cublasLtMatmulPreference_t pref = nullptr;
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref), what + ": preference");
    const uint64_t ws_bytes = ws.bytes;
    const uint32_t align_a = alignmentOf(s.a_ptr), align_b = alignmentOf(s.b_ptr),
                   align_d = alignmentOf(s.d_ptr);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                         sizeof ws_bytes);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                         sizeof align_a);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                         sizeof align_b);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                                         sizeof align_d);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                                         sizeof align_d);
    cublasLtMatmulHeuristicResult_t results[kCandidates]{};
    int found = 0;
    const cublasStatus_t heuristic = cublasLtMatmulAlgoGetHeuristic(
        ws.handle, desc, a, b, d, d, pref, kCandidates, results, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (heuristic != CUBLAS_STATUS_SUCCESS || found == 0) {
      return cublasStatus(
          heuristic == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_NOT_SUPPORTED : heuristic,
          what + ": no cuBLASLt algorithm (epilogue " + epilogueName(epilogue) + ")");
    }
    algo = results[0].algo;
    if (found > 1) RM_RETURN_IF_ERROR(overrideWithFaster(ws, results, found));
    return Status::Ok();
  }

  // cuBLASLt's first choice is sometimes far off for skinny shapes (on an H100, a SIMT kernel
  // took 261 us for the 8192->10 output layer's weight gradient at batch 4096). Each candidate
  // runs on the planned operands (their contents do not matter: every planned output is
  // recomputed before it is read); another replaces the first only when clearly faster, so runs
  // keep the same algorithms and thus the same numerics.
  Status overrideWithFaster(const GemmWorkspace& ws, const cublasLtMatmulHeuristicResult_t* results,
                            int found) {
    // Steps of earlier batch sizes may still be in flight on the model's buffers.
    RM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), name + ": before timing candidates");
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                            name + ": timing stream");
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    const float alpha = 1.0f, beta = 0.0f;
    auto timeOne = [&](const cublasLtMatmulAlgo_t& candidate) -> float {
      auto once = [&] {
        return cublasLtMatmul(ws.handle, desc, &alpha, a_ptr, a, b_ptr, b, &beta, d_ptr, d, d_ptr,
                              d, &candidate, ws.data, ws.bytes, stream) == CUBLAS_STATUS_SUCCESS;
      };
      if (!once()) return -1;  // warm-up; an algorithm that fails to run is not a candidate
      cudaEventRecord(start, stream);
      for (int i = 0; i < kTimedRuns; ++i) once();
      cudaEventRecord(stop, stream);
      float ms = -1;
      if (cudaEventSynchronize(stop) != cudaSuccess ||
          cudaEventElapsedTime(&ms, start, stop) != cudaSuccess)
        return -1;
      return ms;
    };
    // Timed twice, the first time on a cold GPU, which flatters whoever runs after it.
    const float cold = timeOne(results[0].algo), warm = timeOne(results[0].algo);
    const float first = cold > 0 && warm > 0 ? std::min(cold, warm) : -1;
    float best = first;
    // Below kWorthTimingUs a run is launch-bound: the differences are noise, the stakes tiny.
    const bool worth_it = first / kTimedRuns * 1e3f >= kWorthTimingUs;
    for (int i = 1; i < found && first > 0 && worth_it; ++i) {
      const float ms = timeOne(results[i].algo);
      if (ms > 0 && ms * kClearlyFaster < first && ms < best) {
        best = ms;
        algo = results[i].algo;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    if (best < first)
      RM_LOG(INFO, STEP) << name << ": a cuBLASLt candidate takes " << best / kTimedRuns * 1e3
                         << " us, its first choice " << first / kTimedRuns * 1e3
                         << " us: using the candidate";
    return cudaStatus(cudaGetLastError(), name + ": timing candidates");
  }

  static constexpr int kCandidates = 8;
  static constexpr int kTimedRuns = 3;
  static constexpr float kClearlyFaster = 1.25f;
  static constexpr float kWorthTimingUs = 50;

 public:
  Status run(const GemmWorkspace& ws, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(ws.handle, desc, &alpha, a_ptr, a, b_ptr, b, &beta,
                                             d_ptr, d, d_ptr, d, &algo, ws.data, ws.bytes, stream),
                              name);
    return Status::Ok();
  }
};

struct GpuModel::LayerPlans {
  Gemm forward;  // Y = W X (+ bias, ReLU)
  Gemm wgrad;    // dW = X dZ^T (+ bias gradient)
  Gemm dgrad;    // dX = W dZ (layers after the first)
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
  if (config.type != "mlp" && config.type != "cnn")
    return core::invalidArgument("model.type " + config.type + ": not a model the GPU path has");
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
  if (config.type == "cnn") {
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
    fused_bias_grad_ += p->wgrad.fused;
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
    fused_forward_ += p->forward.fused;
    fused_bias_grad_ += p->wgrad.fused;
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
    if (!p.forward.fused) {
      const size_t bias = offsets_[i] + static_cast<size_t>(widths_[i]) * widths_[i + 1];
      launchBiasActivation(acts_[i + 1].data(), last ? Precision::kFp32 : precision_,
                           params_.data() + bias, n, widths_[i + 1], !last, stream);
    }
  }
  launchSoftmaxCrossEntropy(logits(), labels_.data(), n, numClasses(),
                            train ? dlogits_.data() : nullptr, precision_, loss_weight, totals,
                            stream);
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
    if (!p.wgrad.fused) launchBiasGrad(dz_.data(), precision_, pixels, sh.cout, dbias, stream);
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
    if (!p.wgrad.fused) launchBiasGrad(dz, precision_, n, out, grads_.data() + bias, stream);
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
