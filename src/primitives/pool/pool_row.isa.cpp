// pool_row.isa.cpp — one output row of a float 2-D MaxPool or AveragePool
// (pool.cpp's fast path), compiled once per ISA level
// (src/primitives/isa/dispatch.h).
//
// pool_row: y[ow] for ow in [c0, c1) combines the taps over input rows
// [r0, r1) of the plane x (row length W) and, within each row, the KW taps
// x[r][ow * sw - pl + k], all of which the caller guarantees to lie in the
// row. Taps are combined in row-major order, by the rule of pool.cpp:
// - max (divisor 0): acc = (v > acc || acc is NaN) ? v : acc (NaN taps
//   skipped, the first of equal values kept, so a -0 / +0 tie keeps the
//   earlier one; the vector path gets the same bits with one max
//   instruction per tap, see block());
// - average (divisor > 0): acc = 0 + v0 + v1 + ... in that order, then
//   acc / divisor (the count pool.cpp computes), as its generic loop does.
//
// Vector path (SSE2 at the baseline level, AVX2 above): four vectors of L
// consecutive output columns at a time, then the rest of the row (up to
// four vectors) side by side, each row's taps folded into registers before
// the next row, so nothing is written between rows. Stride 2 takes the even
// elements of two overlapping loads that end exactly at the last tap the
// block needs (no read past the row). The last vector overlaps the previous
// one when c1 - c0 is not a multiple of L (it recomputes the same values);
// fewer than L columns, or strides other than 1 and 2, take the scalar
// loop.
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "primitives/isa/dispatch.h"
#include "primitives/pool/pool_row.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

inline float max_tap(float acc, float v) { return (v > acc || acc != acc) ? v : acc; }

// y[ow] for one column by the rule of the file comment, one tap at a time.
inline float column(const float* x, int64_t W, int64_t r0, int64_t r1, int64_t ow, int64_t KW, int64_t sw, int64_t pl,
                    float divisor) {
  const bool avg = divisor > 0.0f;
  const float* row = x + r0 * W + ow * sw - pl;
  float m = avg ? 0.0f + row[0] : row[0];
  for (int64_t r = r0; r < r1; ++r, row += W)
    for (int64_t k = r == r0 ? 1 : 0; k < KW; ++k) m = avg ? m + row[k] : max_tap(m, row[k]);
  return avg ? m / divisor : m;
}

#if defined(__AVX2__)
constexpr int64_t kL = 8;
using V = __m256;
inline V vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm256_storeu_ps(p, v); }
inline V vzero() { return _mm256_setzero_ps(); }
inline V vadd(V a, V b) { return _mm256_add_ps(a, b); }
inline V vdiv(V a, float d) { return _mm256_div_ps(a, _mm256_set1_ps(d)); }
// v > acc ? v : acc (a NaN v keeps acc; see block()).
inline V vmax(V acc, V v) { return _mm256_max_ps(v, acc); }
inline V vlowest() { return _mm256_set1_ps(-__builtin_inff()); }
inline bool any_lowest(V acc) { return _mm256_movemask_ps(_mm256_cmp_ps(acc, vlowest(), _CMP_EQ_OQ)) != 0; }
// p[0], p[2], ..., p[14] in lane order: lo = p[0..7], hi = p[7..14]; per
// 128-bit half the shuffle takes lo[0], lo[2], hi[1], hi[3], so the lanes
// hold 0 2 8 10 | 4 6 12 14. Taps are combined lane by lane in that order
// and in_order() puts the 64-bit pairs in order once, before the store.
inline V veven_lanes(const float* p) { return _mm256_shuffle_ps(vload(p), vload(p + 7), _MM_SHUFFLE(3, 1, 2, 0)); }
inline V in_order(V s) { return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0))); }
// Of a = p[0..7], b = p[8..15]: the even elements (0 2 8 10 | 4 6 12 14, the
// order of veven_lanes(p)) and the odd ones (1 3 9 11 | 5 7 13 15).
inline V veven_of(V a, V b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
inline V vodd_of(V a, V b) { return _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
#elif defined(__SSE2__)
constexpr int64_t kL = 4;
using V = __m128;
inline V vload(const float* p) { return _mm_loadu_ps(p); }
inline void vstore(float* p, V v) { _mm_storeu_ps(p, v); }
inline V vzero() { return _mm_setzero_ps(); }
inline V vadd(V a, V b) { return _mm_add_ps(a, b); }
inline V vdiv(V a, float d) { return _mm_div_ps(a, _mm_set1_ps(d)); }
inline V vmax(V acc, V v) { return _mm_max_ps(v, acc); }
inline V vlowest() { return _mm_set1_ps(-__builtin_inff()); }
inline bool any_lowest(V acc) { return _mm_movemask_ps(_mm_cmpeq_ps(acc, vlowest())) != 0; }
// p[0], p[2], p[4], p[6]: lo = p[0..3], hi = p[3..6] -> lo[0], lo[2], hi[1], hi[3]
// (already in order).
inline V veven_lanes(const float* p) { return _mm_shuffle_ps(vload(p), vload(p + 3), _MM_SHUFFLE(3, 1, 2, 0)); }
inline V in_order(V s) { return s; }
inline V veven_of(V a, V b) { return _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); }
inline V vodd_of(V a, V b) { return _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)); }
#endif

#if defined(__AVX2__) || defined(__SSE2__)
// A tap's kL columns: consecutive elements (stride 1), or the even ones in
// veven_lanes' order (stride 2; the block's result goes through in_order).
template <int S>
inline V tap(const float* p) {
  return S == 1 ? vload(p) : veven_lanes(p);
}

// N vectors of kL output columns side by side, the j-th starting at
// min(ow + j * kL, last) (last = c1 - kL: a row's last vector may overlap
// the one before and recompute its values); each vector's taps are one
// dependent chain, so N chains keep the core busy.
// A maximum starts at -inf and takes v > acc ? v : acc per tap (one max
// instruction): NaN taps are skipped and the first of equal values stays,
// as max_tap does. The two differ only for a window whose taps are all NaN
// (max_tap: NaN; here -inf), so a vector holding -inf is recomputed by
// column(): same bits as the rule in every case. An average starts at 0.
// Three (3-tap stride-2 maximum, the 3x3 / 2 MaxPool): with q = the row at
// o * 2 - pl, the taps q[2j], q[2j + 1], q[2j + 2] come from four loads
// (q[0..], q[kL..] shuffled two ways, then veven_lanes(q + 2)) instead of
// six, in the same lane order, so the same bits.
template <int S, bool Avg, bool Three, int N>
inline __attribute__((always_inline)) void block(float* y, const float* x, int64_t W, int64_t r0, int64_t r1,
                                                 int64_t ow, int64_t last, int64_t KW, int64_t pl, float divisor) {
  static_assert(!Three || (S == 2 && !Avg), "the three-tap path is the stride-2 maximum");
  int64_t o[N];
  for (int j = 0; j < N; ++j) o[j] = ow + j * kL < last ? ow + j * kL : last;
  const float* row = x + r0 * W - pl;
  V acc[N];
  for (int j = 0; j < N; ++j) acc[j] = Avg ? vzero() : vlowest();
  for (int64_t r = r0; r < r1; ++r, row += W) {
    if constexpr (Three) {
      for (int j = 0; j < N; ++j) {
        const float* q = row + o[j] * 2;
        const V a = vload(q), b = vload(q + kL);
        acc[j] = vmax(vmax(vmax(acc[j], veven_of(a, b)), vodd_of(a, b)), veven_lanes(q + 2));
      }
    } else {
      for (int64_t k = 0; k < KW; ++k)
        for (int j = 0; j < N; ++j) {
          const V v = tap<S>(row + o[j] * S + k);
          acc[j] = Avg ? vadd(acc[j], v) : vmax(acc[j], v);
        }
    }
  }
  for (int j = 0; j < N; ++j) {
    const V out = Avg ? vdiv(acc[j], divisor) : acc[j];
    vstore(y + o[j], S == 2 ? in_order(out) : out);
    if (!Avg && any_lowest(acc[j]))
      for (int64_t c = o[j]; c < o[j] + kL; ++c) y[c] = column(x, W, r0, r1, c, KW, S, pl, 0.0f);
  }
}

// Blocks of four vectors, then the rest of the row (one to four vectors,
// the last one ending at c1) as one block: a row of 27 columns is four
// chains side by side, not four one after another.
template <int S, bool Avg, bool Three = false>
void row_vec(float* y, const float* x, int64_t W, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t KW,
             int64_t pl, float divisor) {
  const int64_t last = c1 - kL;
  int64_t ow = c0;
  for (; ow + 4 * kL <= c1; ow += 4 * kL) block<S, Avg, Three, 4>(y, x, W, r0, r1, ow, last, KW, pl, divisor);
  switch ((c1 - ow + kL - 1) / kL) {
    case 1: return block<S, Avg, Three, 1>(y, x, W, r0, r1, ow, last, KW, pl, divisor);
    case 2: return block<S, Avg, Three, 2>(y, x, W, r0, r1, ow, last, KW, pl, divisor);
    case 3: return block<S, Avg, Three, 3>(y, x, W, r0, r1, ow, last, KW, pl, divisor);
    case 4: return block<S, Avg, Three, 4>(y, x, W, r0, r1, ow, last, KW, pl, divisor);
    default: return;
  }
}
#endif

}  // namespace

void pool_row(const ::spindle::kernels::PoolRow& args) {
  float* y = args.y;
  const float* x = args.x;
  int64_t W = args.W;
  int64_t r0 = args.r0;
  int64_t r1 = args.r1;
  int64_t c0 = args.c0;
  int64_t c1 = args.c1;
  int64_t KW = args.KW;
  int64_t sw = args.sw;
  int64_t pl = args.pl;
  float divisor = args.divisor;
  const bool avg = divisor > 0.0f;
#if defined(__AVX2__) || defined(__SSE2__)
  if (c1 - c0 >= kL && (sw == 1 || sw == 2)) {
    if (sw == 1) avg ? row_vec<1, true>(y, x, W, r0, r1, c0, c1, KW, pl, divisor)
                     : row_vec<1, false>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    else if (avg) row_vec<2, true>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    else if (KW == 3) row_vec<2, false, true>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    else row_vec<2, false>(y, x, W, r0, r1, c0, c1, KW, pl, divisor);
    return;
  }
#endif
  for (int64_t ow = c0; ow < c1; ++ow) y[ow] = column(x, W, r0, r1, ow, KW, sw, pl, avg ? divisor : 0.0f);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
