#pragma once
// RM_MULTIVERSION: compile a hot loop for AVX-512, AVX2 and baseline x86-64; the loader picks
// the best the CPU has (GCC ifunc). Elsewhere it expands to nothing.

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RM_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RM_MULTIVERSION
#endif

// RM_ELEMENTWISE: the loop that follows reads element i of its inputs before writing element i
// of its output and touches no other, so it vectorizes even when output and input are one
// buffer (an update in place), where __restrict would be a lie. GCC builds the product; clang
// (the sanitized tree) vectorizes such loops behind a run-time overlap check of its own.
#if defined(__GNUC__) && !defined(__clang__)
#define RM_ELEMENTWISE _Pragma("GCC ivdep")
#else
#define RM_ELEMENTWISE
#endif
