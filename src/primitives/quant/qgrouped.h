// qgrouped.h — the 2-D grouped convolution of 8-bit pixel-major (NHWC)
// input whose groups are narrow and square: cg input and cg output channels
// per group, cg in {4, 8, 16} (RegNet's and ResNeXt's grouped 3x3s), int8
// weights with zero point 0. Output channels go 16 to a vector (whole
// groups, 16 / cg of them); per step each lane takes its group's next 4
// input bytes (vpermd of the pixel's 16 bytes) and adds their products with
// its own 4 weights (vpdpbusd). An im2col and a GEMM per group would copy
// every tap's cg bytes and run GEMMs cg columns wide.
//
// qgrouped_pack is plain C++ (qgrouped.cpp); qgrouped_row is per ISA
// (qgrouped.isa.cpp): AVX512-VNNI when the CPU has it, else a scalar loop
// with the same integer results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "primitives/cache_line.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

inline constexpr int64_t kQGroupedLanes = 16;

// W packed for qgrouped_row: [block of 16 output channels][tap][cg / 4]
// [lane][4 bytes] (lanes past M zero); sums[m] = the sum of output channel
// m's weights over its taps and channels.
struct QGroupedWeights {
  int64_t m = 0, cg = 0, taps = 0;
  CacheLineVector<int8_t> packed;
  std::vector<int32_t> sums;
  size_t bytes() const { return packed.size() + sums.size() * sizeof(int32_t); }
};

// Whether qgrouped_row serves a convolution of `group` groups with W
// [m][cg][...]: cg == m / group, cg in {4, 8, 16}.
bool qgrouped_fits(int64_t m, int64_t cg, int64_t group);

// w: int8 [m][cg][taps] (a grouped Conv's W, its kernel taps flattened).
QGroupedWeights qgrouped_pack(const int8_t* w, int64_t m, int64_t cg, int64_t taps);

// One output row oh of one image:
//   acc[ow * C + m] = sum over the taps inside the input and the group's
//                     channels c of (x[ih][iw][group(m) * cg + c] - x_zp) * w[m][c][tap]
// exact in int32 (taps outside the input add nothing, as padding with x_zp).
struct QGroupedRow {
  const uint8_t* x = nullptr;  // one image [H][W][C], C == the weights' m; int8 when x_signed
  bool x_signed = false;
  int32_t x_zp = 0;
  int64_t H = 0, W = 0, C = 0, oh = 0, OW = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;  // kernel, strides, dilations, begin pads
  const QGroupedWeights* w = nullptr;
  bool vnni = false;       // the CPU has AVX512-VNNI (used at the avx512 level)
  int32_t* acc = nullptr;  // [OW][C], written
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, qgrouped_row, (const ::spindle::kernels::QGroupedRow& args));
