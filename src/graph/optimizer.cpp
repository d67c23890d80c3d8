// optimizer.cpp — graph rewrites by level (see graph.h):
//   basic:    constant folding, Identity/Dropout removal
//   extended: + Conv+BatchNormalization folding, Conv followed by a constant
//             Mul / Add (scalar or per output channel) folded into its
//             weights and bias, Add(x,3)->Clip(0,6)->Mul(x,.)->Div(6) as one
//             HardSwish, Conv/ConvTranspose/Gemm/MatMul + activation fusion
//             and a scalar Mul / Add after it (the kernel applies them to
//             each output block while it is still in cache), exported SiLU
//             (x * Sigmoid(x)) as the fused activation "Silu", a residual
//             Add into the Conv producing one of its inputs, an activation
//             after an inference BatchNormalization into it; exported
//             GELU (x * 0.5 * (1 + Erf(x / sqrt 2)), and its tanh
//             approximation in any arrangement) as one Gelu and exported
//             layer normalization (ReduceMean, Sub, Pow, ReduceMean, Add,
//             Sqrt, Div, Mul, Add over the last axis) as one
//             LayerNormalization, each a single pass over the data;
//             MatMul by constant weights + Add of a constant bias vector as
//             one MatMul with a bias input (added to each output block);
//             scaled dot-product attention (MatMul, scale, mask Add,
//             Softmax, MatMul, and the head Transposes around them) as one
//             spindle.FusedAttention working block by block;
//             a Mul read only by a Conv (squeeze-excite scaling) into it
//   all:      + chains of 1x1 and depthwise Convs in the blocked channel
//             layout NCHW8c, converted at the chains' ends
//             (blocked_layout.cpp); weight pre-packing happens in the kernels
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "graph/graph.h"
#include "kernels/kernel.h"

namespace spindle::graph {
namespace {

bool all_inputs_constant(const Graph& g, const Node& n) {
  for (int in : n.inputs)
    if (in >= 0 && !g.is_initializer(in)) return false;
  return true;
}

kernels::NodeInfo node_info(const Graph& g, const Node& n) {
  kernels::NodeInfo info;
  info.op_type = n.op_type;
  info.domain = n.domain;
  info.opset = n.opset;
  info.name = n.name;
  info.attrs = n.attrs;
  info.num_inputs = static_cast<int>(n.inputs.size());
  info.num_outputs = static_cast<int>(n.outputs.size());
  for (int in : n.inputs) info.const_inputs.push_back(in >= 0 ? g.initializer(in) : nullptr);
  return info;
}

// Constant folding: nodes whose inputs are all constant run once now.
Status fold_constants(Graph& g, OptimizerStats& stats, const LoadLimits& limits) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    SPINDLE_RETURN_IF_ERROR(limits.check("", "folding constants"));
    const Node& n = g.nodes[i];
    if (!all_inputs_constant(g, n) || n.attrs.has_graph()) continue;
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
    ++stats.folded_constants;
  }
  g.compact(dead);
  return Status::ok();
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

// Identity, inference-mode Dropout and a Pad of zeros forward their input.
// One walk in topological order: each node's inputs are first pointed past
// the forwarders removed before it, so a chain of them costs its length.
void remove_identities(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<int> forward(static_cast<size_t>(g.num_values()), -1);  // a removed node's output -> what it forwarded
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    bool rewired = false;
    for (int& in : n.inputs)
      if (in >= 0 && forward[static_cast<size_t>(in)] >= 0) {
        in = forward[static_cast<size_t>(in)];
        rewired = true;
      }
    if (rewired) g.reindex(static_cast<int>(i));
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
    ++stats.removed_identities;
  }
  g.compact(dead);
}

int single_consumer(const Graph& g, int value) {
  if (g.is_graph_output(value)) return -1;
  auto users = g.consumers(value, 1);
  return users.size() == 1 ? users[0] : -1;
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

// Conv followed by BatchNormalization (all constant) becomes one Conv.
void fold_batchnorms(Graph& g, OptimizerStats& stats) {
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
    ++stats.folded_batchnorms;
  }
  g.compact(dead);
}

// The float32 constant operand of a binary node whose other operand is
// `x`, or nullptr.
const Tensor* constant_operand(const Graph& g, const Node& n, int x) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return nullptr;
  const int other = n.inputs[0] == x ? n.inputs[1] : n.inputs[1] == x ? n.inputs[0] : -1;
  const Tensor* t = other >= 0 ? g.initializer(other) : nullptr;
  return t && t->dtype() == DataType::kFloat32 ? t : nullptr;
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

float single_value(const Graph& g, int id) {
  const Tensor* t = id >= 0 ? g.initializer(id) : nullptr;
  return t && t->dtype() == DataType::kFloat32 && t->numel() == 1 ? t->data<float>()[0] : NAN;
}

// Conv (constant weights) followed by Mul / Add with a constant that is a
// scalar or one value per output channel: y = s * conv(x) + t becomes one
// Conv with weights s * W and bias s * B + t.
void fold_conv_affine(Graph& g, OptimizerStats& stats) {
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
      ++stats.folded_affines;
    }
    if (new_w.defined()) {
      set_conv_weights(g, conv, "affine_folded", std::move(new_w), std::move(new_b));
      g.reindex(static_cast<int>(i));
    }
  }
  g.compact(dead);
}

// HardSwish written out as x * Clip(x + 3, 0, 6) / 6 (as exporters emit it)
// becomes one HardSwish node.
void fuse_hardswish(Graph& g, OptimizerStats& stats) {
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
    ++stats.fused_hardswish;
  }
  g.compact(dead);
}

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

// Residual connections: Add(conv_out, r) where conv_out is read by nothing
// else becomes Conv(x, W, B, r), the kernel adding r to each output block
// while it is in cache (before an activation fused later). A model cannot
// write this form itself: the loader accepts Conv with 2 or 3 inputs only.
// The kernel checks at run time that r has the output's shape (else it adds
// with broadcasting, as the Add would have).
void fuse_residual_adds(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (dead[i] || add.op_type != "Add" || !add.domain.empty() || add.opset < 7 || add.inputs.size() != 2 ||
        add.outputs.size() != 1 || add.inputs[0] < 0 || add.inputs[1] < 0 || add.inputs[0] == add.inputs[1])
      continue;
    for (int k = 0; k < 2; ++k) {
      const int c = g.producer(add.inputs[static_cast<size_t>(k)]);
      if (c < 0 || dead[static_cast<size_t>(c)] || single_consumer(g, add.inputs[static_cast<size_t>(k)]) != static_cast<int>(i))
        continue;
      Node& conv = g.nodes[static_cast<size_t>(c)];
      if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() > 3 ||
          conv.attrs.has("activation") || conv.attrs.has("activation_affine"))
        continue;
      const int residual = add.inputs[static_cast<size_t>(1 - k)];
      conv.inputs.resize(3, -1);
      conv.inputs.push_back(residual);
      conv.outputs[0] = add.outputs[0];
      g.reindex(c);
      dead[i] = true;
      ++stats.fused_residual_adds;
      break;
    }
  }
  g.compact(dead);
}

// The Conv (index) that alone reads `value`, once and as its X, holding at
// most X, W, B and a fused residual (so an input folded in can follow them);
// -1 when there is none.
int conv_reading_only_as_x(const Graph& g, int value, const std::vector<bool>& dead) {
  const int c = single_consumer(g, value);
  if (c < 0 || dead[static_cast<size_t>(c)]) return -1;
  const Node& conv = g.nodes[static_cast<size_t>(c)];
  if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1 || conv.inputs.size() > 4 ||
      conv.inputs.size() < 2 || conv.inputs[0] != value || std::count(conv.inputs.begin(), conv.inputs.end(), value) != 1)
    return -1;
  return c;
}

// Squeeze-excite scaling: Mul(x, s) whose output only a float Conv reads (as
// its X; the Conv holding at most X, W, B and a fused residual) becomes
// Conv(x, W, B, R, s): the kernel computes x * s itself, as the Mul would
// have (with broadcasting), and for a 1x1 convolution of one group with s
// of shape [1 or N, C, 1, 1] it multiplies each input channel as it packs
// the GEMM's B, so the Mul's pass over x disappears (the same products, the
// same bits). Runs after fuse_residual_adds, which wants at most 3 inputs,
// and after fuse_activations, so that an exported SiLU (x * Sigmoid(x)) has
// become its Conv's activation instead of a Mul folded into the next Conv.
// A model cannot write this form: the loader accepts Conv with 2 or 3 inputs.
void fuse_input_scales(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mul = g.nodes[i];
    if (dead[i] || mul.op_type != "Mul" || !mul.domain.empty() || mul.opset < 7 || mul.inputs.size() != 2 ||
        mul.outputs.size() != 1 || mul.inputs[0] < 0 || mul.inputs[1] < 0 || mul.inputs[0] == mul.inputs[1] ||
        g.is_graph_output(mul.outputs[0]))
      continue;
    const int c = conv_reading_only_as_x(g, mul.outputs[0], dead);
    if (c < 0) continue;
    Node& conv = g.nodes[static_cast<size_t>(c)];
    conv.inputs[0] = mul.inputs[0];
    conv.inputs.resize(4, -1);
    conv.inputs.push_back(mul.inputs[1]);
    g.reindex(c);
    dead[i] = true;
    ++stats.fused_input_scales;
  }
  g.compact(dead);
}

// Pre-activation blocks (DenseNet's BatchNormalization -> Relu -> 1x1 Conv
// on each concatenation): an inference BatchNormalization with constant
// parameters, with no activation or a fused Relu, read only by a float Conv
// (as its X; the Conv holding at most X, W, B and a fused residual) becomes
// Conv(x, W, B, R, -, scale, B, mean, var) with attributes input_epsilon and
// input_activation. A one-group 1x1 convolution applies x * a + b (and the
// Relu) per input channel as the GEMM packs B, so the normalization's pass
// over x disappears; other shapes run the BatchNormalization kernel first.
// Same bits either way. Runs after fuse_activations (the Relu is then the
// BatchNormalization's) and after fuse_input_scales, whose fifth input it
// leaves empty. A model cannot write this form: the loader accepts Conv with
// 2 or 3 inputs.
void fuse_input_batchnorms(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    if (dead[i] || bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() != 5 ||
        bn.outputs.size() != 1 || bn.inputs[0] < 0 || g.is_graph_output(bn.outputs[0]) ||
        bn.attrs.get_int("training_mode", 0) != 0 || (bn.opset < 9 && bn.attrs.get_int("spatial", 1) == 0) ||
        bn.attrs.has("activation_affine"))
      continue;
    const std::string act = bn.attrs.get_string("activation", "");
    if (!act.empty() && act != "Relu") continue;
    bool constant = true;
    for (size_t k = 1; k < 5; ++k) {
      const Tensor* t = bn.inputs[k] >= 0 ? g.initializer(bn.inputs[k]) : nullptr;
      constant = constant && t && t->dtype() == DataType::kFloat32 && t->rank() == 1 &&
                 t->numel() == g.initializer(bn.inputs[1])->numel();
    }
    if (!constant) continue;
    const int c = conv_reading_only_as_x(g, bn.outputs[0], dead);
    if (c < 0) continue;
    Node& conv = g.nodes[static_cast<size_t>(c)];
    conv.inputs[0] = bn.inputs[0];
    conv.inputs.resize(5, -1);
    for (size_t k = 1; k < 5; ++k) conv.inputs.push_back(bn.inputs[k]);
    g.reindex(c);
    conv.attrs.set("input_epsilon", bn.attrs.get_float("epsilon", 1e-5f));
    if (!act.empty()) conv.attrs.set("input_activation", act);
    dead[i] = true;
    ++stats.fused_input_batchnorms;
  }
  g.compact(dead);
}

void fuse_activations(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& p = g.nodes[i];
    if (dead[i] || !p.domain.empty() || p.outputs.size() != 1 || p.attrs.has("activation")) continue;
    if (p.op_type != "Conv" && p.op_type != "ConvTranspose" && p.op_type != "Gemm" && p.op_type != "MatMul" &&
        p.op_type != "BatchNormalization")
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
    ++stats.fused_activations;
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
      if (!c || c->numel() != 1 || c->rank() > (p.op_type == "MatMul" ? 0 : 1)) continue;
      (want_mul ? scale : shift) = c->data<float>()[0];
      p.outputs[0] = op.outputs[0];
      g.reindex(static_cast<int>(i));
      dead[static_cast<size_t>(next)] = true;
      affine = true;
      ++stats.folded_affines;
    }
    if (affine) p.attrs.set("activation_affine", std::vector<float>{scale, shift});
  }
  g.compact(dead);
}

// A node of `g` whose op is `op` (default domain) reading `value`, when it is
// the value's only reader; else -1.
int only_reader(const Graph& g, int value, const char* op, const std::vector<bool>& dead) {
  const int i = single_consumer(g, value);
  if (i < 0 || dead[static_cast<size_t>(i)]) return -1;
  const Node& n = g.nodes[static_cast<size_t>(i)];
  return n.op_type == op && n.domain.empty() ? i : -1;
}

bool near(float a, float b) { return std::fabs(a - b) <= 1e-5f * std::fabs(b); }

// Erf-form GELU as exporters write it: Div(x, sqrt 2) (or Mul(x, 1/sqrt 2))
// -> Erf -> Add 1 -> Mul x -> Mul 0.5, every intermediate read once, becomes
// Gelu(x) (com.microsoft, as ONNX Runtime fuses it; ONNX's own Gelu is
// opset 20).
void fuse_gelu(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t e = 0; e < g.nodes.size(); ++e) {
    const Node& erf = g.nodes[e];
    if (erf.op_type != "Erf" || !erf.domain.empty() || erf.inputs.size() != 1 || dead[e]) continue;
    const int scale_index = g.producer(erf.inputs[0]);
    if (scale_index < 0 || single_consumer(g, erf.inputs[0]) != static_cast<int>(e)) continue;
    const Node& scale = g.nodes[static_cast<size_t>(scale_index)];
    if (!scale.domain.empty() || scale.inputs.size() != 2) continue;
    const int x = scale.inputs[0];
    const float c = single_value(g, scale.inputs[1]);
    const bool by_div = scale.op_type == "Div" && near(c, static_cast<float>(M_SQRT2));
    const bool by_mul = scale.op_type == "Mul" && near(c, static_cast<float>(M_SQRT1_2));
    if (!by_div && !by_mul) continue;
    const int add = only_reader(g, erf.outputs[0], "Add", dead);
    if (add < 0) continue;
    const Node& a = g.nodes[static_cast<size_t>(add)];
    if (!near(single_value(g, a.inputs[0] == erf.outputs[0] ? a.inputs[1] : a.inputs[0]), 1.0f)) continue;
    const int mul_x = only_reader(g, a.outputs[0], "Mul", dead);
    if (mul_x < 0) continue;
    const Node& mx = g.nodes[static_cast<size_t>(mul_x)];
    if ((mx.inputs[0] == a.outputs[0] ? mx.inputs[1] : mx.inputs[0]) != x) continue;
    const int half = only_reader(g, mx.outputs[0], "Mul", dead);
    if (half < 0) continue;
    Node& h = g.nodes[static_cast<size_t>(half)];
    if (!near(single_value(g, h.inputs[0] == mx.outputs[0] ? h.inputs[1] : h.inputs[0]), 0.5f)) continue;
    for (int i : {scale_index, static_cast<int>(e), add, mul_x}) dead[static_cast<size_t>(i)] = true;
    Node gelu;
    gelu.name = h.name.empty() ? g.value_name(h.outputs[0]) + "/Gelu" : h.name + "/Gelu";
    gelu.op_type = "Gelu";
    gelu.domain = "com.microsoft";
    gelu.opset = 1;
    gelu.inputs = {x};
    gelu.outputs = {h.outputs[0]};
    h = std::move(gelu);
    g.reindex(half);
    ++stats.fused_gelus;
  }
  g.compact(dead);
}

// A polynomial in two values of the graph, x (degree <= 4) and t (degree
// <= 1): c[i][j] multiplies x^i t^j. What fuse_gelu_tanh compares chains to.
struct Poly {
  double c[5][2] = {};
  static Poly constant(double v) {
    Poly p;
    p.c[0][0] = v;
    return p;
  }
  static Poly var(int i, int j) {
    Poly p;
    p.c[i][j] = 1.0;
    return p;
  }
  Poly plus(const Poly& o, double sign) const {
    Poly p;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) p.c[i][j] = c[i][j] + sign * o.c[i][j];
    return p;
  }
  // The product, unless a degree goes past the bounds.
  std::optional<Poly> times(const Poly& o) const {
    Poly p;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 5; ++k)
          for (int l = 0; l < 2; ++l) {
            const double v = c[i][j] * o.c[k][l];
            if (v == 0.0) continue;
            if (i + k > 4 || j + l > 1) return std::nullopt;
            p.c[i + k][j + l] += v;
          }
    return p;
  }
  bool is_constant() const {
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j)
        if ((i || j) && c[i][j] != 0.0) return false;
    return true;
  }
  // Every coefficient within 1e-5 of `want`'s (relative to the largest).
  bool near(const Poly& want) const {
    double scale = 0.0;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j) scale = std::max(scale, std::fabs(want.c[i][j]));
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 2; ++j)
        if (!(std::fabs(c[i][j] - want.c[i][j]) <= 1e-5 * scale)) return false;
    return true;
  }
};

// Reads a value as a polynomial in x and t through Add, Sub, Mul, Div by a
// constant, Neg and Pow by 2 or 3, over scalar float constants. It descends
// only into values read by one node and not graph outputs; any other value
// must be x or t (x is the first such value met when it is -1). `nodes`
// collects the nodes passed.
struct PolyReader {
  static constexpr size_t kMaxNodes = 24;
  const Graph& g;
  const std::vector<bool>& dead;
  int x = -1, t = -1;
  std::vector<int> nodes;

  std::optional<Poly> read(int value, int depth) {
    if (value < 0) return std::nullopt;
    if (value == x) return Poly::var(1, 0);
    if (value == t) return Poly::var(0, 1);
    const float k = single_value(g, value);
    if (!std::isnan(k)) return Poly::constant(k);
    const int p = g.producer(value);
    // The value read first (the root) may have other readers: it stays.
    const bool inner = depth < 16 && p >= 0 && !dead[static_cast<size_t>(p)] && (depth == 0 || single_consumer(g, value) >= 0);
    const Node* n = p >= 0 ? &g.nodes[static_cast<size_t>(p)] : nullptr;
    if (!inner || !n->domain.empty() || n->outputs.size() != 1 || !arithmetic(*n)) {
      if (x >= 0) return std::nullopt;
      x = value;
      return Poly::var(1, 0);
    }
    // A GELU side has under a dozen nodes; the cap keeps a hostile chain
    // (Add(v, v) read twice per level) from costing 2^depth reads.
    if (nodes.size() >= kMaxNodes) return std::nullopt;
    nodes.push_back(p);
    std::optional<Poly> a = read(n->inputs[0], depth + 1);
    if (!a) return std::nullopt;
    if (n->op_type == "Neg") return Poly().plus(*a, -1.0);
    std::optional<Poly> b = read(n->inputs[1], depth + 1);
    if (!b) return std::nullopt;
    if (n->op_type == "Add") return a->plus(*b, 1.0);
    if (n->op_type == "Sub") return a->plus(*b, -1.0);
    if (n->op_type == "Mul") return a->times(*b);
    if (n->op_type == "Div") {
      if (!b->is_constant() || b->c[0][0] == 0.0) return std::nullopt;
      return a->times(Poly::constant(1.0 / b->c[0][0]));
    }
    // Pow by a constant 2 or 3.
    if (!b->is_constant() || (b->c[0][0] != 2.0 && b->c[0][0] != 3.0)) return std::nullopt;
    std::optional<Poly> r = a->times(*a);
    return r && b->c[0][0] == 3.0 ? r->times(*a) : r;
  }

 private:
  static bool arithmetic(const Node& n) {
    if (n.op_type == "Neg") return n.inputs.size() == 1;
    return n.inputs.size() == 2 &&
           (n.op_type == "Add" || n.op_type == "Sub" || n.op_type == "Mul" || n.op_type == "Div" || n.op_type == "Pow");
  }
};

// GELU's tanh approximation as exporters write it,
//   0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// in any arrangement of Add / Sub / Mul / Div / Pow over scalar constants
// (x^3 as Pow(x, 3) or Mul(x, Mul(x, x)), the inner sum factored as
// x (1 + 0.044715 x^2), the 0.5 on either side of the product), every
// intermediate read once, becomes Gelu(x, approximate = "tanh") (opset 20).
// The chains are compared as polynomials, so operand order does not matter.
void fuse_gelu_tanh(Graph& g, OptimizerStats& stats) {
  constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;
  Poly inner_want, outer_want;
  inner_want.c[1][0] = kBeta;
  inner_want.c[3][0] = kBeta * kKappa;
  outer_want.c[1][0] = outer_want.c[1][1] = 0.5;
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t e = 0; e < g.nodes.size(); ++e) {
    const Node& th = g.nodes[e];
    if (dead[e] || th.op_type != "Tanh" || !th.domain.empty() || th.inputs.size() != 1 || th.outputs.size() != 1) continue;
    if (single_consumer(g, th.inputs[0]) != static_cast<int>(e)) continue;
    PolyReader in{g, dead};
    const std::optional<Poly> u = in.read(th.inputs[0], 0);
    if (!u || in.x < 0 || !u->near(inner_want)) continue;
    // The product is at most four nodes after the Tanh, each the only reader
    // of the one before (Add 1, Mul x, Mul 0.5 and one spare).
    int value = th.outputs[0];
    for (int step = 0; step < 4; ++step) {
      const int r = single_consumer(g, value);
      if (r < 0 || dead[static_cast<size_t>(r)] || g.nodes[static_cast<size_t>(r)].outputs.size() != 1) break;
      value = g.nodes[static_cast<size_t>(r)].outputs[0];
      PolyReader out{g, dead, in.x, th.outputs[0]};
      const std::optional<Poly> y = out.read(value, 0);
      if (!y || !y->near(outer_want)) continue;
      for (int n : in.nodes) dead[static_cast<size_t>(n)] = true;
      for (int n : out.nodes) dead[static_cast<size_t>(n)] = true;
      dead[e] = true;
      dead[static_cast<size_t>(r)] = false;
      Node& last = g.nodes[static_cast<size_t>(r)];
      Node gelu;
      gelu.name = last.name.empty() ? g.value_name(value) + "/Gelu" : last.name + "/Gelu";
      gelu.op_type = "Gelu";
      gelu.opset = 20;
      gelu.attrs.set("approximate", std::string("tanh"));
      gelu.inputs = {in.x};
      gelu.outputs = {value};
      last = std::move(gelu);
      g.reindex(r);
      ++stats.fused_gelus;
      break;
    }
  }
  g.compact(dead);
}

// The reduced axes of a ReduceMean (attribute before opset 18, input after)
// are exactly the last one, with keepdims on.
bool reduces_last_axis(const Graph& g, const Node& r) {
  if (r.attrs.get_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (r.attrs.has("axes")) {
    axes = r.attrs.get_ints("axes");
  } else if (r.inputs.size() > 1 && r.inputs[1] >= 0) {
    const Tensor* t = g.initializer(r.inputs[1]);
    if (!t || t->dtype() != DataType::kInt64) return false;
    axes = t->to_int64_vector();
  }
  return axes == std::vector<int64_t>{-1};
}

// Layer normalization as exporters write it before opset 17:
//   m = ReduceMean(x, -1); d = Sub(x, m); v = ReduceMean(Pow(d, 2), -1);
//   y = Div(d, Sqrt(Add(v, eps))) * gamma + beta
// becomes LayerNormalization(x, gamma, beta, axis -1, epsilon eps).
void fuse_layer_norm(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t r = 0; r < g.nodes.size(); ++r) {
    const Node& mean = g.nodes[r];
    if (mean.op_type != "ReduceMean" || !mean.domain.empty() || dead[r] || !reduces_last_axis(g, mean)) continue;
    const int x = mean.inputs[0];
    const int sub = only_reader(g, mean.outputs[0], "Sub", dead);
    if (sub < 0) continue;
    const Node& sb = g.nodes[static_cast<size_t>(sub)];
    if (sb.inputs[0] != x || sb.inputs[1] != mean.outputs[0]) continue;
    const int d = sb.outputs[0];
    auto readers = g.consumers(d, 2);
    if (readers.size() != 2 || g.is_graph_output(d)) continue;
    const int pow = g.nodes[static_cast<size_t>(readers[0])].op_type == "Pow" ? readers[0] : readers[1];
    const int div = pow == readers[0] ? readers[1] : readers[0];
    const Node& pw = g.nodes[static_cast<size_t>(pow)];
    const Node& dv = g.nodes[static_cast<size_t>(div)];
    if (pw.op_type != "Pow" || dv.op_type != "Div" || pw.inputs[0] != d || dv.inputs[0] != d ||
        !near(single_value(g, pw.inputs[1]), 2.0f) || dead[static_cast<size_t>(pow)] || dead[static_cast<size_t>(div)])
      continue;
    const int var = only_reader(g, pw.outputs[0], "ReduceMean", dead);
    if (var < 0 || !reduces_last_axis(g, g.nodes[static_cast<size_t>(var)])) continue;
    const int add_eps = only_reader(g, g.nodes[static_cast<size_t>(var)].outputs[0], "Add", dead);
    if (add_eps < 0) continue;
    const Node& ae = g.nodes[static_cast<size_t>(add_eps)];
    const int var_out = g.nodes[static_cast<size_t>(var)].outputs[0];
    const float eps = single_value(g, ae.inputs[0] == var_out ? ae.inputs[1] : ae.inputs[0]);
    if (!(eps >= 0)) continue;
    const int sqrt = only_reader(g, ae.outputs[0], "Sqrt", dead);
    if (sqrt < 0 || single_consumer(g, g.nodes[static_cast<size_t>(sqrt)].outputs[0]) != div ||
        dv.inputs[1] != g.nodes[static_cast<size_t>(sqrt)].outputs[0])
      continue;
    const int mul = only_reader(g, dv.outputs[0], "Mul", dead);
    if (mul < 0) continue;
    const Node& ml = g.nodes[static_cast<size_t>(mul)];
    const Tensor* gamma = constant_operand(g, ml, dv.outputs[0]);
    const int add_beta = only_reader(g, ml.outputs[0], "Add", dead);
    if (!gamma || gamma->rank() != 1 || add_beta < 0) continue;
    Node& ab = g.nodes[static_cast<size_t>(add_beta)];
    const Tensor* beta = constant_operand(g, ab, ml.outputs[0]);
    if (!beta || beta->shape() != gamma->shape()) continue;
    const int gamma_id = ml.inputs[0] == dv.outputs[0] ? ml.inputs[1] : ml.inputs[0];
    const int beta_id = ab.inputs[0] == ml.outputs[0] ? ab.inputs[1] : ab.inputs[0];
    for (int i : {static_cast<int>(r), sub, pow, var, add_eps, sqrt, div, mul}) dead[static_cast<size_t>(i)] = true;
    Node ln;
    ln.name = ab.name.empty() ? g.value_name(ab.outputs[0]) + "/LayerNormalization" : ab.name + "/LayerNormalization";
    ln.op_type = "LayerNormalization";
    ln.opset = 17;
    ln.attrs.set("axis", int64_t{-1});
    ln.attrs.set("epsilon", eps);
    ln.inputs = {x, gamma_id, beta_id};
    ln.outputs = {ab.outputs[0]};
    ab = std::move(ln);
    g.reindex(add_beta);
    ++stats.fused_layer_norms;
  }
  g.compact(dead);
}

// MatMul with a constant rank-2 B (weights, K x N) followed by Add of a
// constant float [N] bias, the MatMul's output read by that Add only,
// becomes one MatMul with the bias as a third input (the kernel adds it to
// each output block while the block is in cache).
void fuse_matmul_bias(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (dead[i] || mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2 || mm.outputs.size() != 1 ||
        mm.attrs.has("activation"))
      continue;
    const Tensor* w = g.initializer(mm.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 2) continue;
    const int add = only_reader(g, mm.outputs[0], "Add", dead);
    if (add < 0) continue;
    Node& ad = g.nodes[static_cast<size_t>(add)];
    const Tensor* bias = constant_operand(g, ad, mm.outputs[0]);
    if (!bias || bias->rank() != 1 || bias->dim(0) != w->dim(1) || ad.inputs[0] == ad.inputs[1]) continue;
    const int bias_id = ad.inputs[0] == mm.outputs[0] ? ad.inputs[1] : ad.inputs[0];
    Node fused = mm;
    fused.inputs.push_back(bias_id);
    fused.outputs = {ad.outputs[0]};
    dead[i] = true;
    ad = std::move(fused);
    g.reindex(add);
    ++stats.fused_matmul_biases;
  }
  g.compact(dead);
}

// The scaled dot-product attention as exporters write it becomes one
// spindle.FusedAttention (kernels/nn/attention.cpp, which lists the chain):
// Softmax between two MatMuls, the scores' MatMul optionally followed by a
// Mul / Div by a scalar constant and an Add of a mask; Q and K optionally
// through a Transpose and a scalar Mul / Div, V through a Transpose, the
// output's only reader a Transpose. Every intermediate value is read once.
struct AttentionChain {
  int q = -1, k = -1, v = -1, mask = -1;
  std::vector<int64_t> q_perm, k_perm, v_perm, out_perm;
  int64_t q_op = 0, k_op = 0, s_op = 0;
  float q_c = 1, k_c = 1, s_c = 1;
  std::vector<int> nodes;  // absorbed, except the last
};

// Node `n` computes Mul(x, c) / Mul(c, x) / Div(x, c) for a float scalar
// constant c (rank <= 1, so it changes no shape): its x, else -1.
int scaled_value(const Graph& g, const Node& n, int64_t& op, float& c) {
  if (!n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return -1;
  for (int side : {1, 0}) {
    if (n.op_type == "Div" && side == 0) break;
    const Tensor* t = g.initializer(n.inputs[static_cast<size_t>(side)]);
    const int x = n.inputs[static_cast<size_t>(1 - side)];
    if (!t || t->dtype() != DataType::kFloat32 || t->rank() > 1 || t->numel() != 1 || g.is_initializer(x)) continue;
    if (n.op_type != "Mul" && n.op_type != "Div") return -1;
    op = n.op_type == "Mul" ? 1 : 2;
    c = t->data<float>()[0];
    return x;
  }
  return -1;
}

// Walks back from `value` (read only by node `reader`) through at most one
// Transpose with a perm and, when `scale` is given, one scalar Mul / Div:
// the value before them.
int operand_source(const Graph& g, int value, int reader, const std::vector<bool>& dead, std::vector<int64_t>& perm,
                   int64_t* op, float* c, std::vector<int>& nodes) {
  for (int step = 0; step < 2; ++step) {
    const int p = g.producer(value);
    if (p < 0 || dead[static_cast<size_t>(p)] || single_consumer(g, value) != reader) break;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    if (n.op_type == "Transpose" && n.domain.empty() && perm.empty() && n.attrs.has("perm") && n.inputs.size() == 1) {
      perm = n.attrs.get_ints("perm");
      value = n.inputs[0];
    } else if (op && *op == 0 && (n.op_type == "Mul" || n.op_type == "Div")) {
      int64_t o = 0;
      float k = 1;
      const int x = scaled_value(g, n, o, k);
      if (x < 0) break;
      *op = o, *c = k;
      value = x;
    } else {
      break;
    }
    nodes.push_back(p);
    reader = p;
  }
  return value;
}

bool match_attention(const Graph& g, size_t softmax, const std::vector<bool>& dead, AttentionChain& a, int& last) {
  const Node& sm = g.nodes[softmax];
  if (sm.inputs.size() != 1 || sm.outputs.size() != 1) return false;
  const int mm2 = only_reader(g, sm.outputs[0], "MatMul", dead);
  if (mm2 < 0) return false;
  const Node& m2 = g.nodes[static_cast<size_t>(mm2)];
  if (m2.inputs.size() != 2 || m2.inputs[0] != sm.outputs[0] || m2.inputs[1] == sm.outputs[0] ||
      m2.attrs.has("activation"))
    return false;
  // Back from the Softmax: [Add mask] <- [Mul | Div scalar] <- MatMul.
  int value = sm.inputs[0], reader = static_cast<int>(softmax);
  auto producer_read_once = [&](int v, int r) {
    const int p = g.producer(v);
    return p >= 0 && !dead[static_cast<size_t>(p)] && single_consumer(g, v) == r ? p : -1;
  };
  int p = producer_read_once(value, reader);
  if (p < 0) return false;
  auto scores_from = [&](int v, int r, int64_t& op, float& c, std::vector<int>& nodes) {  // MatMul index or -1
    int q = producer_read_once(v, r);
    if (q < 0) return -1;
    const Node& n = g.nodes[static_cast<size_t>(q)];
    if ((n.op_type == "Mul" || n.op_type == "Div")) {
      const int x = scaled_value(g, n, op, c);
      if (x < 0) return -1;
      nodes.push_back(q);
      q = producer_read_once(x, q);
      if (q < 0) return -1;
    }
    const Node& mm = g.nodes[static_cast<size_t>(q)];
    return mm.op_type == "MatMul" && mm.domain.empty() && mm.inputs.size() == 2 && mm.outputs.size() == 1 &&
                   !mm.attrs.has("activation")
               ? q
               : -1;
  };
  int mm1 = -1;
  const Node& pn = g.nodes[static_cast<size_t>(p)];
  if (pn.op_type == "Add" && pn.domain.empty() && pn.inputs.size() == 2 && pn.inputs[0] != pn.inputs[1]) {
    for (int side : {0, 1}) {
      AttentionChain t;
      std::vector<int> nodes{p};
      const int m = scores_from(pn.inputs[static_cast<size_t>(side)], p, t.s_op, t.s_c, nodes);
      if (m < 0) continue;
      mm1 = m;
      a.mask = pn.inputs[static_cast<size_t>(1 - side)];
      a.s_op = t.s_op, a.s_c = t.s_c;
      a.nodes = nodes;
      break;
    }
  } else {
    mm1 = scores_from(value, reader, a.s_op, a.s_c, a.nodes);
  }
  if (mm1 < 0) return false;
  const Node& m1 = g.nodes[static_cast<size_t>(mm1)];
  if (m1.inputs[0] == m1.inputs[1]) return false;
  a.nodes.push_back(mm1);
  a.nodes.push_back(static_cast<int>(softmax));
  a.q = operand_source(g, m1.inputs[0], mm1, dead, a.q_perm, &a.q_op, &a.q_c, a.nodes);
  a.k = operand_source(g, m1.inputs[1], mm1, dead, a.k_perm, &a.k_op, &a.k_c, a.nodes);
  a.v = operand_source(g, m2.inputs[1], mm2, dead, a.v_perm, nullptr, nullptr, a.nodes);
  last = mm2;
  const int t = only_reader(g, m2.outputs[0], "Transpose", dead);
  if (t >= 0 && g.nodes[static_cast<size_t>(t)].attrs.has("perm")) {
    a.out_perm = g.nodes[static_cast<size_t>(t)].attrs.get_ints("perm");
    a.nodes.push_back(mm2);
    last = t;
  }
  std::set<int> distinct(a.nodes.begin(), a.nodes.end());
  return distinct.size() == a.nodes.size() && !distinct.count(last);
}

void fuse_attention(Graph& g, OptimizerStats& stats) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& sm = g.nodes[i];
    if (dead[i] || sm.op_type != "Softmax" || !sm.domain.empty()) continue;
    AttentionChain a;
    int last = -1;
    if (!match_attention(g, i, dead, a, last)) continue;
    Node f;
    Node& out = g.nodes[static_cast<size_t>(last)];
    f.name = (out.name.empty() ? g.value_name(out.outputs[0]) : out.name) + "/FusedAttention";
    f.op_type = "FusedAttention";
    f.domain = "spindle";
    f.opset = 1;
    f.inputs = {a.q, a.k, a.v};
    if (a.mask >= 0) f.inputs.push_back(a.mask);
    f.outputs = {out.outputs[0]};
    for (auto [name, perm] : {std::pair{"q_perm", &a.q_perm}, {"k_perm", &a.k_perm}, {"v_perm", &a.v_perm},
                              {"out_perm", &a.out_perm}})
      if (!perm->empty()) f.attrs.set(name, *perm);
    for (auto [name, op, c] : {std::tuple{"q", a.q_op, a.q_c}, {"k", a.k_op, a.k_c}, {"s", a.s_op, a.s_c}})
      if (op != 0) {
        f.attrs.set(std::string(name) + "_scale_op", op);
        f.attrs.set(std::string(name) + "_scale", c);
      }
    f.attrs.set("softmax_axis", sm.attrs.get_int("axis", sm.opset < 13 ? 1 : -1));
    f.attrs.set("softmax_opset", int64_t{sm.opset});
    for (int n : a.nodes) dead[static_cast<size_t>(n)] = true;
    out = std::move(f);
    ++stats.fused_attentions;
  }
  g.compact(dead);
}

// The passes in order, with the level that turns each on. Each is linear in
// the node count (or n log n): the graph's use index answers who reads and
// writes a value, and removed nodes go in one compact() per pass.
struct Pass {
  const char* name;
  OptimizationLevel level;
  void (*run)(Graph&, OptimizerStats&);
};
constexpr Pass kPasses[] = {
    {"removing identities", OptimizationLevel::kBasic, remove_identities},
    {"folding batch normalizations", OptimizationLevel::kExtended, fold_batchnorms},
    {"folding affine ops into convolutions", OptimizationLevel::kExtended, fold_conv_affine},
    {"fusing HardSwish", OptimizationLevel::kExtended, fuse_hardswish},
    {"fusing GELU", OptimizationLevel::kExtended, fuse_gelu},
    {"fusing tanh GELU", OptimizationLevel::kExtended, fuse_gelu_tanh},
    {"fusing layer normalizations", OptimizationLevel::kExtended, fuse_layer_norm},
    {"fusing attention", OptimizationLevel::kExtended, fuse_attention},
    {"fusing residual Adds", OptimizationLevel::kExtended, fuse_residual_adds},
    {"fusing MatMul biases", OptimizationLevel::kExtended, fuse_matmul_bias},
    {"fusing activations", OptimizationLevel::kExtended, fuse_activations},
    {"fusing input scales", OptimizationLevel::kExtended, fuse_input_scales},
    {"fusing input batch normalizations", OptimizationLevel::kExtended, fuse_input_batchnorms},
    {"choosing the blocked layout", OptimizationLevel::kAll, use_blocked_layout},
};

}  // namespace

Result<OptimizerStats> optimize(Graph& g, OptimizationLevel level, const LoadLimits& limits) {
  OptimizerStats stats;
  if (level == OptimizationLevel::kDisableAll) return stats;
  g.invalidate_uses();
  SPINDLE_RETURN_IF_ERROR(fold_constants(g, stats, limits));
  for (const Pass& pass : kPasses) {
    if (level < pass.level) continue;
    SPINDLE_RETURN_IF_ERROR(limits.check("", pass.name));
    pass.run(g, stats);
  }
  SPINDLE_RETURN_IF_ERROR(g.topological_sort());
  return stats;
}

}  // namespace spindle::graph
