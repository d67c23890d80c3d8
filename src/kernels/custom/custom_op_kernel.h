// custom_op_kernel.h — operators defined by the application
// (spindle/custom_op.h) as kernels of the registry's interface: the loader,
// type inference and Plan::compile look them up here before the built-in
// registry.
#pragma once

#include <memory>
#include <string>

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

// The kernel of one node: creates `op`'s kernel from `info` now (errors name
// the node) and, per run, checks the inputs against the declared types and
// calls it with the session's intra-op pool.
std::unique_ptr<OpKernel> make_custom_kernel(std::shared_ptr<const CustomOp> op, const NodeInfo& node,
                                             CustomKernelInfo info);

}  // namespace spindle::kernels
