// api_op.cpp — ONNX Runtime's C API over spindle: one built-in operator run
// from inside a custom kernel (CreateOpAttr, CreateOp, InvokeOp; Ort::Op).
// CreateOp makes the operator's kernel once, from the attributes given;
// InvokeOp computes it on the kernel's values, on the session's intra-op
// pool, and writes its results into the output values given. The type
// constraints given to CreateOp ("T" = float, ...) are checked against the
// operator's ONNX schema when libonnx knows its version, and InvokeOp checks
// the inputs against them.
#include <algorithm>
#include <cctype>
#include <map>

#include <onnx/defs/schema.h>

#include "capi/capi_internal.h"
#include "capi/custom_kernel.h"
#include "kernels/kernel.h"
#include "kernels/op_schema.h"

// A built-in operator made by CreateOp: its node and kernel.
struct OrtOp {
  spindle::kernels::NodeInfo node;
  std::unique_ptr<spindle::kernels::OpKernel> kernel;
  // The element type CreateOp fixed for input i (kUndefined: none).
  std::vector<spindle::DataType> input_types;
  std::vector<std::string> input_constraints;  // the constraint's name, per input
};

namespace spindle::capi {
namespace {

// An attribute value from CreateOpAttr's (data, len, type): INT/FLOAT one
// value; INTS/FLOATS `len` values; STRING `len` characters; STRINGS `len`
// C strings.
OrtStatus* attr_value(const char* name, const void* data, int len, OrtOpAttrType type, CustomAttribute& out) {
  const char* fn = "CreateOpAttr";
  if (len < 0) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": attribute '" + name + "' has length " + std::to_string(len));
  const auto n = static_cast<size_t>(len);
  if (!data && n && type != ORT_OP_ATTR_UNDEFINED) return null_argument(fn, "data");
  switch (type) {
    case ORT_OP_ATTR_INT: out = *static_cast<const int64_t*>(data); return nullptr;
    case ORT_OP_ATTR_FLOAT: out = *static_cast<const float*>(data); return nullptr;
    case ORT_OP_ATTR_INTS: {
      const auto* p = static_cast<const int64_t*>(data);
      out = std::vector<int64_t>(p, p + n);
      return nullptr;
    }
    case ORT_OP_ATTR_FLOATS: {
      const auto* p = static_cast<const float*>(data);
      out = std::vector<float>(p, p + n);
      return nullptr;
    }
    case ORT_OP_ATTR_STRING: out = std::string(static_cast<const char*>(data), n); return nullptr;
    case ORT_OP_ATTR_STRINGS: {
      const auto* p = static_cast<const char* const*>(data);
      std::vector<std::string> v;
      for (size_t i = 0; i < n; ++i) {
        if (!p[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": string " + std::to_string(i) + " of attribute '" + name + "' is NULL");
        v.emplace_back(p[i]);
      }
      out = std::move(v);
      return nullptr;
    }
    default:
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": attribute '" + name + "' has type " +
                                                   std::to_string(static_cast<int>(type)) +
                                                   "; spindle makes int, float, string and their lists (1 to 6)");
  }
}

OrtStatus* ORT_API_CALL CreateOpAttr(const char* name, const void* data, int len, OrtOpAttrType type, OrtOpAttr** out) noexcept {
  CHECK_ARG("CreateOpAttr", name);
  CHECK_ARG("CreateOpAttr", out);
  API_BEGIN
  CustomAttribute value;
  if (OrtStatus* s = attr_value(name, data, len, type, value)) return s;
  *out = new OrtOpAttr{name, std::move(value)};
  API_END
}
void ORT_API_CALL ReleaseOpAttr(OrtOpAttr* a) noexcept { delete a; }

// ONNX's name of a tensor type: "tensor(float)", "tensor(int64)", ...
std::string onnx_tensor_type(ONNXTensorElementDataType t) {
  std::string name = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return "tensor(" + name + ")";
}

// Checks the constraints (names[i] = values[i]) against the schema of
// op_name at `version` and records, per input, the element type they fix.
OrtStatus* apply_type_constraints(OrtOp& op, const char* const* names, const ONNXTensorElementDataType* values, int count) {
  const char* fn = "CreateOp";
  if (count <= 0) return nullptr;
  if (!names) return null_argument(fn, "type_constraint_names");
  if (!values) return null_argument(fn, "type_constraint_values");
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op.node.op_type, op.node.opset);
  // libonnx may be older than the opset asked for: a schema of another
  // version documents other types, so only its version's types are checked.
  const kernels::OpSchema* own = kernels::find_schema(op.node.op_type, op.node.opset);
  const bool same_version = schema && own && schema->SinceVersion() == own->since_version;
  std::map<std::string, DataType> fixed;
  for (int i = 0; i < count; ++i) {
    const std::string name = names[i] ? names[i] : "";
    DataType dtype;
    if (name.empty()) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": type constraint " + std::to_string(i) + " has no name");
    if (!dtype_from_ort(values[i], &dtype))
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": type constraint '" + name + "' of " + op.node.op_type +
                                                   " has element type " + std::to_string(static_cast<int>(values[i])) +
                                                   ", which is not a tensor element type");
    if (schema) {
      const auto& params = schema->typeConstraintParams();
      auto it = std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.type_param_str == name; });
      if (it == params.end()) {
        std::string known;
        for (const auto& p : params) known += (known.empty() ? "" : ", ") + p.type_param_str;
        return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": " + op.node.op_type + " has no type constraint '" + name +
                                                     "'; its constraints are " + (known.empty() ? "none" : known));
      }
      const std::string type = onnx_tensor_type(values[i]);
      const auto& allowed = it->allowed_type_strs;
      if (same_version && std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": " + op.node.op_type + "-" + std::to_string(own->since_version) +
                                                     " does not take " + type + " for '" + name + "'; it takes " + list);
      }
    }
    fixed[name] = dtype;
  }
  op.input_types.assign(static_cast<size_t>(op.node.num_inputs), DataType::kUndefined);
  op.input_constraints.assign(static_cast<size_t>(op.node.num_inputs), std::string());
  if (!schema || schema->inputs().empty()) return nullptr;
  const auto& formal = schema->inputs();
  for (size_t i = 0; i < op.input_types.size(); ++i) {
    const auto& param = formal[std::min(i, formal.size() - 1)];
    if (i >= formal.size() && param.GetOption() != onnx::OpSchema::Variadic) break;
    if (auto f = fixed.find(param.GetTypeStr()); f != fixed.end()) {
      op.input_types[i] = f->second;
      op.input_constraints[i] = f->first;
    }
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateOp(const OrtKernelInfo* info, const char* op_name, const char* domain, int version,
                                 const char** type_constraint_names, const ONNXTensorElementDataType* type_constraint_values,
                                 int type_constraint_count, const OrtOpAttr* const* attrs, int attr_count, int input_count,
                                 int output_count, OrtOp** out) noexcept {
  const char* fn = "CreateOp";
  CHECK_ARG(fn, info);
  CHECK_ARG(fn, op_name);
  CHECK_ARG(fn, out);
  if (attr_count > 0 && !attrs) return null_argument(fn, "attr_values");
  if (input_count < 0 || output_count < 1)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(input_count) + " inputs and " +
                                                 std::to_string(output_count) + " outputs; expected 0 or more and 1 or more");
  API_BEGIN
  const std::string d = domain ? domain : "";
  if (!d.empty() && d != "ai.onnx")
    return make_status(ORT_NOT_IMPLEMENTED, std::string(fn) + ": operator " + op_name + " of domain '" + d +
                                                "': spindle runs operators of the ONNX domain here");
  auto op = std::make_unique<OrtOp>();
  op->node.op_type = op_name;
  op->node.opset = version;
  op->node.num_inputs = input_count;
  op->node.num_outputs = output_count;
  op->node.name = std::string(op_name) + " of " + info->info.node_name;
  for (int i = 0; i < attr_count; ++i) {
    if (!attrs[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": attribute " + std::to_string(i) + " is NULL");
    std::visit([&](const auto& v) { op->node.attrs.set(attrs[i]->name, v); }, attrs[i]->value);
  }
  if (OrtStatus* st = apply_type_constraints(*op, type_constraint_names, type_constraint_values, type_constraint_count))
    return st;
  const kernels::KernelFactory* factory = kernels::KernelRegistry::global().find("", op_name, version);
  if (!factory)
    return make_status(ORT_NOT_IMPLEMENTED, std::string(fn) + ": spindle has no kernel for " + op_name + " at opset " +
                                                std::to_string(version));
  op->kernel = (*factory)(op->node);
  *out = op.release();
  API_END
}
void ORT_API_CALL ReleaseOp(OrtOp* op) noexcept { delete op; }

// Result i into the value given: written in place when it holds a tensor
// (same element type and shape), else it becomes the result.
OrtStatus* write_output(size_t i, Tensor& result, OrtValue* dst) {
  Tensor& d = dst->tensor;
  if (!d.defined()) {
    d = std::move(result);
    return nullptr;
  }
  if (!d.is_tensor() || d.dtype() != result.dtype() || d.shape() != result.shape())
    return make_status(ORT_INVALID_ARGUMENT, "InvokeOp: output " + std::to_string(i) + " is " + d.describe() +
                                                 "; the operator's result is " + result.describe());
  const Tensor c = result.is_contiguous() ? result : result.clone();
  if (c.dtype() == DataType::kString) {
    std::copy(c.data<std::string>(), c.data<std::string>() + c.numel(), d.mutable_data<std::string>());
  } else if (c.nbytes()) {
    std::memcpy(d.raw_mutable_data(), c.raw_data(), c.nbytes());
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL InvokeOp(const OrtKernelContext* context, const OrtOp* op, const OrtValue* const* inputs,
                                 int input_count, OrtValue* const* outputs, int output_count) noexcept {
  const char* fn = "InvokeOp";
  CHECK_ARG(fn, context);
  CHECK_ARG(fn, op);
  if (input_count > 0 && !inputs) return null_argument(fn, "input_values");
  CHECK_ARG(fn, outputs);
  if (input_count != op->node.num_inputs || output_count != op->node.num_outputs)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": " + std::to_string(input_count) + " inputs and " +
                                                 std::to_string(output_count) + " outputs; " + op->node.op_type +
                                                 " was created with " + std::to_string(op->node.num_inputs) + " and " +
                                                 std::to_string(op->node.num_outputs));
  API_BEGIN
  std::vector<const Tensor*> in;  // null: an optional input left out
  for (int i = 0; i < input_count; ++i) {
    in.push_back(inputs[i] ? &inputs[i]->tensor : nullptr);
    const auto k = static_cast<size_t>(i);
    if (!in.back() || k >= op->input_types.size() || op->input_types[k] == DataType::kUndefined) continue;
    if (!in.back()->is_tensor() || in.back()->dtype() != op->input_types[k])
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input " + std::to_string(i) + " of " + op->node.op_type +
                                                   " is " + in.back()->describe() + "; CreateOp fixed its type '" +
                                                   op->input_constraints[k] + "' to " + dtype_name(op->input_types[k]));
  }
  for (int i = 0; i < output_count; ++i)
    if (!outputs[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output " + std::to_string(i) + " is NULL");
  std::vector<Tensor> results(static_cast<size_t>(output_count));
  kernels::KernelContext ctx(op->node, std::span<const Tensor* const>(in), results, context->ctx->intra_op_pool());
  op->kernel->compute(ctx);
  for (size_t i = 0; i < results.size(); ++i)
    if (OrtStatus* s = write_output(i, results[i], outputs[i])) return s;
  API_END
}

}  // namespace

void set_op_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateOpAttr) SET(ReleaseOpAttr) SET(CreateOp) SET(InvokeOp) SET(ReleaseOp)
#undef SET
}

}  // namespace spindle::capi
