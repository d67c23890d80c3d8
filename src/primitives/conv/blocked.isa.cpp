// blocked.isa.cpp — the inner loops of the NCHW8c (channel-blocked) kernels
// of blocked.cpp, compiled once per ISA level (src/primitives/isa/dispatch.h).
//
// Layout: a blocked tensor of an NCHW tensor [N, C, H, W] (C a multiple of
// 8) is [N, C/8, H, W, 8]: channel c of pixel (h, w) lives at
// [c / 8][h][w][c % 8], so one pixel of a block of 8 channels is one AVX2
// vector. Every function here works on one block of 8 channels of one image
// (a "plane block", [P][8] floats for P pixels) or a part of it; blocked.cpp
// splits the work and runs the epilogue (residual, activation).
//
//   blocked_pack8 / blocked_unpack8  8 NCHW planes <-> one plane block
//                                    (8x8 transposes at AVX2).
//   blocked_gap8                     the mean of a plane block's pixels,
//                                    summed in pixel order from 0.
//   blocked_dw_band                  depthwise convolution, one band of
//                                    output rows of one channel block.
//   blocked_pw_block                 1x1 convolution, a group of 1 to 3
//                                    output blocks over a range of pixels.
//   blocked_gc_band                  grouped convolution (group width a
//                                    multiple of 8), one band of output
//                                    rows of one output block.
//   blocked_nchw_band                convolution of an NCHW input (a stem:
//                                    few channels) into blocked output,
//                                    one band of output rows of a group
//                                    of 1 to 3 output blocks.
//
// At AVX2 and above (8-lane intrinsics, FMA) the depthwise 3x3 / 5x5 at
// stride 1 / 2, the grouped 3x3 at stride 1 / 2, the pointwise kernel and
// the NCHW-input kernel at column stride 1 / 2 are register-tiled (see their sections); the baseline level has plain
// loops with the same operation order (multiply and add not fused, so the
// levels agree within rounding).
#include <cstdint>

#include "primitives/conv/blocked.h"
#include "primitives/isa/simd.h"  // transpose8 (AVX2 levels)

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr int64_t kLanes = 8;

inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// Pixels [ow0, ow1) of output row oh of one depthwise channel block, with
// every tap checked against the plane: acc = bias, then + x * w for the
// taps inside the plane in (kh, kw) order. Any kernel size, stride and
// padding (the generic path, and the fast path's fallback).
void dw_pixels_generic(const float* x, int64_t H, int64_t W, const float* wk, int64_t KH, int64_t KW, int64_t sh,
                       int64_t sw, int64_t pt, int64_t pl, const float* bias, float* yrow, int64_t oh, int64_t ow0,
                       int64_t ow1) {
  const int64_t ih0 = oh * sh - pt;
  const int64_t kh0 = imax(0, -ih0), kh1 = imin(KH, H - ih0);
  for (int64_t ow = ow0; ow < ow1; ++ow) {
    const int64_t iw0 = ow * sw - pl;
    const int64_t kw0 = imax(0, -iw0), kw1 = imin(KW, W - iw0);
#if defined(__AVX2__)
    __m256 acc = _mm256_loadu_ps(bias);
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const float* r = x + (ih0 + kh) * W * kLanes;
      const float* w = wk + kh * KW * kLanes;
      for (int64_t kw = kw0; kw < kw1; ++kw)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(r + (iw0 + kw) * kLanes), _mm256_loadu_ps(w + kw * kLanes), acc);
    }
    _mm256_storeu_ps(yrow + ow * kLanes, acc);
#else
    float acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = bias[l];
    for (int64_t kh = kh0; kh < kh1; ++kh) {
      const float* r = x + (ih0 + kh) * W * kLanes;
      const float* w = wk + kh * KW * kLanes;
      for (int64_t kw = kw0; kw < kw1; ++kw)
        for (int l = 0; l < kLanes; ++l) acc[l] += r[(iw0 + kw) * kLanes + l] * w[kw * kLanes + l];
    }
    for (int l = 0; l < kLanes; ++l) yrow[ow * kLanes + l] = acc[l];
#endif
  }
}

// Pixels [ow0, ow1) of output row oh of one grouped-convolution output
// block: x the group's first input block ([Cg/8][H][W][8], `plane` floats
// apart), wk the block's weights [Cg][KH][KW][8]. acc = bias, then for each
// input channel ic of the group in order, the taps (kh, kw) inside the
// plane in row-major order: acc += w[ic][kh][kw] * x[ic][ih][iw]
// (broadcast). Any kernel size, stride and padding (the generic path, and
// the fast path's fallback).
void gc_pixels_generic(const float* x, int64_t H, int64_t W, int64_t Cg, const float* wk, int64_t KH, int64_t KW,
                       int64_t sh, int64_t sw, int64_t pt, int64_t pl, const float* bias, float* yrow, int64_t oh,
                       int64_t ow0, int64_t ow1) {
  const int64_t ih0 = oh * sh - pt, plane = H * W * kLanes, T = KH * KW;
  const int64_t kh0 = imax(0, -ih0), kh1 = imin(KH, H - ih0);
  for (int64_t ow = ow0; ow < ow1; ++ow) {
    const int64_t iw0 = ow * sw - pl;
    const int64_t kw0 = imax(0, -iw0), kw1 = imin(KW, W - iw0);
#if defined(__AVX2__)
    __m256 acc = _mm256_loadu_ps(bias);
    for (int64_t ic = 0; ic < Cg; ++ic) {
      const float* xc = x + (ic / kLanes) * plane + ic % kLanes;
      const float* wc = wk + ic * T * kLanes;
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const float* r = xc + (ih0 + kh) * W * kLanes;
        const float* w = wc + kh * KW * kLanes;
        for (int64_t kw = kw0; kw < kw1; ++kw)
          acc = _mm256_fmadd_ps(_mm256_broadcast_ss(r + (iw0 + kw) * kLanes), _mm256_loadu_ps(w + kw * kLanes), acc);
      }
    }
    _mm256_storeu_ps(yrow + ow * kLanes, acc);
#else
    float acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = bias[l];
    for (int64_t ic = 0; ic < Cg; ++ic) {
      const float* xc = x + (ic / kLanes) * plane + ic % kLanes;
      const float* wc = wk + ic * T * kLanes;
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const float* r = xc + (ih0 + kh) * W * kLanes;
        const float* w = wc + kh * KW * kLanes;
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const float v = r[(iw0 + kw) * kLanes];
          for (int l = 0; l < kLanes; ++l) acc[l] += v * w[kw * kLanes + l];
        }
      }
    }
    for (int l = 0; l < kLanes; ++l) yrow[ow * kLanes + l] = acc[l];
#endif
  }
}

// Pixels [ow0, ow1) of output row oh of a group of mb output blocks of a
// convolution of an NCHW input: x the image [C][H][W], wg the group's
// weights [C][KH][KW][mb][8], bias [mb * 8], yrow row oh of the group's
// first output block ([OW][8], ys floats between blocks). Per output block,
// acc = bias, then for each input channel ic in order the taps (kh, kw)
// inside the plane in row-major order: acc += w[ic][kh][kw] * x[ic][ih][iw]
// (broadcast). Any kernel size, stride and padding (the generic path, the
// fast path's border pixels, and the baseline level).
void nc_pixels_generic(const float* x, int64_t C, int64_t H, int64_t W, const float* wg, int mb, int64_t KH,
                       int64_t KW, int64_t sh, int64_t sw, int64_t pt, int64_t pl, const float* bias, float* yrow,
                       int64_t ys, int64_t oh, int64_t ow0, int64_t ow1) {
  const int64_t ih0 = oh * sh - pt, plane = H * W, wrow = KW * mb * kLanes;
  const int64_t kh0 = imax(0, -ih0), kh1 = imin(KH, H - ih0);
  for (int64_t ow = ow0; ow < ow1; ++ow) {
    const int64_t iw0 = ow * sw - pl;
    const int64_t kw0 = imax(0, -iw0), kw1 = imin(KW, W - iw0);
    for (int m = 0; m < mb; ++m) {
#if defined(__AVX2__)
      __m256 acc = _mm256_loadu_ps(bias + m * kLanes);
      for (int64_t ic = 0; ic < C; ++ic)
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const float* r = x + ic * plane + (ih0 + kh) * W;
          const float* w = wg + (ic * KH + kh) * wrow + m * kLanes;
          for (int64_t kw = kw0; kw < kw1; ++kw)
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + kw * mb * kLanes), _mm256_broadcast_ss(r + iw0 + kw), acc);
        }
      _mm256_storeu_ps(yrow + m * ys + ow * kLanes, acc);
#else
      float acc[kLanes];
      for (int l = 0; l < kLanes; ++l) acc[l] = bias[m * kLanes + l];
      for (int64_t ic = 0; ic < C; ++ic)
        for (int64_t kh = kh0; kh < kh1; ++kh) {
          const float* r = x + ic * plane + (ih0 + kh) * W;
          const float* w = wg + (ic * KH + kh) * wrow + m * kLanes;
          for (int64_t kw = kw0; kw < kw1; ++kw) {
            const float v = r[iw0 + kw];
            for (int l = 0; l < kLanes; ++l) acc[l] += w[kw * mb * kLanes + l] * v;
          }
        }
      for (int l = 0; l < kLanes; ++l) yrow[m * ys + ow * kLanes + l] = acc[l];
#endif
    }
  }
}

#if defined(__AVX2__)

// ---------------------------------------------------------------- depthwise, AVX2
//
// One output row at a time. A row is split into groups of at most 10
// neighbouring output pixels, of nearly equal sizes. A group keeps one
// accumulator per pixel and loads each input vector of a kernel row once,
// for every accumulator that uses it. The group's columns left of the row
// (CL) and right of it (CR) are template arguments, so border groups skip
// those loads and taps at no cost and no pixel takes a checked path; kernel
// rows in the top / bottom padding are skipped. The weight vectors stay in
// registers when they fit beside the accumulators (3x3, <= 6 pixels), else
// a kernel row's K are loaded once per group. Each pixel's sum is bias, then
// its taps in (kh, kw) order, as in dw_pixels_generic.

// rows[kh]: input row oh * S - pt + kh ([W][8]; only kh in [kh0, kh1) is
// inside the plane), ix: the input column of the group's first pixel's
// first tap, wk [K * K][8], b [8], out: the group's first output pixel.
using DwGroupFn = void (*)(const float* const* rows, int kh0, int kh1, int64_t ix, const float* wk, const float* b,
                           float* out);

template <int K, int S, int N, int CL, int CR>
void dw_group(const float* const* rows, int kh0, int kh1, int64_t ix, const float* wk, const float* b, float* out) {
  constexpr int kIn = (N - 1) * S + K;         // input columns the group reads, from ix on
  constexpr bool kRegW = K * K + N + 1 <= 16;  // all weights, the accumulators and an input in registers
  __m256 wr[kRegW ? K * K : 1];
  if constexpr (kRegW)
#pragma GCC unroll 9
    for (int t = 0; t < K * K; ++t) wr[t] = _mm256_loadu_ps(wk + t * 8);
  const __m256 bias = _mm256_loadu_ps(b);
  __m256 acc[N];
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) acc[j] = bias;
#pragma GCC unroll 5
  for (int kh = 0; kh < K; ++kh) {
    if (kh < kh0 || kh >= kh1) continue;
    const float* r = rows[kh] + (ix + CL) * 8;  // input column ix + CL
    __m256 wv[K];
#pragma GCC unroll 5
    for (int kw = 0; kw < K; ++kw) {
      if constexpr (kRegW) wv[kw] = wr[kh * K + kw];
      else wv[kw] = _mm256_loadu_ps(wk + (kh * K + kw) * 8);
    }
#pragma GCC unroll 64
    for (int q = CL; q < kIn - CR; ++q) {
      const __m256 v = _mm256_loadu_ps(r + (q - CL) * 8);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) {
        const int kw = q - j * S;
        if (kw >= 0 && kw < K) acc[j] = _mm256_fmadd_ps(v, wv[kw], acc[j]);
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) _mm256_storeu_ps(out + j * 8, acc[j]);
}

// A row's group kernel by its key: Inst::get<N, CL, CR>() for n in [1, N]
// pixels and cl, cr in [0, Inst::kMaxBorder] border columns (the template
// instances); null for anything else.
template <class Inst, int N, int CL, int CR>
typename Inst::Fn pick_cr(int cr) {
  if constexpr (CR < 0) return nullptr;
  else return cr == CR ? Inst::template get<N, CL, CR>() : pick_cr<Inst, N, CL, CR - 1>(cr);
}
template <class Inst, int N, int CL>
typename Inst::Fn pick_cl(int cl, int cr) {
  if constexpr (CL < 0) return nullptr;
  else return cl == CL ? pick_cr<Inst, N, CL, Inst::kMaxBorder>(cr) : pick_cl<Inst, N, CL - 1>(cl, cr);
}
template <class Inst, int N>
typename Inst::Fn pick_group(int n, int cl, int cr) {
  if constexpr (N < 1) return nullptr;
  else return n == N ? pick_cl<Inst, N, Inst::kMaxBorder>(cl, cr) : pick_group<Inst, N - 1>(n, cl, cr);
}

template <int K, int S>
struct DwInst {
  using Fn = DwGroupFn;
  static constexpr int kMaxBorder = K / 2;
  template <int N, int CL, int CR>
  static Fn get() {
    return &dw_group<K, S, N, CL, CR>;
  }
};

// Most pixels per group (10 accumulators, K weights, an input: 16 registers
// for 5x5; for 3x3 too, 10 ran faster than 6 with all 9 weights kept).
constexpr int kDwGroup = 10;

// The fuzz build (SPINDLE_BUILD_FUZZ: coverage and sanitizers in every
// object) leaves out the group kernels, depthwise and grouped: their ~350
// unrolled template instances took clang over 20 minutes per ISA level
// there. Every group then takes the generic path, which computes the same
// sums in the same order.
#if defined(SPINDLE_FUZZING)
DwGroupFn dw_pick_ks(int64_t, int64_t, int, int, int) { return nullptr; }
#else
DwGroupFn dw_pick_ks(int64_t K, int64_t S, int n, int cl, int cr) {
  if (K == 3 && S == 1) return pick_group<DwInst<3, 1>, kDwGroup>(n, cl, cr);
  if (K == 3 && S == 2) return pick_group<DwInst<3, 2>, kDwGroup>(n, cl, cr);
  if (K == 5 && S == 1) return pick_group<DwInst<5, 1>, kDwGroup>(n, cl, cr);
  if (K == 5 && S == 2) return pick_group<DwInst<5, 2>, kDwGroup>(n, cl, cr);
  return nullptr;
}
#endif

// Output rows [oh0, oh1) of one channel block, each split into groups of at
// most G neighbouring pixels of nearly equal sizes: the rows of the kernel
// inside the plane are located once per output row, and a group's kernel
// (pick(K, S, pixels, columns left of the row, columns right of it), a
// template instance) is looked up again only when that key changes (only
// the first and last groups have borders, and group sizes take two values).
// run(fn, rows, kh0, kh1, ix, out) calls it; a key with no kernel takes
// generic(out, oh, ow0, ow1).
template <class Fn, int G, int MaxK, class Pick, class Run, class Generic>
void band_by_groups(const float* x, int64_t H, int64_t W, int64_t K, int64_t S, int64_t pt, int64_t pl, float* y,
                    int64_t OW, int64_t oh0, int64_t oh1, Pick pick, Run run, Generic generic) {
  const int64_t groups = (OW + G - 1) / G;
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t ih0 = oh * S - pt;
    const int kh0 = static_cast<int>(imax(0, -ih0));
    const int kh1 = static_cast<int>(imax(kh0, imin(K, H - ih0)));
    const float* rows[MaxK] = {};
    for (int kh = kh0; kh < kh1; ++kh) rows[kh] = x + (ih0 + kh) * W * kLanes;
    float* out = y + oh * OW * kLanes;
    int key_n = -1, key_cl = -1, key_cr = -1;
    Fn fn = nullptr;
    int64_t ow = 0;
    for (int64_t i = 0; i < groups; ++i) {
      const int64_t n = OW / groups + (i < OW % groups ? 1 : 0);
      const int64_t ix = ow * S - pl;
      const int cl = static_cast<int>(imax(0, -ix));
      const int cr = static_cast<int>(imax(0, ix + (n - 1) * S + K - W));
      const int ni = static_cast<int>(n);
      if (ni != key_n || cl != key_cl || cr != key_cr) {
        fn = pick(K, S, ni, cl, cr);
        key_n = ni, key_cl = cl, key_cr = cr;
      }
      if (fn) run(fn, rows, kh0, kh1, ix, out + ow * kLanes);
      else generic(out, oh, ow, ow + n);
      ow += n;
    }
  }
}

// Rows [oh0, oh1) by groups (K in {3, 5}, S in {1, 2}, pads <= K / 2). A
// group whose border counts have no kernel (cannot happen with those pads;
// kept as a guard) takes dw_pixels_generic.
void dw_band_fast(const float* x, int64_t H, int64_t W, const float* wk, int64_t K, int64_t S, int64_t pt,
                  int64_t pl, const float* bias, float* y, int64_t OW, int64_t oh0, int64_t oh1) {
  band_by_groups<DwGroupFn, kDwGroup, 5>(
      x, H, W, K, S, pt, pl, y, OW, oh0, oh1, dw_pick_ks,
      [&](DwGroupFn fn, const float* const* rows, int kh0, int kh1, int64_t ix, float* out) {
        fn(rows, kh0, kh1, ix, wk, bias, out);
      },
      [&](float* out, int64_t oh, int64_t ow0, int64_t ow1) {
        dw_pixels_generic(x, H, W, wk, K, K, S, S, pt, pl, bias, out, oh, ow0, ow1);
      });
}

// ---------------------------------------------------------------- pointwise, AVX2
//
// out[ob][p][:] = bias + sum_ic in[ic/8][p][ic%8] * w[ob][ic][:]. A tile is
// MB output blocks (8 channels each) x NP pixels of accumulators; per input
// channel, MB weight vectors and NP broadcasts feed MB * NP multiply-adds.
// Weights are packed per group of MB output blocks as [ic][MB][8]. The
// input channels go in blocks of kc (blocked.cpp: <= 256) so that the
// group's weight panel (kc x MB x 8) stays in L1 while the block's pixels
// stream by; later kc blocks add to the output. Every output element's sum
// is bias, then the input channels in order, whatever tile it falls in.

template <int MB, int NP>
__attribute__((always_inline)) inline void pw_tile(const float* x, int64_t xs, int64_t kb, const float* w,
                                                   const float* bias, float* y, int64_t ys, bool accumulate) {
  __m256 acc[MB][NP];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p)
      acc[m][p] = accumulate ? _mm256_loadu_ps(y + m * ys + p * 8) : _mm256_loadu_ps(bias + m * 8);
  for (int64_t b = 0; b < kb; ++b, x += xs, w += 64 * MB) {
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) {
      __m256 wv[MB];
#pragma GCC unroll 4
      for (int m = 0; m < MB; ++m) wv[m] = _mm256_loadu_ps(w + (l * MB + m) * 8);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        const __m256 bx = _mm256_broadcast_ss(x + p * 8 + l);
#pragma GCC unroll 4
        for (int m = 0; m < MB; ++m) acc[m][p] = _mm256_fmadd_ps(wv[m], bx, acc[m][p]);
      }
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) _mm256_storeu_ps(y + m * ys + p * 8, acc[m][p]);
}

template <int MB, int N>
void pw_tail(int n, const float* x, int64_t xs, int64_t kb, const float* w, const float* bias, float* y, int64_t ys,
             bool accumulate) {
  if constexpr (N > 0) {
    if (n == N) pw_tile<MB, N>(x, xs, kb, w, bias, y, ys, accumulate);
    else pw_tail<MB, N - 1>(n, x, xs, kb, w, bias, y, ys, accumulate);
  }
}

// Pixels [p0, p1) of one group of MB output blocks: tiles of NP pixels,
// then one tile of the rest.
// Pixels [p0, p1) of one group of MB output blocks: tiles of NP pixels,
// then one tile of the rest. pf (or null): the next group's weights for the
// same input channels (lines of 64 bytes), asked for into L2 spread over
// this group's tiles, so that group does not start with its weights
// arriving from memory one miss at a time (the weights of a 14x14 / 7x7
// expansion are larger than L2 and read once per run).
template <int MB, int NP>
void pw_pixels(const float* x, int64_t xs, int64_t kb, const float* w, const float* bias, float* y, int64_t ys,
               int64_t p0, int64_t p1, bool accumulate, const float* pf, int64_t pf_lines) {
  const int64_t tiles = (p1 - p0 + NP - 1) / NP;
  const int64_t per_tile = pf ? (pf_lines + tiles - 1) / tiles : 0;
  int64_t line = 0;
  auto ahead = [&] {
    for (int64_t e = imin(pf_lines, line + per_tile); line < e; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(pf + line * 16), _MM_HINT_T1);
  };
  int64_t p = p0;
  for (; p + NP <= p1; p += NP) {
    ahead();
    pw_tile<MB, NP>(x + p * 8, xs, kb, w, bias, y + p * 8, ys, accumulate);
  }
  ahead();
  if (p < p1) pw_tail<MB, NP - 1>(static_cast<int>(p1 - p), x + p * 8, xs, kb, w, bias, y + p * 8, ys, accumulate);
}

// ---------------------------------------------------------------- grouped, AVX2
//
// The 8 output channels of one output block in the vector lanes, the input
// values broadcast. As for the depthwise kernel, one output row at a time
// in groups of at most kGcGroup neighbouring pixels of nearly equal sizes,
// one accumulator per pixel; the group's columns left (CL) and right (CR)
// of the plane are template arguments (<= 1: pads <= 1), kernel rows in the
// top / bottom padding are skipped. Per input channel and kernel row, the
// K weight vectors of the row are loaded once and each input column the
// group reads is broadcast once, for every pixel that uses it: (N - 1) * S
// + K broadcasts and K loads per N * K multiply-adds. Each pixel's sum is
// bias, then the input channels in order, each its taps in (kh, kw) order,
// as in gc_pixels_generic.

// rows[kh]: input row oh * S - pt + kh of the group's first input block
// (only kh in [kh0, kh1) is inside the plane), plane: floats between two
// input blocks, ix: the input column of the group's first pixel's first
// tap, wk [Cg][K * K][8], b [8], out: the group's first output pixel.
using GcGroupFn = void (*)(const float* const* rows, int kh0, int kh1, int64_t plane, int64_t Cg, int64_t ix,
                           const float* wk, const float* b, float* out);

template <int K, int S, int N, int CL, int CR>
void gc_group(const float* const* rows, int kh0, int kh1, int64_t plane, int64_t Cg, int64_t ix, const float* wk,
              const float* b, float* out) {
  constexpr int kIn = (N - 1) * S + K;  // input columns the group reads, from ix on
  const __m256 bias = _mm256_loadu_ps(b);
  __m256 acc[N];
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) acc[j] = bias;
  for (int64_t ic = 0; ic < Cg; ++ic) {
    const int64_t xo = (ic / 8) * plane + (ix + CL) * 8 + ic % 8;  // input column ix + CL, lane ic % 8
    const float* wc = wk + ic * K * K * 8;
    for (int kh = kh0; kh < kh1; ++kh) {
      const float* r = rows[kh] + xo;
      __m256 wv[K];
#pragma GCC unroll 5
      for (int kw = 0; kw < K; ++kw) wv[kw] = _mm256_loadu_ps(wc + (kh * K + kw) * 8);
#pragma GCC unroll 64
      for (int q = CL; q < kIn - CR; ++q) {
        const __m256 v = _mm256_broadcast_ss(r + (q - CL) * 8);
#pragma GCC unroll 16
        for (int j = 0; j < N; ++j) {
          const int kw = q - j * S;
          if (kw >= 0 && kw < K) acc[j] = _mm256_fmadd_ps(v, wv[kw], acc[j]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < N; ++j) _mm256_storeu_ps(out + j * 8, acc[j]);
}

template <int K, int S>
struct GcInst {
  using Fn = GcGroupFn;
  static constexpr int kMaxBorder = 1;
  template <int N, int CL, int CR>
  static Fn get() {
    return &gc_group<K, S, N, CL, CR>;
  }
};

// Most pixels per group: 12 accumulators, 3 weights and a broadcast.
constexpr int kGcGroup = 12;

#if defined(SPINDLE_FUZZING)
GcGroupFn gc_pick_ks(int64_t, int64_t, int, int, int) { return nullptr; }
#else
GcGroupFn gc_pick_ks(int64_t K, int64_t S, int n, int cl, int cr) {
  if (K == 3 && S == 1) return pick_group<GcInst<3, 1>, kGcGroup>(n, cl, cr);
  if (K == 3 && S == 2) return pick_group<GcInst<3, 2>, kGcGroup>(n, cl, cr);
  return nullptr;
}
#endif

// Rows [oh0, oh1) by groups (K 3, S in {1, 2}, pads <= 1). A group whose
// border counts have no kernel (cannot happen with those pads; kept as a
// guard) takes gc_pixels_generic.
void gc_band_fast(const float* x, int64_t H, int64_t W, int64_t Cg, const float* wk, int64_t K, int64_t S,
                  int64_t pt, int64_t pl, const float* bias, float* y, int64_t OW, int64_t oh0, int64_t oh1) {
  const int64_t plane = H * W * kLanes;
  band_by_groups<GcGroupFn, kGcGroup, 3>(
      x, H, W, K, S, pt, pl, y, OW, oh0, oh1, gc_pick_ks,
      [&](GcGroupFn fn, const float* const* rows, int kh0, int kh1, int64_t ix, float* out) {
        fn(rows, kh0, kh1, plane, Cg, ix, wk, bias, out);
      },
      [&](float* out, int64_t oh, int64_t ow0, int64_t ow1) {
        gc_pixels_generic(x, H, W, Cg, wk, K, K, S, S, pt, pl, bias, out, oh, ow0, ow1);
      });
}

// ---------------------------------------------------------------- NCHW input, AVX2
//
// A stem: few input channels in NCHW, output blocked. A tile is MB output
// blocks (8 channels each) x NP neighbouring pixels of one output row, all
// of whose taps are inside the plane's columns; per tap (ic, kh, kw), MB
// weight vectors ([C][KH][KW][MB][8], packed at creation) and NP broadcasts
// of x[ic][ih][ow * S + kw - pl] feed MB * NP multiply-adds. Kernel rows in
// the top / bottom padding are skipped; pixels with taps left / right of
// the plane take nc_pixels_generic (one or two a row with pads <= K / 2).
// Each output element's sum is bias, then ic, kh, kw in order, as there.
// K: the kernel width when it is 3 (unrolled), else 0 (KW at run time).

// xs: input channel 0 at row ih0 + kh0, column of the tile's first tap; wk:
// the weights of (ic 0, kh0, kw 0); nkh kernel rows; y: the tile's first
// output pixel of the group's first block (ys floats between blocks).
template <int MB, int NP, int S, int K>
__attribute__((always_inline)) inline void nc_tile(const float* xs, int64_t C, int64_t plane, int64_t W,
                                                   const float* wk, int64_t KH, int64_t KW, int64_t nkh,
                                                   const float* bias, float* y, int64_t ys) {
  const int64_t kwn = K ? K : KW;
  const int64_t wrow = kwn * MB * 8, wic = KH * wrow;
  __m256 acc[MB][NP];
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m) {
    const __m256 b = _mm256_loadu_ps(bias + m * 8);
#pragma GCC unroll 12
    for (int p = 0; p < NP; ++p) acc[m][p] = b;
  }
  for (int64_t ic = 0; ic < C; ++ic) {
    const float* xr = xs + ic * plane;
    const float* wr = wk + ic * wic;
    for (int64_t kh = 0; kh < nkh; ++kh, xr += W, wr += wrow) {
#pragma GCC unroll 3
      for (int64_t kw = 0; kw < kwn; ++kw) {
        __m256 wv[MB];
#pragma GCC unroll 4
        for (int m = 0; m < MB; ++m) wv[m] = _mm256_loadu_ps(wr + (kw * MB + m) * 8);
        // Opaque to the compiler: at S = 1 / 2 the broadcasts of one kw
        // repeat another's, and keeping those live across the kw spilled
        // accumulators.
        const float* xk = xr + kw;
        asm("" : "+r"(xk));
#pragma GCC unroll 12
        for (int p = 0; p < NP; ++p) {
          const __m256 bx = _mm256_broadcast_ss(xk + p * S);
#pragma GCC unroll 4
          for (int m = 0; m < MB; ++m) acc[m][p] = _mm256_fmadd_ps(wv[m], bx, acc[m][p]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 12
    for (int p = 0; p < NP; ++p) _mm256_storeu_ps(y + m * ys + p * 8, acc[m][p]);
}

template <int MB, int N, int S, int K>
void nc_tail(int n, const float* xs, int64_t C, int64_t plane, int64_t W, const float* wk, int64_t KH, int64_t KW,
             int64_t nkh, const float* bias, float* y, int64_t ys) {
  if constexpr (N > 0) {
    if (n == N) nc_tile<MB, N, S, K>(xs, C, plane, W, wk, KH, KW, nkh, bias, y, ys);
    else nc_tail<MB, N - 1, S, K>(n, xs, C, plane, W, wk, KH, KW, nkh, bias, y, ys);
  }
}

// Rows [oh0, oh1): per row the left border pixels, the inside ones in tiles
// of NP and one tile of the rest, the right border pixels.
template <int MB, int NP, int S, int K>
void nc_band_fast(const float* x, int64_t C, int64_t H, int64_t W, const float* wg, int64_t KH, int64_t KW,
                  int64_t sh, int64_t pt, int64_t pl, const float* bias, float* y, int64_t ys, int64_t OW,
                  int64_t oh0, int64_t oh1) {
  const int64_t plane = H * W;
  // Pixels [owl, owr) have every tap inside the plane's columns.
  const int64_t owl = imin(OW, (pl + S - 1) / S);
  const int64_t last = W - KW + pl;  // ow * S <= last
  const int64_t owr = imax(owl, imin(OW, last >= 0 ? last / S + 1 : 0));
  for (int64_t oh = oh0; oh < oh1; ++oh) {
    const int64_t ih0 = oh * sh - pt;
    const int64_t kh0 = imax(0, -ih0), kh1 = imin(KH, H - ih0);
    float* yrow = y + oh * OW * 8;
    if (kh1 <= kh0 || owl == owr) {
      nc_pixels_generic(x, C, H, W, wg, MB, KH, KW, sh, S, pt, pl, bias, yrow, ys, oh, 0, OW);
      continue;
    }
    nc_pixels_generic(x, C, H, W, wg, MB, KH, KW, sh, S, pt, pl, bias, yrow, ys, oh, 0, owl);
    const float* xrow = x + (ih0 + kh0) * W;
    const float* wk = wg + kh0 * KW * MB * 8;
    const int64_t nkh = kh1 - kh0;
    int64_t ow = owl;
    for (; ow + NP <= owr; ow += NP)
      nc_tile<MB, NP, S, K>(xrow + ow * S - pl, C, plane, W, wk, KH, KW, nkh, bias, yrow + ow * 8, ys);
    if (ow < owr)
      nc_tail<MB, NP - 1, S, K>(static_cast<int>(owr - ow), xrow + ow * S - pl, C, plane, W, wk, KH, KW, nkh, bias,
                                yrow + ow * 8, ys);
    nc_pixels_generic(x, C, H, W, wg, MB, KH, KW, sh, S, pt, pl, bias, yrow, ys, oh, owr, OW);
  }
}

using NcBandFn = void (*)(const float* x, int64_t C, int64_t H, int64_t W, const float* wg, int64_t KH, int64_t KW,
                          int64_t sh, int64_t pt, int64_t pl, const float* bias, float* y, int64_t ys, int64_t OW,
                          int64_t oh0, int64_t oh1);

// Tiles: 1 x 8, 2 x 6, 3 x 4 (8 or 12 accumulators, MB weights and a
// broadcast in the 16 registers).
template <int S, int K>
NcBandFn nc_pick_mb(int mb) {
  if (mb == 3) return &nc_band_fast<3, 4, S, K>;
  if (mb == 2) return &nc_band_fast<2, 6, S, K>;
  if (mb == 1) return &nc_band_fast<1, 8, S, K>;
  return nullptr;
}

NcBandFn nc_pick(int mb, int64_t sw, int64_t KW) {
  if (sw == 1) return KW == 3 ? nc_pick_mb<1, 3>(mb) : nc_pick_mb<1, 0>(mb);
  if (sw == 2) return KW == 3 ? nc_pick_mb<2, 3>(mb) : nc_pick_mb<2, 0>(mb);
  return nullptr;
}

#else  // baseline

// The pointwise sums of the AVX2 tiles, one pixel and output block at a
// time, in the same order (bias or the partial sum, then the input channels
// of the kc block in order).
void pw_pixels_plain(int mb, const float* x, int64_t xs, int64_t kb, const float* w, const float* bias, float* y,
                     int64_t ys, int64_t p0, int64_t p1, bool accumulate) {
  for (int64_t p = p0; p < p1; ++p)
    for (int m = 0; m < mb; ++m) {
      float acc[kLanes];
      for (int l = 0; l < kLanes; ++l) acc[l] = accumulate ? y[m * ys + p * kLanes + l] : bias[m * kLanes + l];
      for (int64_t b = 0; b < kb; ++b) {
        const float* xb = x + b * xs + p * kLanes;
        const float* wb = w + b * 64 * mb;
        for (int i = 0; i < kLanes; ++i)
          for (int l = 0; l < kLanes; ++l) acc[l] += wb[(i * mb + m) * kLanes + l] * xb[i];
      }
      for (int l = 0; l < kLanes; ++l) y[m * ys + p * kLanes + l] = acc[l];
    }
}

#endif

}  // namespace

// x: 8 planes of P floats (plane l at x + l * P) -> y [P][8].
void blocked_pack8(const float* x, int64_t P, float* y) {
  int64_t p = 0;
#if defined(__AVX2__)
  for (; p + 8 <= P; p += 8) {
    __m256 r[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(x + l * P + p);
    simd::transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(y + (p + j) * 8, r[j]);
  }
#endif
  for (; p < P; ++p)
    for (int l = 0; l < 8; ++l) y[p * 8 + l] = x[l * P + p];
}

// y [P][8] -> 8 planes of P floats at x.
void blocked_unpack8(const float* y, int64_t P, float* x) {
  int64_t p = 0;
#if defined(__AVX2__)
  for (; p + 8 <= P; p += 8) {
    __m256 r[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(y + (p + j) * 8);
    simd::transpose8(r);
    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(x + l * P + p, r[l]);
  }
#endif
  for (; p < P; ++p)
    for (int l = 0; l < 8; ++l) x[l * P + p] = y[p * 8 + l];
}

// out[l] = (0 + x[0][l] + x[1][l] + ... + x[P-1][l]) / (float)P.
void blocked_gap8(const float* x, int64_t P, float* out) {
  const float divisor = static_cast<float>(P);
#if defined(__AVX2__)
  __m256 acc = _mm256_setzero_ps();
  for (int64_t p = 0; p < P; ++p) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + p * 8));
  _mm256_storeu_ps(out, _mm256_div_ps(acc, _mm256_set1_ps(divisor)));
#else
  float acc[kLanes] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t p = 0; p < P; ++p)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[p * 8 + l];
  for (int l = 0; l < kLanes; ++l) out[l] = acc[l] / divisor;
#endif
}

// Output rows [oh0, oh1) of one depthwise channel block: x [H][W][8], wk
// [KH * KW][8], bias [8], y [OH][OW][8]; strides sh / sw, leading pads pt /
// pl and trailing pads pb / pr (the caller computed OH and OW from them).
// y = bias + taps, nothing else (blocked.cpp runs the epilogue).
void blocked_dw_band(const ::spindle::kernels::BlockedDwBand& args) {
  const float* x = args.x;
  int64_t H = args.H;
  int64_t W = args.W;
  const float* wk = args.wk;
  int64_t KH = args.KH;
  int64_t KW = args.KW;
  int64_t sh = args.sh;
  int64_t sw = args.sw;
  int64_t pt = args.pt;
  int64_t pl = args.pl;
  const float* bias = args.bias;
  float* y = args.y;
  int64_t OW = args.OW;
  int64_t oh0 = args.oh0;
  int64_t oh1 = args.oh1;
#if defined(__AVX2__)
  const int64_t K = KH, half = K / 2;
  if (KH == KW && sh == sw && (K == 3 || K == 5) && (sh == 1 || sh == 2) && pt <= half && pl <= half &&
      args.pb <= half && args.pr <= half) {
    dw_band_fast(x, H, W, wk, K, sh, pt, pl, bias, y, OW, oh0, oh1);
    return;
  }
#endif
  for (int64_t oh = oh0; oh < oh1; ++oh)
    dw_pixels_generic(x, H, W, wk, KH, KW, sh, sw, pt, pl, bias, y + oh * OW * kLanes, oh, 0, OW);
}

// Pixels [p0, p1) of the output blocks of one pointwise group: x the
// image's input [cin/8][P][8] (xs = P * 8 floats per block), w the group's
// packed weights [cin][mb][8] (mb in 1..3), bias [mb * 8], y the group's
// first output block (ys floats per block). The input channels go in
// blocks of kc (a multiple of 8), in order.
void blocked_pw_block(const ::spindle::kernels::BlockedPwBlock& args) {
  const float* x = args.x;
  int64_t xs = args.xs;
  int64_t cin = args.cin;
  int64_t kc = args.kc;
  const float* w = args.w;
  int mb = args.mb;
  const float* bias = args.bias;
  float* y = args.y;
  int64_t ys = args.ys;
  int64_t p0 = args.p0;
  int64_t p1 = args.p1;
  const float* w_next = args.w_next;
  int mb_next = args.mb_next;
  for (int64_t k0 = 0; k0 < cin; k0 += kc) {
    const int64_t kb = imin(kc, cin - k0) / 8;
    const float* xk = x + (k0 / 8) * xs;
    const float* wk = w + k0 * mb * 8;
    const bool accumulate = k0 > 0;
#if defined(__AVX2__)
    const float* pf = w_next ? w_next + k0 * mb_next * 8 : nullptr;
    const int64_t lines = kb * 4 * mb_next;  // 8 channels x mb_next x 8 floats per kc step, 16 floats a line
    if (mb == 3) pw_pixels<3, 4>(xk, xs, kb, wk, bias, y, ys, p0, p1, accumulate, pf, lines);
    else if (mb == 2) pw_pixels<2, 6>(xk, xs, kb, wk, bias, y, ys, p0, p1, accumulate, pf, lines);
    else pw_pixels<1, 8>(xk, xs, kb, wk, bias, y, ys, p0, p1, accumulate, pf, lines);
#else
    (void)w_next;
    (void)mb_next;
    pw_pixels_plain(mb, xk, xs, kb, wk, bias, y, ys, p0, p1, accumulate);
#endif
  }
}

// Output rows [oh0, oh1) of one grouped-convolution output block: x the
// group's first input block of the image ([Cg/8][H][W][8]), wk the block's
// packed weights [Cg][KH * KW][8], bias [8], y the output block [OH][OW][8];
// strides sh / sw, leading pads pt / pl and trailing pads pb / pr. y = bias
// + products, nothing else (blocked.cpp runs the epilogue).
void blocked_gc_band(const ::spindle::kernels::BlockedGcBand& args) {
  const float* x = args.x;
  int64_t H = args.H;
  int64_t W = args.W;
  int64_t Cg = args.Cg;
  const float* wk = args.wk;
  int64_t KH = args.KH;
  int64_t KW = args.KW;
  int64_t sh = args.sh;
  int64_t sw = args.sw;
  int64_t pt = args.pt;
  int64_t pl = args.pl;
  int64_t pb = args.pb;
  int64_t pr = args.pr;
  const float* bias = args.bias;
  float* y = args.y;
  int64_t OW = args.OW;
  int64_t oh0 = args.oh0;
  int64_t oh1 = args.oh1;
#if defined(__AVX2__)
  if (KH == 3 && KW == 3 && sh == sw && (sh == 1 || sh == 2) && pt <= 1 && pl <= 1 && pb <= 1 && pr <= 1) {
    gc_band_fast(x, H, W, Cg, wk, 3, sh, pt, pl, bias, y, OW, oh0, oh1);
    return;
  }
#else
  (void)pb;
  (void)pr;
#endif
  for (int64_t oh = oh0; oh < oh1; ++oh)
    gc_pixels_generic(x, H, W, Cg, wk, KH, KW, sh, sw, pt, pl, bias, y + oh * OW * kLanes, oh, 0, OW);
}

// Output rows [oh0, oh1) of a group of mb (1 to 3) output blocks of a
// convolution of an NCHW input: x the image [C][H][W], wg the group's packed
// weights [C][KH][KW][mb][8], bias [mb * 8], y the group's first output
// block [OH][OW][8] (ys floats between blocks); strides sh / sw, leading
// pads pt / pl (the caller computed OH and OW with the trailing ones). y =
// bias + products, nothing else (blocked.cpp runs the epilogue).
void blocked_nchw_band(const ::spindle::kernels::BlockedNchwBand& args) {
  const float* x = args.x;
  int64_t C = args.C;
  int64_t H = args.H;
  int64_t W = args.W;
  const float* wg = args.wg;
  int mb = args.mb;
  int64_t KH = args.KH;
  int64_t KW = args.KW;
  int64_t sh = args.sh;
  int64_t sw = args.sw;
  int64_t pt = args.pt;
  int64_t pl = args.pl;
  const float* bias = args.bias;
  float* y = args.y;
  int64_t ys = args.ys;
  int64_t OW = args.OW;
  int64_t oh0 = args.oh0;
  int64_t oh1 = args.oh1;
#if defined(__AVX2__)
  if (const NcBandFn fn = nc_pick(mb, sw, KW)) {
    fn(x, C, H, W, wg, KH, KW, sh, pt, pl, bias, y, ys, OW, oh0, oh1);
    return;
  }
#endif
  for (int64_t oh = oh0; oh < oh1; ++oh)
    nc_pixels_generic(x, C, H, W, wg, mb, KH, KW, sh, sw, pt, pl, bias, y + oh * OW * kLanes, ys, oh, 0, OW);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
