#pragma once
// CUDA, cuBLASLt and NCCL results as core::Status, with the call that failed as context:
//   RM_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, n), "allocating 12 MiB of activations");
// Every error is kInternal except the ones a retry (a rescheduled pod, a fresh communicator) may
// cure: NCCL's remote and system errors are kUnavailable, as are a lost or missing device.
//
// Thread-safety: pure functions.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>
#include <string_view>

#include "ringmaster/core/status.h"

namespace ringmaster::trainer::gpu {

core::Status cudaStatus(cudaError_t err, std::string_view what);
core::Status cublasStatus(cublasStatus_t err, std::string_view what);

// The number of usable CUDA devices; 0 (never an error) where there is no driver or no GPU.
int cudaDeviceCount();

}  // namespace ringmaster::trainer::gpu

// `what` is evaluated only on failure: these guard hot paths (every step's launches).
#define RM_CUDA_RETURN_IF_ERROR(expr, what)                                       \
  do {                                                                            \
    if (const cudaError_t rm_cuda_error_ = (expr); rm_cuda_error_ != cudaSuccess) \
      return ::ringmaster::trainer::gpu::cudaStatus(rm_cuda_error_, (what));      \
  } while (0)

#define RM_CUBLAS_RETURN_IF_ERROR(expr, what)                                                      \
  do {                                                                                             \
    if (const cublasStatus_t rm_cublas_error_ = (expr); rm_cublas_error_ != CUBLAS_STATUS_SUCCESS) \
      return ::ringmaster::trainer::gpu::cublasStatus(rm_cublas_error_, (what));                   \
  } while (0)
