// grouped.h — the per-ISA entry points of the direct convolution of narrow
// groups (8 output channels in the vector lanes, grouped.isa.cpp) and their
// arguments, for kernels/nn/conv/conv_grouped.cpp.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// Output rows [0, rows) (row stride ldy) of 8 output planes (plane stride
// ystride) at y, from the group's zero-padded input planes xp (channel c at
// xp + c * cstride, WP floats a row; output row oh, column ow reads padded
// row oh * sh + kh * dh, column ow * sw + kw * dw) and the weights
// wp[c][kh][kw][8 output channels]; bias: 8 floats or null.
struct Grouped8Rows {
  const float* xp;
  int64_t cstride, WP;
  int64_t Cg, KH, KW;
  int64_t sh, sw, dh, dw;
  int64_t rows, OW;
  const float* wp;
  const float* bias;
  float* y;
  int64_t ystride, ldy;
};

}  // namespace spindle::kernels

// Most input rows (Cg * KH) a group may have; 0 where the level has no
// kernel (the baseline).
SPINDLE_ISA_DECLARE(int64_t, grouped8_max_rows, ());
SPINDLE_ISA_DECLARE(void, grouped8_rows, (const ::spindle::kernels::Grouped8Rows& args));
