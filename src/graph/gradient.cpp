// gradient.cpp — the training operator Gradient (ai.onnx.preview.training,
// opset 1), expanded at load time into ordinary nodes (reverse-mode
// differentiation of the forward graph).
//
// Gradient(xs..., zs...; xs, y, zs) outputs dY/dX for every X named in `xs`:
// the gradient of the sum of Y's elements (the seed is a tensor of ones
// shaped like Y), as the ONNX reference computes for the scalar Y of its
// examples. The nodes between the Xs and Y are differentiated backwards;
// gradients of a value used several times are added; broadcasting is undone
// by summing over the broadcast axes (spindle.SumToShape). An X that Y does
// not depend on gets zeros. Differentiable ops: Add, Sub, Mul, Div, Neg,
// Identity, Exp, Log, Sqrt, Sigmoid, Tanh; any other op on the path is
// refused at load with kUnsupported naming it.
#include <fmt/format.h>

#include <map>
#include <set>

#include "graph/graph.h"

namespace spindle::graph {
namespace {

class Expander {
 public:
  Expander(Graph& g, const Node& grad, int index) : g_(g), grad_(grad), prefix_(fmt::format("{}/grad{}/", grad.label(), index)) {}

  // Appends the backward nodes to `out`.
  Status expand(const std::vector<Node>& forward, std::vector<Node>& out) {
    if (!grad_.attrs.has("xs") || !grad_.attrs.has("y"))
      return invalid_argument(fmt::format("{}: attributes 'xs' and 'y' are required", grad_.label()));
    const std::vector<std::string> xs = grad_.attrs.get_strings("xs");
    const std::string y_name = grad_.attrs.get_string("y");
    if (grad_.outputs.size() != xs.size())
      return invalid_argument(fmt::format("{}: {} outputs for {} names in xs, expected one output per x", grad_.label(),
                                          grad_.outputs.size(), xs.size()));
    const int y = g_.value_id(y_name);
    if (y < 0) return invalid_argument(fmt::format("{}: y '{}' is not a value of the graph", grad_.label(), y_name));
    std::vector<int> x_ids;
    for (const auto& name : xs) {
      const int id = g_.value_id(name);
      if (id < 0) return invalid_argument(fmt::format("{}: x '{}' is not a value of the graph", grad_.label(), name));
      x_ids.push_back(id);
    }
    // Values that depend on some x (forward), and nodes Y depends on (backward).
    std::set<int> from_x(x_ids.begin(), x_ids.end());
    for (const Node& n : forward) {
      bool hit = false;
      for (int in : n.inputs) hit = hit || (in >= 0 && from_x.count(in));
      if (hit)
        for (int o : n.outputs)
          if (o >= 0) from_x.insert(o);
    }
    std::set<int> to_y = {y};
    std::vector<const Node*> path;
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      bool feeds_y = false;
      for (int o : it->outputs) feeds_y = feeds_y || (o >= 0 && to_y.count(o));
      if (!feeds_y) continue;
      bool depends_on_x = false;
      for (int in : it->inputs) depends_on_x = depends_on_x || (in >= 0 && from_x.count(in));
      if (!depends_on_x) continue;
      for (int in : it->inputs)
        if (in >= 0) to_y.insert(in);
      path.push_back(&*it);
    }
    out_ = &out;
    grads_[y] = emit("spindle", "ConstantLike", {y}, {{"value", 1.0f}});
    for (const Node* n : path) SPINDLE_RETURN_IF_ERROR(backward(*n, from_x));
    for (size_t i = 0; i < x_ids.size(); ++i) {
      const int want = grad_.outputs[i];
      if (want < 0) continue;
      auto it = grads_.find(x_ids[i]);
      const int src = it != grads_.end() ? it->second : emit("spindle", "ConstantLike", {x_ids[i]}, {{"value", 0.0f}});
      Node id;
      id.name = prefix_ + "out" + std::to_string(i);
      id.op_type = "Identity";
      id.opset = g_.opsets.at("");
      id.inputs = {src};
      id.outputs = {want};
      out.push_back(std::move(id));
    }
    return Status::ok();
  }

 private:
  // A new node with one fresh output; returns the output's id.
  int emit(const std::string& domain, const std::string& op, std::vector<int> inputs, Attributes attrs = {}) {
    Node n;
    n.name = prefix_ + std::to_string(counter_++);
    n.op_type = op;
    n.domain = domain == "spindle" ? "spindle" : "";
    n.opset = domain == "spindle" ? 1 : g_.opsets.at("");
    n.attrs = std::move(attrs);
    n.inputs = std::move(inputs);
    const int out = g_.add_value(n.name);
    n.outputs = {out};
    out_->push_back(std::move(n));
    return out;
  }
  int op(const std::string& type, std::vector<int> inputs) { return emit("", type, std::move(inputs)); }

  // Adds `grad` (shaped like the node output) to the gradient of `input`,
  // summed down to the input's shape.
  void accumulate(int input, int grad, const std::set<int>& from_x) {
    if (!from_x.count(input)) return;  // a constant with respect to the xs
    const int g = emit("spindle", "SumToShape", {grad, input});
    auto it = grads_.find(input);
    if (it == grads_.end()) grads_[input] = g;
    else it->second = op("Add", {it->second, g});
  }

  Status backward(const Node& n, const std::set<int>& from_x) {
    auto git = grads_.find(n.outputs.empty() ? -1 : n.outputs[0]);
    if (git == grads_.end()) return Status::ok();  // only other outputs lead to y
    if (n.outputs.size() != 1 || !n.domain.empty())
      return unsupported(fmt::format("{}: cannot differentiate {} (differentiable: Add, Sub, Mul, Div, Neg, Identity, "
                                     "Exp, Log, Sqrt, Sigmoid, Tanh)",
                                     grad_.label(), n.label()));
    const int dy = git->second;
    const int y = n.outputs[0];
    const auto& in = n.inputs;
    const std::string& t = n.op_type;
    auto binary = [&]() { return in.size() == 2 && in[0] >= 0 && in[1] >= 0; };
    if ((t == "Add" || t == "Sub") && binary()) {
      accumulate(in[0], dy, from_x);
      accumulate(in[1], t == "Add" ? dy : op("Neg", {dy}), from_x);
    } else if (t == "Mul" && binary()) {
      accumulate(in[0], op("Mul", {dy, in[1]}), from_x);
      accumulate(in[1], op("Mul", {dy, in[0]}), from_x);
    } else if (t == "Div" && binary()) {
      // d(a/b) = da / b - db * (a/b) / b
      accumulate(in[0], op("Div", {dy, in[1]}), from_x);
      accumulate(in[1], op("Neg", {op("Div", {op("Mul", {dy, y}), in[1]})}), from_x);
    } else if (t == "Neg" && in.size() == 1) {
      accumulate(in[0], op("Neg", {dy}), from_x);
    } else if (t == "Identity" && in.size() == 1) {
      accumulate(in[0], dy, from_x);
    } else if (t == "Exp" && in.size() == 1) {
      accumulate(in[0], op("Mul", {dy, y}), from_x);
    } else if (t == "Log" && in.size() == 1) {
      accumulate(in[0], op("Div", {dy, in[0]}), from_x);
    } else if (t == "Sqrt" && in.size() == 1) {
      accumulate(in[0], op("Div", {dy, op("Add", {y, y})}), from_x);
    } else if (t == "Sigmoid" && in.size() == 1) {
      const int one = emit("spindle", "ConstantLike", {y}, {{"value", 1.0f}});
      accumulate(in[0], op("Mul", {dy, op("Mul", {y, op("Sub", {one, y})})}), from_x);
    } else if (t == "Tanh" && in.size() == 1) {
      const int one = emit("spindle", "ConstantLike", {y}, {{"value", 1.0f}});
      accumulate(in[0], op("Mul", {dy, op("Sub", {one, op("Mul", {y, y})})}), from_x);
    } else {
      return unsupported(fmt::format("{}: cannot differentiate {} (differentiable: Add, Sub, Mul, Div, Neg, Identity, "
                                     "Exp, Log, Sqrt, Sigmoid, Tanh)",
                                     grad_.label(), n.label()));
    }
    return Status::ok();
  }

  Graph& g_;
  const Node& grad_;
  std::string prefix_;
  int counter_ = 0;
  std::map<int, int> grads_;  // value -> its gradient value
  std::vector<Node>* out_ = nullptr;
};

}  // namespace

bool is_gradient_node(const std::string& domain, const std::string& op_type) {
  return domain == "ai.onnx.preview.training" && op_type == "Gradient";
}

Status expand_gradients(Graph& g) {
  std::vector<Node> forward, gradients;
  for (Node& n : g.nodes) (is_gradient_node(n.domain, n.op_type) ? gradients : forward).push_back(std::move(n));
  g.nodes = std::move(forward);
  if (gradients.empty()) return Status::ok();
  SPINDLE_RETURN_IF_ERROR(g.topological_sort());
  std::vector<Node> added;
  for (size_t i = 0; i < gradients.size(); ++i) {
    Expander e(g, gradients[i], static_cast<int>(i));
    SPINDLE_RETURN_IF_ERROR(e.expand(g.nodes, added));
  }
  for (Node& n : added) g.nodes.push_back(std::move(n));
  return Status::ok();
}

}  // namespace spindle::graph
