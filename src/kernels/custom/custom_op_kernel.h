// custom_op_kernel.h — operators defined by the application
// (spindle/custom_op.h) as kernels of the registry's interface: the loader,
// type inference and Plan::compile look them up here before the built-in
// registry.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "spindle/custom_op.h"

namespace spindle::kernels {

// The custom op serving (domain, op_type) at `opset` ("ai.onnx" is ""), or
// null; the first domain listing it wins. `ops` may be null.
std::shared_ptr<const CustomOp> find_custom_op(const CustomOpDomains* ops, const std::string& domain,
                                               const std::string& op_type, int opset);

// Declared type of input / output i (the last declared type applies past
// the declared ones; kUndefined when nothing is declared).
DataType declared_type(const std::vector<DataType>& types, size_t i);

// A custom op that infers its outputs' element types from its node, as ONNX
// Runtime's InferOutputShapeFn does (the C API's op adapter is one). Type
// inference asks it for the outputs the op declares kUndefined, and so does
// kernel creation for the types of the outputs the kernel allocates.
class CustomTypeInference {
 public:
  virtual ~CustomTypeInference() = default;
  // One element type per output of `node` (kUndefined: not known), from its
  // attributes and its inputs' types (kUndefined where not known). Throws
  // Error when the op refuses the node: the types then stay as declared.
  virtual std::vector<DataType> infer_output_types(const CustomKernelInfo& node) const = 0;
};

// `declared` with each kUndefined output filled from `op`'s inference when it
// has one (an error from it leaves the declared types).
std::vector<DataType> inferred_output_types(const CustomOp& op, const CustomKernelInfo& node,
                                            std::vector<DataType> declared);

// A node's attributes as custom kernels see them: int, float, string and
// their lists (tensor, graph and type attributes are left out).
std::map<std::string, CustomAttribute> custom_attributes(const Attributes& attrs);

// The kernel of one node: creates `op`'s kernel from `info` now (errors name
// the node) and, per run, checks the inputs against the declared types and
// calls it with the session's intra-op pool.
std::unique_ptr<OpKernel> make_custom_kernel(std::shared_ptr<const CustomOp> op, const NodeInfo& node,
                                             CustomKernelInfo info);

}  // namespace spindle::kernels
