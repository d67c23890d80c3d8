// node_check.h — validation of ONNX nodes against spindle's operator
// signatures (kernels/op_schema.h), in place of libonnx's checker.
#pragma once

#include <onnx/onnx_pb.h>

#include "spindle/status.h"

namespace spindle::graph {

// Checks a node of the default domain against the signature of its operator
// at `opset` (the model's import): input and output counts, attribute names
// and types, required attributes. The error names the node, the operator
// version and what was expected. Operators the table does not know pass
// (they are refused as unsupported by the kernel look-up).
Status check_node(const onnx::NodeProto& node, int opset);

}  // namespace spindle::graph
