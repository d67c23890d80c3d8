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

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "primitives/isa/dispatch.h"

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

// x / (1 + exp(t)) for any t: t is clamped to [-87.3, 88.3] for
// exp_normal, and above 88.3 the denominator is +inf (x / inf: +-0, NaN for
// an infinite x), below -87.3 it is 1 + exp(-87.3). NaN t gives a finite
// denominator (x / den stays NaN only when x is). The shape of SiLU
// (t = -x) and of GELU's tanh approximation (t = -2u).
inline float div_one_plus_exp(float x, float t0) {
  float t = t0 < 88.3f ? t0 : 88.3f;
  t = t > -87.3f ? t : -87.3f;
  const float den = t0 > 88.3f ? __builtin_inff() : 1.0f + exp_normal(t);
  return x / den;
}

#if defined(SPINDLE_VEC_EXP_AVX2)
// Lanes<N>: N independent 8-lane vectors that every operation below treats
// one after the other. A polynomial activation is one long chain of
// dependent operations per vector (GELU: ~130 cycles of latency for ~40
// operations); the core's scheduler holds only a couple of such chains when
// they come one vector after another, so a loop over single vectors waits on
// latency. Written over Lanes<4>, each step of the chain is issued for 4
// vectors in a row: 4 chains in flight, the same operations per lane (the
// same bits as over one __m256). At the AVX-512 level Wide<N> holds N
// 16-lane vectors: the same operations per lane again (a comparison's
// result a mask register there, used by the blends and masked moves that do
// what the 8-lane form's blendv and andnot do), half the instructions.
template <int N>
struct Lanes {
  __m256 v[N];
};
#if defined(__AVX512F__)
template <int N>
struct Wide {
  __m512 v[N];
};
#define SPINDLE_LANES_512(...) __VA_ARGS__
#else
#define SPINDLE_LANES_512(...)
#endif
// Each operation over __m256 (and __m512 at the AVX-512 level), then over
// each vector of a Lanes<N> (Wide<N>).
#define SPINDLE_LANES_OF1(S, name)                                         \
  template <int N>                                                        \
  __attribute__((always_inline)) inline S<N> name(S<N> a) {               \
    S<N> r;                                                               \
    for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i]);                    \
    return r;                                                             \
  }
#define SPINDLE_LANES_OF2(S, name)                                         \
  template <int N>                                                        \
  __attribute__((always_inline)) inline S<N> name(S<N> a, S<N> b) {       \
    S<N> r;                                                               \
    for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i], b.v[i]);            \
    return r;                                                             \
  }
#define SPINDLE_LANES_OF3(S, name)                                         \
  template <int N>                                                        \
  __attribute__((always_inline)) inline S<N> name(S<N> a, S<N> b, S<N> c) { \
    S<N> r;                                                               \
    for (int i = 0; i < N; ++i) r.v[i] = name(a.v[i], b.v[i], c.v[i]);    \
    return r;                                                             \
  }
#define SPINDLE_LANES_UNARY(name, expr, expr512)                                                  \
  __attribute__((always_inline)) inline __m256 name(__m256 a) { return expr; }                    \
  SPINDLE_LANES_OF1(Lanes, name)                                                                  \
  SPINDLE_LANES_512(__attribute__((always_inline)) inline __m512 name(__m512 a) { return expr512; } \
                    SPINDLE_LANES_OF1(Wide, name))
#define SPINDLE_LANES_BINARY(name, expr, expr512)                                                          \
  __attribute__((always_inline)) inline __m256 name(__m256 a, __m256 b) { return expr; }                   \
  SPINDLE_LANES_OF2(Lanes, name)                                                                           \
  SPINDLE_LANES_512(__attribute__((always_inline)) inline __m512 name(__m512 a, __m512 b) { return expr512; } \
                    SPINDLE_LANES_OF2(Wide, name))
#define SPINDLE_LANES_TERNARY(name, expr, expr512)                                                 \
  __attribute__((always_inline)) inline __m256 name(__m256 a, __m256 b, __m256 c) { return expr; } \
  SPINDLE_LANES_OF3(Lanes, name)                                                                   \
  SPINDLE_LANES_512(__attribute__((always_inline)) inline __m512 name(__m512 a, __m512 b, __m512 c) { \
    return expr512;                                                                                \
  } SPINDLE_LANES_OF3(Wide, name))
// Comparisons and blends: at 8 lanes a vector of all-ones / zero lanes; at
// 16 lanes a mask register (Mask16, WideMask<N> below).
#define SPINDLE_LANES_BINARY_256(name, expr)                                              \
  __attribute__((always_inline)) inline __m256 name(__m256 a, __m256 b) { return expr; } \
  SPINDLE_LANES_OF2(Lanes, name)
#define SPINDLE_LANES_TERNARY_256(name, expr)                                                      \
  __attribute__((always_inline)) inline __m256 name(__m256 a, __m256 b, __m256 c) { return expr; } \
  SPINDLE_LANES_OF3(Lanes, name)
SPINDLE_LANES_BINARY(l_add, _mm256_add_ps(a, b), _mm512_add_ps(a, b))
SPINDLE_LANES_BINARY(l_sub, _mm256_sub_ps(a, b), _mm512_sub_ps(a, b))
SPINDLE_LANES_BINARY(l_mul, _mm256_mul_ps(a, b), _mm512_mul_ps(a, b))
SPINDLE_LANES_BINARY(l_div, _mm256_div_ps(a, b), _mm512_div_ps(a, b))
SPINDLE_LANES_BINARY(l_min, _mm256_min_ps(a, b), _mm512_maskz_min_ps(static_cast<__mmask16>(0xFFFF), a, b))
SPINDLE_LANES_BINARY(l_max, _mm256_max_ps(a, b), _mm512_maskz_max_ps(static_cast<__mmask16>(0xFFFF), a, b))
SPINDLE_LANES_BINARY(l_andnot, _mm256_andnot_ps(a, b), _mm512_andnot_ps(a, b))
SPINDLE_LANES_BINARY(l_and, _mm256_and_ps(a, b), _mm512_and_ps(a, b))
SPINDLE_LANES_BINARY(l_or, _mm256_or_ps(a, b), _mm512_or_ps(a, b))
SPINDLE_LANES_BINARY_256(l_lt, _mm256_cmp_ps(a, b, _CMP_LT_OQ))
SPINDLE_LANES_BINARY_256(l_ge, _mm256_cmp_ps(a, b, _CMP_GE_OQ))
SPINDLE_LANES_BINARY_256(l_gt, _mm256_cmp_ps(a, b, _CMP_GT_OQ))
SPINDLE_LANES_BINARY_256(l_unord, _mm256_cmp_ps(a, b, _CMP_UNORD_Q))
SPINDLE_LANES_TERNARY(l_fmadd, _mm256_fmadd_ps(a, b, c), _mm512_fmadd_ps(a, b, c))
SPINDLE_LANES_TERNARY(l_fnmadd, _mm256_fnmadd_ps(a, b, c), _mm512_fnmadd_ps(a, b, c))
// b where c's sign bit is set (a comparison held), else a.
SPINDLE_LANES_TERNARY_256(l_blendv, _mm256_blendv_ps(a, b, c))
// 2^n for the integer n held as m - magic in m's bits (exp's scale).
SPINDLE_LANES_UNARY(l_pow2_of_magic,
                    _mm256_castsi256_ps(_mm256_slli_epi32(
                        _mm256_add_epi32(_mm256_sub_epi32(_mm256_castps_si256(a), _mm256_set1_epi32(0x4B400000)),
                                         _mm256_set1_epi32(127)),
                        23)),
                    _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
                        static_cast<__mmask16>(0xFFFF),
                        _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(0x4B400000)),
                                         _mm512_set1_epi32(127)),
                        23)))
#if defined(__AVX512F__)
// A comparison's result over 16 lanes, and over each vector of a Wide<N>.
struct Mask16 {
  __mmask16 k;
};
template <int N>
struct WideMask {
  __mmask16 k[N];
};
#define SPINDLE_LANES_CMP512(name, pred)                                                         \
  __attribute__((always_inline)) inline Mask16 name(__m512 a, __m512 b) {                        \
    return {_mm512_cmp_ps_mask(a, b, pred)};                                                     \
  }                                                                                              \
  template <int N>                                                                               \
  __attribute__((always_inline)) inline WideMask<N> name(Wide<N> a, Wide<N> b) {                 \
    WideMask<N> r;                                                                               \
    for (int i = 0; i < N; ++i) r.k[i] = _mm512_cmp_ps_mask(a.v[i], b.v[i], pred);               \
    return r;                                                                                    \
  }
SPINDLE_LANES_CMP512(l_lt, _CMP_LT_OQ)
SPINDLE_LANES_CMP512(l_ge, _CMP_GE_OQ)
SPINDLE_LANES_CMP512(l_gt, _CMP_GT_OQ)
SPINDLE_LANES_CMP512(l_unord, _CMP_UNORD_Q)
#undef SPINDLE_LANES_CMP512
// b where the comparison did not hold, 0 where it did (andnot of the 8-lane form).
__attribute__((always_inline)) inline __m512 l_andnot(Mask16 m, __m512 b) {
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~m.k), b);
}
// b where the comparison held, else a (blendv of the 8-lane form).
__attribute__((always_inline)) inline __m512 l_blendv(__m512 a, __m512 b, Mask16 m) {
  return _mm512_mask_blend_ps(m.k, a, b);
}
template <int N>
__attribute__((always_inline)) inline Wide<N> l_andnot(WideMask<N> m, Wide<N> b) {
  for (int i = 0; i < N; ++i) b.v[i] = _mm512_maskz_mov_ps(static_cast<__mmask16>(~m.k[i]), b.v[i]);
  return b;
}
template <int N>
__attribute__((always_inline)) inline Wide<N> l_blendv(Wide<N> a, Wide<N> b, WideMask<N> m) {
  for (int i = 0; i < N; ++i) a.v[i] = _mm512_mask_blend_ps(m.k[i], a.v[i], b.v[i]);
  return a;
}
#endif
#undef SPINDLE_LANES_OF1
#undef SPINDLE_LANES_OF2
#undef SPINDLE_LANES_OF3
#undef SPINDLE_LANES_UNARY
#undef SPINDLE_LANES_BINARY
#undef SPINDLE_LANES_TERNARY
#undef SPINDLE_LANES_BINARY_256
#undef SPINDLE_LANES_TERNARY_256
#undef SPINDLE_LANES_512

template <class V>
constexpr bool kIsLanes = false;
template <int N>
constexpr bool kIsLanes<Lanes<N>> = true;
#if defined(__AVX512F__)
template <int N>
constexpr bool kIsLanes<Wide<N>> = true;
#endif

// A constant in every lane of V (__m256, __m512, Lanes<N> or Wide<N>).
template <class V>
__attribute__((always_inline)) inline V l_set1(float c) {
  if constexpr (kIsLanes<V>) {
    V r;
    for (auto& x : r.v) {
#if defined(__AVX512F__)
      if constexpr (sizeof(x) == sizeof(__m512)) x = _mm512_set1_ps(c);
      else
#endif
        x = _mm256_set1_ps(c);
    }
    return r;
#if defined(__AVX512F__)
  } else if constexpr (sizeof(V) == sizeof(__m512)) {
    return _mm512_set1_ps(c);
#endif
  } else {
    return _mm256_set1_ps(c);
  }
}

// V's lanes from / to q (sizeof(V) / 4 floats; unaligned).
template <class V>
__attribute__((always_inline)) inline V l_load(const float* q) {
  if constexpr (kIsLanes<V>) {
    V r;
    constexpr size_t kCount = sizeof(V) / sizeof(r.v[0]), kStep = sizeof(r.v[0]) / sizeof(float);
    for (size_t i = 0; i < kCount; ++i) {
#if defined(__AVX512F__)
      if constexpr (kStep == 16) r.v[i] = _mm512_loadu_ps(q + kStep * i);
      else
#endif
        r.v[i] = _mm256_loadu_ps(q + kStep * i);
    }
    return r;
#if defined(__AVX512F__)
  } else if constexpr (sizeof(V) == sizeof(__m512)) {
    return _mm512_loadu_ps(q);
#endif
  } else {
    return _mm256_loadu_ps(q);
  }
}
__attribute__((always_inline)) inline void l_store(float* q, __m256 v) { _mm256_storeu_ps(q, v); }
#if defined(__AVX512F__)
__attribute__((always_inline)) inline void l_store(float* q, __m512 v) { _mm512_storeu_ps(q, v); }
#endif
template <class V, std::enable_if_t<kIsLanes<V>, int> = 0>
__attribute__((always_inline)) inline void l_store(float* q, const V& v) {
  constexpr size_t kCount = sizeof(V) / sizeof(v.v[0]), kStep = sizeof(v.v[0]) / sizeof(float);
  for (size_t i = 0; i < kCount; ++i) l_store(q + kStep * i, v.v[i]);
}

// exp_normal over V: the operations of the scalar form, one for one.
template <class V>
__attribute__((always_inline)) inline V exp_normal_v(V t) {
  const V magic = l_set1<V>(12582912.0f);  // bits 0x4B400000
  const V m = l_fmadd(t, l_set1<V>(1.44269504088896341f), magic);
  const V n = l_sub(m, magic);
  V r = l_fnmadd(n, l_set1<V>(0.693359375f), t);
  r = l_fnmadd(n, l_set1<V>(-2.12194440e-4f), r);
  V p = l_set1<V>(1.9875691500e-4f);
  p = l_fmadd(p, r, l_set1<V>(1.3981999507e-3f));
  p = l_fmadd(p, r, l_set1<V>(8.3334519073e-3f));
  p = l_fmadd(p, r, l_set1<V>(4.1665795894e-2f));
  p = l_fmadd(p, r, l_set1<V>(1.6666665459e-1f));
  p = l_fmadd(p, r, l_set1<V>(5.0000001201e-1f));
  p = l_add(l_fmadd(p, l_mul(r, r), r), l_set1<V>(1.0f));
  return l_mul(p, l_pow2_of_magic(m));
}

// div_one_plus_exp over V: the operations of the scalar form, one for one.
template <class V>
__attribute__((always_inline)) inline V div_one_plus_exp_v(V x, V t0) {
  const V t = l_max(l_min(t0, l_set1<V>(88.3f)), l_set1<V>(-87.3f));
  const auto big = l_gt(t0, l_set1<V>(88.3f));
  const V den = l_blendv(l_add(l_set1<V>(1.0f), exp_normal_v(t)), l_set1<V>(__builtin_inff()), big);
  return l_div(x, den);
}

inline __m256 exp_normal8(__m256 t) { return exp_normal_v(t); }
#endif

// o[i] = f(x[i]) for i < n (o may be x): with AVX2, N vectors at a time
// through fv over Lanes<N> (with AVX-512, N / 2 16-lane vectors over
// Wide<N / 2> first), then single vectors through fv over __m256; the rest
// through the scalar twin fs (the same operations, the same bits).
template <int N, class FV, class FS>
__attribute__((always_inline)) inline void map_lanes(float* o, const float* x, int64_t n, FV fv, FS fs) {
  int64_t i = 0;
#if defined(SPINDLE_VEC_EXP_AVX2)
#if defined(__AVX512F__)
  using W = Wide<(N / 2 > 0 ? N / 2 : 1)>;
  for (; i + static_cast<int64_t>(sizeof(W) / 4) <= n; i += sizeof(W) / 4) l_store(o + i, fv(l_load<W>(x + i)));
#endif
  for (; i + 8 * N <= n; i += 8 * N) l_store(o + i, fv(l_load<Lanes<N>>(x + i)));
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, fv(_mm256_loadu_ps(x + i)));
#else
  (void)fv;
#endif
  for (; i < n; ++i) o[i] = fs(x[i]);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS::vm
