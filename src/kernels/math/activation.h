// activation.h — a fused elementwise activation, applied in place by the
// Conv / ConvTranspose / Gemm / MatMul kernels to their output blocks.
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

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "kernels/isa/dispatch.h"

namespace spindle::kernels {

struct Activation {
  enum Kind { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid, kSigmoid, kHardSwish, kTanh, kSilu, kGelu, kGeluTanh };
  Kind kind = kNone;
  float a = 0.0f, b = 0.0f;
  bool affine = false;
  float scale = 1.0f, shift = 0.0f;

  static Activation from_attrs(const NodeInfo& node) {
    Activation act;
    const std::vector<float> post = node.attrs.get_floats("activation_affine", {});
    if (!post.empty()) {
      if (post.size() != 2) fail(node, fmt::format("attribute activation_affine has {} values, expected 2 (scale, shift)", post.size()));
      act.affine = true;
      act.scale = post[0];
      act.shift = post[1];
    }
    const std::string k = node.attrs.get_string("activation", "");
    if (k.empty() || k == "None" || k == "Identity") return act;
    const std::vector<float> p = node.attrs.get_floats("activation_params", {});
    auto param = [&](size_t i, float def) { return i < p.size() ? p[i] : def; };
    if (k == "Relu") {
      act.kind = kRelu;
    } else if (k == "LeakyRelu") {
      act.kind = kLeakyRelu;
      act.a = param(0, 0.01f);
    } else if (k == "Clip") {
      act.kind = kClip;
      act.a = param(0, -INFINITY);
      act.b = param(1, INFINITY);
    } else if (k == "HardSigmoid") {
      act.kind = kHardSigmoid;
      act.a = param(0, 0.2f);
      act.b = param(1, 0.5f);
    } else if (k == "Sigmoid") {
      act.kind = kSigmoid;
    } else if (k == "HardSwish") {
      act.kind = kHardSwish;
    } else if (k == "Tanh") {
      act.kind = kTanh;
    } else if (k == "Silu") {
      act.kind = kSilu;
    } else if (k == "Gelu") {
      act.kind = kGelu;
    } else if (k == "GeluTanh") {
      act.kind = kGeluTanh;
    } else {
      fail_unsupported(node, fmt::format("fused activation '{}' is not supported", k));
    }
    return act;
  }

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
