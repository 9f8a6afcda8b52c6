#include "trainer/cuda/cuda_status.h"

namespace ringmaster::trainer::gpu {

core::Status cudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return core::Status::Ok();
  const bool device_gone = err == cudaErrorNoDevice || err == cudaErrorDevicesUnavailable ||
                           err == cudaErrorECCUncorrectable || err == cudaErrorLaunchTimeout;
  return {device_gone ? core::Code::kUnavailable : core::Code::kInternal,
          std::string(what) + ": CUDA error " + cudaGetErrorName(err) + " (" +
              cudaGetErrorString(err) + ")"};
}

core::Status cublasStatus(cublasStatus_t err, std::string_view what) {
  if (err == CUBLAS_STATUS_SUCCESS) return core::Status::Ok();
  return core::internalError(std::string(what) + ": cuBLAS error " + cublasGetStatusName(err) +
                             " (" + cublasGetStatusString(err) + ")");
}

int cudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return count;
}

}  // namespace ringmaster::trainer::gpu
