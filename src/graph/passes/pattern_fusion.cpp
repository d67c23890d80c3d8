// pattern_fusion.cpp — exported patterns made one node: erf and tanh GELU,
// layer normalization before opset 17, RMS normalization, MatMul by constant
// weights + bias.
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

bool near(float a, float b) { return std::fabs(a - b) <= 1e-5f * std::fabs(b); }

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

// The node a normalization fusion puts in place of its chain's last node:
// `op` over the last axis with epsilon eps, reading `inputs`, writing
// last's output.
Node last_axis_norm(const Graph& g, const Node& last, const char* op, int opset, float eps, std::vector<int> inputs) {
  Node n;
  n.name = (last.name.empty() ? g.value_name(last.outputs[0]) : last.name) + "/" + op;
  n.op_type = op;
  n.opset = opset;
  n.attrs.set("axis", int64_t{-1});
  n.attrs.set("epsilon", eps);
  n.inputs = std::move(inputs);
  n.outputs = {last.outputs[0]};
  return n;
}

}  // namespace

// Erf-form GELU as exporters write it: Div(x, sqrt 2) (or Mul(x, 1/sqrt 2))
// -> Erf -> Add 1 -> Mul x -> Mul 0.5, every intermediate read once, becomes
// Gelu(x) (com.microsoft, as ONNX Runtime fuses it; ONNX's own Gelu is
// opset 20).
void fuse_gelu(Graph& g, PassRecord& record) {
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
    ++record.count;
  }
  g.compact(dead);
}

// GELU's tanh approximation as exporters write it,
//   0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// in any arrangement of Add / Sub / Mul / Div / Pow over scalar constants
// (x^3 as Pow(x, 3) or Mul(x, Mul(x, x)), the inner sum factored as
// x (1 + 0.044715 x^2), the 0.5 on either side of the product), every
// intermediate read once, becomes Gelu(x, approximate = "tanh") (opset 20).
// The chains are compared as polynomials, so operand order does not matter.
void fuse_gelu_tanh(Graph& g, PassRecord& record) {
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
      ++record.count;
      break;
    }
  }
  g.compact(dead);
}

// Layer normalization as exporters write it before opset 17:
//   m = ReduceMean(x, -1); d = Sub(x, m); v = ReduceMean(Pow(d, 2), -1);
//   y = Div(d, Sqrt(Add(v, eps))) * gamma + beta
// becomes LayerNormalization(x, gamma, beta, axis -1, epsilon eps).
void fuse_layer_norm(Graph& g, PassRecord& record) {
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
    ab = last_axis_norm(g, ab, "LayerNormalization", 17, eps, {x, gamma_id, beta_id});
    g.reindex(add_beta);
    ++record.count;
  }
  g.compact(dead);
}

// RMS normalization as exporters write it (LLaMA-style decoders):
//   s = Sqrt(Add(ReduceMean(Pow(x, 2), -1), eps))
//   y = Mul(Mul(x, Div(1, s)), gamma), or Reciprocal(s) for Div(1, s), or
//       Mul(Div(x, s), gamma)
// (Mul's and Add's operands in either order, each intermediate read once)
// becomes RMSNormalization(x, gamma, axis -1, epsilon eps), opset 23.
void fuse_rms_norm(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t r = 0; r < g.nodes.size(); ++r) {
    const Node& pw = g.nodes[r];
    if (pw.op_type != "Pow" || !pw.domain.empty() || dead[r] || pw.inputs.size() != 2 ||
        !near(single_value(g, pw.inputs[1]), 2.0f))
      continue;
    const int x = pw.inputs[0];
    const int mean = only_reader(g, pw.outputs[0], "ReduceMean", dead);
    if (mean < 0 || !reduces_last_axis(g, g.nodes[static_cast<size_t>(mean)])) continue;
    const int mean_out = g.nodes[static_cast<size_t>(mean)].outputs[0];
    const int add_eps = only_reader(g, mean_out, "Add", dead);
    if (add_eps < 0) continue;
    const Node& ae = g.nodes[static_cast<size_t>(add_eps)];
    const float eps = single_value(g, ae.inputs[0] == mean_out ? ae.inputs[1] : ae.inputs[0]);
    if (!(eps >= 0)) continue;
    const int sqrt = only_reader(g, ae.outputs[0], "Sqrt", dead);
    if (sqrt < 0) continue;
    const int s = g.nodes[static_cast<size_t>(sqrt)].outputs[0];
    const int reader = single_consumer(g, s);
    if (reader < 0 || dead[static_cast<size_t>(reader)]) continue;
    const Node& rd = g.nodes[static_cast<size_t>(reader)];
    if (!rd.domain.empty()) continue;
    std::vector<int> fused = {static_cast<int>(r), mean, add_eps, sqrt, reader};
    int normalized = reader;  // the node writing x / s
    if (!(rd.op_type == "Div" && rd.inputs[0] == x && rd.inputs[1] == s)) {
      const bool inverse = rd.op_type == "Reciprocal" ||
                           (rd.op_type == "Div" && rd.inputs[1] == s && single_value(g, rd.inputs[0]) == 1.0f);
      if (!inverse) continue;
      const int inv = rd.outputs[0];
      normalized = only_reader(g, inv, "Mul", dead);
      if (normalized < 0) continue;
      const Node& mx = g.nodes[static_cast<size_t>(normalized)];
      if (!((mx.inputs[0] == x && mx.inputs[1] == inv) || (mx.inputs[1] == x && mx.inputs[0] == inv))) continue;
      fused.push_back(normalized);
    }
    const int norm_out = g.nodes[static_cast<size_t>(normalized)].outputs[0];
    const int mul = only_reader(g, norm_out, "Mul", dead);
    if (mul < 0) continue;
    Node& ml = g.nodes[static_cast<size_t>(mul)];
    const Tensor* gamma = constant_operand(g, ml, norm_out);
    if (!gamma || gamma->rank() != 1) continue;
    const int gamma_id = ml.inputs[0] == norm_out ? ml.inputs[1] : ml.inputs[0];
    for (int i : fused) dead[static_cast<size_t>(i)] = true;
    ml = last_axis_norm(g, ml, "RMSNormalization", 23, eps, {x, gamma_id});
    g.reindex(mul);
    ++record.count;
  }
  g.compact(dead);
}

// MatMul with a constant rank-2 B (weights, K x N) followed by Add of a
// constant float [N] bias, the MatMul's output read by that Add only,
// becomes one MatMul with the bias as a third input (the kernel adds it to
// each output block while the block is in cache).
void fuse_matmul_bias(Graph& g, PassRecord& record) {
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
    ++record.count;
  }
  g.compact(dead);
}

// MatMul with a constant rank-2 B (weights; a fused bias allowed) whose
// output only an Add or a Mul reads, its other operand r computed (not a
// constant): r becomes the
// MatMul's fourth input, attribute fused_op "Add" or "Mul" (a decoder's
// residual connection; SwiGLU's product of the up projection with the gated
// one). The kernel applies it to each output block while the block is in
// cache, with the same single rounding as the separate node, so no bit
// changes; an r whose shape differs from the output's takes the separate
// node's path with broadcasting at run time.
void fuse_matmul_binary(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (dead[i] || mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() < 2 || mm.inputs.size() > 3 ||
        mm.outputs.size() != 1 || mm.attrs.has("activation") || mm.attrs.has("fused_op"))
      continue;
    const Tensor* w = g.initializer(mm.inputs[1]);
    if (!w || w->dtype() != DataType::kFloat32 || w->rank() != 2) continue;
    const int reader = single_consumer(g, mm.outputs[0]);
    if (reader < 0 || dead[static_cast<size_t>(reader)]) continue;
    const Node& op = g.nodes[static_cast<size_t>(reader)];
    if ((op.op_type != "Add" && op.op_type != "Mul") || !op.domain.empty() || op.opset < 7 || op.inputs.size() != 2 ||
        op.outputs.size() != 1 || op.inputs[0] == op.inputs[1] || op.inputs[0] < 0 || op.inputs[1] < 0)
      continue;
    // A constant operand is a bias or a scale (MatMulAddFusion, ActivationFusion).
    const int r = op.inputs[0] == mm.outputs[0] ? op.inputs[1] : op.inputs[0];
    if (g.initializer(r)) continue;
    Node fused = mm;
    fused.inputs.resize(3, -1);
    fused.inputs.push_back(r);
    fused.attrs.set("fused_op", op.op_type);
    fused.outputs = {op.outputs[0]};
    dead[i] = true;
    g.nodes[static_cast<size_t>(reader)] = std::move(fused);
    g.reindex(reader);
    ++record.count;
  }
  g.compact(dead);
}

namespace {

bool is_constant(const Graph& g, int v) {
  return v >= 0 && g.initializer(v) &&
         std::find(g.overridable.begin(), g.overridable.end(), v) == g.overridable.end();
}

// Input i of n when it is a constant (not one a run may replace), absent (-1
// or past the end) when `optional`.
bool constant_or_absent(const Graph& g, const Node& n, size_t i, bool optional) {
  if (i >= n.inputs.size() || n.inputs[i] < 0) return optional;
  return is_constant(g, n.inputs[i]);
}

// The kinds of products MatMulSiblingFusion groups.
enum class Sibling { kNone, kFloat, kDynamicQuantize, kNBits };

Sibling sibling_kind(const Node& n) {
  if (n.op_type == "MatMul" && n.domain.empty()) return Sibling::kFloat;
  if (n.domain != "com.microsoft") return Sibling::kNone;
  if (n.op_type == "DynamicQuantizeMatMul") return Sibling::kDynamicQuantize;
  if (n.op_type == "MatMulNBits") return Sibling::kNBits;
  return Sibling::kNone;
}

// What members of one group share (K, and for MatMulNBits bits, block_size
// and accuracy_level), or empty when `n` is no member: a float MatMul by a
// constant 2-D B with at most a constant bias vector (MatMulAddFusion) and
// nothing else fused; a DynamicQuantizeMatMul by a constant 2-D 8-bit B with
// constant scales, zero points and bias and at most an activation without
// parameters (ActivationFusion); a MatMulNBits with constant B, scales,
// zero points and bias and no g_idx. (After sibling_key's checks; throws
// on an attribute of the wrong type.)
std::vector<int64_t> member_key(const Graph& g, const Node& n, Sibling kind) {
  if (!n.attrs.get_floats("activation_params", {}).empty()) return {};
  const Tensor* w = g.initializer(n.inputs[1]);
  switch (kind) {
    case Sibling::kFloat: {
      if (n.inputs.size() > 3 || n.attrs.has("activation") || w->dtype() != DataType::kFloat32 || w->rank() != 2 ||
          !constant_or_absent(g, n, 2, true))
        return {};
      const Tensor* bias = n.inputs.size() == 3 ? g.initializer(n.inputs[2]) : nullptr;
      if (bias && (bias->dtype() != DataType::kFloat32 || bias->rank() != 1 || bias->dim(0) != w->dim(1))) return {};
      return {w->dim(0)};
    }
    case Sibling::kDynamicQuantize:
      if (n.inputs.size() > 5 || w->rank() != 2 || (w->dtype() != DataType::kInt8 && w->dtype() != DataType::kUInt8) ||
          !constant_or_absent(g, n, 2, false) || !constant_or_absent(g, n, 3, true) || !constant_or_absent(g, n, 4, true))
        return {};
      (void)n.attrs.get_string("activation", "");  // of the type add_member reads
      return {w->dim(0)};
    case Sibling::kNBits:
      if (n.inputs.size() > 6 || n.attrs.has("activation") || !n.attrs.has("K") || !n.attrs.has("N") ||
          !n.attrs.has("block_size") || !constant_or_absent(g, n, 2, false) || !constant_or_absent(g, n, 3, true) ||
          (n.inputs.size() > 4 && n.inputs[4] >= 0) || !constant_or_absent(g, n, 5, true))
        return {};
      (void)n.attrs.get_int("N");  // of the type add_member reads
      return {n.attrs.get_int("K"), n.attrs.get_int("bits", 4), n.attrs.get_int("block_size"),
              n.attrs.get_int("accuracy_level", 0)};
    case Sibling::kNone:
      break;
  }
  return {};
}

// The key of n as a member (member_key), or empty.
std::vector<int64_t> sibling_key(const Graph& g, const Node& n, Sibling kind) {
  if (kind == Sibling::kNone || n.outputs.size() != 1 || n.inputs.size() < 2 || n.inputs[0] < 0 ||
      n.attrs.has("activation_affine") || n.attrs.has("fused_op") || !is_constant(g, n.inputs[1]))
    return {};
  // Attributes of a type the kernel would refuse leave the node alone (its
  // own kernel names the problem).
  try {
    return member_key(g, n, kind);
  } catch (const Error&) {
    return {};
  }
}

// Inputs and outputs of member m appended to the group node f.
void add_member(const Node& m, Sibling kind, Node& f, std::vector<int>& biases, std::vector<std::string>& acts,
                std::vector<int64_t>& widths) {
  auto input = [&](size_t i) { return i < m.inputs.size() ? m.inputs[i] : -1; };
  switch (kind) {
    case Sibling::kDynamicQuantize:
      for (size_t i = 1; i <= 4; ++i) f.inputs.push_back(input(i));
      acts.push_back(m.attrs.get_string("activation", ""));
      break;
    case Sibling::kNBits:
      for (size_t i : {1, 2, 3, 5}) f.inputs.push_back(input(i));
      widths.push_back(m.attrs.get_int("N"));
      break;
    default:
      f.inputs.push_back(m.inputs[1]);
      biases.push_back(input(2));
      break;
  }
  f.outputs.push_back(m.outputs[0]);
}

}  // namespace

// Products of one A by constant weights of the same K rows (a decoder's
// query / key / value projections; with quantized weights its gate and up
// projections too) become one node at the first member's place
// (sibling_key): float MatMuls one spindle.MatMulGroup (inputs A, the Bs,
// then the biases, absent where a member has none); DynamicQuantizeMatMuls
// one spindle.DynamicQuantizeMatMulGroup (inputs A, then B, b_scale,
// b_zero_point, bias per member; attribute activations); MatMulNBits one
// spindle.MatMulNBitsGroup (inputs A, then B, scales, zero_points, bias per
// member; attributes K, bits, block_size, accuracy_level and N per member).
// The members' blocks run in one parallel loop (gemm.cpp, dequantized_matmul.cpp,
// matmul_nbits.cpp), each as it would alone, so no bit changes; A is packed
// or quantized once.
void fuse_matmul_siblings(Graph& g, PassRecord& record) {
  static const char* const kOps[] = {"", "MatMulGroup", "DynamicQuantizeMatMulGroup", "MatMulNBitsGroup"};
  std::vector<bool> dead(g.nodes.size(), false), grouped(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Sibling kind = grouped[i] ? Sibling::kNone : sibling_kind(g.nodes[i]);
    const std::vector<int64_t> key = sibling_key(g, g.nodes[i], kind);
    if (key.empty()) continue;
    const int a = g.nodes[i].inputs[0];
    std::vector<int> members;
    for (int c : g.consumers(a)) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (!grouped[static_cast<size_t>(c)] && n.inputs[0] == a && sibling_kind(n) == kind && sibling_key(g, n, kind) == key)
        members.push_back(c);
    }
    if (members.size() < 2 || members[0] != static_cast<int>(i)) continue;
    Node f;
    f.op_type = kOps[static_cast<int>(kind)];
    f.name = g.nodes[i].name + "/" + f.op_type;
    f.domain = "spindle";
    f.opset = 1;
    f.inputs.push_back(a);
    std::vector<int> biases;
    std::vector<std::string> acts;
    std::vector<int64_t> widths;
    for (int m : members) {
      add_member(g.nodes[static_cast<size_t>(m)], kind, f, biases, acts, widths);
      grouped[static_cast<size_t>(m)] = dead[static_cast<size_t>(m)] = true;
    }
    f.inputs.insert(f.inputs.end(), biases.begin(), biases.end());
    if (kind == Sibling::kDynamicQuantize) f.attrs.set("activations", acts);
    if (kind == Sibling::kNBits) {
      for (const char* name : {"K", "bits", "block_size", "accuracy_level"})
        if (g.nodes[i].attrs.has(name)) f.attrs.set(name, g.nodes[i].attrs.get_int(name));
      f.attrs.set("N", widths);
    }
    while (f.inputs.back() < 0) f.inputs.pop_back();  // trailing absent inputs
    dead[i] = false;
    g.nodes[i] = std::move(f);
    g.reindex(static_cast<int>(i));
    record.count += static_cast<int>(members.size());
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
