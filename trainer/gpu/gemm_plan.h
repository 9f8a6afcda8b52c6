#pragma once
// One cuBLASLt GEMM planned once and run many times: D = op(A) op(B) + beta D (column-major),
// with an optional fused epilogue (bias, bias + ReLU, bias gradient), on the operands it was
// planned for (the callers' buffers never move). Planning picks cuBLASLt's first heuristic
// choice, replaced by another candidate only when that one runs clearly faster on the planned
// shapes (kTimed: it waits for the device and writes the planned output); kHeuristic keeps the
// first choice and touches no device memory, for callers that plan while their stream may be
// waiting on a peer (a pipeline stage's NCCL messages) or while the output holds accumulated
// gradients. Where cuBLASLt has no algorithm for the fused epilogue, the GEMM is planned plain
// and fused() says so, so that the caller adds the epilogue's work with a kernel.
//
// Ownership: owns its cuBLASLt descriptors; borrows the operands and the workspace.
// Thread-safety: none. Failure: plan() and run() return the cuBLASLt/CUDA error with the
// GEMM's name ("layer 2 (512->10, batch 128) forward").

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "ringmaster/core/status.h"
#include "trainer/cuda/cuda_status.h"

namespace ringmaster::trainer::gpu {

struct GemmWorkspace {
  cublasLtHandle_t handle = nullptr;
  void* data = nullptr;
  size_t bytes = 0;
};

class GemmPlan {
 public:
  struct Spec {
    cublasOperation_t op_a, op_b;
    int m, n, k;
    cudaDataType_t ab_type, d_type;
    int lda, ldb, ldd;
    // A, B, D and the bias (or bias-gradient) pointer, fixed for the plan's lifetime.
    const void *a_ptr, *b_ptr;
    void* d_ptr;
    const void* bias_ptr;
    cublasLtEpilogue_t epilogue;
  };

  enum class Choice { kTimed, kHeuristic };

  GemmPlan() = default;
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  ~GemmPlan();

  // Plans the GEMM `what` names with the spec's epilogue, or plain where cuBLASLt has none.
  core::Status plan(const GemmWorkspace& ws, const Spec& spec, const std::string& what,
                    Choice choice = Choice::kTimed);
  // Enqueues the GEMM on `stream`; beta = 1 adds to D (gradient accumulation; an epilogue that
  // writes a bias gradient does not accumulate it).
  core::Status run(const GemmWorkspace& ws, cudaStream_t stream, float beta = 0.0f) const;
  // Whether the requested epilogue runs inside the GEMM.
  bool fused() const { return fused_; }

 private:
  core::Status planWith(const GemmWorkspace& ws, const Spec& spec, cublasLtEpilogue_t epilogue,
                        const std::string& what);
  core::Status overrideWithFaster(const GemmWorkspace& ws,
                                  const cublasLtMatmulHeuristicResult_t* results, int found);
  void destroy();

  static constexpr int kCandidates = 8;
  static constexpr int kTimedRuns = 3;
  static constexpr float kClearlyFaster = 1.25f;
  static constexpr float kWorthTimingUs = 50;

  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  bool fused_ = false;
  Choice choice_ = Choice::kTimed;
  const void *a_ptr_ = nullptr, *b_ptr_ = nullptr;
  void* d_ptr_ = nullptr;
  std::string name_;
};

}  // namespace ringmaster::trainer::gpu
