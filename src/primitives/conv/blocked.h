// blocked.h — the per-ISA loops of the NCHW8c (channel-blocked) layout
// (blocked.isa.cpp) and their arguments, for kernels/nn/blocked.cpp, which
// splits the work and runs the epilogue (residual, activation). A plane
// block is [P][8] floats: one block of 8 channels of one image.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// Output rows [oh0, oh1) of one depthwise channel block: x [H][W][8], wk
// [KH * KW][8], bias [8], y [OH][OW][8]; strides sh / sw, leading pads
// pt / pl and trailing pads pb / pr. y = bias + taps.
struct BlockedDwBand {
  const float* x;
  int64_t H, W;
  const float* wk;
  int64_t KH, KW, sh, sw, pt, pl, pb, pr;
  const float* bias;
  float* y;
  int64_t OW, oh0, oh1;
};

// Output rows [oh0, oh1) of one grouped-convolution output block: x the
// group's first input block of the image ([Cg/8][H][W][8]), wk the block's
// packed weights [Cg][KH * KW][8], bias [8], y [OH][OW][8]. y = bias +
// products.
struct BlockedGcBand {
  const float* x;
  int64_t H, W, Cg;
  const float* wk;
  int64_t KH, KW, sh, sw, pt, pl, pb, pr;
  const float* bias;
  float* y;
  int64_t OW, oh0, oh1;
};

// Output rows [oh0, oh1) of a group of mb (1 to 3) output blocks of a
// convolution of an NCHW input (a stem): x the image [C][H][W], wg the
// group's packed weights [C][KH][KW][mb][8], bias [mb * 8], y the group's
// first output block (ys floats between blocks). y = bias + products.
struct BlockedNchwBand {
  const float* x;
  int64_t C, H, W;
  const float* wg;
  int mb;
  int64_t KH, KW, sh, sw, pt, pl;
  const float* bias;
  float* y;
  int64_t ys, OW, oh0, oh1;
};

// Pixels [p0, p1) of the output blocks of one pointwise (1x1) group: x the
// image's input [cin/8][P][8] (xs floats per block), w the group's packed
// weights [cin][mb][8] (mb in 1..3), bias [mb * 8], y the group's first
// output block (ys floats per block); input channels in blocks of kc. The
// next group's weights (w_next, mb_next; null, 0 for none) are asked for
// ahead.
struct BlockedPwBlock {
  const float* x;
  int64_t xs, cin, kc;
  const float* w;
  int mb;
  const float* bias;
  float* y;
  int64_t ys, p0, p1;
  const float* w_next;
  int mb_next;
};

}  // namespace spindle::kernels

// 8 NCHW planes of P pixels <-> one plane block.
SPINDLE_ISA_DECLARE(void, blocked_pack8, (const float* x, int64_t P, float* y));
SPINDLE_ISA_DECLARE(void, blocked_unpack8, (const float* y, int64_t P, float* x));
// The mean of a plane block's pixels, summed in pixel order from 0.
SPINDLE_ISA_DECLARE(void, blocked_gap8, (const float* x, int64_t P, float* out));
SPINDLE_ISA_DECLARE(void, blocked_dw_band, (const ::spindle::kernels::BlockedDwBand& args));
SPINDLE_ISA_DECLARE(void, blocked_gc_band, (const ::spindle::kernels::BlockedGcBand& args));
SPINDLE_ISA_DECLARE(void, blocked_nchw_band, (const ::spindle::kernels::BlockedNchwBand& args));
SPINDLE_ISA_DECLARE(void, blocked_pw_block, (const ::spindle::kernels::BlockedPwBlock& args));
