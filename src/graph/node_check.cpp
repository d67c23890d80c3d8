// node_check.cpp — see node_check.h.
#include "graph/node_check.h"

#include <fmt/format.h>

#include "kernels/op_schema.h"

namespace spindle::graph {
namespace {

using kernels::AttrType;

// The type an AttributeProto carries; an UNDEFINED type (models written before
// IR version 2) is read from the field that is set.
AttrType attribute_type(const onnx::AttributeProto& a, bool* known) {
  *known = true;
  switch (a.type()) {
    case onnx::AttributeProto::INT: return AttrType::kInt;
    case onnx::AttributeProto::FLOAT: return AttrType::kFloat;
    case onnx::AttributeProto::STRING: return AttrType::kString;
    case onnx::AttributeProto::TENSOR: return AttrType::kTensor;
    case onnx::AttributeProto::GRAPH: return AttrType::kGraph;
    case onnx::AttributeProto::SPARSE_TENSOR: return AttrType::kSparseTensor;
    case onnx::AttributeProto::TYPE_PROTO: return AttrType::kTypeProto;
    case onnx::AttributeProto::INTS: return AttrType::kInts;
    case onnx::AttributeProto::FLOATS: return AttrType::kFloats;
    case onnx::AttributeProto::STRINGS: return AttrType::kStrings;
    case onnx::AttributeProto::TENSORS: return AttrType::kTensors;
    case onnx::AttributeProto::GRAPHS: return AttrType::kGraphs;
    case onnx::AttributeProto::SPARSE_TENSORS: return AttrType::kSparseTensors;
    case onnx::AttributeProto::TYPE_PROTOS: return AttrType::kTypeProtos;
    default: break;
  }
  if (a.has_i()) return AttrType::kInt;
  if (a.has_f()) return AttrType::kFloat;
  if (a.has_s()) return AttrType::kString;
  if (a.has_t()) return AttrType::kTensor;
  if (a.has_g()) return AttrType::kGraph;
  if (a.ints_size()) return AttrType::kInts;
  if (a.floats_size()) return AttrType::kFloats;
  if (a.strings_size()) return AttrType::kStrings;
  *known = false;
  return AttrType::kInt;
}

std::string count_range(std::pair<int, int> r) {
  if (r.second == kernels::OpSchema::kUnbounded) return fmt::format("at least {}", r.first);
  if (r.first == r.second) return fmt::format("{}", r.first);
  return fmt::format("{} to {}", r.first, r.second);
}

}  // namespace

Status check_node(const onnx::NodeProto& node, int opset) {
  const kernels::OpSchema* schema = kernels::find_schema(node.op_type(), opset);
  if (!schema || !schema->documented()) return Status::ok();
  const std::string who =
      fmt::format("node {}{} ({}-{}, selected by the model's opset {})", node.op_type(),
                  node.name().empty() ? "" : " '" + node.name() + "'", node.op_type(), schema->since_version, opset);
  auto within = [](int n, std::pair<int, int> r) { return n >= r.first && n <= r.second; };
  if (!within(node.input_size(), schema->inputs))
    return invalid_argument(
        fmt::format("{} has {} input(s), expected {}", who, node.input_size(), count_range(schema->inputs)));
  if (!within(node.output_size(), schema->outputs))
    return invalid_argument(
        fmt::format("{} has {} output(s), expected {}", who, node.output_size(), count_range(schema->outputs)));
  for (const onnx::AttributeProto& a : node.attribute()) {
    const kernels::AttrSpec* spec = schema->attribute(a.name());
    if (!spec) {
      std::string names;
      for (const auto& s : schema->attributes) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
      return invalid_argument(fmt::format("{} has the attribute '{}', which {}-{} does not define (it has {})", who,
                                          a.name(), node.op_type(), schema->since_version,
                                          names.empty() ? "no attributes" : names));
    }
    if (!a.ref_attr_name().empty())
      return invalid_argument(fmt::format("{}: attribute '{}' refers to '{}', which only a function body may do", who,
                                          a.name(), a.ref_attr_name()));
    bool known = false;
    const AttrType type = attribute_type(a, &known);
    if (!known)
      return invalid_argument(fmt::format("{}: attribute '{}' has no type and no value, expected type {}", who, a.name(),
                                          kernels::attr_type_name(spec->type)));
    if (type != spec->type)
      return invalid_argument(fmt::format("{}: attribute '{}' is of type {}, expected {}", who, a.name(),
                                          kernels::attr_type_name(type), kernels::attr_type_name(spec->type)));
  }
  for (const kernels::AttrSpec& spec : schema->attributes) {
    if (!spec.required) continue;
    bool present = false;
    for (const auto& a : node.attribute()) present = present || a.name() == spec.name;
    if (!present)
      return invalid_argument(fmt::format("{} lacks the required attribute '{}' ({})", who, spec.name,
                                          kernels::attr_type_name(spec.type)));
  }
  return Status::ok();
}

}  // namespace spindle::graph
