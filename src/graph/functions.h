// functions.h — model-local functions (ModelProto.functions, IR version 8
// and later) inlined into the graph at load.
#pragma once

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
// `origin` prefixes errors.
Status inline_functions(onnx::ModelProto& model, const std::string& origin);

}  // namespace spindle::graph
