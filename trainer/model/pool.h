#pragma once
// The fused bias + ReLU + 2x2 max-pool that follows each conv sgemm, on NHWC data (channels
// contiguous, so every loop runs along channels in vector registers), and the transpose
// between that and the NCHW the layers exchange.
//
// Thread-safety: pure functions. Failure: none.

#include <cstdint>

namespace ringmaster::trainer::model {

// Window positions 0..3 are row-major in the 2x2 window; kReluOff marks an output that the
// ReLU zeroed (no gradient flows back through it).
inline constexpr uint8_t kReluOff = 4;

// z: [h, w, c], one sample's conv output. pooled[(py*pw + px), c] = max(0, bias[c] + max of
// the 2x2 window); route gets the position of the max (the first on ties) or kReluOff.
// ph = h/2, pw = w/2: a last odd row/column is dropped.
void poolForward(const float* z, const float* bias, int h, int w, int c, float* pooled,
                 uint8_t* route);

// The adjoint: dz [h, w, c] gets dpooled at each window's routed position and 0 at the others
// (a dropped odd edge is left as it is). When dbias is non-null it is incremented by the
// per-channel sum of the gradient that passed the ReLU.
void poolBackward(const float* dpooled, const uint8_t* route, int h, int w, int c, float* dz,
                  float* dbias);

// to[j, i] = from[i, j]; from is [rows, cols].
void transpose(const float* from, int rows, int cols, float* to);

}  // namespace ringmaster::trainer::model
