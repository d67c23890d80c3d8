// simd.h — the few float vector operations the per-ISA kernels use directly
// (depthwise convolution), one width per ISA level: 16 lanes of AVX-512, 8 of
// AVX2+FMA, 4 of SSE2 at the x86-64 baseline (scalar elsewhere). The level is
// the one the translation unit is compiled for (the -m flags of its
// spindle_isa_<level> object library), so only *.isa.cpp files include this.
//
// Everything lives in spindle::kernels::SPINDLE_ISA_NS::simd, so an inline
// function that the compiler does not inline is a weak symbol of that level
// only (dispatch.h's rule).
//
// Every element, full vector or tail, goes through the same multiply-add
// sequence, so results do not depend on where an element falls in a vector.
// fmadd is fused with AVX2 / AVX-512 and a separate multiply and add at the
// baseline (no FMA there): levels agree within rounding, not bitwise.
#pragma once

#include <cstdint>

#include "kernels/isa/dispatch.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace spindle::kernels::SPINDLE_ISA_NS::simd {

#if defined(__AVX512F__)

constexpr int kWidth = 16;
using VFloat = __m512;
inline VFloat set1(float v) { return _mm512_set1_ps(v); }
inline VFloat load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, VFloat v) { _mm512_storeu_ps(p, v); }
inline __mmask16 tail_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
// Loads / stores the first n (0 < n <= kWidth) elements; others read as 0.
inline VFloat load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
inline void store_n(float* p, VFloat v, int n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }
inline VFloat fmadd(VFloat a, VFloat b, VFloat c) { return _mm512_fmadd_ps(a, b, c); }

#elif defined(__AVX2__) && defined(__FMA__)

constexpr int kWidth = 8;
using VFloat = __m256;
inline VFloat set1(float v) { return _mm256_set1_ps(v); }
inline VFloat load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, VFloat v) { _mm256_storeu_ps(p, v); }
inline __m256i tail_mask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}
inline VFloat load_n(const float* p, int n) { return _mm256_maskload_ps(p, tail_mask(n)); }
inline void store_n(float* p, VFloat v, int n) { _mm256_maskstore_ps(p, tail_mask(n), v); }
inline VFloat fmadd(VFloat a, VFloat b, VFloat c) { return _mm256_fmadd_ps(a, b, c); }

#elif defined(__SSE2__)

constexpr int kWidth = 4;
using VFloat = __m128;
inline VFloat set1(float v) { return _mm_set1_ps(v); }
inline VFloat load(const float* p) { return _mm_loadu_ps(p); }
inline void store(float* p, VFloat v) { _mm_storeu_ps(p, v); }
inline VFloat load_n(const float* p, int n) {
  float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < n; ++i) t[i] = p[i];
  return _mm_loadu_ps(t);
}
inline void store_n(float* p, VFloat v, int n) {
  float t[4];
  _mm_storeu_ps(t, v);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}
inline VFloat fmadd(VFloat a, VFloat b, VFloat c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }

#else

constexpr int kWidth = 1;
using VFloat = float;
inline VFloat set1(float v) { return v; }
inline VFloat load(const float* p) { return *p; }
inline void store(float* p, VFloat v) { *p = v; }
inline VFloat load_n(const float* p, int n) { return n > 0 ? *p : 0.0f; }
inline void store_n(float* p, VFloat v, int) { *p = v; }
inline VFloat fmadd(VFloat a, VFloat b, VFloat c) { return a * b + c; }

#endif

}  // namespace spindle::kernels::SPINDLE_ISA_NS::simd
