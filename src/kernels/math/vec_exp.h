// vec_exp.h — exp over the normal range as scalar and 8-lane AVX2 forms that
// give the same bits, for the per-ISA files (SiLU, GELU, Softmax).
//
// exp_normal(t) for t in [-87.3, 88.3] (the caller clamps): the Cody-Waite
// reduction and degree-6 polynomial of vec_math.h's fast_exp, but 2^n as one
// normal float (no two-step scale, no denormal results), every multiply-add
// fused. The scalar form does the vector form's operations one for one
// (fused where the level has FMA), so an element's bits do not depend on
// whether it falls in a vector or in a tail. Relative error ~2e-7.
#pragma once

#include <cstdint>

#include "kernels/isa/dispatch.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SPINDLE_VEC_EXP_AVX2 1
#endif

namespace spindle::kernels::SPINDLE_ISA_NS::vm {

inline float fma_or_mul_add(float a, float b, float c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;  // the baseline level has no vector form to agree with
#endif
}

inline float exp_normal(float t) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: round to nearest
  const float m = fma_or_mul_add(t, 1.44269504088896341f, kMagic);
  const float n = m - kMagic;
  const int32_t ni = static_cast<int32_t>(__builtin_bit_cast(uint32_t, m) - __builtin_bit_cast(uint32_t, kMagic));
  float r = fma_or_mul_add(-n, 0.693359375f, t);
  r = fma_or_mul_add(-n, -2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fma_or_mul_add(p, r, 1.3981999507e-3f);
  p = fma_or_mul_add(p, r, 8.3334519073e-3f);
  p = fma_or_mul_add(p, r, 4.1665795894e-2f);
  p = fma_or_mul_add(p, r, 1.6666665459e-1f);
  p = fma_or_mul_add(p, r, 5.0000001201e-1f);
  p = fma_or_mul_add(p, r * r, r) + 1.0f;
  return p * __builtin_bit_cast(float, static_cast<uint32_t>(ni + 127) << 23);
}

#if defined(SPINDLE_VEC_EXP_AVX2)
inline __m256 exp_normal8(__m256 t) {
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 m = _mm256_fmadd_ps(t, _mm256_set1_ps(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(m, magic);
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(m), _mm256_castps_si256(magic));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(p, scale);
}
#endif

}  // namespace spindle::kernels::SPINDLE_ISA_NS::vm
