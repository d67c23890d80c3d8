// activation.h — a fused elementwise activation, applied in place by the
// Conv / ConvTranspose / Gemm / MatMul kernels to their output blocks.
//
// The optimizer fuses "X -> Conv -> Relu" into a Conv node carrying the
// attributes
//   activation        string: "Relu", "LeakyRelu", "Clip", "HardSigmoid",
//                     "Sigmoid", "HardSwish", "Tanh" (absent = no activation)
//   activation_params floats: LeakyRelu {alpha}, Clip {min, max},
//                     HardSigmoid {alpha, beta}; missing entries take the
//                     ONNX defaults (alpha 0.01; -inf, +inf; 0.2, 0.5).
//   activation_affine floats {scale, shift}: then y = scale * act(x) + shift
//                     (a scalar Mul / Add that followed the activation).
// apply() is header-only and each case is a plain loop the compiler
// vectorizes; Sigmoid and Tanh use the polynomial versions of vec_math.h
// (within 1e-6 relative of std::).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "kernels/math/vec_math.h"

namespace spindle::kernels {

struct Activation {
  enum Kind { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid, kSigmoid, kHardSwish, kTanh };
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
    } else {
      fail_unsupported(node, fmt::format("fused activation '{}' is not supported", k));
    }
    return act;
  }

  bool is_none() const { return kind == kNone && !affine; }

  // In place over data[0, n).
  inline void apply(float* __restrict data, int64_t n) const {
    apply_kind(data, n);
    if (!affine) return;
    const float s = scale, t = shift;
    for (int64_t i = 0; i < n; ++i) data[i] = s * data[i] + t;
  }

 private:
  inline void apply_kind(float* __restrict data, int64_t n) const {
    float* __restrict d = data;
    const float av = a, bv = b;
    switch (kind) {
      case kNone:
        return;
      case kRelu:
        for (int64_t i = 0; i < n; ++i) d[i] = d[i] < 0.0f ? 0.0f : d[i];  // NaN stays NaN, as in ONNX Runtime
        return;
      case kLeakyRelu:
        for (int64_t i = 0; i < n; ++i) d[i] = d[i] < 0.0f ? av * d[i] : d[i];
        return;
      case kClip:
        for (int64_t i = 0; i < n; ++i) {
          float v = d[i];
          v = v < av ? av : v;
          d[i] = v > bv ? bv : v;
        }
        return;
      case kHardSigmoid:
        for (int64_t i = 0; i < n; ++i) {
          float v = av * d[i] + bv;
          v = v < 0.0f ? 0.0f : v;
          d[i] = v > 1.0f ? 1.0f : v;
        }
        return;
      case kSigmoid:
        for (int64_t i = 0; i < n; ++i) d[i] = vm::fast_sigmoid(d[i]);
        return;
      case kHardSwish:
        for (int64_t i = 0; i < n; ++i) {
          const float x = d[i];
          float v = x * (1.0f / 6.0f) + 0.5f;
          v = v < 0.0f ? 0.0f : v;
          v = v > 1.0f ? 1.0f : v;
          d[i] = x * v;
        }
        return;
      case kTanh:
        for (int64_t i = 0; i < n; ++i) d[i] = vm::fast_tanh(d[i]);
        return;
    }
  }
};

}  // namespace spindle::kernels
