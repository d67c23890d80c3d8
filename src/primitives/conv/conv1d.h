// conv1d.h — the per-ISA entry points of the direct 1-D convolution of short
// sequences (conv1d.isa.cpp) and their arguments; the direct 1-D driver
// (kernels/nn/conv/conv_direct1d.cpp) packs the weights and pads the rows, then runs conv1d_block on blocks of
// output channels.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// Output rows [0, rows) (rows <= conv1d_block_rows()) of one block, all P
// positions: y[r][p] = bias[r] + sum over c < C, t < k of
// wp(c, t, r) * xp[c][p + t * dil].
struct Conv1dBlock {
  const float* xp;  // zero-padded input rows, row stride ldx >= P + (k - 1) * dil + conv1d_slack()
  int64_t ldx;
  int64_t C, k, dil;   // channels, taps, dilation
  const float* wp;     // the block's packed weights (conv1d_pack)
  const float* bias;   // the block's rows, or null (0)
  int64_t rows;
  float* y;
  int64_t ldy;
  int64_t P;
};

}  // namespace spindle::kernels

// Output channels of a packed weight block.
SPINDLE_ISA_DECLARE(int64_t, conv1d_block_rows, ());
// Columns a padded input row needs past the last output position's last tap.
SPINDLE_ISA_DECLARE(int64_t, conv1d_slack, ());
// W [M, CK] (CK = channels x taps, ONNX order) into blocks of
// conv1d_block_rows() rows, rows past M zero.
SPINDLE_ISA_DECLARE(void, conv1d_pack, (const float* w, int64_t M, int64_t CK, float* out));
SPINDLE_ISA_DECLARE(void, conv1d_block, (const ::spindle::kernels::Conv1dBlock& args));
