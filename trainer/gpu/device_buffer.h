#pragma once
// DeviceBuffer<T>: an owning, move-only array in GPU memory (cudaMalloc; never managed memory).
// Sized once; the hot path never allocates.
//
// Failure: allocate() returns the CUDA error with what was asked for ("params: 3.2 MiB").

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "trainer/cuda/cuda_status.h"

namespace ringmaster::trainer::gpu {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Replaces the contents with `count` uninitialized elements (zeroed when `zero`).
  core::Status allocate(size_t count, const std::string& what, bool zero = false) {
    reset();
    if (count == 0) return core::Status::Ok();
    void* p = nullptr;
    const double mib = static_cast<double>(count * sizeof(T)) / (1 << 20);
    RM_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, count * sizeof(T)),
                            "allocating " + what + " (" + std::to_string(mib) + " MiB)");
    data_ = static_cast<T*>(p);
    size_ = count;
    if (zero) RM_CUDA_RETURN_IF_ERROR(cudaMemset(p, 0, count * sizeof(T)), "zeroing " + what);
    return core::Status::Ok();
  }

  void reset() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
  }

  T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ringmaster::trainer::gpu
