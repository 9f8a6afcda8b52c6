#include "trainer/model/blas_kernels.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace ringmaster::trainer::model {
namespace {

CpuVectorFeatures sse() { return {}; }
CpuVectorFeatures avx() {
  CpuVectorFeatures f;
  f.avx = true;
  return f;
}
CpuVectorFeatures avx2() {
  CpuVectorFeatures f = avx();
  f.avx2 = f.fma = true;
  return f;
}
CpuVectorFeatures avx512() {
  CpuVectorFeatures f = avx2();
  f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512cd = true;
  return f;
}
// AVX-512 foundation alone (Knights Landing): SkylakeX's kernels need BW, DQ and VL too.
CpuVectorFeatures avx512FoundationOnly() {
  CpuVectorFeatures f = avx2();
  f.avx512f = f.avx512cd = true;
  return f;
}

struct Row {
  const char* name;
  const char* chosen;
  CpuVectorFeatures features;
  std::optional<std::string> want;
};

TEST(FasterBlasCore, TakesTheWidestKernelsTheFlagsAllowOnlyWhenOpenBlasChoseNarrowerOnes) {
  const Row rows[] = {
      {"a hidden model on an AVX-512 CPU", "Prescott", avx512(), "SkylakeX"},
      {"a hidden model on an AVX2 CPU", "Prescott", avx2(), "Haswell"},
      {"a hidden model on an AVX CPU", "Nehalem", avx(), "Sandybridge"},
      {"an SSE-only CPU keeps its kernels", "Prescott", sse(), std::nullopt},
      {"AVX2 kernels on an AVX-512 CPU", "Haswell", avx512(), "SkylakeX"},
      {"AVX-512 foundation alone is not enough", "Sandybridge", avx512FoundationOnly(), "Haswell"},
      {"a known AVX-512 CPU stays", "SkylakeX", avx512(), std::nullopt},
      {"Cooperlake is as wide as SkylakeX", "Cooperlake", avx512(), std::nullopt},
      {"a Zen with AVX2 stays", "Zen", avx2(), std::nullopt},
      {"kernels wider than the flags say stay", "SkylakeX", avx2(), std::nullopt},
      {"a name this table does not know stays", "ArmV8", avx512(), std::nullopt},
      {"the names are exact", "prescott", avx512(), std::nullopt},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(fasterBlasCore(row.chosen, row.features), row.want) << row.name;
  }
}

}  // namespace
}  // namespace ringmaster::trainer::model
