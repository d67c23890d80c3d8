// pool_row.isa.cpp — one output row of a float 2-D MaxPool or AveragePool
// (pool.cpp's fast path), compiled once per ISA level
// (src/kernels/isa/dispatch.h).
//
// pool_row: y[ow] for ow in [c0, c1) combines the taps over input rows
// [r0, r1) of the plane x (row length W) and, within each row, the KW taps
// x[r][ow * sw - pl + k], all of which the caller guarantees to lie in the
// row. Taps are combined in row-major order, by the rule of pool.cpp:
// - max (divisor 0): acc = (v > acc || acc is NaN) ? v : acc (NaN taps
//   skipped, the first of equal values kept, so a -0 / +0 tie keeps the
//   earlier one);
// - average (divisor > 0): acc = 0 + v0 + v1 + ... in that order, then
//   acc / divisor (the count pool.cpp computes), as its generic loop does.
//
// Vector path (SSE2 at the baseline level, AVX2 above): four vectors of L
// consecutive output columns at a time (then one), each row's taps folded
// into registers before the next row, so nothing is written between rows. Stride 2
// takes the even elements of two overlapping loads that end exactly at the
// last tap the block needs (no read past the row). The last block overlaps
// the previous one when c1 - c0 is not a multiple of L (it recomputes the
// same values); fewer than L columns, or strides other than 1 and 2, take
// the scalar loop.
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels/isa/dispatch.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

inline float max_tap(float acc, float v) { return (v > acc || acc != acc) ? v : acc; }

#if defined(__AVX2__)
constexpr int64_t kL = 8;
using V = __m256;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vdiv(V a, float d) { return _mm256_div_ps(a, _mm256_set1_ps(d)); }
inline V vfold(V acc, V v) {
  const V take = _mm256_or_ps(_mm256_cmp_ps(v, acc, _CMP_GT_OQ), _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q));
  return _mm256_blendv_ps(acc, v, take);
}
// p[0], p[2], ..., p[14]: lo = p[0..7], hi = p[7..14]; per 128-bit half the
// shuffle takes lo[0], lo[2], hi[1], hi[3] (0 2 8 10 | 4 6 12 14), then the
// 64-bit pairs are put in order.
inline V veven(const float* p) {
  const V s = _mm256_shuffle_ps(vload(p), vload(p + 7), _MM_SHUFFLE(3, 1, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
#elif defined(__SSE2__)
constexpr int64_t kL = 4;
using V = __m128;
inline V vload(const float* p) { return _mm_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm_storeu_ps(p, v); }
inline V vzero() { return _mm_setzero_ps(); }
inline V vadd(V a, V b) { return _mm_add_ps(a, b); }
inline V vdiv(V a, float d) { return _mm_div_ps(a, _mm_set1_ps(d)); }
inline V vfold(V acc, V v) {
  const V take = _mm_or_ps(_mm_cmpgt_ps(v, acc), _mm_cmpunord_ps(acc, acc));
  return _mm_or_ps(_mm_and_ps(take, v), _mm_andnot_ps(take, acc));
}
// p[0], p[2], p[4], p[6]: lo = p[0..3], hi = p[3..6] -> lo[0], lo[2], hi[1], hi[3].
inline V veven(const float* p) { return _mm_shuffle_ps(vload(p), vload(p + 3), _MM_SHUFFLE(3, 1, 2, 0)); }
#endif

#if defined(__AVX2__) || defined(__SSE2__)
template <int S>
inline V tap(const float* p) {
  return S == 1 ? vload(p) : veven(p);
}

// N vectors of kL output columns starting at ow, side by side: each
// vector's taps are one dependent chain (a max fold is a compare, a
// compare, an or and a blend per tap), so N chains keep the core busy.
template <int S, bool Avg, int N>
inline __attribute__((always_inline)) void block(float* y, const float* x, int64_t W, int64_t r0, int64_t r1,
                                                 int64_t ow, int64_t KW, int64_t pl, float divisor) {
  const float* row = x + r0 * W + ow * S - pl;
  V acc[N];
  for (int j = 0; j < N; ++j) acc[j] = Avg ? vadd(vzero(), tap<S>(row + j * kL * S)) : tap<S>(row + j * kL * S);
  for (int64_t r = r0; r < r1; ++r, row += W)
    for (int64_t k = r == r0 ? 1 : 0; k < KW; ++k)
      for (int j = 0; j < N; ++j) {
        const V v = tap<S>(row + j * kL * S + k);
        acc[j] = Avg ? vadd(acc[j], v) : vfold(acc[j], v);
      }
  for (int j = 0; j < N; ++j) vstore(y + ow + j * kL, Avg ? vdiv(acc[j], divisor) : acc[j]);
}

template <int S, bool Avg>
void row_vec(float* y, const float* x, int64_t W, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t KW,
             int64_t pl, float divisor) {
  int64_t ow = c0;
  for (; ow + 4 * kL <= c1; ow += 4 * kL) block<S, Avg, 4>(y, x, W, r0, r1, ow, KW, pl, divisor);
  for (; ow + kL <= c1; ow += kL) block<S, Avg, 1>(y, x, W, r0, r1, ow, KW, pl, divisor);
  if (ow < c1) block<S, Avg, 1>(y, x, W, r0, r1, c1 - kL, KW, pl, divisor);
}
#endif

}  // namespace

void pool_row(float* y, const float* x, int64_t W, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t KW,
              int64_t sw, int64_t pl, float divisor) {
  const bool avg = divisor > 0.0f;
#if defined(__AVX2__) || defined(__SSE2__)
  if (c1 - c0 >= kL && (sw == 1 || sw == 2)) {
    if (sw == 1) avg ? row_vec<1, true>(y, x, W, r0, r1, c0, c1, KW, pl, divisor)
                     : row_vec<1, false>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    else avg ? row_vec<2, true>(y, x, W, r0, r1, c0, c1, KW, pl, divisor)
             : row_vec<2, false>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    return;
  }
#endif
  for (int64_t ow = c0; ow < c1; ++ow) {
    const float* row = x + r0 * W + ow * sw - pl;
    float m = avg ? 0.0f + row[0] : row[0];
    for (int64_t r = r0; r < r1; ++r, row += W)
      for (int64_t k = r == r0 ? 1 : 0; k < KW; ++k) m = avg ? m + row[k] : max_tap(m, row[k]);
    y[ow] = avg ? m / divisor : m;
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
