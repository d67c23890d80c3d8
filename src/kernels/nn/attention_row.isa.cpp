// attention_row.isa.cpp — the loops of spindle.FusedAttention for one query
// row (kernels/nn/attention.cpp), compiled once per ISA level
// (src/primitives/isa/dispatch.h).
//   attention_row_scores: s_j = q . k_j for key rows k_j = k + j * k_rs, each
//     in 8 partial sums (lane d % 8) added in a fixed order, four key rows at
//     a time.
//   attention_row_values: y = sum_j p_j v_j over value rows v_j = v + j * v_rs,
//     in key order.
// The order of the operations is fixed by the loops, not by the vector width.
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

}  // namespace

void attention_row_scores(const float* q, const float* k, int64_t k_rs, int64_t D, int64_t Skv, float* s) {
  const int64_t D8 = D - D % 8;
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  // The same lanes in one 8-float vector per key row.
  for (; j + 4 <= Skv; j += 4) {
    const float* k0 = k + j * k_rs;
    const float* k1 = k0 + k_rs;
    const float* k2 = k1 + k_rs;
    const float* k3 = k2 + k_rs;
    __m256 v0 = _mm256_setzero_ps(), v1 = _mm256_setzero_ps(), v2 = _mm256_setzero_ps(), v3 = _mm256_setzero_ps();
    for (int64_t d = 0; d < D8; d += 8) {
      const __m256 x = _mm256_loadu_ps(q + d);
      v0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + d), v0);
      v1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + d), v1);
      v2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + d), v2);
      v3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + d), v3);
    }
    float a0[8], a1[8], a2[8], a3[8];
    _mm256_storeu_ps(a0, v0), _mm256_storeu_ps(a1, v1), _mm256_storeu_ps(a2, v2), _mm256_storeu_ps(a3, v3);
    for (int64_t d = D8; d < D; ++d) {
      a0[d % 8] += q[d] * k0[d];
      a1[d % 8] += q[d] * k1[d];
      a2[d % 8] += q[d] * k2[d];
      a3[d % 8] += q[d] * k3[d];
    }
    s[j] = lanes_sum(a0), s[j + 1] = lanes_sum(a1), s[j + 2] = lanes_sum(a2), s[j + 3] = lanes_sum(a3);
  }
#endif
  for (; j + 4 <= Skv; j += 4) {
    const float* k0 = k + j * k_rs;
    const float* k1 = k0 + k_rs;
    const float* k2 = k1 + k_rs;
    const float* k3 = k2 + k_rs;
    float a0[8] = {}, a1[8] = {}, a2[8] = {}, a3[8] = {};
    for (int64_t d = 0; d < D8; d += 8)
      for (int l = 0; l < 8; ++l) {
        const float x = q[d + l];
        a0[l] += x * k0[d + l];
        a1[l] += x * k1[d + l];
        a2[l] += x * k2[d + l];
        a3[l] += x * k3[d + l];
      }
    for (int64_t d = D8; d < D; ++d) {
      a0[d % 8] += q[d] * k0[d];
      a1[d % 8] += q[d] * k1[d];
      a2[d % 8] += q[d] * k2[d];
      a3[d % 8] += q[d] * k3[d];
    }
    s[j] = lanes_sum(a0), s[j + 1] = lanes_sum(a1), s[j + 2] = lanes_sum(a2), s[j + 3] = lanes_sum(a3);
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

}  // namespace spindle::kernels::SPINDLE_ISA_NS
