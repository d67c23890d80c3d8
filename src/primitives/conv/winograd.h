// winograd.h — the per-ISA transforms of Winograd F(4x4, 3x3) convolution
// (winograd.isa.cpp) and their arguments; kernels/nn/conv/conv_winograd.cpp runs the
// 36 GEMMs between them with the SGEMM.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// V of the tiles in tile rows [ty0, ty1) of one input plane x (H x W,
// padded by pt rows on top and pl columns on the left), written straight
// into the SGEMM's B panels: tile t's V[xi] goes to
// v + xi * xi_stride + (t / nr) * kp + t % nr (winograd.isa.cpp).
struct WinogradInputPlane {
  const float* x;
  int64_t H, W, pt, pl;
  int64_t ty0, ty1, TW;
  float* v;
  int64_t xi_stride, nr, kp;
  float* work;  // winograd_input_work(ty1 - ty0, TW) floats
};

// Y = A^T O A + bias for TR rows of TW tiles of one output channel: O[xi]
// at o + xi * xi_stride, `rows` output rows of OW columns at y.
struct WinogradOutputPlane {
  const float* o;
  int64_t xi_stride, TR, TW;
  float bias;
  float* y;
  int64_t rows, OW;
  float* work;  // winograd_output_work(TW) floats
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(int64_t, winograd_input_work, (int64_t TR, int64_t TW));
SPINDLE_ISA_DECLARE(void, winograd_input_plane, (const ::spindle::kernels::WinogradInputPlane& args));
SPINDLE_ISA_DECLARE(int64_t, winograd_output_work, (int64_t TW));
SPINDLE_ISA_DECLARE(void, winograd_output_plane, (const ::spindle::kernels::WinogradOutputPlane& args));
// U = G g G^T of each 3x3 filter w[m][c] (M x C filters), as u[xi][m][c].
SPINDLE_ISA_DECLARE(void, winograd_weights, (const float* w, int64_t M, int64_t C, float* u));
