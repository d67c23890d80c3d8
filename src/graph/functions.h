// functions.h — model-local functions (ModelProto.functions, IR version 8
// and later) inlined into the graph at load.
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "spindle/status.h"

namespace spindle::graph {

// Replaces every node of the model's graphs (subgraphs included) that calls
// one of the model's functions by the function's body: formal inputs and
// outputs renamed to the call's, the body's own values given unique names,
// attributes that refer to the call's (`ref_attr_name`) resolved from the
// call or the function's defaults (IR 9 attribute_proto), nested calls
// inlined in turn (at most 32 deep: recursion is an error). Domains the
// functions import and the model does not are added to the model's imports.
// Before anything is expanded, the nodes the graphs will have (every graph,
// subgraphs and expanded calls included) are counted, memoized per function,
// so that a few bytes of functions calling each other twice cannot make
// 2^30 nodes: more than `max_nodes` (0 = no cap) is kResourceExhausted naming
// session.max_graph_nodes. `origin` prefixes errors.
Status inline_functions(onnx::ModelProto& model, const std::string& origin, int64_t max_nodes);

}  // namespace spindle::graph
