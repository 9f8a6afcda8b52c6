#pragma once
// Which OpenBLAS kernels the network runs on. OpenBLAS picks them once, when it loads, from the
// CPU's model number; a model it does not know (a hypervisor such as gVisor that hides it, a
// part newer than the library) gets its oldest x86-64 kernels, Prescott's SSE3, which run
// sgemm 4-6x slower than the AVX-512 ones on the same core. Nothing can change the kernels
// once the library is loaded, so the programs that train (the trainer, bench_pipeline) call
// useFastestBlasKernels first thing: it re-executes the program with OPENBLAS_CORETYPE set to
// the kernels the CPU's feature flags allow, and only when OpenBLAS chose older ones.
//
// Failure: a failed re-exec is reported and the program goes on with the kernels it has.

#include <optional>
#include <string>
#include <string_view>

namespace ringmaster::trainer::model {

// The vector instructions an OpenBLAS kernel family needs.
struct CpuVectorFeatures {
  bool avx = false;
  bool avx2 = false, fma = false;  // Haswell's kernels
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false,
       avx512cd = false;  // SkylakeX's kernels
};

// The OPENBLAS_CORETYPE that runs faster kernels than `chosen` (openblas_get_corename()) on a
// CPU with `features`, or nothing: when `chosen` already uses the widest vectors the CPU has,
// or is a name this table does not know (left as OpenBLAS chose it).
std::optional<std::string> fasterBlasCore(std::string_view chosen,
                                          const CpuVectorFeatures& features);

// This CPU's flags (x86-64; all false elsewhere).
CpuVectorFeatures detectCpuVectorFeatures();

// Re-executes the running program (/proc/self/exe, same arguments) with OPENBLAS_CORETYPE set
// when fasterBlasCore says so and the variable is not set already (a user's choice stands).
// Returns only when nothing needed changing, or with why the re-exec failed. Call before any
// thread starts.
std::string useFastestBlasKernels(char** argv);

// The kernels OpenBLAS runs in this process (openblas_get_corename()).
std::string blasKernelsInUse();

// The threads OpenBLAS runs each call on from now on, in this whole process: call it where no
// other thread is inside a BLAS call.
void setBlasThreads(int threads);

// For the start-up log after useFastestBlasKernels: which kernels run, and why ("" when
// OpenBLAS's own choice was kept and nobody set OPENBLAS_CORETYPE).
std::string blasKernelsNote();

}  // namespace ringmaster::trainer::model
