// activation.h — a fused elementwise activation, applied in place by the
// Conv / ConvTranspose / Gemm / MatMul kernels and the GEMM and convolution
// primitives to their output blocks. The node attributes that name one are
// read by kernels/math/activation.h (activation_from_attrs).
//
// The optimizer fuses "X -> Conv -> Relu" into a Conv node carrying the
// attributes
//   activation        string: "Relu", "LeakyRelu", "Clip", "HardSigmoid",
//                     "Sigmoid", "HardSwish", "Tanh", "Silu" (x * sigmoid(x),
//                     an exported SiLU / Swish), "Gelu" (the exact, erf
//                     form), "GeluTanh" (its tanh approximation; absent =
//                     no activation)
//   activation_params floats: LeakyRelu {alpha}, Clip {min, max},
//                     HardSigmoid {alpha, beta}; missing entries take the
//                     ONNX defaults (alpha 0.01; -inf, +inf; 0.2, 0.5).
//   activation_affine floats {scale, shift}: then y = scale * act(x) + shift
//                     (a scalar Mul / Add that followed the activation).
// apply() runs activation.isa.cpp's loops, compiled per ISA level; each case
// is a plain loop the compiler vectorizes; Sigmoid and Tanh use the
// polynomial versions of vec_math.h (within 1e-6 relative of std::); Silu
// is x * fast_sigmoid(x), the product the unfused Sigmoid -> Mul computes;
// Gelu and GeluTanh are the Gelu op's own loops (gelu.h), so the same bits.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

struct Activation {
  enum Kind { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid, kSigmoid, kHardSwish, kTanh, kSilu, kGelu, kGeluTanh };
  Kind kind = kNone;
  float a = 0.0f, b = 0.0f;
  bool affine = false;
  float scale = 1.0f, shift = 0.0f;

  bool is_none() const { return kind == kNone && !affine; }

  // In place over data[0, n), at the active ISA level (activation.isa.cpp).
  inline void apply(float* data, int64_t n) const;
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, apply_activation, (const spindle::kernels::Activation& act, float* data, int64_t n));
// y[i] = act(x[i] * a + b) for i < n, in chunks that stay in L1 (x may be y).
SPINDLE_ISA_DECLARE(void, affine_activation,
                    (const spindle::kernels::Activation& act, const float* x, float a, float b, float* y, int64_t n));

namespace spindle::kernels {

inline void Activation::apply(float* data, int64_t n) const {
  static const auto fn = SPINDLE_ISA_SELECT(apply_activation);
  fn(*this, data, n);
}

}  // namespace spindle::kernels
