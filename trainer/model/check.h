#pragma once
// RM_MODEL_CHECK: guards call contracts of the model (batch sizes, labels, call order). A
// broken contract is a bug in the caller, not a run-time condition, so it aborts with the
// reason instead of returning a Status through the hot path.

#include <cstdio>
#include <cstdlib>

#define RM_MODEL_CHECK(cond, ...)                                   \
  do {                                                              \
    if (!(cond)) [[unlikely]] {                                     \
      std::fprintf(stderr, "model: contract broken: " __VA_ARGS__); \
      std::fputc('\n', stderr);                                     \
      std::abort();                                                 \
    }                                                               \
  } while (0)
