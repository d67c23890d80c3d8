// conv_grouped.cpp — the grouped convolution driver for groups of 8 output
// channels (RegNet's group width 8): grouped8_rows (grouped.isa.cpp) on
// zero-padded input planes, with weights packed at kernel creation.
#include <cstring>

#include "kernels/nn/conv/conv_algorithms.h"
#include "kernels/nn/conv/conv_planes.h"
#include "primitives/conv/grouped.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn::conv {

Grouped8Weights prepare_grouped8(const Tensor& w, int64_t G) {
  // [g][block of 8 output channels][c][kh][kw][8]
  const int64_t Mg = w.dim(0) / G, Cg = w.dim(1), KK = w.dim(2) * w.dim(3);
  const float* src = w.data<float>();
  Grouped8Weights gw;
  gw.w.resize(static_cast<size_t>(w.numel()));
  for (int64_t m = 0; m < w.dim(0); ++m) {
    const int64_t g = m / Mg, mb = (m % Mg) / 8, l = m % 8;
    for (int64_t ck = 0; ck < Cg * KK; ++ck)
      gw.w[static_cast<size_t>((((g * (Mg / 8) + mb) * Cg * KK) + ck) * 8 + l)] = src[m * Cg * KK + ck];
  }
  return gw;
}

// Narrow groups of 8 output channels (RegNet's group width 8):
// grouped8_rows (grouped.isa.cpp) with the 8 output channels of a block in
// the vector lanes, on zero-padded input planes of the group per band of
// output rows. Same sums in the same order as run_taps, so the same bits.
void run_grouped8(const ConvArgs& a, const Grouped8Weights& gw) {
  KernelContext& ctx = a.ctx;
  const float* x = a.x;
  const float* bias = a.bias;
  float* y = a.y;
  const int64_t N = a.N, C = a.C, M = a.M, G = a.G;
  const Window3& w = a.w;
  const Epilogue& ep = a.ep;
  static const auto rows_fn = SPINDLE_ISA_SELECT(grouped8_rows);
  const int64_t Cg = C / G, Mg = M / G, OH = w.out[1], OW = w.out[2], P = w.out_size();
  const int64_t H = w.in[1], W = w.in[2], KH = w.k[1], KW = w.k[2], in_plane = w.in_size();
  const int64_t sh = w.s[1], sw = w.s[2], dh = w.d[1], dw = w.d[2];
  const int64_t WP = (OW - 1) * sw + (KW - 1) * dw + 1;
  const Cost plane_cost = fma_cost(static_cast<double>(P) * static_cast<double>(Cg * KH * KW));
  const int64_t bands = std::clamp<int64_t>(ceil_div(blocks_for_cost(N * M, plane_cost), N * G), 1, OH);
  const int64_t band_rows = ceil_div(OH, bands), nbands = ceil_div(OH, band_rows);
  const int64_t items = N * G * nbands;
  parallel_for(ctx.pool(), 0, items,
               grain_for_cost(ops_cost(static_cast<double>(Mg * band_rows * OW) * static_cast<double>(Cg * KH * KW))),
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t ng = i / nbands, n = ng / G, g = ng % G;
                   const int64_t oh0 = (i % nbands) * band_rows, band = std::min(OH, oh0 + band_rows) - oh0;
                   const int64_t HP = (band - 1) * sh + (KH - 1) * dh + 1, cstride = HP * WP;
                   float* planes = scratch_floats(0, static_cast<size_t>(Cg * cstride));
                   const float* xg = x + (n * C + g * Cg) * in_plane;
                   for (int64_t c = 0; c < Cg; ++c)
                     for (int64_t r = 0; r < HP; ++r) {
                       const int64_t ih = oh0 * sh - w.pb[1] + r;
                       float* dst = planes + c * cstride + r * WP;
                       if (ih < 0 || ih >= H) std::memset(dst, 0, sizeof(float) * static_cast<size_t>(WP));
                       else fill_padded_row(xg + c * in_plane + ih * W, W, w.pb[2], WP, 1, 0, dst);
                     }
                   for (int64_t mb = 0; mb < Mg / 8; ++mb) {
                     const int64_t m0 = g * Mg + mb * 8;
                     float* ym = y + (n * M + m0) * P + oh0 * OW;
                     rows_fn({.xp = planes, .cstride = cstride, .WP = WP, .Cg = Cg, .KH = KH, .KW = KW, .sh = sh,
                              .sw = sw, .dh = dh, .dw = dw, .rows = band, .OW = OW,
                              .wp = gw.w.data() + (g * (Mg / 8) + mb) * Cg * KH * KW * 8,
                              .bias = bias ? bias + m0 : nullptr, .y = ym, .ystride = P, .ldy = OW});
                     if (!ep.empty())
                       for (int64_t l = 0; l < 8; ++l) ep.run(ym + l * P, band * OW);
                   }
                 }
               });
}

}  // namespace spindle::kernels::nn::conv
