// graph/node_info.h — what a kernel learns of a node from the node alone:
// its operator, name, attributes and how many inputs and outputs it has.
// The executor, static shape propagation and constant folding start their
// kernels::NodeInfo from it.
#pragma once

#include "graph/graph.h"
#include "kernels/kernel.h"

namespace spindle::graph {

// Inputs a node captures from an enclosing graph (outer_names, the last of
// its inputs) are not counted among its own.
inline kernels::NodeInfo node_basics(const Node& n) {
  kernels::NodeInfo info;
  info.op_type = n.op_type;
  info.domain = n.domain;
  info.opset = n.opset;
  info.name = n.name;
  info.attrs = n.attrs;
  info.num_outer_inputs = static_cast<int>(n.outer_names.size());
  info.num_inputs = static_cast<int>(n.inputs.size()) - info.num_outer_inputs;
  info.num_outputs = static_cast<int>(n.outputs.size());
  for (size_t o = 0; o < n.outputs.size() && o < 64; ++o)
    if (n.outputs[o] < 0) info.absent_outputs |= uint64_t{1} << o;
  return info;
}

}  // namespace spindle::graph
