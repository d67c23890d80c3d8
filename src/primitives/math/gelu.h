// gelu.h — GELU for float32, exact (erf form) and with the tanh
// approximation, shared by the Gelu op (unary.isa.cpp) and the fused
// activation of MatMul / Gemm / Conv (activation.isa.cpp), so both give the
// same bits. Include only from
// *.isa.cpp files (the functions live in the translation unit's ISA level,
// src/primitives/isa/dispatch.h).
#pragma once

#include <cstdint>

#include "primitives/math/vec_exp.h"
#include "primitives/math/vec_math.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

// GELU (exact, erf form) for float32 from erfc alone:
//   x >= 0: x * (1 - erfc(z) / 2),  x < 0: x * erfc(z) / 2,  z = |x| / sqrt(2),
// with erfc(z) = t * exp(-z^2 + Q(t)), t = 1 / (1 + z/2) (Numerical Recipes'
// erfcc, fractional error < 1.2e-7 for every z >= 0), so neither sign
// cancels. z is capped at 10 (erfc(10) < 1e-44) and exp's argument floored
// at -87.3, below which erfc is taken as 0: x >= 0 gives x (+inf too),
// x < 0 gives -0, -inf gives NaN as 0.5 * x * (1 + erf(x / sqrt(2))) does.
// About half the instructions of the erf form (one branch instead of two
// computed and blended). Relative error ~1e-7 * max(1, x^2 / 2) (for x < 0
// the rounding of -x^2 / 2 inside exp; the erf form cancels there: at
// x = -5 its 1 + erf(x / sqrt(2)) keeps one digit). Scalar and 8-lane forms
// give the same bits.
inline float gelu(float x) {
  float z = vm::f_abs(x) * 0.70710678118654752440f;
  z = z < 10.0f ? z : 10.0f;
  const float t = 1.0f / vm::fma_or_mul_add(0.5f, z, 1.0f);
  float q = 0.17087277f;
  q = vm::fma_or_mul_add(q, t, -0.82215223f);
  q = vm::fma_or_mul_add(q, t, 1.48851587f);
  q = vm::fma_or_mul_add(q, t, -1.13520398f);
  q = vm::fma_or_mul_add(q, t, 0.27886807f);
  q = vm::fma_or_mul_add(q, t, -0.18628806f);
  q = vm::fma_or_mul_add(q, t, 0.09678418f);
  q = vm::fma_or_mul_add(q, t, 0.37409196f);
  q = vm::fma_or_mul_add(q, t, 1.00002368f);
  q = vm::fma_or_mul_add(q, t, -1.26551223f);
  const float arg = vm::fma_or_mul_add(-z, z, q);
  const float a = arg > -87.3f ? arg : -87.3f;
  const float h = arg < -87.3f ? 0.0f : 0.5f * (t * vm::exp_normal(a < 88.3f ? a : 88.3f));
  return x >= 0.0f ? x * (1.0f - h) : x * h;
}

#if defined(SPINDLE_VEC_EXP_AVX2)
// gelu over V (__m256, or vm::Lanes<N> to keep N chains in flight).
template <class V>
__attribute__((always_inline)) inline V gelu_v(V x) {
  using namespace vm;
  const V ax = l_andnot(l_set1<V>(-0.0f), x);
  const V z = l_min(l_mul(ax, l_set1<V>(0.70710678118654752440f)), l_set1<V>(10.0f));
  const V one = l_set1<V>(1.0f);
  const V t = l_div(one, l_fmadd(l_set1<V>(0.5f), z, one));
  V q = l_set1<V>(0.17087277f);
  q = l_fmadd(q, t, l_set1<V>(-0.82215223f));
  q = l_fmadd(q, t, l_set1<V>(1.48851587f));
  q = l_fmadd(q, t, l_set1<V>(-1.13520398f));
  q = l_fmadd(q, t, l_set1<V>(0.27886807f));
  q = l_fmadd(q, t, l_set1<V>(-0.18628806f));
  q = l_fmadd(q, t, l_set1<V>(0.09678418f));
  q = l_fmadd(q, t, l_set1<V>(0.37409196f));
  q = l_fmadd(q, t, l_set1<V>(1.00002368f));
  q = l_fmadd(q, t, l_set1<V>(-1.26551223f));
  const V arg = l_fnmadd(z, z, q);
  const V a = l_min(l_max(arg, l_set1<V>(-87.3f)), l_set1<V>(88.3f));
  const auto tiny = l_lt(arg, l_set1<V>(-87.3f));
  const V h = l_andnot(tiny, l_mul(l_set1<V>(0.5f), l_mul(t, exp_normal_v(a))));
  const auto pos = l_ge(x, l_set1<V>(0.0f));
  return l_blendv(l_mul(x, h), l_mul(x, l_sub(one, h)), pos);
}
#endif

// o[i] = gelu(x[i]) for i < n (o may be x); 8 vectors of chains in flight
// (docs/benchmarks.md: 0.294 -> 0.169 ms on 128 x 1536).
inline void gelu_loop(float* o, const float* x, int64_t n) {
#if defined(SPINDLE_VEC_EXP_AVX2)
  vm::map_lanes<8>(o, x, n, [](auto v) __attribute__((always_inline)) { return gelu_v(v); }, [](float v) { return gelu(v); });
#else
  vm::map_lanes<8>(o, x, n, 0, [](float v) { return gelu(v); });
#endif
}

// GELU's tanh approximation, 0.5 x (1 + tanh(u)) with
// u = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 + exp(-2u)) (the same value:
// (1 + tanh(u)) / 2 = sigmoid(2u)), which does not cancel for x < 0 as
// 1 + tanh(u) does and needs one exp and one division.
// -2u = x (a + b x^2), a = -2 sqrt(2/pi), b = 0.044715 a, goes through
// vm::div_one_plus_exp (vec_exp.h) as SiLU's -x does: above 88.3 the
// denominator is +inf and the result -0 (the true value is below 1e-36 in
// magnitude). +inf gives +inf, -inf NaN (as the formula does), NaN stays
// NaN. Relative error ~3e-7 (vec_exp.h) plus the rounding of -2u itself
// (~6e-8 * |2u|, which matters only for x < -3, where the result is below
// 0.004 in magnitude). Scalar and 8-lane forms give the same bits.
inline float gelu_tanh(float x) {
  constexpr float a = -1.5957691216057308f, b = -0.071354816272443f;
  return vm::div_one_plus_exp(x, x * vm::fma_or_mul_add(b, x * x, a));
}

#if defined(SPINDLE_VEC_EXP_AVX2)
template <class V>
__attribute__((always_inline)) inline V gelu_tanh_v(V x) {
  using namespace vm;
  const V t0 = l_mul(x, l_fmadd(l_set1<V>(-0.071354816272443f), l_mul(x, x), l_set1<V>(-1.5957691216057308f)));
  return div_one_plus_exp_v(x, t0);
}
#endif

// o[i] = gelu_tanh(x[i]) for i < n (o may be x).
inline void gelu_tanh_loop(float* o, const float* x, int64_t n) {
#if defined(SPINDLE_VEC_EXP_AVX2)
  vm::map_lanes<8>(o, x, n, [](auto v) __attribute__((always_inline)) { return gelu_tanh_v(v); },
                   [](float v) { return gelu_tanh(v); });
#else
  vm::map_lanes<8>(o, x, n, 0, [](float v) { return gelu_tanh(v); });
#endif
}

}  // namespace
}  // namespace spindle::kernels::SPINDLE_ISA_NS
