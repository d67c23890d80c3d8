// depthwise.h — the per-ISA depthwise convolution loops (depthwise.isa.cpp):
// the flat loop over a band's taps and the channel-blocked kernel, shared by
// kernels/nn/conv/conv_depthwise.cpp and the per-ISA file.
#pragma once

#include <cstdint>

#include "primitives/math/activation.h"

namespace spindle::kernels {

// A band of output rows [oh0, oh1) of kDwLanes consecutive depthwise planes
// (one input plane each, multiplier 1) of one image. Lane l reads the input
// plane x + l * in_plane with weights w + l * taps and bias bias[l] (bias may
// be null: 0), and writes the output plane y + l * out_plane. Spatial dims,
// strides, dilations and leading pads are those of the convolution's two
// last axes. `act` (or null) is applied to the band's outputs before they
// are stored.
struct DwBlockArgs {
  const float* x;
  int64_t in_plane;
  const float* w;
  int64_t taps;
  const float* bias;
  float* y;
  int64_t out_plane;
  int64_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
  int64_t oh0, oh1;
  const Activation* act;
  float* in_buf;   // depthwise_block_scratch(...) floats, per thread
  float* out_buf;  // (OW + 8) * kDwLanes floats, per thread
};

// Lanes of the channel-blocked kernel (8 floats, one AVX2 vector).
inline constexpr int64_t kDwLanes = 8;
// Largest taps count it takes (7x7; weights live on the stack).
inline constexpr int64_t kDwMaxTaps = 64;
// Padded width of the interleaved input rows: the columns the outputs read.
inline int64_t depthwise_block_width(int64_t OW, int64_t KW, int64_t sw, int64_t dw) {
  return (OW - 1) * sw + (KW - 1) * dw + 1;
}
// Input rows a band of `band` output rows reads.
inline int64_t depthwise_block_rows(int64_t band, int64_t KH, int64_t sh, int64_t dh) {
  return (band - 1) * sh + (KH - 1) * dh + 1;
}

}  // namespace spindle::kernels

// out[f] = bias + sum_t wk[t] * taps[t][f], f < n: every tap of a band as
// one flat loop (nt taps).
SPINDLE_ISA_DECLARE(void, depthwise_flat,
                    (const float* const* taps, int nt, const float* wk, float bias, float* out, int64_t n));
// Whether this ISA level has the channel-blocked kernel (AVX2 and above).
SPINDLE_ISA_DECLARE(bool, depthwise_block_available, ());
// One band of kDwLanes planes (see DwBlockArgs); only where available.
SPINDLE_ISA_DECLARE(void, depthwise_block, (const spindle::kernels::DwBlockArgs& a));
