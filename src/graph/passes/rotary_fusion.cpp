// rotary_fusion.cpp — rotary position embeddings as LLaMA-style exporters
// write them (rotate_half) made one spindle.RotaryHalf node.
#include <cstdint>
#include <optional>
#include <vector>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {
namespace {

// The one int64 value of constant `id` (a Slice's starts / ends / axes /
// steps of one element), if it is one.
std::optional<int64_t> single_int(const Graph& g, int id) {
  const Tensor* t = id >= 0 ? g.initializer(id) : nullptr;
  if (!t || t->numel() != 1 || t->rank() > 1) return std::nullopt;
  if (t->dtype() == DataType::kInt64) return t->data<int64_t>()[0];
  if (t->dtype() == DataType::kInt32) return t->data<int32_t>()[0];
  return std::nullopt;
}

// A Slice (opset >= 10) of one axis with step 1 and constant bounds, read
// only by `reader`.
struct OneAxisSlice {
  int x = -1;
  int64_t start = 0, end = 0, axis = 0;
};
std::optional<OneAxisSlice> one_axis_slice(const Graph& g, int value, int reader, const std::vector<bool>& dead) {
  const int p = g.producer(value);
  if (p < 0 || dead[static_cast<size_t>(p)] || single_consumer(g, value) != reader) return std::nullopt;
  const Node& n = g.nodes[static_cast<size_t>(p)];
  if (n.op_type != "Slice" || !n.domain.empty() || n.opset < 10 || n.inputs.size() < 4 || n.inputs.size() > 5 ||
      n.outputs.size() != 1)
    return std::nullopt;
  const auto start = single_int(g, n.inputs[1]), end = single_int(g, n.inputs[2]), axis = single_int(g, n.inputs[3]);
  if (!start || !end || !axis) return std::nullopt;
  if (n.inputs.size() == 5 && n.inputs[4] >= 0 && single_int(g, n.inputs[4]) != std::optional<int64_t>(1))
    return std::nullopt;
  return OneAxisSlice{n.inputs[0], *start, *end, *axis};
}

// The other operand of `mul` when it is a Mul (default domain) of `value`
// by something else, else -1.
int mul_operand(const Node& mul, int value) {
  if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2 || mul.inputs[0] == mul.inputs[1] ||
      mul.outputs.size() != 1)
    return -1;
  return mul.inputs[0] == value ? mul.inputs[1] : mul.inputs[1] == value ? mul.inputs[0] : -1;
}

}  // namespace

// Rotary position embedding with rotate_half, as LLaMA-style decoders are
// exported:
//   r = Concat(Neg(Slice(x, h, E, a)), Slice(x, 0, h, a), axis c)
//   y = Add(Mul(x, cos), Mul(r, sin))
// (Slices of one axis with step 1, E >= 2h meaning "to the end"; Mul's and
// Add's operands in either order; every intermediate read once) becomes
// spindle.RotaryHalf(x, cos, sin) with attributes half = h, axis = a,
// end = E, concat_axis = c. The kernel computes each element as the
// replaced nodes do (x * cos + (+-x') * sin, Neg exact), or runs them when
// the shapes at run time are not the last axis of 2h with cos and sin
// broadcast along the other axes.
void fuse_rotary_half(Graph& g, PassRecord& record) {
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& neg = g.nodes[i];
    if (dead[i] || neg.op_type != "Neg" || !neg.domain.empty() || neg.inputs.size() != 1 || neg.outputs.size() != 1)
      continue;
    const int concat = only_reader(g, neg.outputs[0], "Concat", dead);
    if (concat < 0) continue;
    const Node& cc = g.nodes[static_cast<size_t>(concat)];
    if (cc.inputs.size() != 2 || cc.inputs[0] != neg.outputs[0] || cc.outputs.size() != 1 || !cc.attrs.has("axis"))
      continue;
    const auto upper = one_axis_slice(g, neg.inputs[0], static_cast<int>(i), dead);
    const auto lower = one_axis_slice(g, cc.inputs[1], concat, dead);
    if (!upper || !lower || upper->x != lower->x || upper->axis != lower->axis || lower->start != 0 ||
        upper->start != lower->end || lower->end <= 0)
      continue;
    const int x = upper->x;
    const int mul_sin = single_consumer(g, cc.outputs[0]);
    if (mul_sin < 0 || dead[static_cast<size_t>(mul_sin)]) continue;
    const int sin = mul_operand(g.nodes[static_cast<size_t>(mul_sin)], cc.outputs[0]);
    if (sin < 0) continue;
    const int add = only_reader(g, g.nodes[static_cast<size_t>(mul_sin)].outputs[0], "Add", dead);
    if (add < 0) continue;
    const Node& ad = g.nodes[static_cast<size_t>(add)];
    const int sin_out = g.nodes[static_cast<size_t>(mul_sin)].outputs[0];
    if (ad.inputs.size() != 2 || ad.outputs.size() != 1) continue;
    const int cos_out = ad.inputs[0] == sin_out ? ad.inputs[1] : ad.inputs[0];
    const int mul_cos = g.producer(cos_out);
    if (cos_out == sin_out || mul_cos < 0 || dead[static_cast<size_t>(mul_cos)] || single_consumer(g, cos_out) != add)
      continue;
    const int cos = mul_operand(g.nodes[static_cast<size_t>(mul_cos)], x);
    if (cos < 0) continue;
    Node f;
    f.name = (ad.name.empty() ? g.value_name(ad.outputs[0]) : ad.name) + "/RotaryHalf";
    f.op_type = "RotaryHalf";
    f.domain = "spindle";
    f.opset = 1;
    f.inputs = {x, cos, sin};
    f.outputs = {ad.outputs[0]};
    f.attrs.set("half", lower->end);
    f.attrs.set("axis", lower->axis);
    f.attrs.set("end", upper->end);
    f.attrs.set("concat_axis", cc.attrs.get_int("axis"));
    for (int n : {static_cast<int>(i), concat, g.producer(neg.inputs[0]), g.producer(cc.inputs[1]), mul_sin, mul_cos})
      dead[static_cast<size_t>(n)] = true;
    g.nodes[static_cast<size_t>(add)] = std::move(f);
    g.reindex(add);
    ++record.count;
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
