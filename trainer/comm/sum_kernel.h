#pragma once
// The elementwise float sum shared by the in-process and shared-memory backends.
//
// Every output element is in[0][i] + in[1][i] + ... + in[n-1][i], added in that order, so
// ranks that sum the same inputs get bitwise identical results. Thread-safety: pure functions
// over caller-owned memory. Failure: none (the caller checks sizes).

#include <cstddef>

namespace ringmaster::trainer::comm {

// out[i] = sum over k of in[k][i], for i < count. `out` may alias in[k] elementwise (same
// address), but must not partially overlap any input.
void sumArrays(float* out, const float* const* in, int n, size_t count);

// Like sumArrays, writing the result to both out_a and out_b (one pass over the inputs).
// out_b may be null.
void sumArraysTwice(float* out_a, float* out_b, const float* const* in, int n, size_t count);

}  // namespace ringmaster::trainer::comm
