// moments.isa.cpp — moments_isa.h's loops, compiled once per ISA level.
#include <immintrin.h>

#include <cstdint>

#include "primitives/math/moments_isa.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr int kChains = 8;

// The 8 partial sums of x[i] (Squares: of (x[i] - m)^2), element i into
// sum i % 8, then the fixed tree. The vector forms hold sum l in lane l;
// term is the same operations on a double or a vector of them.
template <bool Squares>
__attribute__((always_inline)) inline double chained(const float* x, int64_t n, double m) {
  const auto term = [m](auto v) {
    if constexpr (Squares) {
      const auto d = v - m;
      return d * d;
    } else {
      (void)m;
      return v;
    }
  };
  double s[kChains] = {};
  int64_t i = 0;
#if defined(__AVX512F__)
  __m512d acc = _mm512_setzero_pd();
  for (; i + kChains <= n; i += kChains)
    acc = _mm512_add_pd(acc, term(_mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xFF), _mm256_loadu_ps(x + i))));
  _mm512_storeu_pd(s, acc);
#elif defined(__AVX2__)
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (; i + kChains <= n; i += kChains) {
    lo = _mm256_add_pd(lo, term(_mm256_cvtps_pd(_mm_loadu_ps(x + i))));
    hi = _mm256_add_pd(hi, term(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4))));
  }
  _mm256_storeu_pd(s, lo);
  _mm256_storeu_pd(s + 4, hi);
#else
  for (; i + kChains <= n; i += kChains)
    for (int l = 0; l < kChains; ++l) s[l] += term(static_cast<double>(x[i + l]));
#endif
  for (int l = 0; i < n; ++i, ++l) s[l] += term(static_cast<double>(x[i]));
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

// (x - mean)^2 is a product, then a sum: never contracted into one rounding.
__attribute__((optimize("fp-contract=off"))) void row_moments(const float* x, int64_t n, bool centered,
                                                               double* mean, double* var) {
  const double m = centered ? chained<false>(x, n, 0.0) / static_cast<double>(n) : 0.0;
  *mean = m;
  *var = chained<true>(x, n, m) / static_cast<double>(n);
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
