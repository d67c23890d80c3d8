// vec_math.h — scalar float functions written so that a plain loop calling
// them auto-vectorizes (no calls, no data-dependent branches, no float->int
// conversions of possibly-NaN values).
//
// Accuracy (MathVecMath.PolynomialsWithin1e6OfStd sweeps every 97th float
// bit pattern against double-precision std:: references):
//   fast_exp      Cephes expf polynomial after Cody-Waite range reduction;
//                 ~1.2e-7 relative over the whole float range. The scale 2^n
//                 is applied in two halves so denormal results are right too;
//                 overflow gives +inf, underflow 0, NaN stays NaN.
//   fast_sigmoid  e = exp(-|x|); x >= 0 ? 1/(1+e) : e/(1+e) (no cancellation
//                 for negative x); ~2.4e-7 relative.
//   fast_tanh     |x| < 0.625: Cephes tanhf odd polynomial; otherwise
//                 1 - 2/(exp(2|x|)+1) with the sign restored; ~2.2e-7.
//   fast_erf      |x| < 0.921875: the Maclaurin series to x^19 (truncation
//                 < 3e-9 there); otherwise 1 - erfc(|x|) with erfc from the
//                 Numerical Recipes erfcc fit t*exp(-x^2 + P(t)),
//                 t = 1/(1+|x|/2) (fractional error < 1.2e-7); ~2.4e-7.
// All stay within 1e-6 relative of the std:: functions.
//
// The functions live in the namespace of the ISA level the translation unit
// is compiled for (spindle::kernels::<level>::vm; `baseline` outside the
// *.isa.cpp files) and call no std:: template, so a copy the compiler does
// not inline stays private to its level (src/primitives/isa/dispatch.h).
// spindle::kernels::vm names this translation unit's level. The libm
// overloads below (f_log, f_sin, ...) call the C functions for the same
// reason: std::log(float) is an inline function shared by every object.
#pragma once

#include <math.h>  // the C functions only: see above

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels::SPINDLE_ISA_NS::vm {

// name(float) calls f32, name(double) calls f64.
#define SPINDLE_VM_TYPED(name, f32, f64)             \
  inline float name(float x) { return f32(x); }     \
  inline double name(double x) { return f64(x); }
SPINDLE_VM_TYPED(f_abs, __builtin_fabsf, __builtin_fabs)
SPINDLE_VM_TYPED(f_sqrt, __builtin_sqrtf, __builtin_sqrt)
SPINDLE_VM_TYPED(f_nearbyint, __builtin_nearbyintf, __builtin_nearbyint)
#define SPINDLE_VM_LIBM(name) SPINDLE_VM_TYPED(f_##name, ::name##f, ::name)
SPINDLE_VM_LIBM(log)
SPINDLE_VM_LIBM(log1p)
SPINDLE_VM_LIBM(exp)
SPINDLE_VM_LIBM(sin)
SPINDLE_VM_LIBM(cos)
SPINDLE_VM_LIBM(tan)
SPINDLE_VM_LIBM(asin)
SPINDLE_VM_LIBM(acos)
SPINDLE_VM_LIBM(atan)
SPINDLE_VM_LIBM(sinh)
SPINDLE_VM_LIBM(cosh)
SPINDLE_VM_LIBM(asinh)
SPINDLE_VM_LIBM(acosh)
SPINDLE_VM_LIBM(atanh)
SPINDLE_VM_LIBM(tanh)
SPINDLE_VM_LIBM(erf)
#undef SPINDLE_VM_LIBM

// exp(x) for float, vectorizable.
inline float fast_exp(float x) {
  // Clamp: exp(89) overflows to inf through the two-step scale, exp(-104)
  // underflows to 0. NaN passes both comparisons unchanged.
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: round-to-nearest trick
  const float t = x * kLog2e + kMagic;
  const float n = t - kMagic;
  const int32_t ni = static_cast<int32_t>(__builtin_bit_cast(uint32_t, t) - __builtin_bit_cast(uint32_t, kMagic));
  // Cody-Waite: r = x - n*ln2 in two parts.
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n as 2^n1 * 2^n2 so that n in [-150, 129] stays representable.
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const float s1 = __builtin_bit_cast(float, static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = __builtin_bit_cast(float, static_cast<uint32_t>(n2 + 127) << 23);
  return p * s1 * s2;
}

inline float fast_sigmoid(float x) {
  const float e = fast_exp(-f_abs(x));
  const float s = 1.0f / (1.0f + e);
  return x >= 0.0f ? s : e * s;
}

inline float fast_tanh(float x) {
  const float ax = f_abs(x);
  // Small |x|: odd polynomial (Cephes tanhf).
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  // Large |x|: 1 - 2 / (exp(2|x|) + 1); exp overflow to inf gives exactly 1.
  const float e = fast_exp(2.0f * ax);
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0.0f ? -big : big;
  return ax < 0.625f ? small : big;
}

// erf(x): |x| < 0.921875: x * P(x^2), the Maclaurin series to x^19;
// otherwise sign(x) * (1 - erfc(|x|)) with erfc = t * exp(-x^2 + Q(t)),
// t = 1 / (1 + |x|/2) (Numerical Recipes' erfcc Chebyshev fit). Both branches
// are computed and selected, which keeps the loop branch-free.
inline float fast_erf(float x) {
  const float ax = f_abs(x);
  // Series: erf(x) = 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)).
  const float z = x * x;
  float s = -1.0f / (9.0f * 362880.0f * 19.0f);              // n=9
  s = s * z + 1.0f / (40320.0f * 17.0f);                      // n=8
  s = s * z - 1.0f / (5040.0f * 15.0f);                       // n=7
  s = s * z + 1.0f / (720.0f * 13.0f);                        // n=6
  s = s * z - 1.0f / (120.0f * 11.0f);                        // n=5
  s = s * z + 1.0f / (24.0f * 9.0f);                          // n=4
  s = s * z - 1.0f / (6.0f * 7.0f);                           // n=3
  s = s * z + 1.0f / (2.0f * 5.0f);                           // n=2
  s = s * z - 1.0f / 3.0f;                                    // n=1
  s = s * z + 1.0f;                                           // n=0
  const float small = x * (s * 1.12837916709551257f);
  // Large: Numerical Recipes erfcc (fractional error < 1.2e-7 everywhere).
  const float t = 1.0f / (1.0f + 0.5f * ax);
  float q = 0.17087277f;
  q = q * t - 0.82215223f;
  q = q * t + 1.48851587f;
  q = q * t - 1.13520398f;
  q = q * t + 0.27886807f;
  q = q * t - 0.18628806f;
  q = q * t + 0.09678418f;
  q = q * t + 0.37409196f;
  q = q * t + 1.00002368f;
  q = q * t - 1.26551223f;
  const float erfc = t * fast_exp(-z + q);
  float big = 1.0f - erfc;
  big = x < 0.0f ? -big : big;
  return ax < 0.921875f ? small : big;
}

// Element type overloads for kernels templated on float / double: the
// polynomials above for float32, libm for float64.
SPINDLE_VM_TYPED(t_exp, fast_exp, f_exp)
SPINDLE_VM_TYPED(t_tanh, fast_tanh, f_tanh)
SPINDLE_VM_TYPED(t_erf, fast_erf, f_erf)
inline float t_sigmoid(float x) { return fast_sigmoid(x); }
inline double t_sigmoid(double x) { return x >= 0 ? 1 / (1 + f_exp(-x)) : f_exp(x) / (1 + f_exp(x)); }
#undef SPINDLE_VM_TYPED

}  // namespace spindle::kernels::SPINDLE_ISA_NS::vm

namespace spindle::kernels {
namespace vm = SPINDLE_ISA_NS::vm;
}  // namespace spindle::kernels
