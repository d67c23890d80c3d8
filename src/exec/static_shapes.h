// static_shapes.h — the shapes of a graph's values that are known before
// any run, which kernels receive at creation (NodeInfo::input_shapes).
#pragma once

#include <optional>
#include <vector>

#include "graph/graph.h"

namespace spindle::exec {

// Per value id: the shape of the value when every dimension of it follows
// from the graph's initializers and, with `use_inputs`, its declared inputs
// (a session checks the feeds against their declared dimensions; a
// subgraph's inputs are not checked and so not used), through the nodes
// whose output shapes depend on their inputs' shapes and attributes alone
// (element-wise operators, Conv, pools, Concat, Flatten); nullopt
// elsewhere. Nodes must be in topological order.
std::vector<std::optional<Shape>> static_value_shapes(const graph::Graph& g, bool use_inputs);

}  // namespace spindle::exec
