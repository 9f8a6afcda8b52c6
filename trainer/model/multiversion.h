#pragma once
// RM_MULTIVERSION: compile a hot loop for AVX-512, AVX2 and baseline x86-64; the loader picks
// the best the CPU has (GCC ifunc). Elsewhere it expands to nothing.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RM_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RM_MULTIVERSION
#endif
