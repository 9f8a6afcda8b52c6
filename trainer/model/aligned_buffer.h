#pragma once
// A fixed-size, zero-initialised float array aligned to a cache line (64 bytes), so that
// OpenBLAS and the vector loops see aligned rows. Allocated once (at model build time), never
// resized: the training step allocates nothing.
//
// Ownership: owns its memory; movable, not copyable. Thread-safety: none (plain storage).
// Failure: aborts when the allocation fails (we cannot train without the memory).

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace ringmaster::trainer::model {

class AlignedFloats {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedFloats() = default;
  explicit AlignedFloats(size_t count) : size_(count) {
    if (count == 0) return;
    const size_t bytes = (count * sizeof(float) + kAlignment - 1) / kAlignment * kAlignment;
    data_.reset(static_cast<float*>(std::aligned_alloc(kAlignment, bytes)));
    if (!data_) {
      std::fprintf(stderr, "model: cannot allocate %zu bytes\n", bytes);
      std::abort();
    }
    std::memset(data_.get(), 0, bytes);
  }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<float> span() { return {data_.get(), size_}; }
  std::span<const float> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

}  // namespace ringmaster::trainer::model
