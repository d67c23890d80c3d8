// activation.isa.cpp — Activation::apply's loops (kernels/math/activation.h),
// compiled once per ISA level (src/kernels/isa/dispatch.h). Each case is a
// plain loop the compiler vectorizes at the level's width.
#include "kernels/math/activation.h"
#include "kernels/math/gelu.h"
#include "kernels/math/vec_exp.h"
#include "kernels/math/vec_math.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

// x * sigmoid(x) = x / (1 + exp(-x)), about a third of the instructions of
// x * fast_sigmoid(x): exp(-x) with -x clamped to [-87.3, 88.3], where 2^n
// is one normal float (no two-step scale, no denormals), and no branch on
// the sign (1 / (1 + e) has no cancellation for either sign). For x > 87.3
// the result is x; for x < -88.3 the denominator is +inf, so the result is
// -0 (the true value is below 1e-36) and -inf gives NaN, as x * sigmoid(x)
// does. NaN stays NaN.
// Relative error ~3e-7 (vec_exp.h). The scalar form (tails, the baseline
// level) does the vector form's operations one for one, so an element's bits
// do not depend on whether it falls in a vector.
inline float silu(float x) {
  const float t0 = 0.0f - x;
  float t = t0 < 88.3f ? t0 : 88.3f;
  t = t > -87.3f ? t : -87.3f;
  const float den = t0 > 88.3f ? __builtin_inff() : 1.0f + vm::exp_normal(t);
  return x / den;
}

#if defined(SPINDLE_VEC_EXP_AVX2)
// silu() on 8 lanes with intrinsics: the compiler, left to vectorize silu(),
// turns the clamp into a second division by the clamped constant.
inline __m256 silu8(__m256 x) {
  const __m256 t0 = _mm256_sub_ps(_mm256_setzero_ps(), x);
  const __m256 t = _mm256_max_ps(_mm256_min_ps(t0, _mm256_set1_ps(88.3f)), _mm256_set1_ps(-87.3f));
  const __m256 big = _mm256_cmp_ps(t0, _mm256_set1_ps(88.3f), _CMP_GT_OQ);
  const __m256 den = _mm256_blendv_ps(_mm256_add_ps(_mm256_set1_ps(1.0f), vm::exp_normal8(t)),
                                      _mm256_set1_ps(__builtin_inff()), big);
  return _mm256_div_ps(x, den);
}
#endif

void silu_loop(float* d, int64_t n) {
  int64_t i = 0;
#if defined(SPINDLE_VEC_EXP_AVX2)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, silu8(_mm256_loadu_ps(d + i)));
#endif
  for (; i < n; ++i) d[i] = silu(d[i]);
}

void apply_kind(const Activation& act, float* __restrict d, int64_t n) {
  const float av = act.a, bv = act.b;
  switch (act.kind) {
    case Activation::kNone:
      return;
    case Activation::kRelu:
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] < 0.0f ? 0.0f : d[i];  // NaN stays NaN, as in ONNX Runtime
      return;
    case Activation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] < 0.0f ? av * d[i] : d[i];
      return;
    case Activation::kClip:
      for (int64_t i = 0; i < n; ++i) {
        float v = d[i];
        v = v < av ? av : v;
        d[i] = v > bv ? bv : v;
      }
      return;
    case Activation::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) {
        float v = av * d[i] + bv;
        v = v < 0.0f ? 0.0f : v;
        d[i] = v > 1.0f ? 1.0f : v;
      }
      return;
    case Activation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) d[i] = vm::fast_sigmoid(d[i]);
      return;
    case Activation::kHardSwish:
      for (int64_t i = 0; i < n; ++i) {
        const float x = d[i];
        float v = x * (1.0f / 6.0f) + 0.5f;
        v = v < 0.0f ? 0.0f : v;
        v = v > 1.0f ? 1.0f : v;
        d[i] = x * v;
      }
      return;
    case Activation::kTanh:
      for (int64_t i = 0; i < n; ++i) d[i] = vm::fast_tanh(d[i]);
      return;
    case Activation::kSilu:
      silu_loop(d, n);
      return;
    case Activation::kGelu:
      gelu_loop(d, d, n);
      return;
  }
}

}  // namespace

void apply_activation(const Activation& act, float* data, int64_t n) {
  apply_kind(act, data, n);
  if (!act.affine) return;
  const float s = act.scale, t = act.shift;
  float* __restrict d = data;
  for (int64_t i = 0; i < n; ++i) d[i] = s * d[i] + t;
}

void affine_activation(const Activation& act, const float* x, float a, float b, float* y, int64_t n) {
  constexpr int64_t kChunk = 1024;  // 4 KiB: the chunk is still in L1 for the activation
  for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
    const int64_t len = n - i0 < kChunk ? n - i0 : kChunk;
    const float* __restrict xs = x + i0;
    float* __restrict ys = y + i0;
    for (int64_t i = 0; i < len; ++i) ys[i] = xs[i] * a + b;
    apply_activation(act, ys, len);
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
