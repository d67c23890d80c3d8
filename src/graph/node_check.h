// node_check.h — validation of ONNX nodes against spindle's operator
// signatures (kernels/op_schema.h), in place of libonnx's checker.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "kernels/op_schema.h"
#include "spindle/status.h"

namespace spindle::graph {

// Checks a node of the default domain against the signature of its operator
// at `opset` (the model's import): input and output counts, attribute names
// and types, required attributes. The error names the node, the operator
// version and what was expected. Operators the table does not know pass
// (they are refused as unsupported by the kernel look-up).
Status check_node(const onnx::NodeProto& node, int opset);

// What spindle's optimizer adds to an operator it fuses into (a fused
// activation, an input folded in, a bias): the attributes and the inputs
// beyond the operator's own. ONNX has no such form, so an optimized model
// (model_writer.h) writes these nodes in kExtendedDomain.
struct FusedForm {
  const char* domain;  // "" or "com.microsoft"
  const char* op_type;
  int max_inputs;  // 0: the operator's own
  std::vector<kernels::AttrSpec> attributes;
};
// Null when the optimizer adds nothing to op_type of `domain`.
const FusedForm* fused_form(std::string_view domain, std::string_view op_type);

// The domain of an optimized model's nodes that are ONNX (or com.microsoft)
// operators in a form ONNX lacks: a fused form, or a version other than the
// model's import. Two attributes give the operator's own domain (absent:
// the default one) and version.
inline constexpr const char* kExtendedDomain = "spindle.ext";
inline constexpr const char* kExtendedDomainAttr = "spindle_domain";
inline constexpr const char* kExtendedOpsetAttr = "spindle_opset";

// Checks a node of kExtendedDomain as untrusted input: its domain and opset
// attributes (an operator that exists there), its arity and attributes
// against the operator's signature widened by its FusedForm, types
// included. On success, sets the operator's own domain and opset.
Status check_extended_node(const onnx::NodeProto& node, std::string* domain, int* opset);

}  // namespace spindle::graph
