// quant_fusion.cpp — dynamically quantized MatMuls (ONNX Runtime's
// quantize_dynamic format) as one com.microsoft DynamicQuantizeMatMul.
#include <algorithm>
#include <vector>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

// One MatMul of the dynamic format, reading the DynamicQuantizeLinear's
// outputs: the nodes it spans and DynamicQuantizeMatMul's inputs.
struct QuantChain {
  int matmul = -1, cast = -1, scale_mul = -1, mul = -1, add = -1;
  int b = -1, b_scale = -1, b_zero_point = -1, bias = -1, out = -1;
};

bool is_op(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// The chain from MatMulInteger `mi` (A = y, a_zero_point = zp of the
// DynamicQuantizeLinear whose scale is `ys`), or nullopt-like (matmul = -1).
QuantChain match_chain(const Graph& g, int mi, int y, int ys, int yz, const std::vector<bool>& dead) {
  QuantChain c;
  const Node& m = g.nodes[static_cast<size_t>(mi)];
  if (dead[static_cast<size_t>(mi)] || !is_op(m, "MatMulInteger") || m.inputs.size() < 3 || m.inputs.size() > 4 ||
      m.outputs.size() != 1 || m.inputs[0] != y || m.inputs[2] != yz)
    return c;
  const Tensor* b = g.initializer(m.inputs[1]);
  if (!b || (b->dtype() != DataType::kInt8 && b->dtype() != DataType::kUInt8) || b->rank() != 2) return c;
  const int64_t n = b->dim(1);
  int b_zp = -1;
  if (m.inputs.size() == 4 && m.inputs[3] >= 0) {
    const Tensor* z = g.initializer(m.inputs[3]);
    if (!z || z->dtype() != b->dtype() || z->rank() > 1 || (z->numel() != 1 && z->numel() != n)) return c;
    b_zp = m.inputs[3];
  }
  // MatMulInteger -> Cast(float) -> Mul(., Mul(ys, b_scale)) [-> Add(., bias)].
  const int cast = single_consumer(g, m.outputs[0]);
  if (cast < 0 || dead[static_cast<size_t>(cast)]) return c;
  const Node& cn = g.nodes[static_cast<size_t>(cast)];
  if (!is_op(cn, "Cast") || cn.outputs.size() != 1 || cn.attrs.get_int("to", 0) != 1) return c;
  const int cf = cn.outputs[0];
  const int mul = single_consumer(g, cf);
  if (mul < 0 || dead[static_cast<size_t>(mul)]) return c;
  const Node& mn = g.nodes[static_cast<size_t>(mul)];
  if (!is_op(mn, "Mul") || mn.inputs.size() != 2 || mn.outputs.size() != 1 || mn.inputs[0] == mn.inputs[1]) return c;
  const int s = mn.inputs[0] == cf ? mn.inputs[1] : mn.inputs[0];
  const int smul = g.producer(s);
  if (smul < 0 || dead[static_cast<size_t>(smul)] || single_consumer(g, s) != mul) return c;
  const Node& sn = g.nodes[static_cast<size_t>(smul)];
  if (!is_op(sn, "Mul") || sn.inputs.size() != 2 || sn.outputs.size() != 1) return c;
  const int bs = sn.inputs[0] == ys ? sn.inputs[1] : sn.inputs[1] == ys ? sn.inputs[0] : -1;
  const Tensor* bst = bs >= 0 ? g.initializer(bs) : nullptr;
  if (!bst || bst->dtype() != DataType::kFloat32 || bst->rank() > 1 || (bst->numel() != 1 && bst->numel() != n))
    return c;
  c.matmul = mi;
  c.cast = cast;
  c.scale_mul = smul;
  c.mul = mul;
  c.b = m.inputs[1];
  c.b_scale = bs;
  c.b_zero_point = b_zp;
  c.out = mn.outputs[0];
  const int add = only_reader(g, mn.outputs[0], "Add", dead);
  if (add >= 0) {
    const Node& an = g.nodes[static_cast<size_t>(add)];
    const Tensor* bias = constant_operand(g, an, mn.outputs[0]);
    if (bias && bias->rank() == 1 && bias->dim(0) == n && an.inputs[0] != an.inputs[1]) {
      c.add = add;
      c.bias = an.inputs[0] == mn.outputs[0] ? an.inputs[1] : an.inputs[0];
      c.out = an.outputs[0];
    }
  }
  return c;
}

}  // namespace

// DynamicQuantizeLinear(x) -> (y, ys, yz), and for each MatMulInteger(y, B,
// yz[, b_zp]) -> Cast(to float) -> Mul(., Mul(ys, b_scale)) [-> Add(.,
// bias)] with constant int8 / uint8 B (2-D), b_zp, b_scale and bias: each
// MatMul becomes DynamicQuantizeMatMul(x, B, b_scale, b_zp, bias), which
// quantizes x as DynamicQuantizeLinear does and computes the same floats
// (kernels/nn/dequantized_matmul.cpp). Only when every reader of y, ys and yz is such
// a chain (the quantizer shares one DynamicQuantizeLinear between the
// MatMuls reading one activation: each fused node then quantizes x itself)
// and no intermediate is a graph output or read elsewhere.
void fuse_dynamic_quantize_matmul(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t d = 0; d < g.nodes.size(); ++d) {
    const Node& dq = g.nodes[d];
    if (dead[d] || !is_op(dq, "DynamicQuantizeLinear") || dq.inputs.size() != 1 || dq.outputs.size() != 3) continue;
    const int x = dq.inputs[0], y = dq.outputs[0], ys = dq.outputs[1], yz = dq.outputs[2];
    if (x < 0 || y < 0 || ys < 0 || yz < 0 || g.is_graph_output(y) || g.is_graph_output(ys) || g.is_graph_output(yz))
      continue;
    const std::vector<int> readers = g.consumers(y);
    if (readers.empty()) continue;
    std::vector<QuantChain> chains;
    for (int r : readers) {
      const QuantChain c = match_chain(g, r, y, ys, yz, dead);
      if (c.matmul < 0) break;
      chains.push_back(c);
    }
    if (chains.size() != readers.size()) continue;
    // ys and yz read by these chains' nodes alone.
    std::vector<int> smuls, mms, ys_readers = g.consumers(ys), yz_readers = g.consumers(yz);
    for (const QuantChain& c : chains) smuls.push_back(c.scale_mul), mms.push_back(c.matmul);
    std::sort(smuls.begin(), smuls.end());
    std::sort(mms.begin(), mms.end());
    std::sort(ys_readers.begin(), ys_readers.end());
    std::sort(yz_readers.begin(), yz_readers.end());
    if (smuls != ys_readers || mms != yz_readers ||
        std::adjacent_find(smuls.begin(), smuls.end()) != smuls.end())
      continue;
    dead[d] = true;
    for (const QuantChain& c : chains) {
      const int last = c.add >= 0 ? c.add : c.mul;
      Node f;
      f.name = g.nodes[static_cast<size_t>(c.matmul)].name;
      f.op_type = "DynamicQuantizeMatMul";
      f.domain = "com.microsoft";
      f.opset = 1;
      f.inputs = {x, c.b, c.b_scale, c.b_zero_point, c.bias};
      while (f.inputs.back() < 0) f.inputs.pop_back();
      f.outputs = {c.out};
      for (int i : {c.matmul, c.cast, c.scale_mul, c.mul, c.add})
        if (i >= 0 && i != last) dead[static_cast<size_t>(i)] = true;
      g.nodes[static_cast<size_t>(last)] = std::move(f);
      g.reindex(last);
      ++record.count;
    }
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
