#pragma once
// Shared by the GPU tests: skip without a GPU, and where the data set is (RM_FASHION_MNIST, for
// machines where Debian's dataset-fashion-mnist is not installed, such as the GPU machine).

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "trainer/cuda/cuda_status.h"
#include "trainer/data/fashion_mnist.h"

#define RM_REQUIRE_GPU()                                                  \
  do {                                                                    \
    if (::ringmaster::trainer::gpu::cudaDeviceCount() == 0)               \
      GTEST_SKIP() << "no GPU visible (the GPU tests run on the device)"; \
  } while (0)

namespace ringmaster::trainer::gpu::testing {

inline std::string fashionMnistDir() {
  const char* dir = std::getenv("RM_FASHION_MNIST");
  return dir != nullptr && *dir != '\0' ? dir : data::kDefaultFashionMnistDir;
}

}  // namespace ringmaster::trainer::gpu::testing
