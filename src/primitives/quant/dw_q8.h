// dw_q8.h — the depthwise 2-D convolution of 8-bit pixel-major (NHWC)
// input with VNNI's byte products, for weights that fit int8 once their
// zero points are subtracted (int8 weights quantized symmetrically, uint8
// ones around 128).
//
// The input rows are first copied into padded rows (padding = the input's
// zero point), split into stride phases when blocks tile the run: phase p
// holds the padded columns j with j % stride == p, in order. An output row
// of OW pixels x C channels is then one run of OW * C bytes, and so is each
// tap's input: output byte f of tap (kh, kw) reads byte f of the tap's run,
// whatever the stride, dilation or padding. (Blocks of one pixel's
// channels read a strided tap's pixels stride * C bytes apart instead, from
// the unsplit row.) 64 bytes of a run go into vpdpbusd four times,
// against the tap's weights of bytes 4i + k (k = 0..3) with the other three
// bytes of every lane zero: lane i of sum k collects byte 4i + k.
//
// Which bytes a 64-byte block holds: with few channels (lcm(C, 64) <= 1 KB
// and C not close to a multiple of 64; strided layers 32 channels at
// most), blocks tile the run (a block holds
// several pixels, or ends inside one) and the blocks every lcm(C, 64) bytes
// apart have the same channels; otherwise a block holds 64 channels of one
// pixel (its last block partial), the blocks one pixel apart sharing their
// channels. Either way the run is `step` bytes repeated (lcm(C, 64), or C),
// each `step` covered by `blocks` weight blocks, and the blocks of one
// weight block (step bytes apart) share their weight loads, four at a time.
//
// int8 input is copied with its top bit flipped (x + 128, the zero point
// moved by 128): sum (x - x_zp) * w = sum x' * w - x_zp' * sum w, padding
// x' = x_zp' adding exactly what the correction removes.
//
// dw_q8_pack and dw_q8_lanes are plain C++ (dw_q8.cpp); dw_q8_row is per
// ISA (dw_q8.isa.cpp): AVX512-VNNI at the avx512 level when the CPU has it,
// a scalar loop with the same results otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "primitives/cache_line.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// W packed for dw_q8_row: [tap][block][k][64 bytes]: byte j of weight
// block b is the weight of channel (64b + j) % C (0 past C when step == C),
// kept in copy k = j % 4 only. sums[c] = the sum of channel c's taps.
struct DwQ8Weights {
  int64_t C = 0, taps = 0, blocks = 0, step = 0;
  CacheLineVector<int8_t> packed;
  std::vector<int32_t> sums;
  bool empty() const { return packed.empty(); }
  size_t bytes() const { return packed.size() + sums.size() * sizeof(int32_t); }
};

// w: [C][taps] int8 (w_signed) or uint8, w_zp: C zero points; strided: the
// convolution's stride along the rows is above 1. Empty when some w - w_zp
// is outside int8, or when C < 16 does not divide 64 (a block would hold
// mostly padding).
DwQ8Weights dw_q8_pack(const void* w, bool w_signed, const int32_t* w_zp, int64_t C, int64_t taps,
                       bool strided = false);

// The per-channel terms in the lanes' order, [block][k][16]: lane i of sum k
// of weight block b is channel (64b + 4i + k) % C. bias_lanes folds in the input
// zero point's correction: bias[c] - x_zp' * sums[c] (x_zp' = x_zp + 128 for
// int8 input).
void dw_q8_lanes(const DwQ8Weights& w, const int32_t* bias, const float* scale, int32_t x_zp, bool x_signed,
                 int32_t* bias_lanes, float* scale_lanes);

// One output row: y[f] for f < n = OW * C is
//   requantize(sum over taps t of runs[t][in(f)] * w(t, f % C) + bias_lanes(f))
// as requant.h's RequantRow (scale, zp, clamp [lo, hi]), where in(f) =
// (f / step) * in_step + f % step: a run holds the output's bytes in order
// (in_step == step), or, with blocks of one pixel (step == C), pixels
// in_step bytes apart (a strided convolution's unsplit padded row). Every
// run is readable 63 bytes past its last input; y is written for n bytes
// only.
struct DwQ8Row {
  const uint8_t* const* runs = nullptr;  // [taps]
  const DwQ8Weights* w = nullptr;
  int64_t n = 0, in_step = 0;
  const int32_t* bias_lanes = nullptr;  // dw_q8_lanes
  const float* scale_lanes = nullptr;
  float zp = 0, lo = 0, hi = 255;
  void* y = nullptr;
  bool y_signed = false;
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, dw_q8_row, (const ::spindle::kernels::DwQ8Row& args));
