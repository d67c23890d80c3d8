// activation_fusion.cpp — activations into the node before them: HardSwish
// written out as x * Clip(x + 3, 0, 6) / 6, exported SiLU, and
// Conv/ConvTranspose/Gemm/MatMul/BatchNormalization and com.microsoft
// DynamicQuantizeMatMul / MatMulIntegerToFloat + activation (+ a scalar Mul /
// Add after it), applied by the kernel to each output block.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

// The activation a node computes, as (name, params), if it can be fused.
bool fusable_activation(const Graph& g, const Node& n, std::string& kind, std::vector<float>& params) {
  if (n.outputs.size() != 1) return false;
  // GELU: fuse_gelu's com.microsoft Gelu and ONNX's Gelu (opset 20), exact
  // or (fuse_gelu_tanh's) with the tanh approximation.
  if (n.op_type == "Gelu" && n.inputs.size() == 1 && (n.domain == "com.microsoft" || n.domain.empty())) {
    const std::string approx = n.domain.empty() ? n.attrs.get_string("approximate", "none") : "none";
    if (approx != "none" && approx != "tanh") return false;
    kind = approx == "tanh" ? "GeluTanh" : "Gelu";
    params = {};
    return true;
  }
  if (!n.domain.empty()) return false;
  if (n.op_type == "Relu" || n.op_type == "Sigmoid" || n.op_type == "Tanh" || n.op_type == "HardSwish") {
    kind = n.op_type;
    params = {};
    return true;
  }
  if (n.op_type == "LeakyRelu") {
    kind = n.op_type;
    params = {n.attrs.get_float("alpha", 0.01f)};
    return true;
  }
  if (n.op_type == "HardSigmoid") {
    kind = n.op_type;
    params = {n.attrs.get_float("alpha", 0.2f), n.attrs.get_float("beta", 0.5f)};
    return true;
  }
  if (n.op_type == "Clip") {
    float lo = -INFINITY, hi = INFINITY;
    if (n.opset < 11) {
      lo = n.attrs.get_float("min", lo);
      hi = n.attrs.get_float("max", hi);
    } else {
      for (size_t k = 1; k < n.inputs.size() && k < 3; ++k) {
        if (n.inputs[k] < 0) continue;
        const Tensor* t = g.initializer(n.inputs[k]);
        if (!t || t->dtype() != DataType::kFloat32 || t->numel() != 1) return false;
        (k == 1 ? lo : hi) = t->data<float>()[0];
      }
    }
    kind = "Clip";
    params = {lo, hi};
    return true;
  }
  return false;
}

// SiLU as exporters write it: x read by exactly a Sigmoid and a Mul(x,
// Sigmoid(x)), the Sigmoid's output read only by that Mul. Returns the Mul's
// index and sets `sigmoid` to the Sigmoid's, or -1.
int silu_mul(const Graph& g, int x, const std::vector<bool>& dead, int& sigmoid) {
  if (g.is_graph_output(x)) return -1;
  const auto users = g.consumers(x, 2);
  if (users.size() != 2) return -1;
  for (int k = 0; k < 2; ++k) {
    const int s = users[static_cast<size_t>(k)], m = users[static_cast<size_t>(1 - k)];
    if (dead[static_cast<size_t>(s)] || dead[static_cast<size_t>(m)]) continue;
    const Node& sig = g.nodes[static_cast<size_t>(s)];
    const Node& mul = g.nodes[static_cast<size_t>(m)];
    if (sig.op_type != "Sigmoid" || !sig.domain.empty() || sig.outputs.size() != 1) continue;
    if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.outputs.size() != 1) continue;
    const int so = sig.outputs[0];
    if (!((mul.inputs[0] == x && mul.inputs[1] == so) || (mul.inputs[1] == x && mul.inputs[0] == so))) continue;
    if (single_consumer(g, so) != m) continue;
    sigmoid = s;
    return m;
  }
  return -1;
}

}  // namespace

// HardSwish written out as x * Clip(x + 3, 0, 6) / 6 (as exporters emit it)
// becomes one HardSwish node.
void fuse_hardswish(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  auto is = [&](int index, const char* op) {
    return index >= 0 && !dead[static_cast<size_t>(index)] && g.nodes[static_cast<size_t>(index)].op_type == op &&
           g.nodes[static_cast<size_t>(index)].domain.empty();
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (dead[i] || add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2) continue;
    const int x = g.is_initializer(add.inputs[1]) ? add.inputs[0] : add.inputs[1];
    const Tensor* three = constant_operand(g, add, x);
    if (!three || three->numel() != 1 || three->rank() > 1 || three->data<float>()[0] != 3.0f) continue;
    const int clip_i = single_consumer(g, add.outputs[0]);
    if (!is(clip_i, "Clip")) continue;
    const Node& clip = g.nodes[static_cast<size_t>(clip_i)];
    if (clip.outputs.size() != 1 || clip.inputs.empty() || clip.inputs[0] != add.outputs[0]) continue;
    const float lo = clip.opset < 11 ? clip.attrs.get_float("min", -INFINITY)
                                     : (clip.inputs.size() > 1 ? single_value(g, clip.inputs[1]) : NAN);
    const float hi = clip.opset < 11 ? clip.attrs.get_float("max", INFINITY)
                                     : (clip.inputs.size() > 2 ? single_value(g, clip.inputs[2]) : NAN);
    if (lo != 0.0f || hi != 6.0f) continue;
    const int mul_i = single_consumer(g, clip.outputs[0]);
    if (!is(mul_i, "Mul")) continue;
    const Node& mul = g.nodes[static_cast<size_t>(mul_i)];
    if (mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
        !((mul.inputs[0] == x && mul.inputs[1] == clip.outputs[0]) ||
          (mul.inputs[1] == x && mul.inputs[0] == clip.outputs[0])))
      continue;
    const int div_i = single_consumer(g, mul.outputs[0]);
    if (!is(div_i, "Div")) continue;
    Node& div = g.nodes[static_cast<size_t>(div_i)];
    if (div.inputs.size() != 2 || div.inputs[0] != mul.outputs[0] || single_value(g, div.inputs[1]) != 6.0f) continue;
    // Add, Clip and Mul go; the Div node becomes HardSwish(x), keeping its output.
    div.op_type = "HardSwish";
    div.opset = 14;
    div.attrs = Attributes();
    div.inputs = {x};
    g.reindex(div_i);
    dead[i] = dead[static_cast<size_t>(clip_i)] = dead[static_cast<size_t>(mul_i)] = true;
    ++record.count;
  }
  g.compact(dead);
}

void fuse_activations(Graph& g, PassRecord& record) {
  int affines = 0;  // scalar Mul / Add folded after an activation
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& p = g.nodes[i];
    if (dead[i] || p.outputs.size() != 1 || p.attrs.has("activation")) continue;
    // com.microsoft's dequantizing int8 products (DynamicQuantizeMatMulFusion's) take one too.
    const bool dequantized = p.domain == "com.microsoft" &&
                             (p.op_type == "DynamicQuantizeMatMul" || p.op_type == "MatMulIntegerToFloat");
    if (!dequantized && (!p.domain.empty() || (p.op_type != "Conv" && p.op_type != "ConvTranspose" &&
                                                 p.op_type != "Gemm" && p.op_type != "MatMul" &&
                                                 p.op_type != "BatchNormalization")))
      continue;
    if (p.op_type == "BatchNormalization" && p.attrs.get_int("training_mode", 0) != 0) continue;
    std::string kind;
    std::vector<float> params;
    int sig_index = -1;
    const int silu_index = silu_mul(g, p.outputs[0], dead, sig_index);
    if (silu_index >= 0) {
      kind = "Silu";
      p.outputs[0] = g.nodes[static_cast<size_t>(silu_index)].outputs[0];
      dead[static_cast<size_t>(sig_index)] = dead[static_cast<size_t>(silu_index)] = true;
    } else {
      const int a_index = single_consumer(g, p.outputs[0]);
      if (a_index < 0 || dead[static_cast<size_t>(a_index)]) continue;
      const Node& act = g.nodes[static_cast<size_t>(a_index)];
      if (!fusable_activation(g, act, kind, params)) continue;
      p.outputs[0] = act.outputs[0];
      dead[static_cast<size_t>(a_index)] = true;
    }
    g.reindex(static_cast<int>(i));
    p.attrs.set("activation", kind);
    p.attrs.set("activation_params", params);
    ++record.count;
    // A scalar Mul and / or Add after the activation: y = s * act(.) + t.
    float scale = 1.0f, shift = 0.0f;
    bool affine = false;
    for (bool want_mul : {true, false}) {
      const int next = single_consumer(g, p.outputs[0]);
      if (next < 0 || dead[static_cast<size_t>(next)]) break;
      const Node& op = g.nodes[static_cast<size_t>(next)];
      if (op.op_type != (want_mul ? "Mul" : "Add") || !op.domain.empty()) continue;
      const Tensor* c = constant_operand(g, op, p.outputs[0]);
      // (A [1] constant would turn MatMul's rank-0 vector product into rank 1.)
      if (!c || c->numel() != 1 || c->rank() > (p.op_type == "MatMul" || dequantized ? 0 : 1)) continue;
      (want_mul ? scale : shift) = c->data<float>()[0];
      p.outputs[0] = op.outputs[0];
      g.reindex(static_cast<int>(i));
      dead[static_cast<size_t>(next)] = true;
      affine = true;
      ++affines;
    }
    if (affine) p.attrs.set("activation_affine", std::vector<float>{scale, shift});
  }
  if (affines) record.detail = fmt::format("{} scalar Mul / Add folded after", affines);
  g.compact(dead);
}

}  // namespace spindle::graph::passes
