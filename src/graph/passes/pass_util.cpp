// pass_util.cpp — see pass_util.h.
#include "graph/passes/pass_util.h"

namespace spindle::graph::passes {

int single_consumer(const Graph& g, int value) {
  if (g.is_graph_output(value)) return -1;
  auto users = g.consumers(value, 1);
  return users.size() == 1 ? users[0] : -1;
}

// The float32 constant operand of a binary node whose other operand is
// `x`, or nullptr.
const Tensor* constant_operand(const Graph& g, const Node& n, int x) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return nullptr;
  const int other = n.inputs[0] == x ? n.inputs[1] : n.inputs[1] == x ? n.inputs[0] : -1;
  const Tensor* t = other >= 0 ? g.initializer(other) : nullptr;
  return t && t->dtype() == DataType::kFloat32 ? t : nullptr;
}

float single_value(const Graph& g, int id) {
  const Tensor* t = id >= 0 ? g.initializer(id) : nullptr;
  return t && t->dtype() == DataType::kFloat32 && t->numel() == 1 ? t->data<float>()[0] : NAN;
}

// A node of `g` whose op is `op` (default domain) reading `value`, when it is
// the value's only reader; else -1.
int only_reader(const Graph& g, int value, const char* op, const std::vector<bool>& dead) {
  const int i = single_consumer(g, value);
  if (i < 0 || dead[static_cast<size_t>(i)]) return -1;
  const Node& n = g.nodes[static_cast<size_t>(i)];
  return n.op_type == op && n.domain.empty() ? i : -1;
}

int fresh_value(Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.value_id(name) >= 0; ++k) name = base + "." + std::to_string(k);
  return g.add_value(name);
}

void read_forwarded(Graph& g, size_t i, const std::vector<int>& forward) {
  bool rewired = false;
  for (int& in : g.nodes[i].inputs)
    if (in >= 0 && forward[static_cast<size_t>(in)] >= 0) {
      in = forward[static_cast<size_t>(in)];
      rewired = true;
    }
  if (rewired) g.reindex(static_cast<int>(i));
}

Node reorder_node(const char* op, std::string name, int in, int out) {
  Node r;
  r.name = std::move(name);
  r.op_type = op;
  r.domain = "spindle";
  r.opset = 1;
  r.inputs = {in};
  r.outputs = {out};
  return r;
}

}  // namespace spindle::graph::passes
