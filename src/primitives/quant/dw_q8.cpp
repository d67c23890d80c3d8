// dw_q8.cpp — dw_q8_pack and dw_q8_lanes (dw_q8.h).
#include "primitives/quant/dw_q8.h"

#include <numeric>

namespace spindle::kernels {

DwQ8Weights dw_q8_pack(const void* w, bool w_signed, const int32_t* w_zp, int64_t C, int64_t taps, bool strided) {
  DwQ8Weights p;
  if (C <= 0 || taps <= 0 || (C < 16 && 64 % C != 0)) return p;
  std::vector<int8_t> centered(static_cast<size_t>(C * taps));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = c * taps + t;
      const int32_t v = (w_signed ? int32_t{static_cast<const int8_t*>(w)[i]} : int32_t{static_cast<const uint8_t*>(w)[i]}) -
                        w_zp[c];
      if (v < -128 || v > 127) return p;
      centered[static_cast<size_t>(i)] = static_cast<int8_t>(v);
    }
  // Blocks tiling the run when the channels repeat within 1 KB and blocks
  // of whole pixels would leave more than 1/8 of the lanes idle; else
  // blocks of one pixel's channels. A strided layer tiles only 32 channels
  // or fewer: tiling makes it copy its padded rows into stride phases pixel
  // by pixel (72 channels, 5x5 / 2: 109 us tiled against 70-93 in one-pixel
  // blocks; 24 channels, 3x3 / 2: alike).
  const int64_t lcm = std::lcm(C, int64_t{64}), pixel_blocks = (C + 63) / 64;
  const bool tile = lcm <= 1024 && C * 8 < pixel_blocks * 64 * 7 && (!strided || C <= 32);
  p.C = C;
  p.taps = taps;
  p.step = tile ? lcm : C;
  p.blocks = tile ? lcm / 64 : pixel_blocks;
  p.packed.assign(static_cast<size_t>(taps * p.blocks * 4 * 64), 0);
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t r = 0; r < p.blocks * 64; ++r) {
      if (r >= p.step) break;  // one pixel's blocks: padding lanes 0
      const int64_t b = r / 64, j = r % 64;
      p.packed[static_cast<size_t>(((t * p.blocks + b) * 4 + j % 4) * 64 + j)] =
          centered[static_cast<size_t>((r % C) * taps + t)];
    }
  p.sums.assign(static_cast<size_t>(C), 0);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < taps; ++t) p.sums[static_cast<size_t>(c)] += centered[static_cast<size_t>(c * taps + t)];
  return p;
}

void dw_q8_lanes(const DwQ8Weights& w, const int32_t* bias, const float* scale, int32_t x_zp, bool x_signed,
                 int32_t* bias_lanes, float* scale_lanes) {
  const int64_t zp = x_signed ? int64_t{x_zp} + 128 : int64_t{x_zp};
  for (int64_t b = 0; b < w.blocks; ++b)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t c = (64 * b + 4 * i + k) % w.C, at = (b * 4 + k) * 16 + i;
        // The int32 sums wrap as the accumulators do (requant.h).
        bias_lanes[at] = static_cast<int32_t>(static_cast<uint32_t>(bias[c]) -
                                              static_cast<uint32_t>(zp * w.sums[static_cast<size_t>(c)]));
        scale_lanes[at] = scale[c];
      }
}

}  // namespace spindle::kernels
