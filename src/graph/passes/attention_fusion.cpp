// attention_fusion.cpp — scaled dot-product attention (MatMul, scale, mask
// Add, Softmax, MatMul and the head Transposes around them) as one
// spindle.FusedAttention working block by block.
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

// The scaled dot-product attention as exporters write it becomes one
// spindle.FusedAttention (kernels/nn/attention.cpp, which lists the chain):
// Softmax between two MatMuls, the scores' MatMul optionally followed by a
// Mul / Div by a scalar constant and either an Add of a mask or a Where
// choosing between the scores and a scalar constant (GPT-2's causal mask:
// Where(causal, scores, lowest)); Q and K optionally
// through a Transpose and a scalar Mul / Div, V through a Transpose, the
// output's only reader a Transpose. Every intermediate value is read once.
struct AttentionChain {
  int q = -1, k = -1, v = -1, mask = -1;
  // mask is Where's condition: 1 = Where(mask, scores, fill), 2 = Where(mask, fill, scores).
  int64_t mask_where = 0;
  float mask_fill = 0;
  std::vector<int64_t> q_perm, k_perm, v_perm, out_perm;
  int64_t q_op = 0, k_op = 0, s_op = 0;
  float q_c = 1, k_c = 1, s_c = 1;
  // K / V through Unsqueeze -> Expand -> Reshape (heads repeated): the
  // Unsqueeze axis (0 when absent), the Expand and Reshape shape values.
  int64_t k_rep_axis = 0, v_rep_axis = 0;
  int k_expand = -1, k_reshape = -1, v_expand = -1, v_reshape = -1;
  std::vector<int> nodes;  // absorbed, except the last
};

// The heads repeated as exporters write grouped-query attention's repeat_kv:
// x [.., Hkv, S, D] -> Unsqueeze(axis a) -> Expand [.., Hkv, n, S, D] ->
// Reshape [.., Hkv * n, S, D], `value` (the Reshape's output) read only by
// node `reader`, each intermediate read only by the next. The shapes may be
// computed at run time: FusedAttention checks there that the Expand
// broadcasts only the new axis and the Reshape merges exactly it with the
// one before (else it runs the three nodes). Gives x, else -1.
int repeated_heads(const Graph& g, int value, int reader, const std::vector<bool>& dead, int64_t& axis, int& expand,
                   int& reshape, std::vector<int>& nodes) {
  auto producer_of = [&](int v, int r, const char* op) {
    const int p = g.producer(v);
    if (p < 0 || dead[static_cast<size_t>(p)] || single_consumer(g, v) != r) return -1;
    const Node& n = g.nodes[static_cast<size_t>(p)];
    return n.op_type == op && n.domain.empty() && n.outputs.size() == 1 ? p : -1;
  };
  const int r = producer_of(value, reader, "Reshape");
  if (r < 0) return -1;
  const Node& rn = g.nodes[static_cast<size_t>(r)];
  if (rn.inputs.size() != 2 || rn.inputs[1] < 0 || rn.attrs.get_int("allowzero", 0) != 0) return -1;
  const int e = producer_of(rn.inputs[0], r, "Expand");
  if (e < 0) return -1;
  const Node& en = g.nodes[static_cast<size_t>(e)];
  if (en.inputs.size() != 2 || en.inputs[1] < 0) return -1;
  const int u = producer_of(en.inputs[0], e, "Unsqueeze");
  if (u < 0) return -1;
  const Node& un = g.nodes[static_cast<size_t>(u)];
  std::vector<int64_t> axes;
  if (un.inputs.size() == 2) {
    const Tensor* t = g.initializer(un.inputs[1]);
    if (!t || t->dtype() != DataType::kInt64 || t->rank() > 1) return -1;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  } else if (un.inputs.size() == 1) {
    axes = un.attrs.get_ints("axes", {});
  }
  if (axes.size() != 1 || un.inputs[0] < 0 || g.is_initializer(un.inputs[0])) return -1;
  axis = axes[0];
  expand = en.inputs[1];
  reshape = rn.inputs[1];
  nodes.insert(nodes.end(), {r, e, u});
  return un.inputs[0];
}

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
  } else if (pn.op_type == "Where" && pn.domain.empty() && pn.inputs.size() == 3 && pn.inputs[0] >= 0) {
    for (int side : {1, 2}) {
      const Tensor* fill = g.initializer(pn.inputs[static_cast<size_t>(3 - side)]);
      const int scores = pn.inputs[static_cast<size_t>(side)];
      if (!fill || fill->dtype() != DataType::kFloat32 || fill->rank() > 1 || fill->numel() != 1 || scores < 0 ||
          scores == pn.inputs[0])
        continue;
      AttentionChain t;
      std::vector<int> nodes{p};
      const int m = scores_from(scores, p, t.s_op, t.s_c, nodes);
      if (m < 0) continue;
      mm1 = m;
      a.mask = pn.inputs[0];
      a.mask_where = side;
      a.mask_fill = fill->data<float>()[0];
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
  size_t before = a.nodes.size();
  a.k = operand_source(g, m1.inputs[1], mm1, dead, a.k_perm, &a.k_op, &a.k_c, a.nodes);
  const int reader_k = a.nodes.size() > before ? a.nodes.back() : mm1;
  const int k_in = repeated_heads(g, a.k, reader_k, dead, a.k_rep_axis, a.k_expand, a.k_reshape, a.nodes);
  if (k_in >= 0) a.k = k_in;
  before = a.nodes.size();
  a.v = operand_source(g, m2.inputs[1], mm2, dead, a.v_perm, nullptr, nullptr, a.nodes);
  const int reader_v = a.nodes.size() > before ? a.nodes.back() : mm2;
  const int v_in = repeated_heads(g, a.v, reader_v, dead, a.v_rep_axis, a.v_expand, a.v_reshape, a.nodes);
  if (v_in >= 0) a.v = v_in;
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

}  // namespace

void fuse_attention(Graph& g, PassRecord& record) {
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
    if (a.mask >= 0 || a.k_expand >= 0 || a.v_expand >= 0) f.inputs.push_back(a.mask);
    if (a.k_expand >= 0 || a.v_expand >= 0)
      f.inputs.insert(f.inputs.end(), {a.k_expand, a.k_reshape, a.v_expand, a.v_reshape});
    if (a.mask_where != 0) {
      f.attrs.set("mask_where", a.mask_where);
      f.attrs.set("mask_fill", a.mask_fill);
    }
    if (a.k_expand >= 0) f.attrs.set("k_repeat_axis", a.k_rep_axis);
    if (a.v_expand >= 0) f.attrs.set("v_repeat_axis", a.v_rep_axis);
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
    ++record.count;
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
