// folding.cpp — the folding passes: constant folding, Identity / Dropout / zero-Pad
// removal, BatchNormalization and constant Mul / Add folded into the Conv
// before them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/node_info.h"
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"
#include "kernels/kernel.h"

namespace spindle::graph::passes {
namespace {

bool all_inputs_constant(const Graph& g, const Node& n) {
  for (int in : n.inputs)
    if (in >= 0 && !g.is_initializer(in)) return false;
  return true;
}

kernels::NodeInfo node_info(const Graph& g, const Node& n) {
  kernels::NodeInfo info = node_basics(n);
  for (int in : n.inputs) info.const_inputs.push_back(in >= 0 ? g.initializer(in) : nullptr);
  return info;
}

// Gives `conv` new constant weights and bias (named after it, with `tag`).
void set_conv_weights(Graph& g, Node& conv, const std::string& tag, Tensor w, Tensor b) {
  const std::string base = conv.name.empty() ? g.value_name(conv.outputs[0]) : conv.name;
  const int w_id = g.add_value(base + "/" + tag + "_W");
  const int b_id = g.add_value(base + "/" + tag + "_B");
  g.initializers[w_id] = std::move(w);
  g.initializers[b_id] = std::move(b);
  conv.inputs.resize(3);
  conv.inputs[1] = w_id;
  conv.inputs[2] = b_id;
}

// Whether constant `c` holds one value (rank <= 1) or broadcasts one value
// per output channel over a Conv output of rank `out_rank` (shape
// [M, 1, ...] or [1, M, 1, ...]), so folding it changes no output shape.
bool per_channel_or_scalar(const Tensor& c, int64_t m, int64_t out_rank) {
  if (c.numel() == 1) return c.rank() <= 1;
  if (c.numel() != m || c.rank() < out_rank - 1 || c.rank() > out_rank) return false;
  const int64_t channel_axis = c.rank() - (out_rank - 1);
  for (int64_t d = 0; d < c.rank(); ++d)
    if (d != channel_axis && c.dim(d) != 1) return false;
  return true;
}

// Whether n is a Pad whose pads are all zero (constant), which copies its
// input unchanged in every mode (PyTorch exports AvgPool2d with such a Pad).
bool is_zero_pad(const Graph& g, const Node& n) {
  if (n.op_type != "Pad" || !n.domain.empty()) return false;
  std::vector<int64_t> pads;
  if (n.opset < 11) {
    pads = n.attrs.get_ints("pads", {});
  } else {
    const Tensor* t = n.inputs.size() > 1 && n.inputs[1] >= 0 ? g.initializer(n.inputs[1]) : nullptr;
    if (!t || t->dtype() != DataType::kInt64) return false;
    pads = t->to_int64_vector();
  }
  if (pads.empty() || pads.size() % 2 != 0) return false;
  for (int64_t p : pads)
    if (p != 0) return false;
  return true;
}

// Whether n draws random numbers (a new draw each run, so it is never folded).
bool is_random(const Node& n) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "Dropout") return n.inputs.size() >= 3 && n.inputs[2] >= 0;  // training_mode given
  return n.op_type == "RandomNormal" || n.op_type == "RandomUniform" || n.op_type == "RandomNormalLike" ||
         n.op_type == "RandomUniformLike" || n.op_type == "Bernoulli" || n.op_type == "Multinomial";
}

}  // namespace

// Constant folding: nodes whose inputs are all constant run once now
// (random operators excepted).
Status fold_constants(Graph& g, PassRecord& record, const LoadLimits& limits, bool keep_quantized_weights) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    SPINDLE_RETURN_IF_ERROR(limits.check("", "folding constants"));
    const Node& n = g.nodes[i];
    if (!all_inputs_constant(g, n) || n.attrs.has_graph() || is_random(n)) continue;
    // Operators the application defines (custom ops) run only in a session.
    if (!kernels::KernelRegistry::global().find(n.domain, n.op_type, n.opset)) continue;
    if (keep_quantized_weights && n.op_type == "DequantizeLinear" && n.domain.empty() && !n.inputs.empty()) {
      const Tensor* q = g.initializer(n.inputs[0]);
      const DataType t = q ? q->dtype() : DataType::kUndefined;
      if (t == DataType::kInt8 || t == DataType::kUInt8 || t == DataType::kInt32) continue;
    }
    std::vector<Tensor> inputs;
    for (int in : n.inputs) inputs.push_back(in >= 0 ? *g.initializer(in) : Tensor());
    std::vector<Tensor> outputs;
    try {
      outputs = kernels::run_kernel_once(node_info(g, n), inputs);
    } catch (const Error& e) {
      return Status(e.code(), fmt::format("while folding constant node {}: {}", n.label(), e.status().message()));
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0 && outputs[o].defined()) g.initializers[n.outputs[o]] = std::move(outputs[o]);
    dead[i] = true;
    ++record.count;
  }
  g.compact(dead);
  return Status::ok();
}

// Identity, inference-mode Dropout and a Pad of zeros forward their input.
// One walk in topological order: each node's inputs are first pointed past
// the forwarders removed before it, so a chain of them costs its length.
void remove_identities(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<int> forward(static_cast<size_t>(g.num_values()), -1);  // a removed node's output -> what it forwarded
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    read_forwarded(g, i, forward);
    Node& n = g.nodes[i];
    const bool identity = (n.op_type == "Identity" && n.domain.empty()) || is_zero_pad(g, n);
    const bool dropout = n.op_type == "Dropout" && n.domain.empty() &&
                         (n.outputs.size() < 2 || n.outputs[1] < 0 || g.consumers(n.outputs[1], 0).empty()) &&
                         (n.outputs.size() < 2 || n.outputs[1] < 0 || !g.is_graph_output(n.outputs[1])) &&
                         (n.inputs.size() < 3 || n.inputs[2] < 0);  // training_mode input absent
    if (!identity && !dropout) continue;
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty()) continue;
    const int out = n.outputs[0];
    if (g.is_graph_output(out)) continue;  // the output name must survive
    forward[static_cast<size_t>(out)] = n.inputs[0];
    dead[i] = true;
    ++record.count;
  }
  g.compact(dead);
}

// Conv followed by BatchNormalization (all constant) becomes one Conv.
void fold_batchnorms(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    if (conv.inputs.size() < 2 || !g.is_initializer(conv.inputs[1])) continue;
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !g.is_initializer(conv.inputs[2])) continue;
    const int bn_index = single_consumer(g, conv.outputs[0]);
    if (bn_index < 0 || dead[static_cast<size_t>(bn_index)]) continue;
    Node& bn = g.nodes[static_cast<size_t>(bn_index)];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.outputs.empty()) continue;
    if (bn.outputs.size() > 1) {
      bool extra_used = false;
      for (size_t o = 1; o < bn.outputs.size(); ++o)
        if (bn.outputs[o] >= 0 && (!g.consumers(bn.outputs[o], 0).empty() || g.is_graph_output(bn.outputs[o]))) extra_used = true;
      if (extra_used) continue;
    }
    if (bn.attrs.get_int("training_mode", 0) != 0) continue;
    bool constant = true;
    for (size_t k = 1; k < 5; ++k) constant = constant && g.is_initializer(bn.inputs[k]);
    if (!constant) continue;
    const Tensor& w = *g.initializer(conv.inputs[1]);
    if (w.dtype() != DataType::kFloat32 || w.rank() < 3) continue;
    const int64_t m = w.dim(0);
    const Tensor* params[4];
    bool ok = true;
    for (int k = 0; k < 4; ++k) {
      params[k] = g.initializer(bn.inputs[static_cast<size_t>(k + 1)]);
      ok = ok && params[k]->dtype() == DataType::kFloat32 && params[k]->numel() == m;
    }
    if (!ok) continue;
    const float eps = bn.attrs.get_float("epsilon", 1e-5f);
    const float* scale = params[0]->data<float>();
    const float* shift = params[1]->data<float>();
    const float* mean = params[2]->data<float>();
    const float* var = params[3]->data<float>();
    Tensor new_w = w.clone();
    Tensor new_b(DataType::kFloat32, {m});
    const Tensor* old_b = conv.inputs.size() > 2 && conv.inputs[2] >= 0 ? g.initializer(conv.inputs[2]) : nullptr;
    if (old_b && (old_b->dtype() != DataType::kFloat32 || old_b->numel() != m)) continue;
    const int64_t per_channel = w.numel() / m;
    float* nw = new_w.mutable_data<float>();
    float* nb = new_b.mutable_data<float>();
    for (int64_t c = 0; c < m; ++c) {
      const float f = scale[c] / std::sqrt(var[c] + eps);
      for (int64_t k = 0; k < per_channel; ++k) nw[c * per_channel + k] *= f;
      const float b0 = old_b ? old_b->data<float>()[c] : 0.0f;
      nb[c] = (b0 - mean[c]) * f + shift[c];
    }
    set_conv_weights(g, conv, "bn_folded", std::move(new_w), std::move(new_b));
    conv.outputs[0] = bn.outputs[0];
    g.reindex(static_cast<int>(i));
    dead[static_cast<size_t>(bn_index)] = true;
    ++record.count;
  }
  g.compact(dead);
}

// Conv (constant weights) followed by Mul / Add with a constant that is a
// scalar or one value per output channel: y = s * conv(x) + t becomes one
// Conv with weights s * W and bias s * B + t.
void fold_conv_affine(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& conv = g.nodes[i];
    if (dead[i] || conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
    if (conv.inputs.size() < 2 || !g.is_initializer(conv.inputs[1]) || conv.attrs.has("activation")) continue;
    const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    if (has_bias && !g.is_initializer(conv.inputs[2])) continue;
    const Tensor& w = *g.initializer(conv.inputs[1]);
    if (w.dtype() != DataType::kFloat32 || w.rank() < 3) continue;
    const int64_t m = w.dim(0), per_channel = w.numel() / m;
    const Tensor* old_b = has_bias ? g.initializer(conv.inputs[2]) : nullptr;
    if (old_b && (old_b->dtype() != DataType::kFloat32 || old_b->numel() != m)) continue;
    Tensor new_w, new_b;
    for (;;) {
      const int next = single_consumer(g, conv.outputs[0]);
      if (next < 0 || dead[static_cast<size_t>(next)]) break;
      const Node& op = g.nodes[static_cast<size_t>(next)];
      const bool mul = op.op_type == "Mul", add = op.op_type == "Add";
      if ((!mul && !add) || !op.domain.empty()) break;
      const Tensor* c = constant_operand(g, op, conv.outputs[0]);
      if (!c || !per_channel_or_scalar(*c, m, w.rank())) break;
      if (!new_w.defined()) {
        new_w = w.clone();
        new_b = Tensor(DataType::kFloat32, {m});
        for (int64_t k = 0; k < m; ++k) new_b.mutable_data<float>()[k] = old_b ? old_b->data<float>()[k] : 0.0f;
      }
      float* nw = new_w.mutable_data<float>();
      float* nb = new_b.mutable_data<float>();
      for (int64_t k = 0; k < m; ++k) {
        const float v = c->data<float>()[c->numel() == 1 ? 0 : k];
        if (mul) {
          for (int64_t j = 0; j < per_channel; ++j) nw[k * per_channel + j] *= v;
          nb[k] *= v;
        } else {
          nb[k] += v;
        }
      }
      conv.outputs[0] = op.outputs[0];
      g.reindex(static_cast<int>(i));
      dead[static_cast<size_t>(next)] = true;
      ++record.count;
    }
    if (new_w.defined()) {
      set_conv_weights(g, conv, "affine_folded", std::move(new_w), std::move(new_b));
      g.reindex(static_cast<int>(i));
    }
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
