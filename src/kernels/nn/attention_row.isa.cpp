// attention_row.isa.cpp — the loops of spindle.FusedAttention for one query
// row (kernels/nn/attention.cpp), compiled once per ISA level
// (src/primitives/isa/dispatch.h).
//   attention_row_scores: s_j = q . k_j for key rows k_j = k + j * k_rs, each
//     in 8 partial sums (lane d % 8) added in a fixed order, four key rows at
//     a time.
//   attention_row_values: y = sum_j p_j v_j over value rows v_j = v + j * v_rs,
//     in key order.
//   attention_max_abs_bits: the largest |x| of n rows (an additive mask's
//     score bound), as bits.
//   attention_last_above: the end of the mask values above a threshold in a
//     row (an additive mask's skipped keys).
// The order of the operations is fixed by the loops at each ISA level (fused
// multiply-adds from AVX2 up), whatever the thread count.
#include <algorithm>
#include <bit>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "primitives/isa/dispatch.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

inline float lanes_sum(const float* p) {
  return ((p[0] + p[4]) + (p[1] + p[5])) + ((p[2] + p[6]) + (p[3] + p[7]));
}

// Adds the tail d in [D8, D) of four key rows kr to their lanes a and
// writes the four sums to s.
inline void finish_rows(const float* q, const float* const* kr, int64_t D8, int64_t D, float (*a)[8], float* s) {
  for (int r = 0; r < 4; ++r) {
    for (int64_t d = D8; d < D; ++d) a[r][d % 8] += q[d] * kr[r][d];
    s[r] = lanes_sum(a[r]);
  }
}

}  // namespace

void attention_row_scores(const float* q, const float* k, int64_t k_rs, int64_t D, int64_t Skv, float* s) {
  const int64_t D8 = D - D % 8;
  int64_t j = 0;
  for (; j + 4 <= Skv; j += 4) {
    const float* kr[4] = {k + j * k_rs, k + (j + 1) * k_rs, k + (j + 2) * k_rs, k + (j + 3) * k_rs};
    float a[4][8];
#if defined(__AVX2__) && defined(__FMA__)
    // The lanes as one 8-float vector per key row.
    __m256 v[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t d = 0; d < D8; d += 8) {
      const __m256 x = _mm256_loadu_ps(q + d);
      for (int r = 0; r < 4; ++r) v[r] = _mm256_fmadd_ps(x, _mm256_loadu_ps(kr[r] + d), v[r]);
    }
    for (int r = 0; r < 4; ++r) _mm256_storeu_ps(a[r], v[r]);
#else
    for (int r = 0; r < 4; ++r)
      for (int l = 0; l < 8; ++l) a[r][l] = 0.0f;
    for (int64_t d = 0; d < D8; d += 8)
      for (int r = 0; r < 4; ++r)
        for (int l = 0; l < 8; ++l) a[r][l] += q[d + l] * kr[r][d + l];
#endif
    finish_rows(q, kr, D8, D, a, s + j);
  }
  for (; j < Skv; ++j) {
    const float* k0 = k + j * k_rs;
    float a0[8] = {};
    for (int64_t d = 0; d < D8; d += 8)
      for (int l = 0; l < 8; ++l) a0[l] += q[d + l] * k0[d + l];
    for (int64_t d = D8; d < D; ++d) a0[d % 8] += q[d] * k0[d];
    s[j] = lanes_sum(a0);
  }
}

void attention_row_values(const float* p, const float* v, int64_t v_rs, int64_t Skv, int64_t Dv, float* y) {
  for (int64_t d = 0; d < Dv; ++d) y[d] = 0.0f;
  for (int64_t j = 0; j < Skv; ++j) {
    const float* vj = v + j * v_rs;
    const float pj = p[j];
    for (int64_t d = 0; d < Dv; ++d) y[d] += pj * vj[d];
  }
}

// The largest |x| over n rows of len floats (row stride rs, unit element
// stride) as the float's bits with the sign cleared: they order as the
// values do, a NaN above infinity.
uint32_t attention_max_abs_bits(const float* x, int64_t n, int64_t len, int64_t rs) {
  uint32_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* r = x + i * rs;
    for (int64_t d = 0; d < len; ++d) top = std::max(top, std::bit_cast<uint32_t>(r[d]) & 0x7FFFFFFFu);
  }
  return top;
}

// 1 + the last j in [lo, hi) whose x[j] is not at most thr (a NaN is not),
// lo when none is: 16 values at a time from the end.
int64_t attention_last_above(const float* x, int64_t lo, int64_t hi, float thr) {
  int64_t j = hi;
  for (; j - lo >= 16; j -= 16) {
    bool any = false;
    for (int t = 0; t < 16; ++t) any |= !(x[j - 16 + t] <= thr);
    if (any) break;
  }
  while (j > lo && x[j - 1] <= thr) --j;
  return j;
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
