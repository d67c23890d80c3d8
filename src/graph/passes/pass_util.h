// pass_util.h — questions the optimizer passes ask of a graph (who alone
// reads a value, which operand of a node is a constant) and the values and
// conversion nodes they add, shared by the pass
// files under src/graph/passes/. Internal to the graph layer.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace spindle::graph::passes {

// The node that alone reads `value` (not a graph output), or -1.
int single_consumer(const Graph& g, int value);
// A node of `g` whose op is `op` (default domain) reading `value`, when it is
// the value's only reader and not marked dead; else -1.
int only_reader(const Graph& g, int value, const char* op, const std::vector<bool>& dead);
// The float32 constant operand of a binary node whose other operand is
// `x`, or nullptr.
const Tensor* constant_operand(const Graph& g, const Node& n, int x);
// The value of a float32 constant holding one element; NaN otherwise.
float single_value(const Graph& g, int id);
// Node `i` reads forward[v] for each input v that has one (>= 0): the
// values of nodes a pass removed, in favour of what they forwarded.
void read_forwarded(Graph& g, size_t i, const std::vector<int>& forward);
// A new value named after `base` (a model may already use the name).
int fresh_value(Graph& g, const std::string& base);
// A spindle-domain node `op` (opset 1) reading `in`, writing `out`: the
// layout conversions the layout passes add.
Node reorder_node(const char* op, std::string name, int in, int out);

}  // namespace spindle::graph::passes
