#include "trainer/gpu/gemm_plan.h"

#include <algorithm>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::gpu {

using core::Status;

namespace {

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

GemmPlan::~GemmPlan() { destroy(); }

void GemmPlan::destroy() {
  if (desc_) cublasLtMatmulDescDestroy(desc_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  desc_ = nullptr;
  a_ = b_ = d_ = nullptr;
}

Status GemmPlan::plan(const GemmWorkspace& ws, const Spec& s, const std::string& what,
                      Choice choice) {
  choice_ = choice;
  a_ptr_ = s.a_ptr;
  b_ptr_ = s.b_ptr;
  d_ptr_ = s.d_ptr;
  name_ = what;
  // Epilogues read or write the bias vector with vector loads: offer them aligned vectors only.
  if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT && alignmentOf(s.bias_ptr) < 16) {
    fused_ = false;
    return planWith(ws, s, CUBLASLT_EPILOGUE_DEFAULT, what);
  }
  Status fused_try = planWith(ws, s, s.epilogue, what);
  if (fused_try.ok()) {
    fused_ = s.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
    return fused_try;
  }
  if (s.epilogue == CUBLASLT_EPILOGUE_DEFAULT) return fused_try;
  fused_ = false;
  return planWith(ws, s, CUBLASLT_EPILOGUE_DEFAULT, what);
}

Status GemmPlan::planWith(const GemmWorkspace& ws, const Spec& s, cublasLtEpilogue_t epilogue,
                          const std::string& what) {
  destroy();
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                            what + ": matmul descriptor");
  RM_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &s.op_a, sizeof s.op_a),
      what + ": transa");
  RM_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &s.op_b, sizeof s.op_b),
      what + ": transb");
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                           &epilogue, sizeof epilogue),
                            what + ": epilogue");
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    RM_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &s.bias_ptr,
                                       sizeof s.bias_ptr),
        what + ": bias pointer");
    // The bias gradient is written in fp32 (the gradient buffer); a forward bias has the
    // output's type.
    const cudaDataType_t bias_type = epilogue == CUBLASLT_EPILOGUE_BGRADB ? CUDA_R_32F : s.d_type;
    RM_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                       sizeof bias_type),
        what + ": bias type");
  }
  const int a_rows = s.op_a == CUBLAS_OP_N ? s.m : s.k, a_cols = s.op_a == CUBLAS_OP_N ? s.k : s.m;
  const int b_rows = s.op_b == CUBLAS_OP_N ? s.k : s.n, b_cols = s.op_b == CUBLAS_OP_N ? s.n : s.k;
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&a_, s.ab_type, a_rows, a_cols, s.lda),
                            what + ": layout of A");
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&b_, s.ab_type, b_rows, b_cols, s.ldb),
                            what + ": layout of B");
  RM_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&d_, s.d_type, s.m, s.n, s.ldd),
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
      ws.handle, desc_, a_, b_, d_, d_, pref, kCandidates, results, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (heuristic != CUBLAS_STATUS_SUCCESS || found == 0) {
    return cublasStatus(
        heuristic == CUBLAS_STATUS_SUCCESS ? CUBLAS_STATUS_NOT_SUPPORTED : heuristic,
        what + ": no cuBLASLt algorithm (epilogue " + epilogueName(epilogue) + ")");
  }
  algo_ = results[0].algo;
  if (found > 1 && choice_ == Choice::kTimed)
    RM_RETURN_IF_ERROR(overrideWithFaster(ws, results, found));
  return Status::Ok();
}

// cuBLASLt's first choice is sometimes far off for skinny shapes (on an H100, a SIMT kernel
// took 261 us for the 8192->10 output layer's weight gradient at batch 4096). Each candidate
// runs on the planned operands (their contents do not matter: every planned output is
// recomputed before it is read; a caller that accumulates into D plans with kHeuristic);
// another replaces the first only when clearly faster, so runs keep the same algorithms and thus
// the same numerics.
Status GemmPlan::overrideWithFaster(const GemmWorkspace& ws,
                                    const cublasLtMatmulHeuristicResult_t* results, int found) {
  // Steps of earlier batch sizes may still be in flight on the model's buffers.
  RM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), name_ + ": before timing candidates");
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  RM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                          name_ + ": timing stream");
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const float alpha = 1.0f, beta = 0.0f;
  auto timeOne = [&](const cublasLtMatmulAlgo_t& candidate) -> float {
    auto once = [&] {
      return cublasLtMatmul(ws.handle, desc_, &alpha, a_ptr_, a_, b_ptr_, b_, &beta, d_ptr_, d_,
                            d_ptr_, d_, &candidate, ws.data, ws.bytes,
                            stream) == CUBLAS_STATUS_SUCCESS;
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
      algo_ = results[i].algo;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  if (best < first)
    RM_LOG(INFO, STEP) << name_ << ": a cuBLASLt candidate takes " << best / kTimedRuns * 1e3
                       << " us, its first choice " << first / kTimedRuns * 1e3
                       << " us: using the candidate";
  return cudaStatus(cudaGetLastError(), name_ + ": timing candidates");
}

Status GemmPlan::run(const GemmWorkspace& ws, cudaStream_t stream, float beta) const {
  const float alpha = 1.0f;
  RM_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmul(ws.handle, desc_, &alpha, a_ptr_, a_, b_ptr_, b_, &beta, d_ptr_, d_, d_ptr_,
                     d_, &algo_, ws.data, ws.bytes, stream),
      name_);
  return Status::Ok();
}

}  // namespace ringmaster::trainer::gpu
