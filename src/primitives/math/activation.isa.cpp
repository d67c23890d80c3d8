// activation.isa.cpp — Activation::apply's loops (kernels/math/activation.h),
// compiled once per ISA level (src/primitives/isa/dispatch.h). Each case is a
// plain loop the compiler vectorizes at the level's width.
#include "primitives/math/activation.h"
#include "primitives/math/gelu.h"
#include "primitives/math/vec_exp.h"
#include "primitives/math/vec_math.h"

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
inline float silu(float x) { return vm::div_one_plus_exp(x, 0.0f - x); }

#if defined(SPINDLE_VEC_EXP_AVX2)
// silu() over V (__m256 or vm::Lanes<N>) with intrinsics: the compiler,
// left to vectorize silu(), turns the clamp into a second division by the
// clamped constant.
template <class V>
__attribute__((always_inline)) inline V silu_v(V x) {
  return vm::div_one_plus_exp_v(x, vm::l_sub(vm::l_set1<V>(0.0f), x));
}
#endif

void silu_loop(float* d, int64_t n) {
#if defined(SPINDLE_VEC_EXP_AVX2)
  vm::map_lanes<8>(d, d, n, [](auto v) __attribute__((always_inline)) { return silu_v(v); }, [](float v) { return silu(v); });
#else
  vm::map_lanes<8>(d, d, n, 0, [](float v) { return silu(v); });
#endif
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
    // HardSigmoid and HardSwish: x * alpha + beta as one fused multiply-add
    // where the level has one, as the SGEMM's store computes them (StoreAct).
    case Activation::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) {
        float v = vm::fma_or_mul_add(d[i], av, bv);
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
        float v = vm::fma_or_mul_add(x, 1.0f / 6.0f, 0.5f);
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
    case Activation::kGeluTanh:
      gelu_tanh_loop(d, d, n);
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
