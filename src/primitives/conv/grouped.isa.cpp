// grouped.isa.cpp — direct convolution of narrow groups (RegNet's group
// width 8: 8 input and 8 output channels a group), kernels/nn/conv/conv_grouped.cpp,
// compiled once per ISA level (src/primitives/isa/dispatch.h).
//
// The 8 output channels of a block sit in the vector lanes: for each output
// pixel of a row segment (up to 8 pixels, one accumulator each), every
// input channel c and tap (kh, kw) adds the broadcast input value times the
// tap's 8 weights. The sums start at the bias and take the taps in the
// order k = (c * KH + kh) * KW + kw, one fused multiply-add each: the
// operations of the SGEMM's implicit-GEMM path (sgemm_taps) on the same
// weights, so both paths give the same bits. The accumulators of a segment
// are then transposed (8 pixels x 8 channels) and stored as the rows of the
// 8 output planes.
//
// AVX2 and AVX-512 levels (8 lanes at both); at the baseline level
// grouped8_max_rows is 0 and Conv (kernels/nn/conv.cpp) keeps its other paths.
#include <cstdint>

#include "primitives/conv/grouped.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

#if defined(__AVX2__)
namespace {

// What one call works on (grouped8_rows' arguments).
struct Geometry {
  const float* xp;
  int64_t cstride, WP, Cg, KH, KW, sh, sw, dh, dw, rows, OW;
  const float* wp;
  const float* bias;
  float* y;
  int64_t ystride, ldy;
};

// The R accumulators of a segment (pixel i: 8 output channels) as the rows
// of the 8 output planes, 8 pixels per transpose.
template <int R>
inline void store_segment(const __m256* acc, float* y, int64_t ystride) {
  for (int i0 = 0; i0 < R; i0 += 8) {
    const int n = R - i0 < 8 ? R - i0 : 8;
    __m256 v[8];
    for (int i = 0; i < 8; ++i) v[i] = i < n ? acc[i0 + i] : _mm256_setzero_ps();
    simd::transpose8(v);
    for (int m = 0; m < 8; ++m) simd::store_first(y + m * ystride + i0, v[m], n);
  }
}

// One row segment of R output pixels starting at input column 0 of the
// rows `row[c * KH + kh]` (zero-padded input rows, stride S between output
// pixels; S = 0: the run-time stride g.sw), into y (row of plane 0).
template <int R, int S>
inline void segment(const Geometry& g, const float* const* row, float* y) {
  const int64_t s = S ? S : g.sw;
  const float* wp = g.wp;
  __m256 acc[R];
  const __m256 b = g.bias ? _mm256_loadu_ps(g.bias) : _mm256_setzero_ps();
  for (int i = 0; i < R; ++i) acc[i] = b;
  for (int64_t ck = 0; ck < g.Cg * g.KH; ++ck) {
    const float* r = row[ck];
    for (int64_t kw = 0; kw < g.KW; ++kw, wp += 8) {
      const __m256 w = _mm256_loadu_ps(wp);
      const float* t = r + kw * g.dw;
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(t + i * s), w, acc[i]);
    }
  }
  store_segment<R>(acc, y, g.ystride);
}

// The same segment for 3 taps of dilation 1 a row at stride S (compile
// time): each input value of a row is broadcast once and multiplied by the 3
// weights in registers into every output it feeds (output o, tap kw reads
// column o * S + kw), loading a segment's inputs once instead of 3 times.
// Going through the columns in increasing order gives each output its taps
// in increasing kw, so the sums are segment's.
template <int R, int S>
inline void segment3(const Geometry& g, const float* const* row, float* y) {
  constexpr int K = 3;
  const float* wp = g.wp;
  __m256 acc[R];
  const __m256 b = g.bias ? _mm256_loadu_ps(g.bias) : _mm256_setzero_ps();
  for (int i = 0; i < R; ++i) acc[i] = b;
  for (int64_t ck = 0; ck < g.Cg * g.KH; ++ck, wp += 8 * K) {
    const float* r = row[ck];
    __m256 w[K];
    for (int kw = 0; kw < K; ++kw) w[kw] = _mm256_loadu_ps(wp + 8 * kw);
#pragma GCC unroll 32
    for (int i = 0; i < (R - 1) * S + K; ++i) {
      const __m256 v = _mm256_broadcast_ss(r + i);
#pragma GCC unroll 8
      for (int kw = 0; kw < K; ++kw) {
        const int o = (i - kw) / S;
        if (i >= kw && (i - kw) % S == 0 && o < R) acc[o] = _mm256_fmadd_ps(v, w[kw], acc[o]);
      }
    }
  }
  store_segment<R>(acc, y, g.ystride);
}

// segment / segment3 with R = n (1 <= n <= R) as a compile-time length.
template <int R, int S, bool Three>
inline void segment_of(int64_t n, const Geometry& g, const float* const* row, float* y) {
  if constexpr (R > 1) {
    if (n < R) return segment_of<R - 1, S, Three>(n, g, row, y);
  }
  if constexpr (Three) segment3<R, S>(g, row, y);
  else segment<R, S>(g, row, y);
}

// Every output row in segments of up to kMax pixels, of equal length (28
// columns in 3-tap rows: 10 + 10 + 8, not 12 + 12 + 4): each accumulator
// takes dependent multiply-adds, so a short segment waits on them. 3-tap
// rows keep 12 accumulators (3 weights in registers), others 8.
template <int S, bool Three>
void all_rows(const Geometry& g) {
  constexpr int kMax = Three ? 12 : 8;
  constexpr int64_t kMaxRows = 512;  // Cg * KH, checked by the caller
  const float* row[kMaxRows];
  const int64_t step = S ? S : g.sw;
  const int64_t nseg = (g.OW + kMax - 1) / kMax, len = (g.OW + nseg - 1) / nseg;
  for (int64_t oh = 0; oh < g.rows; ++oh)
    for (int64_t ow0 = 0; ow0 < g.OW; ow0 += len) {
      for (int64_t c = 0; c < g.Cg; ++c)
        for (int64_t kh = 0; kh < g.KH; ++kh)
          row[c * g.KH + kh] = g.xp + c * g.cstride + (oh * g.sh + kh * g.dh) * g.WP + ow0 * step;
      segment_of<kMax, S, Three>(g.OW - ow0 < len ? g.OW - ow0 : len, g, row, g.y + oh * g.ldy + ow0);
    }
}

}  // namespace
#endif

// The most input rows (Cg * KH) grouped8_rows takes; 0 at levels without
// the kernel.
int64_t grouped8_max_rows() {
#if defined(__AVX2__)
  return 512;
#else
  return 0;
#endif
}

// Output rows [0, rows) (row stride ldy) of 8 output planes (plane stride
// ystride) at y, from the group's zero-padded input planes xp (channel c at
// xp + c * cstride, WP floats a row; output row oh, column ow reads padded
// row oh * sh + kh * dh, column ow * sw + kw * dw) and the weights wp[c][kh]
// [kw][8 output channels]; bias: 8 floats or null.
void grouped8_rows(const ::spindle::kernels::Grouped8Rows& args) {
  const float* xp = args.xp;
  int64_t cstride = args.cstride;
  int64_t WP = args.WP;
  int64_t Cg = args.Cg;
  int64_t KH = args.KH;
  int64_t KW = args.KW;
  int64_t sh = args.sh;
  int64_t sw = args.sw;
  int64_t dh = args.dh;
  int64_t dw = args.dw;
  int64_t rows = args.rows;
  int64_t OW = args.OW;
  const float* wp = args.wp;
  const float* bias = args.bias;
  float* y = args.y;
  int64_t ystride = args.ystride;
  int64_t ldy = args.ldy;
#if defined(__AVX2__)
  const Geometry g{xp, cstride, WP, Cg, KH, KW, sh, sw, dh, dw, rows, OW, wp, bias, y, ystride, ldy};
  const bool three = KW == 3 && dw == 1;
  if (three && sw == 1) all_rows<1, true>(g);
  else if (three && sw == 2) all_rows<2, true>(g);
  else if (sw == 1) all_rows<1, false>(g);
  else if (sw == 2) all_rows<2, false>(g);
  else all_rows<0, false>(g);
#else
  (void)xp, (void)cstride, (void)WP, (void)Cg, (void)KH, (void)KW, (void)sh, (void)sw, (void)dh, (void)dw;
  (void)rows, (void)OW, (void)wp, (void)bias, (void)y, (void)ystride, (void)ldy;
#endif
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
