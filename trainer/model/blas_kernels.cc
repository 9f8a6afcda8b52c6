#include "trainer/model/blas_kernels.h"

#include <cblas.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ringmaster::trainer::model {
namespace {

// How wide the vectors of an OpenBLAS kernel family are: 0 SSE, 1 AVX, 2 AVX2, 3 AVX-512.
struct CoreWidth {
  std::string_view core;
  int width;
};
// OpenBLAS's x86-64 core names (openblas_get_corename()), case as it prints them.
constexpr std::array<CoreWidth, 26> kCoreWidths{{
    {"Katmai", 0},       {"Coppermine", 0},     {"Northwood", 0},  {"Prescott", 0},
    {"Banias", 0},       {"Atom", 0},           {"Core2", 0},      {"Penryn", 0},
    {"Dunnington", 0},   {"Nehalem", 0},        {"Athlon", 0},     {"Opteron", 0},
    {"Opteron_SSE3", 0}, {"Barcelona", 0},      {"Nano", 0},       {"Bobcat", 0},
    {"Sandybridge", 1},  {"Bulldozer", 1},      {"Piledriver", 1}, {"Steamroller", 1},
    {"Haswell", 2},      {"Excavator", 2},      {"Zen", 2},        {"SkylakeX", 3},
    {"Cooperlake", 3},   {"SapphireRapids", 3},
}};

// Set in the re-executed program's environment: the kernels OpenBLAS had chosen before.
constexpr char kChosenBeforeVar[] = "RINGMASTER_BLAS_CORE_CHOSEN_BEFORE";
constexpr char kCoreTypeVar[] = "OPENBLAS_CORETYPE";

}  // namespace

std::optional<std::string> fasterBlasCore(std::string_view chosen, const CpuVectorFeatures& f) {
  int chosen_width = -1;
  for (const CoreWidth& c : kCoreWidths) {
    if (c.core == chosen) chosen_width = c.width;
  }
  if (chosen_width < 0) return std::nullopt;
  const bool avx512 = f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512cd;
  if (avx512 && chosen_width < 3) return "SkylakeX";
  if (f.avx2 && f.fma && chosen_width < 2) return "Haswell";
  if (f.avx && chosen_width < 1) return "Sandybridge";
  return std::nullopt;
}

CpuVectorFeatures detectCpuVectorFeatures() {
  CpuVectorFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx = __builtin_cpu_supports("avx");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512cd = __builtin_cpu_supports("avx512cd");
#endif
  return f;
}

std::string useFastestBlasKernels(char** argv) {
  if (std::getenv(kCoreTypeVar) != nullptr) return "";
  const std::string chosen = blasKernelsInUse();
  const std::optional<std::string> faster = fasterBlasCore(chosen, detectCpuVectorFeatures());
  if (!faster) return "";
  if (setenv(kCoreTypeVar, faster->c_str(), 1) != 0 ||
      setenv(kChosenBeforeVar, chosen.c_str(), 1) != 0) {
    return "could not set " + std::string(kCoreTypeVar) + ": " + std::strerror(errno);
  }
  execv("/proc/self/exe", argv);
  const std::string why = std::strerror(errno);
  unsetenv(kCoreTypeVar);
  unsetenv(kChosenBeforeVar);
  return "OpenBLAS runs " + chosen + " kernels on a CPU that has " + *faster +
         "'s: re-executing with " + kCoreTypeVar + "=" + *faster + " failed (" + why +
         "); set it to train faster";
}

std::string blasKernelsInUse() { return openblas_get_corename(); }

void setBlasThreads(int threads) { openblas_set_num_threads(threads); }

std::string blasKernelsNote() {
  const char* core = std::getenv(kCoreTypeVar);
  if (core == nullptr) return "";
  const char* before = std::getenv(kChosenBeforeVar);
  if (before == nullptr) {
    return "OpenBLAS: " + blasKernelsInUse() + " kernels (" + kCoreTypeVar + "=" + core +
           " was set)";
  }
  return "OpenBLAS: " + blasKernelsInUse() + " kernels; it had chosen " + before +
         "'s from the CPU's model number, which it does not know, and the CPU's flags " +
         "allow these (" + kCoreTypeVar + " overrides)";
}

}  // namespace ringmaster::trainer::model
