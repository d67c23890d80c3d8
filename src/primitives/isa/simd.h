// simd.h — the few float vector operations the per-ISA kernels use directly
// (depthwise convolution, Winograd transforms), one width per ISA level: 16
// lanes of AVX-512, 8 of AVX2+FMA, 4 of SSE2 at the x86-64 baseline (scalar
// elsewhere). The level is
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

#include "primitives/isa/dispatch.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace spindle::kernels::SPINDLE_ISA_NS::simd {

#if defined(__AVX2__)
// 8-lane helpers at the AVX2 and AVX-512 levels, for kernels that work on
// 8 lanes at both.

// Lanes [0, n) of a mask (n in 0..8).
inline __m256i tail_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The first n (0..8) floats of v at p, in 4 / 2 / 1-float stores (a masked
// store is microcoded on some cores).
inline void store_first(float* p, __m256 v, int n) {
  if (n == 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 x = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, x);
    x = _mm256_extractf128_ps(v, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(p), x);
    x = _mm_movehl_ps(x, x);
    p += 2;
    n -= 2;
  }
  if (n) _mm_store_ss(p, x);
}

// Transposes the 8x8 block r[0..7] (row i in r[i]) in place (kernels that
// gather 8 rows of a plane into lanes: depthwise blocks, Winograd tiles).
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif

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
inline __m256i tail_mask(int n) { return tail_mask8(n); }
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
