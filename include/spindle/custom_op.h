// custom_op.h — operators defined by the application, per session.
//
// A CustomOp names an operator of a domain, declares its inputs' and
// outputs' element types and creates a kernel for each node that uses it.
// SessionOptions::custom_op_domains carries them: the loader accepts nodes
// of those (domain, op type) pairs, type inference gives their outputs the
// declared types (shapes are known when the kernel allocates its outputs),
// and each node's kernel is created from the CustomOp found first, before
// spindle's built-in operators.
//
//   struct Twice : spindle::CustomKernel {
//     void compute(spindle::CustomKernelContext& ctx) const override {
//       const spindle::Tensor& x = *ctx.input(0);
//       spindle::Tensor& y = ctx.output(0, x.dtype(), x.shape());
//       ...  // parallel work: spindle::parallel_for(ctx.intra_op_pool(), ...)
//     }
//   };
//
// ONNX Runtime's custom operators (OrtCustomOp, through the C API in
// libonnxruntime.so.1) are adapted onto this interface.
#pragma once

#include <climits>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "spindle/tensor.h"
#include "spindle/thread_pool.h"

namespace spindle {

// A node attribute as a custom kernel sees it: int, float, string and their
// lists (tensor attributes are in CustomKernelInfo::tensor_attributes; graph
// attributes are not passed).
using CustomAttribute = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                                     std::vector<std::string>>;

// The node a kernel is created for.
struct CustomKernelInfo {
  std::string node_name, op_type, domain;
  int opset = 0;  // the model's version of `domain`
  // As written in the node ("" for an absent optional one).
  std::vector<std::string> input_names, output_names;
  // Element types known when the model is loaded (kUndefined when not).
  std::vector<DataType> input_types, output_types;
  std::map<std::string, CustomAttribute> attributes;
  // The node's tensor-valued attributes by name.
  std::map<std::string, Tensor> tensor_attributes;
  // Input i's value when it is a constant (an initializer) as the kernel is
  // created; an undefined Tensor for the others.
  std::vector<Tensor> constant_inputs;
  // The attribute, or null when the node does not have it.
  const CustomAttribute* attribute(const std::string& name) const {
    auto it = attributes.find(name);
    return it == attributes.end() ? nullptr : &it->second;
  }
};

// What a kernel sees while it computes one node in one run.
class CustomKernelContext {
 public:
  virtual ~CustomKernelContext() = default;
  virtual size_t num_inputs() const = 0;
  virtual size_t num_outputs() const = 0;
  // Input i; null when it is absent (an optional input left out) or i is
  // past the inputs.
  virtual const Tensor* input(size_t i) const = 0;
  // Allocates output i (its contents are unspecified: the kernel writes
  // every element). Throws Error(kInvalidArgument) when i is past the outputs.
  virtual Tensor& output(size_t i, DataType dtype, const Shape& shape) = 0;
  // The session's intra-op pool (null when the node runs without one):
  // parallel work goes through spindle::parallel_for on it.
  virtual ThreadPool* intra_op_pool() const = 0;
};

class CustomKernel {
 public:
  virtual ~CustomKernel() = default;
  // Called for every run, possibly from several runs at once. Throws
  // spindle::Error (any other exception becomes kRuntimeError); the run
  // fails with its message and the session stays usable.
  virtual void compute(CustomKernelContext& ctx) const = 0;
};

class CustomOp {
 public:
  virtual ~CustomOp() = default;
  virtual std::string name() const = 0;
  // Declared element types by position; kUndefined accepts any type (inputs)
  // or leaves the type to the computed tensor (outputs). A node may have
  // more inputs or outputs than declared (variadic): the last declared type
  // applies to the rest. Inputs are checked before compute.
  virtual std::vector<DataType> input_types() const = 0;
  virtual std::vector<DataType> output_types() const = 0;
  // The opset versions of the domain this definition serves.
  virtual int since_version() const { return 1; }
  virtual int end_version() const { return INT_MAX; }
  // Creates the kernel of one node at session creation; throws Error to
  // refuse the node (the session is not created, the message names the node).
  virtual std::unique_ptr<CustomKernel> create_kernel(const CustomKernelInfo& info) const = 0;
};

struct CustomOpDomain {
  std::string name;  // "" or "ai.onnx": the default domain
  std::vector<std::shared_ptr<const CustomOp>> ops;
};

using CustomOpDomains = std::vector<std::shared_ptr<const CustomOpDomain>>;

}  // namespace spindle
