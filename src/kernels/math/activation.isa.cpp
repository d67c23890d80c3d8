// activation.isa.cpp — Activation::apply's loops (kernels/math/activation.h),
// compiled once per ISA level (src/kernels/isa/dispatch.h). Each case is a
// plain loop the compiler vectorizes at the level's width.
#include "kernels/math/activation.h"
#include "kernels/math/vec_math.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

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
      for (int64_t i = 0; i < n; ++i) d[i] = d[i] * vm::fast_sigmoid(d[i]);
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
