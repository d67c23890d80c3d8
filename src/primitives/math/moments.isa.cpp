// moments.isa.cpp — moments_isa.h's loops, compiled once per ISA level.
#include <immintrin.h>

#include <cstdint>

#include "primitives/math/moments_isa.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr int kChains = 8;

// The 8 partial sums of term(x[i]) (element i into sum i % 8), then the
// fixed tree. The vector forms hold sum l in lane l.
template <class Term, class VecTerm512, class VecTerm256>
__attribute__((always_inline)) inline double chained(const float* x, int64_t n, Term term, VecTerm512 v512,
                                                     VecTerm256 v256) {
  double s[kChains] = {};
  int64_t i = 0;
#if defined(__AVX512F__)
  __m512d acc = _mm512_setzero_pd();
  for (; i + kChains <= n; i += kChains) acc = _mm512_add_pd(acc, v512(_mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xFF), _mm256_loadu_ps(x + i))));
  _mm512_storeu_pd(s, acc);
  (void)v256;
#elif defined(__AVX2__)
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (; i + kChains <= n; i += kChains) {
    lo = _mm256_add_pd(lo, v256(_mm256_cvtps_pd(_mm_loadu_ps(x + i))));
    hi = _mm256_add_pd(hi, v256(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4))));
  }
  _mm256_storeu_pd(s, lo);
  _mm256_storeu_pd(s + 4, hi);
  (void)v512;
#else
  (void)v512;
  (void)v256;
  for (; i + kChains <= n; i += kChains)
    for (int l = 0; l < kChains; ++l) s[l] += term(x[i + l]);
#endif
  for (int l = 0; i < n; ++i, ++l) s[l] += term(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

// (x - mean)^2 is a product, then a sum: never contracted into one rounding.
__attribute__((optimize("fp-contract=off"))) void row_moments(const float* x, int64_t n, bool centered,
                                                               double* mean, double* var) {
  const double m =
      centered ? chained(
                     x, n, [](float v) { return static_cast<double>(v); },
                     [](auto v) { return v; }, [](auto v) { return v; }) /
                     static_cast<double>(n)
               : 0.0;
  const double sq = chained(
      x, n,
      [m](float v) {
        const double d = static_cast<double>(v) - m;
        return d * d;
      },
      [m](auto v) {
#if defined(__AVX512F__)
        const __m512d d = _mm512_sub_pd(v, _mm512_set1_pd(m));
        return _mm512_mul_pd(d, d);
#else
        return v;
#endif
      },
      [m](auto v) {
#if defined(__AVX2__)
        const __m256d d = _mm256_sub_pd(v, _mm256_set1_pd(m));
        return _mm256_mul_pd(d, d);
#else
        return v;
#endif
      });
  *mean = m;
  *var = sq / static_cast<double>(n);
}

__attribute__((optimize("fp-contract=off"))) void normalize_row(const float* x, float* y, int64_t n, float mean,
                                                                 float inv, const float* scale, const float* bias) {
  if (bias) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i];
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
