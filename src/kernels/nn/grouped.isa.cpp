// grouped.isa.cpp — direct convolution of narrow groups (RegNet's group
// width 8: 8 input and 8 output channels a group), conv.cpp's grouped path,
// compiled once per ISA level (src/kernels/isa/dispatch.h).
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
// grouped8_max_rows is 0 and conv.cpp keeps its other paths.
#include <cstdint>

#include "kernels/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

#if defined(__AVX2__)
namespace {

// One row segment of R (1..8) output pixels starting at input column 0 of
// the rows `row[c * KH + kh]` (zero-padded input rows, stride SW between
// output pixels; SW = 0: the run-time stride sw), into y (row of plane 0;
// plane stride ystride).
template <int R, int SW>
inline void segment(const float* const* row, int64_t Cg, int64_t KH, int64_t KW, int64_t dw, int64_t sw,
                    const float* wp, const float* bias, float* y, int64_t ystride) {
  const int64_t s = SW ? SW : sw;
  __m256 acc[R];
  const __m256 b = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  for (int i = 0; i < R; ++i) acc[i] = b;
  for (int64_t ck = 0; ck < Cg * KH; ++ck) {
    const float* r = row[ck];
    for (int64_t kw = 0; kw < KW; ++kw, wp += 8) {
      const __m256 w = _mm256_loadu_ps(wp);
      const float* t = r + kw * dw;
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(t + i * s), w, acc[i]);
    }
  }
  __m256 v[8];
  for (int i = 0; i < 8; ++i) v[i] = i < R ? acc[i] : _mm256_setzero_ps();
  simd::transpose8(v);
  for (int m = 0; m < 8; ++m) simd::store_first(y + m * ystride, v[m], R);
}

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

// The same segment for KW = K taps of dilation 1 at stride S (both compile
// time): each input value of a row is broadcast once and multiplied by the
// K weights in registers into every output it feeds (output o, tap kw reads
// column o * S + kw), loading a segment's inputs once instead of K times.
// Going through the columns in increasing order gives each output its taps
// in increasing kw, so the sums are segment's.
template <int R, int K, int S>
inline void segment_reuse(const float* const* row, int64_t CK, const float* wp, const float* bias, float* y,
                          int64_t ystride) {
  __m256 acc[R];
  const __m256 b = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
  for (int i = 0; i < R; ++i) acc[i] = b;
  for (int64_t ck = 0; ck < CK; ++ck, wp += 8 * K) {
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
  store_segment<R>(acc, y, ystride);
}

template <int S>
void rows_reuse3(const float* xp, int64_t cstride, int64_t WP, int64_t Cg, int64_t KH, int64_t sh, int64_t dh,
                 int64_t rows, int64_t OW, const float* wp, const float* bias, float* y, int64_t ystride,
                 int64_t ldy) {
  constexpr int64_t kMaxRows = 512;  // Cg * KH, checked by the caller
  const float* row[kMaxRows];
  // Segments of up to 12 pixels and of equal length (28 columns: 10 + 10 +
  // 8, not 12 + 12 + 4): each accumulator takes K dependent multiply-adds
  // per input row, so a short segment waits on them.
  const int64_t nseg = (OW + 11) / 12, len = (OW + nseg - 1) / nseg;
  for (int64_t oh = 0; oh < rows; ++oh) {
    for (int64_t ow0 = 0; ow0 < OW; ow0 += len) {
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t kh = 0; kh < KH; ++kh) row[c * KH + kh] = xp + c * cstride + (oh * sh + kh * dh) * WP + ow0 * S;
      float* yo = y + oh * ldy + ow0;
      const int64_t CK = Cg * KH;
      switch (OW - ow0 < len ? OW - ow0 : len) {
        case 12: segment_reuse<12, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 11: segment_reuse<11, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 10: segment_reuse<10, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 9: segment_reuse<9, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 8: segment_reuse<8, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 7: segment_reuse<7, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 6: segment_reuse<6, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 5: segment_reuse<5, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 4: segment_reuse<4, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 3: segment_reuse<3, 3, S>(row, CK, wp, bias, yo, ystride); break;
        case 2: segment_reuse<2, 3, S>(row, CK, wp, bias, yo, ystride); break;
        default: segment_reuse<1, 3, S>(row, CK, wp, bias, yo, ystride); break;
      }
    }
  }
}

template <int SW>
void rows_with_stride(const float* xp, int64_t cstride, int64_t WP, int64_t Cg, int64_t KH, int64_t KW, int64_t sh,
                      int64_t sw, int64_t dh, int64_t dw, int64_t rows, int64_t OW, const float* wp,
                      const float* bias, float* y, int64_t ystride, int64_t ldy) {
  constexpr int64_t kMaxRows = 512;  // Cg * KH, checked by the caller
  const float* row[kMaxRows];
  for (int64_t oh = 0; oh < rows; ++oh) {
    for (int64_t ow0 = 0; ow0 < OW; ow0 += 8) {
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t kh = 0; kh < KH; ++kh) row[c * KH + kh] = xp + c * cstride + (oh * sh + kh * dh) * WP + ow0 * sw;
      float* yo = y + oh * ldy + ow0;
      switch (OW - ow0 < 8 ? OW - ow0 : 8) {
        case 8: segment<8, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 7: segment<7, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 6: segment<6, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 5: segment<5, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 4: segment<4, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 3: segment<3, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        case 2: segment<2, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
        default: segment<1, SW>(row, Cg, KH, KW, dw, sw, wp, bias, yo, ystride); break;
      }
    }
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
void grouped8_rows(const float* xp, int64_t cstride, int64_t WP, int64_t Cg, int64_t KH, int64_t KW, int64_t sh,
                   int64_t sw, int64_t dh, int64_t dw, int64_t rows, int64_t OW, const float* wp, const float* bias,
                   float* y, int64_t ystride, int64_t ldy) {
#if defined(__AVX2__)
  if (KW == 3 && dw == 1 && sw == 1)
    rows_reuse3<1>(xp, cstride, WP, Cg, KH, sh, dh, rows, OW, wp, bias, y, ystride, ldy);
  else if (KW == 3 && dw == 1 && sw == 2)
    rows_reuse3<2>(xp, cstride, WP, Cg, KH, sh, dh, rows, OW, wp, bias, y, ystride, ldy);
  else if (sw == 1)
    rows_with_stride<1>(xp, cstride, WP, Cg, KH, KW, sh, sw, dh, dw, rows, OW, wp, bias, y, ystride, ldy);
  else if (sw == 2)
    rows_with_stride<2>(xp, cstride, WP, Cg, KH, KW, sh, sw, dh, dw, rows, OW, wp, bias, y, ystride, ldy);
  else
    rows_with_stride<0>(xp, cstride, WP, Cg, KH, KW, sh, sw, dh, dw, rows, OW, wp, bias, y, ystride, ldy);
#else
  (void)xp, (void)cstride, (void)WP, (void)Cg, (void)KH, (void)KW, (void)sh, (void)sw, (void)dh, (void)dw;
  (void)rows, (void)OW, (void)wp, (void)bias, (void)y, (void)ystride, (void)ldy;
#endif
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
