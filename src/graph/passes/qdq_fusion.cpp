// qdq_fusion.cpp — the QDQFusion pass: node units of a statically quantized
// model in the QDQ format (DequantizeLinear before an operator's inputs,
// QuantizeLinear after its output) become integer operators that read and
// write the quantized tensors directly:
//
//   DQ(x) + DQ(const W) [+ DQ(const int32 B)] -> Conv [-> Relu] -> Q
//       => QLinearConv (a Relu becomes activation = "Relu": the output is
//          clamped below at y_zero_point, which is Q(Relu(v)) exactly, Q
//          being monotone with Q(0) = y_zero_point)
//   DQ(a), DQ(b) -> Add [-> Relu] -> Q           => com.microsoft.QLinearAdd
//   DQ(x) -> GlobalAveragePool -> Q              => com.microsoft.QLinearGlobalAveragePool
//   DQ(x) + DQ(const W) [+ DQ(const int32 C)] -> Gemm -> Q
//       => com.microsoft.QGemm (alpha = beta = 1, transA = 0)
//   Shape(DQ(x))                                 => Shape(x)
//   DQ(x0), DQ(x1), ... -> Concat -> Q            => Concat of the quantized
//          tensors when all share the output's scale and zero point, else
//          com.microsoft.QLinearConcat
//   DQ(x) -> MaxPool / Reshape / Flatten / Transpose / Squeeze / Unsqueeze /
//       Slice -> Q with the same scale and zero point  => the op on the
//          quantized tensor (these move or select values: exact)
//
// Activations are quantized per tensor (scalar scale and zero point
// constants); weights per tensor or per output channel (Conv: axis 0;
// Gemm: the axis of B's columns). A bias is fused when its scale is
// x_scale * w_scale (per channel; what quantizers write), its zero point 0.
// A unit is fused only when the float values inside it (the op's output, the
// Relu's) have no other reader and are not graph outputs; a DequantizeLinear
// read by several nodes serves each of them and goes once none reads it.
// What is not matched stays and runs as written. Constant folding leaves the
// DequantizeLinear of constant weights alone while this pass is to run (the
// weights then stay int8, held once); the ones left unfused are folded here.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"
#include "kernels/kernel.h"

namespace spindle::graph::passes {
namespace {

bool is_op(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

bool is_q8(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }

// The live DequantizeLinear producing `value`, or -1.
int dq_of(const Graph& g, int value, const std::vector<bool>& dead) {
  if (value < 0) return -1;
  const int p = g.producer(value);
  if (p < 0 || dead[static_cast<size_t>(p)]) return -1;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (!is_op(n, "DequantizeLinear") || n.inputs.size() < 2 || n.outputs.size() != 1) return -1;
  for (const char* a : {"block_size", "output_dtype"})
    if (n.attrs.get_int(a, 0) != 0) return -1;
  return p;
}

// Scale and zero point of a per-tensor (de)quantization: constant scalars,
// the zero point present and 8-bit.
struct TensorQ {
  int data = -1, scale = -1, zp = -1;
  float s = 0;
  DataType type = DataType::kUndefined;
  int32_t z = 0;
};

bool per_tensor(const Graph& g, const Node& n, TensorQ& q) {
  if (n.inputs.size() < 3 || n.inputs[2] < 0) return false;
  const Tensor* s = g.initializer(n.inputs[1]);
  const Tensor* z = g.initializer(n.inputs[2]);
  if (!s || !z || s->dtype() != DataType::kFloat32 || s->numel() != 1 || z->numel() != 1 || !is_q8(z->dtype()))
    return false;
  q.data = n.inputs[0];
  q.scale = n.inputs[1];
  q.zp = n.inputs[2];
  q.s = s->data<float>()[0];
  q.type = z->dtype();
  q.z = static_cast<int32_t>(z->to_int64_vector()[0]);
  return std::isfinite(q.s) && q.s > 0;
}

bool same(const TensorQ& a, const TensorQ& b) { return a.s == b.s && a.z == b.z && a.type == b.type; }

// The QuantizeLinear alone reading `value` (per tensor), or -1.
int q_after(const Graph& g, int value, const std::vector<bool>& dead, TensorQ& q) {
  const int i = single_consumer(g, value);
  if (i < 0 || dead[static_cast<size_t>(i)]) return -1;
  const Node& n = g.nodes[static_cast<size_t>(i)];
  if (!is_op(n, "QuantizeLinear") || n.outputs.size() != 1 || n.inputs[0] != value) return -1;
  for (const char* a : {"block_size", "output_dtype"})
    if (n.attrs.get_int(a, 0) != 0) return -1;
  return per_tensor(g, n, q) ? i : -1;
}

// An activation's DequantizeLinear (per tensor) producing `value`.
bool activation_dq(const Graph& g, int value, const std::vector<bool>& dead, TensorQ& q) {
  const int d = dq_of(g, value, dead);
  return d >= 0 && per_tensor(g, g.nodes[static_cast<size_t>(d)], q);
}

// A constant weight's DequantizeLinear: W int8 / uint8, scale one value or
// `channels` values along `axis`, zero point absent or shaped as the scale.
struct WeightQ {
  int data = -1, scale = -1, zp = -1;  // zp -1: absent (zeros)
  const Tensor* w = nullptr;
  std::vector<float> s;  // one or `channels`
};

bool weight_dq(const Graph& g, int value, const std::vector<bool>& dead, int64_t channel_axis, WeightQ& q) {
  const int d = dq_of(g, value, dead);
  if (d < 0) return false;
  const Node& n = g.nodes[static_cast<size_t>(d)];
  const Tensor* w = g.initializer(n.inputs[0]);
  const Tensor* s = g.initializer(n.inputs[1]);
  if (!w || !s || !is_q8(w->dtype()) || s->dtype() != DataType::kFloat32 || w->rank() <= channel_axis) return false;
  const int64_t channels = w->dim(static_cast<int>(channel_axis));
  if (s->numel() != 1) {
    int64_t axis = n.attrs.get_int("axis", 1);
    if (axis < 0) axis += w->rank();
    if (s->rank() != 1 || s->numel() != channels || axis != channel_axis) return false;
  }
  const Tensor* z = nullptr;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    z = g.initializer(n.inputs[2]);
    if (!z || z->dtype() != w->dtype() || z->numel() != s->numel()) return false;
  }
  q.data = n.inputs[0];
  q.scale = n.inputs[1];
  q.zp = z ? n.inputs[2] : -1;
  q.w = w;
  q.s.assign(s->data<float>(), s->data<float>() + s->numel());
  for (float v : q.s)
    if (!std::isfinite(v) || v <= 0) return false;
  return true;
}

// A constant int32 bias's DequantizeLinear with scale x_scale * w_scale[c]
// (per channel, as a float32 product, within a relative 1e-6) and zero
// point 0; returns the int32 initializer's id, or -1.
int bias_dq(const Graph& g, int value, const std::vector<bool>& dead, float x_scale, const std::vector<float>& w_scale,
            int64_t channels) {
  const int d = dq_of(g, value, dead);
  if (d < 0) return -1;
  const Node& n = g.nodes[static_cast<size_t>(d)];
  const Tensor* b = g.initializer(n.inputs[0]);
  const Tensor* s = g.initializer(n.inputs[1]);
  if (!b || !s || b->dtype() != DataType::kInt32 || b->rank() != 1 || b->numel() != channels ||
      s->dtype() != DataType::kFloat32 || (s->numel() != 1 && s->numel() != channels))
    return -1;
  if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
    const Tensor* z = g.initializer(n.inputs[2]);
    if (!z) return -1;
    for (int64_t v : z->to_int64_vector())
      if (v != 0) return -1;
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float want = x_scale * w_scale[static_cast<size_t>(w_scale.size() == 1 ? 0 : c)];
    const float got = s->data<float>()[s->numel() == 1 ? 0 : c];
    if (!(std::fabs(got - want) <= 1e-6f * std::fabs(want))) return -1;
  }
  return n.inputs[0];
}

// A float32 bias constant (`channels` values) quantized as ONNX Runtime's
// weight-bias quantization writes it before its own fusion: int32 with scale
// x_scale * w_scale[c] (a float32 product), zero point 0, each value
// round_half_even(b / scale) in float32, as Mul, Div, Round and Cast compute
// it. Returns the new int32 initializer, or -1 (not such a constant, or a
// value past int32).
int quantized_float_bias(Graph& g, int value, float x_scale, const std::vector<float>& w_scale, int64_t channels,
                         const std::string& base) {
  const Tensor* b = g.initializer(value);
  if (!b || b->dtype() != DataType::kFloat32 || b->rank() != 1 || b->numel() != channels) return -1;
  Tensor q(DataType::kInt32, b->shape());
  for (int64_t c = 0; c < channels; ++c) {
    const float scale = x_scale * w_scale[static_cast<size_t>(w_scale.size() == 1 ? 0 : c)];
    const float r = std::nearbyint(b->data<float>()[c] / scale);
    if (!(std::fabs(r) < 2147483520.0f)) return -1;  // NaN, infinite, or past int32
    q.mutable_data<int32_t>()[c] = static_cast<int32_t>(r);
  }
  const int id = g.add_value(base + "/bias_quantized");
  g.initializers[id] = std::move(q);
  return id;
}

// A zero point input for a weight whose DequantizeLinear had none: zeros of
// the weight's type, shaped as the scale.
int zero_point_for(Graph& g, const WeightQ& w, const std::string& base) {
  if (w.zp >= 0) return w.zp;
  const Tensor* s = g.initializer(w.scale);
  Tensor z(w.w->dtype(), s->shape());
  std::fill(static_cast<uint8_t*>(z.raw_mutable_data()), static_cast<uint8_t*>(z.raw_mutable_data()) + z.numel(), 0);
  const int id = g.add_value(base + "/w_zero_point");
  g.initializers[id] = std::move(z);
  return id;
}

// After `value`: an optional Relu (alone reading it), then the Q. Sets
// `relu` and returns the Q's index, or -1.
int relu_then_q(const Graph& g, int value, const std::vector<bool>& dead, bool allow_relu, bool& relu, int& relu_index,
                TensorQ& q) {
  relu = false;
  relu_index = -1;
  const int next = single_consumer(g, value);
  if (next < 0 || dead[static_cast<size_t>(next)]) return -1;
  const Node& n = g.nodes[static_cast<size_t>(next)];
  if (allow_relu && is_op(n, "Relu") && n.outputs.size() == 1) {
    relu = true;
    relu_index = next;
    return q_after(g, n.outputs[0], dead, q);
  }
  return q_after(g, value, dead, q);
}

std::string base_name(const Graph& g, const Node& n) { return n.name.empty() ? g.value_name(n.outputs[0]) : n.name; }

// Unary element-wise ops whose DequantizeLinear -> op -> QuantizeLinear unit
// becomes a table lookup.
bool lookup_op(const Node& n) {
  static const char* const kOps[] = {"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                                     "Clip", "Elu",       "Selu",    "Gelu",        "Exp",       "Neg",
                                     "Abs",  "Softplus",  "Identity"};
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return false;
  for (const char* op : kOps)
    if (n.op_type == op) return true;
  return false;
}

// The 256 outputs of the unit DQ -> f [-> Q] for the input bytes 0..255 (as
// the input type's codes), run through the float kernels themselves (q
// null: f's float values); an undefined tensor when a kernel refuses them.
Tensor unit_table(const Graph& g, const Node& dq, const Node& f, const Node* q, DataType x_type) {
  Tensor codes(x_type, Shape{256});
  auto* c = static_cast<uint8_t*>(codes.raw_mutable_data());
  for (int b = 0; b < 256; ++b) c[b] = static_cast<uint8_t>(b);
  auto constant = [&](int v) { return v >= 0 ? *g.initializer(v) : Tensor(); };
  try {
    std::vector<Tensor> x = {codes, constant(dq.inputs[1]), constant(dq.inputs[2])};
    std::vector<Tensor> v = kernels::run_kernel_once(dq.op_type, dq.opset, dq.attrs, std::move(x));
    std::vector<Tensor> fin = {v.at(0)};
    for (size_t s = 1; s < f.inputs.size(); ++s) fin.push_back(constant(f.inputs[s]));
    v = kernels::run_kernel_once(f.op_type, f.opset, f.attrs, std::move(fin));
    if (!q) {
      if (!v.at(0).defined() || v[0].dtype() != DataType::kFloat32 || v[0].numel() != 256) return Tensor();
      return v[0].reshaped(Shape{256});
    }
    std::vector<Tensor> qin = {v.at(0), constant(q->inputs[1]), constant(q->inputs[2])};
    v = kernels::run_kernel_once(q->op_type, q->opset, q->attrs, std::move(qin));
    if (!v.at(0).defined() || !is_q8(v[0].dtype()) || v[0].numel() != 256) return Tensor();
    return v[0].reshaped(Shape{256});
  } catch (const Error&) {
    return Tensor();
  }
}

// The 256 outputs of Q(Mul(f(DQ(b)), DQ(b))) for the input bytes b (the
// Mul's operands in the graph's order, f's output operand k), through the
// float kernels: a gate whose gated tensor is its own input (SiLU, x *
// Sigmoid(x)) is a function of one byte. Undefined when a kernel refuses.
Tensor self_gate_table(const Graph& g, const Node& dq, const Node& f, const Node& mul, int k, const Node& q,
                       DataType x_type) {
  const Tensor gate = unit_table(g, dq, f, nullptr, x_type);
  if (!gate.defined()) return Tensor();
  Tensor codes(x_type, Shape{256});
  auto* c = static_cast<uint8_t*>(codes.raw_mutable_data());
  for (int b = 0; b < 256; ++b) c[b] = static_cast<uint8_t>(b);
  auto constant = [&](int v) { return v >= 0 ? *g.initializer(v) : Tensor(); };
  try {
    std::vector<Tensor> v =
        kernels::run_kernel_once(dq.op_type, dq.opset, dq.attrs, {codes, constant(dq.inputs[1]), constant(dq.inputs[2])});
    std::vector<Tensor> operands = {v.at(0), v.at(0)};
    operands[static_cast<size_t>(k)] = gate;
    v = kernels::run_kernel_once(mul.op_type, mul.opset, mul.attrs, std::move(operands));
    v = kernels::run_kernel_once(q.op_type, q.opset, q.attrs, {v.at(0), constant(q.inputs[1]), constant(q.inputs[2])});
    if (!v.at(0).defined() || v[0].dtype() != x_type || v[0].numel() != 256) return Tensor();
    return v[0].reshaped(Shape{256});
  } catch (const Error&) {
    return Tensor();
  }
}

// A lookup op reading only constants besides its input 0.
bool constant_rest(const Graph& g, const Node& f) {
  for (size_t s = 1; s < f.inputs.size(); ++s)
    if (f.inputs[s] >= 0 && !g.is_initializer(f.inputs[s])) return false;
  return true;
}

// A constant `table` as a new initializer named after `base`.
int add_table(Graph& g, const std::string& base, const Tensor& table) {
  const int t = fresh_value(g, base);
  g.initializers[t] = table;
  return t;
}

// Node `at` replaced by spindle.`op` (opset 1, the node's name) reading
// `inputs`, writing `output`.
void place_spindle_node(Graph& g, size_t at, const char* op, std::vector<int> inputs, int output) {
  Node n;
  n.name = g.nodes[at].name;
  n.op_type = op;
  n.domain = "spindle";
  n.opset = 1;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  g.nodes[at] = std::move(n);
  g.reindex(static_cast<int>(at));
}

// Removes the DequantizeLinear nodes no one reads any more; returns how many.
int remove_unread_dequantizes(Graph& g) {
  g.invalidate_uses();
  std::vector<bool> unread(g.nodes.size(), false);
  int removed = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (!is_op(n, "DequantizeLinear") || n.outputs.size() != 1 || g.is_graph_output(n.outputs[0])) continue;
    bool read = false;
    for (int c : g.consumers(n.outputs[0], 2)) read = read || !unread[static_cast<size_t>(c)];
    if (read) continue;
    unread[i] = true;
    ++removed;
  }
  g.compact(unread);
  return removed;
}

// Node i becomes `f`, whose output is the QuantizeLinear qi's (and the Relu
// between them, relu_index, goes with it).
void replace_unit(Graph& g, size_t i, Node f, int qi, int relu_index, std::vector<bool>& dead) {
  f.name = g.nodes[i].name;
  f.outputs = {g.nodes[static_cast<size_t>(qi)].outputs[0]};
  dead[static_cast<size_t>(qi)] = true;
  if (relu_index >= 0) dead[static_cast<size_t>(relu_index)] = true;
  g.nodes[i] = std::move(f);
  g.reindex(static_cast<int>(i));
}

// DQ(x), DQ(w) [, DQ(bias)] -> Conv [-> Relu] -> Q as QLinearConv.
bool fuse_conv(Graph& g, size_t i, std::vector<bool>& dead) {
  const Node& n = g.nodes[i];
  if (n.inputs.size() != 2 && n.inputs.size() != 3) return false;
  TensorQ x, y;
  WeightQ w;
  if (!activation_dq(g, n.inputs[0], dead, x) || !weight_dq(g, n.inputs[1], dead, 0, w)) return false;
  if (w.w->rank() < 3) return false;
  const int64_t m = w.w->dim(0);
  int bias = -1;
  if (n.inputs.size() == 3 && n.inputs[2] >= 0) {
    bias = bias_dq(g, n.inputs[2], dead, x.s, w.s, m);
    if (bias < 0 && g.is_initializer(n.inputs[2])) {  // a float bias (not behind a DequantizeLinear)
      TensorQ y_probe;
      bool relu_probe = false;
      int relu_probe_index = -1;
      if (relu_then_q(g, n.outputs[0], dead, true, relu_probe, relu_probe_index, y_probe) < 0) return false;
      bias = quantized_float_bias(g, n.inputs[2], x.s, w.s, m, base_name(g, n));
    }
    if (bias < 0) return false;
  }
  bool relu = false;
  int relu_index = -1;
  const int qi = relu_then_q(g, n.outputs[0], dead, true, relu, relu_index, y);
  if (qi < 0) return false;
  Node f;
  f.op_type = "QLinearConv";
  f.opset = 10;
  f.attrs = n.attrs;
  if (relu) f.attrs.set("activation", std::string("Relu"));
  f.inputs = {x.data, x.scale, x.zp, w.data, w.scale, zero_point_for(g, w, base_name(g, n)), y.scale, y.zp};
  if (bias >= 0) f.inputs.push_back(bias);
  replace_unit(g, i, std::move(f), qi, relu_index, dead);
  return true;
}

// DQ(a), DQ(b) -> Add [-> Relu] -> Q as com.microsoft QLinearAdd.
bool fuse_add(Graph& g, size_t i, std::vector<bool>& dead) {
  const Node& n = g.nodes[i];
  if (n.inputs.size() != 2) return false;
  TensorQ a, b, y;
  if (!activation_dq(g, n.inputs[0], dead, a) || !activation_dq(g, n.inputs[1], dead, b) || a.type != b.type)
    return false;
  bool relu = false;
  int relu_index = -1;
  const int qi = relu_then_q(g, n.outputs[0], dead, true, relu, relu_index, y);
  if (qi < 0 || y.type != a.type) return false;
  Node f;
  f.op_type = "QLinearAdd";
  f.domain = "com.microsoft";
  f.opset = 1;
  if (relu) f.attrs.set("activation", std::string("Relu"));
  f.inputs = {a.data, a.scale, a.zp, b.data, b.scale, b.zp, y.scale, y.zp};
  replace_unit(g, i, std::move(f), qi, relu_index, dead);
  return true;
}

// DQ(x) -> GlobalAveragePool -> Q as com.microsoft QLinearGlobalAveragePool.
bool fuse_pool(Graph& g, size_t i, std::vector<bool>& dead) {
  const Node& n = g.nodes[i];
  if (n.inputs.size() != 1) return false;
  TensorQ x, y;
  if (!activation_dq(g, n.inputs[0], dead, x)) return false;
  const int qi = q_after(g, n.outputs[0], dead, y);
  if (qi < 0 || y.type != x.type) return false;
  Node f;
  f.op_type = "QLinearGlobalAveragePool";
  f.domain = "com.microsoft";
  f.opset = 1;
  f.attrs.set("channels_last", int64_t{0});
  f.inputs = {x.data, x.scale, x.zp, y.scale, y.zp};
  replace_unit(g, i, std::move(f), qi, -1, dead);
  return true;
}

// DQ(x), DQ(w) [, DQ(bias)] -> Gemm (alpha = beta = 1, A not transposed) -> Q
// as com.microsoft QGemm.
bool fuse_gemm(Graph& g, size_t i, std::vector<bool>& dead) {
  const Node& n = g.nodes[i];
  if (n.inputs.size() != 2 && n.inputs.size() != 3) return false;
  if (n.attrs.get_int("transA", 0) != 0 || n.attrs.get_float("alpha", 1.0f) != 1.0f ||
      n.attrs.get_float("beta", 1.0f) != 1.0f)
    return false;
  const bool trans_b = n.attrs.get_int("transB", 0) != 0;
  TensorQ x, y;
  WeightQ w;
  if (!activation_dq(g, n.inputs[0], dead, x) || !weight_dq(g, n.inputs[1], dead, trans_b ? 0 : 1, w)) return false;
  if (w.w->rank() != 2) return false;
  const int64_t cols = trans_b ? w.w->dim(0) : w.w->dim(1);
  int bias = -1;
  if (n.inputs.size() == 3 && n.inputs[2] >= 0) {
    bias = bias_dq(g, n.inputs[2], dead, x.s, w.s, cols);
    if (bias < 0) return false;
  }
  const int qi = q_after(g, n.outputs[0], dead, y);
  if (qi < 0) return false;
  Node f;
  f.op_type = "QGemm";
  f.domain = "com.microsoft";
  f.opset = 1;
  f.attrs.set("transB", int64_t{trans_b ? 1 : 0});
  f.inputs = {x.data, x.scale, x.zp, w.data, w.scale, zero_point_for(g, w, base_name(g, n)), bias, y.scale, y.zp};
  replace_unit(g, i, std::move(f), qi, -1, dead);
  return true;
}

// DQ(x0), DQ(x1), ... -> Concat -> Q. With every input quantized as the
// output: the Concat of the 8-bit tensors (exact); else com.microsoft
// QLinearConcat, which requantizes each input as DQ then Q do (ONNX
// Runtime's quantizer gives each input and the output its own parameters).
bool fuse_concat(Graph& g, size_t i, std::vector<bool>& dead) {
  const Node& n = g.nodes[i];
  if (n.inputs.empty()) return false;
  std::vector<TensorQ> xs(n.inputs.size());
  for (size_t k = 0; k < n.inputs.size(); ++k)
    if (!activation_dq(g, n.inputs[k], dead, xs[k]) || xs[k].type != xs[0].type) return false;
  TensorQ y;
  const int qi = q_after(g, n.outputs[0], dead, y);
  if (qi < 0 || y.type != xs[0].type) return false;
  Node f;
  f.attrs = n.attrs;
  if (std::all_of(xs.begin(), xs.end(), [&](const TensorQ& x) { return same(x, y); })) {
    f.op_type = "Concat";
    f.opset = n.opset;
    for (const TensorQ& x : xs) f.inputs.push_back(x.data);
  } else {
    f.op_type = "QLinearConcat";
    f.domain = "com.microsoft";
    f.opset = 1;
    f.inputs = {y.scale, y.zp};
    for (const TensorQ& x : xs) f.inputs.insert(f.inputs.end(), {x.data, x.scale, x.zp});
  }
  replace_unit(g, i, std::move(f), qi, -1, dead);
  return true;
}

// DQ -> MaxPool / Reshape / Flatten / Transpose / Squeeze / Unsqueeze /
// Slice -> Q with the same quantization: the op moved onto the 8-bit
// tensor (its other inputs, shapes and bounds, stay).
bool move_onto_quantized(Graph& g, size_t i, std::vector<bool>& dead) {
  Node& n = g.nodes[i];
  if (n.inputs.empty() || (is_op(n, "MaxPool") && n.attrs.get_int("storage_order", 0) != 0)) return false;
  TensorQ x, y;
  if (!activation_dq(g, n.inputs[0], dead, x)) return false;
  const int qi = q_after(g, n.outputs[0], dead, y);
  if (qi < 0 || !same(x, y)) return false;
  n.inputs[0] = x.data;
  n.outputs[0] = g.nodes[static_cast<size_t>(qi)].outputs[0];
  dead[static_cast<size_t>(qi)] = true;
  g.reindex(static_cast<int>(i));
  return true;
}

// Shape(DQ(x)) as Shape(x): a DequantizeLinear keeps its input's shape,
// and a DequantizeLinear read only for its shape (ShuffleNet's split bounds
// come from the channel count) then goes.
bool shape_of_quantized(Graph& g, size_t i, const std::vector<bool>& dead) {
  Node& n = g.nodes[i];
  const int d = n.inputs.empty() ? -1 : dq_of(g, n.inputs[0], dead);
  if (d < 0) return false;
  n.inputs[0] = g.nodes[static_cast<size_t>(d)].inputs[0];
  g.reindex(static_cast<int>(i));
  return true;
}

}  // namespace

void fuse_qdq(Graph& g, PassRecord& record, const LoadLimits& limits, Status& status) {
  std::vector<bool> dead(g.nodes.size(), false);
  int convs = 0, adds = 0, pools = 0, gemms = 0, concats = 0, moves = 0;
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    if (dead[i]) continue;
    const Node& n = g.nodes[i];
    if (!n.domain.empty() || n.outputs.size() != 1 || n.attrs.has("activation")) {
      // MaxPool with an unused Indices output is handled below too.
      if (!(is_op(n, "MaxPool") && n.outputs.size() == 2 && n.outputs[1] < 0)) continue;
    }
    const std::string op = n.op_type;
    if (op == "Conv") convs += fuse_conv(g, i, dead);
    else if (op == "Add") adds += fuse_add(g, i, dead);
    else if (op == "GlobalAveragePool") pools += fuse_pool(g, i, dead);
    else if (op == "Gemm") gemms += fuse_gemm(g, i, dead);
    else if (op == "Concat") concats += fuse_concat(g, i, dead);
    else if (op == "MaxPool" || op == "Reshape" || op == "Flatten" || op == "Transpose" || op == "Squeeze" ||
             op == "Unsqueeze" || op == "Slice")
      moves += move_onto_quantized(g, i, dead);
    else if (op == "Shape") moves += shape_of_quantized(g, i, dead);
  }
  g.compact(dead);
  const int removed = remove_unread_dequantizes(g);
  record.count = convs + adds + pools + gemms + concats + moves;
  record.detail = fmt::format("{} QLinearConv, {} QLinearAdd, {} QLinearGlobalAveragePool, {} QGemm, {} Concat, {} on "
                              "quantized tensors; {} DequantizeLinear removed",
                              convs, adds, pools, gemms, concats, moves, removed);
  // Weights whose units were not fused: folded to float now (deferred by
  // constant folding while this pass was to run).
  PassRecord folded;
  status = fold_constants(g, folded, limits, false);
}

// DequantizeLinear -> unary op -> QuantizeLinear (per-tensor constant
// scales and zero points, the op's other inputs constant, the float values
// read by nothing else) as one spindle.QLinearLookup(X, table): the table
// holds the unit's result for each of the 256 input codes, computed now by
// the float kernels the unit would run, so the lookup gives the same bits.
void fuse_qdq_lookups(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    Node& f = g.nodes[i];
    if (dead[i] || !lookup_op(f)) continue;
    if (!constant_rest(g, f)) continue;
    TensorQ x, y;
    const int d = dq_of(g, f.inputs[0], dead);
    if (d < 0 || !per_tensor(g, g.nodes[static_cast<size_t>(d)], x)) continue;
    if (single_consumer(g, f.inputs[0]) != static_cast<int>(i)) continue;
    const int qi = q_after(g, f.outputs[0], dead, y);
    if (qi < 0) continue;
    const Tensor table = unit_table(g, g.nodes[static_cast<size_t>(d)], f, &g.nodes[static_cast<size_t>(qi)], x.type);
    if (!table.defined()) continue;
    const int t = add_table(g, base_name(g, f) + "/lookup_table", table);
    place_spindle_node(g, i, "QLinearLookup", {x.data, t}, g.nodes[static_cast<size_t>(qi)].outputs[0]);
    dead[static_cast<size_t>(qi)] = true;
    dead[static_cast<size_t>(d)] = true;
    ++record.count;
  }
  g.compact(dead);
  if (record.count) g.opsets.emplace("spindle", 1);
}

// Squeeze-excite scaling between quantized tensors: Mul(f(DQ(g)), DQ(x))
// -> Q (either operand order), f a unary op of QLinearLookupFusion with
// constant other inputs, the DequantizeLinears and Q per tensor with
// constant parameters, x and the output of one type, f's output and the
// Mul's read by nothing else: one spindle.QLinearGateMul(x, x_scale,
// x_zero_point, g, table, y_scale, y_zero_point), the table holding
// f(DQ(b)) for each byte b of g as the float kernels compute it; the kernel
// then computes the Mul and the Q as their kernels do (the same bits), with
// any broadcast of g against x. When g is x itself (SiLU: x * Sigmoid(x),
// the same 8-bit tensor and parameters) the whole unit is one
// spindle.QLinearLookup instead, its table Q(DQ(b) * f(DQ(b))) from the
// kernels.
void fuse_qdq_gates(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    const Node& mul = g.nodes[i];
    // (Mul before opset 7 broadcast by its attributes, not numpy's rules.)
    if (dead[i] || !is_op(mul, "Mul") || mul.opset < 7 || mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
        mul.inputs[0] < 0 || mul.inputs[1] < 0 || mul.inputs[0] == mul.inputs[1])
      continue;
    for (int k = 0; k < 2; ++k) {
      const int fv = mul.inputs[static_cast<size_t>(k)], xv = mul.inputs[static_cast<size_t>(1 - k)];
      const int fi = g.producer(fv);
      if (fi < 0 || dead[static_cast<size_t>(fi)] || single_consumer(g, fv) != static_cast<int>(i)) continue;
      const Node& f = g.nodes[static_cast<size_t>(fi)];
      if (!lookup_op(f) || !constant_rest(g, f)) continue;
      TensorQ gq, x, y;
      const int gd = dq_of(g, f.inputs[0], dead);
      if (gd < 0 || !per_tensor(g, g.nodes[static_cast<size_t>(gd)], gq) || !activation_dq(g, xv, dead, x)) continue;
      const int qi = q_after(g, mul.outputs[0], dead, y);
      if (qi < 0 || y.type != x.type) continue;
      if (gq.data == x.data && same(gq, x)) {  // x * f(x): one table for the whole unit
        const Tensor table = self_gate_table(g, g.nodes[static_cast<size_t>(gd)], f, mul, k,
                                             g.nodes[static_cast<size_t>(qi)], x.type);
        if (table.defined()) {
          const int t = add_table(g, base_name(g, mul) + "/lookup_table", table);
          place_spindle_node(g, i, "QLinearLookup", {x.data, t}, g.nodes[static_cast<size_t>(qi)].outputs[0]);
          dead[static_cast<size_t>(qi)] = true;
          dead[static_cast<size_t>(fi)] = true;
          ++record.count;
          break;
        }
      }
      const Tensor table = unit_table(g, g.nodes[static_cast<size_t>(gd)], f, nullptr, gq.type);
      if (!table.defined()) continue;
      const int t = add_table(g, base_name(g, mul) + "/gate_table", table);
      place_spindle_node(g, i, "QLinearGateMul", {x.data, x.scale, x.zp, gq.data, t, y.scale, y.zp},
                         g.nodes[static_cast<size_t>(qi)].outputs[0]);
      dead[static_cast<size_t>(qi)] = true;
      dead[static_cast<size_t>(fi)] = true;
      ++record.count;
      break;
    }
  }
  g.compact(dead);
  if (!record.count) return;
  g.opsets.emplace("spindle", 1);
  remove_unread_dequantizes(g);
}

}  // namespace spindle::graph::passes
