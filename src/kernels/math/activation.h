// activation.h (math) — the fused activation of a node's attributes
// (activation, activation_params, activation_affine; the optimizer's fusions
// write them): activation_from_attrs. The Activation itself and its loops
// are a primitive (primitives/math/activation.h).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "primitives/math/activation.h"

namespace spindle::kernels {

// Throws naming the node when the activation is unknown or its parameters
// do not fit.
inline Activation activation_from_attrs(const NodeInfo& node) {
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
    act.kind = Activation::kRelu;
  } else if (k == "LeakyRelu") {
    act.kind = Activation::kLeakyRelu;
    act.a = param(0, 0.01f);
  } else if (k == "Clip") {
    act.kind = Activation::kClip;
    act.a = param(0, -INFINITY);
    act.b = param(1, INFINITY);
  } else if (k == "HardSigmoid") {
    act.kind = Activation::kHardSigmoid;
    act.a = param(0, 0.2f);
    act.b = param(1, 0.5f);
  } else if (k == "Sigmoid") {
    act.kind = Activation::kSigmoid;
  } else if (k == "HardSwish") {
    act.kind = Activation::kHardSwish;
  } else if (k == "Tanh") {
    act.kind = Activation::kTanh;
  } else if (k == "Silu") {
    act.kind = Activation::kSilu;
  } else if (k == "Gelu") {
    act.kind = Activation::kGelu;
  } else if (k == "GeluTanh") {
    act.kind = Activation::kGeluTanh;
  } else {
    fail_unsupported(node, fmt::format("fused activation '{}' is not supported", k));
  }
  return act;
}

}  // namespace spindle::kernels
