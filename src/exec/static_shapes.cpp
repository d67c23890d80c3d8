// static_shapes.cpp — static shape propagation (static_shapes.h). Window
// sizes come from the kernels' own rule (forward_window), so the shapes
// given to a Conv at creation are those its runs compute.
#include "exec/static_shapes.h"

#include <algorithm>
#include <set>
#include <string>

#include "graph/node_info.h"
#include "kernels/nn/nn_util.h"

namespace spindle::exec {

namespace {

using OptShape = std::optional<Shape>;

const std::set<std::string>& same_shape_ops() {
  static const std::set<std::string> ops = {
      "Abs",   "BatchNormalization", "Cast",       "Clip",     "Dropout", "Elu",      "Erf",
      "Exp",   "Gelu",               "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "Log",
      "LRN",   "Neg",                "PRelu",      "Relu",     "Selu",    "Sigmoid",  "Softmax",
      "Sqrt",  "Tanh",               "InstanceNormalization"};
  return ops;
}

const std::set<std::string>& broadcast_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Pow"};
  return ops;
}

// Multidirectional (NumPy) broadcasting of static shapes; nullopt when a
// pair of dimensions does not broadcast.
OptShape broadcast(const std::vector<const Shape*>& in) {
  size_t rank = 0;
  for (const Shape* s : in) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : in)
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t& o = out[rank - s->size() + i];
      const int64_t d = (*s)[i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  return out;
}

// Conv and pools: [N, M or C, output spatial sizes] by forward_window.
OptShape window_output(const graph::Node& n, const Shape& x, const Shape* w) {
  const kernels::NodeInfo info = graph::node_basics(n);
  const bool conv = n.op_type == "Conv";
  const bool max = n.op_type == "MaxPool";
  const bool dil = conv || (max && n.opset >= 10) || (n.op_type == "AveragePool" && n.opset >= 19);
  const bool ceil_mode = !conv && n.opset >= 10;
  kernels::nn::WindowAttrs a = kernels::nn::WindowAttrs::parse(info, dil, ceil_mode);
  a.clipped_windows = !conv;
  std::vector<int64_t> kernel = a.kernel_shape;
  if (conv && kernel.empty()) kernel.assign(w->begin() + 2, w->end());
  const kernels::nn::Window3 win = kernels::nn::forward_window(info, a, x, kernel);
  Shape out = {x[0], conv ? (*w)[0] : x[1]};
  for (int i = 0; i < win.nd; ++i) out.push_back(win.out[3 - win.nd + i]);
  return out;
}

// Output 0 of n from its inputs' static shapes, or nullopt.
OptShape node_output(const graph::Node& n, const std::vector<const Shape*>& in) {
  if (in.empty() || !in[0]) return std::nullopt;
  const Shape& x = *in[0];
  if (same_shape_ops().count(n.op_type)) return x;
  // Conv reads only X's and W's shapes (B and fused inputs may be absent).
  if (n.op_type == "Conv")
    return in.size() >= 2 && in[1] && in[1]->size() == x.size() && x.size() >= 3 ? window_output(n, x, in[1])
                                                                                : std::nullopt;
  if ((n.op_type == "MaxPool" || n.op_type == "AveragePool") && x.size() >= 3) return window_output(n, x, nullptr);
  for (const Shape* s : in)
    if (!s) return std::nullopt;
  if (broadcast_ops().count(n.op_type)) return broadcast(in);
  if ((n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") && x.size() >= 3) {
    Shape out(x.size(), 1);
    out[0] = x[0];
    out[1] = x[1];
    return out;
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  if (n.op_type == "Concat") {
    int64_t axis = n.attrs.get_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    Shape out = x;
    out[static_cast<size_t>(axis)] = 0;
    for (const Shape* s : in) {
      for (int64_t d = 0; d < rank; ++d)
        if (s->size() != x.size() || (d != axis && (*s)[static_cast<size_t>(d)] != x[static_cast<size_t>(d)]))
          return std::nullopt;
      int64_t& o = out[static_cast<size_t>(axis)];
      if (__builtin_add_overflow(o, (*s)[static_cast<size_t>(axis)], &o)) return std::nullopt;
    }
    return out;
  }
  if (n.op_type == "Flatten") {
    int64_t axis = n.attrs.get_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) return std::nullopt;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t& f = d < axis ? outer : inner;
      if (__builtin_mul_overflow(f, x[static_cast<size_t>(d)], &f)) return std::nullopt;  // a hostile model's sizes
    }
    return Shape{outer, inner};
  }
  return std::nullopt;
}

}  // namespace

std::vector<OptShape> static_value_shapes(const graph::Graph& g, bool use_inputs) {
  std::vector<OptShape> shapes(static_cast<size_t>(g.num_values()));
  auto all_static = [](const Shape& s) { return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; }); };
  for (const auto& [id, t] : g.initializers)
    if (t.defined() && !t.is_sequence()) shapes[static_cast<size_t>(id)] = t.shape();
  if (use_inputs)
    for (size_t i = 0; i < g.inputs.size() && i < g.input_info.size(); ++i) {
      const graph::ValueInfo& v = g.input_info[i];
      if (v.has_shape && !v.is_sequence && !v.is_optional && all_static(v.shape))
        shapes[static_cast<size_t>(g.inputs[i])] = v.shape;
    }
  std::vector<const Shape*> in;
  for (const graph::Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] < 0 || !n.domain.empty()) continue;
    in.clear();
    for (int v : n.inputs) in.push_back(v >= 0 && shapes[static_cast<size_t>(v)] ? &*shapes[static_cast<size_t>(v)] : nullptr);
    OptShape out;
    try {
      out = node_output(n, in);
    } catch (const Error&) {
      out.reset();  // the kernel reports the problem when it runs
    }
    if (out && all_static(*out)) shapes[static_cast<size_t>(n.outputs[0])] = std::move(out);
  }
  return shapes;
}

}  // namespace spindle::exec
