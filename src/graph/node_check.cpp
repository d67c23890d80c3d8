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

// The attribute's type checked against `spec`: an error naming `who`.
Status check_attribute_type(const onnx::AttributeProto& a, const kernels::AttrSpec& spec, const std::string& who) {
  if (!a.ref_attr_name().empty())
    return invalid_argument(fmt::format("{}: attribute '{}' refers to '{}', which only a function body may do", who,
                                        a.name(), a.ref_attr_name()));
  bool known = false;
  const AttrType type = attribute_type(a, &known);
  if (!known)
    return invalid_argument(fmt::format("{}: attribute '{}' has no type and no value, expected type {}", who, a.name(),
                                        kernels::attr_type_name(spec.type)));
  if (type != spec.type)
    return invalid_argument(fmt::format("{}: attribute '{}' is of type {}, expected {}", who, a.name(),
                                        kernels::attr_type_name(type), kernels::attr_type_name(spec.type)));
  return Status::ok();
}

Status check_required(const onnx::NodeProto& node, const kernels::OpSchema& schema, const std::string& who) {
  for (const kernels::AttrSpec& spec : schema.attributes) {
    if (!spec.required) continue;
    bool present = false;
    for (const auto& a : node.attribute()) present = present || a.name() == spec.name;
    if (!present)
      return invalid_argument(fmt::format("{} lacks the required attribute '{}' ({})", who, spec.name,
                                          kernels::attr_type_name(spec.type)));
  }
  return Status::ok();
}

std::vector<kernels::AttrSpec> activation_attributes() {
  return {{"activation", AttrType::kString, false},
          {"activation_params", AttrType::kFloats, false},
          {"activation_affine", AttrType::kFloats, false}};
}

const std::vector<FusedForm>& fused_forms() {
  static const std::vector<FusedForm> forms = [] {
    std::vector<FusedForm> f;
    // Conv(X, W, B, residual, input scale, BatchNormalization scale, B, mean, var).
    std::vector<kernels::AttrSpec> conv = activation_attributes();
    conv.push_back({"input_epsilon", AttrType::kFloat, false});
    conv.push_back({"input_activation", AttrType::kString, false});
    f.push_back({"", "Conv", 9, conv});
    for (const char* op : {"ConvTranspose", "Gemm", "BatchNormalization"}) f.push_back({"", op, 0, activation_attributes()});
    // MatMul(A, B, bias, r): r added or multiplied (fused_op) before the activation.
    std::vector<kernels::AttrSpec> matmul = activation_attributes();
    matmul.push_back({"fused_op", AttrType::kString, false});
    f.push_back({"", "MatMul", 4, matmul});
    f.push_back({"", "QLinearConv", 0, {{"activation", AttrType::kString, false}}});
    f.push_back({"com.microsoft", "QLinearAdd", 0, {{"activation", AttrType::kString, false}}});
    return f;
  }();
  return forms;
}

const kernels::AttrSpec* find_spec(const std::vector<kernels::AttrSpec>& specs, const std::string& name) {
  for (const kernels::AttrSpec& s : specs)
    if (name == s.name) return &s;
  return nullptr;
}

}  // namespace

const FusedForm* fused_form(std::string_view domain, std::string_view op_type) {
  for (const FusedForm& f : fused_forms())
    if (domain == f.domain && op_type == f.op_type) return &f;
  return nullptr;
}

Status check_extended_node(const onnx::NodeProto& node, std::string* domain, int* opset) {
  const std::string who = fmt::format("node {}{} (domain {})", node.op_type(),
                                      node.name().empty() ? "" : " '" + node.name() + "'", kExtendedDomain);
  const onnx::AttributeProto* opset_attr = nullptr;
  const onnx::AttributeProto* domain_attr = nullptr;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == kExtendedOpsetAttr) opset_attr = &a;
    if (a.name() == kExtendedDomainAttr) domain_attr = &a;
  }
  if (!opset_attr)
    return invalid_argument(fmt::format("{} lacks the attribute '{}' (int): the version of the operator it extends",
                                        who, kExtendedOpsetAttr));
  SPINDLE_RETURN_IF_ERROR(check_attribute_type(*opset_attr, {kExtendedOpsetAttr, AttrType::kInt, true}, who));
  std::string d;
  if (domain_attr) {
    SPINDLE_RETURN_IF_ERROR(check_attribute_type(*domain_attr, {kExtendedDomainAttr, AttrType::kString, false}, who));
    d = domain_attr->s() == "ai.onnx" ? "" : domain_attr->s();
  }
  if (!d.empty() && d != "com.microsoft")
    return invalid_argument(fmt::format("{}: attribute '{}' is '{}', expected the default domain or com.microsoft", who,
                                        kExtendedDomainAttr, d));
  const int64_t version = opset_attr->i();
  const kernels::OpSchema* schema = nullptr;
  if (d.empty()) {
    if (version < 1 || version > kernels::kMaxOpset)
      return invalid_argument(fmt::format("{}: attribute '{}' is {}, expected an opset from 1 to {}", who,
                                          kExtendedOpsetAttr, version, kernels::kMaxOpset));
    schema = kernels::find_schema(node.op_type(), static_cast<int>(version));
    if (!schema)
      return invalid_argument(fmt::format("{}: {} is no ONNX operator at opset {}", who, node.op_type(), version));
    if (!schema->documented()) schema = nullptr;
  } else if (version != 1) {
    return invalid_argument(
        fmt::format("{}: attribute '{}' is {}, expected 1 ({} version 1)", who, kExtendedOpsetAttr, version, d));
  }
  const FusedForm* form = fused_form(d, node.op_type());
  if (schema) {
    std::pair<int, int> inputs = schema->inputs;
    if (form && form->max_inputs > inputs.second) inputs.second = form->max_inputs;
    auto within = [](int n, std::pair<int, int> r) { return n >= r.first && n <= r.second; };
    if (!within(node.input_size(), inputs))
      return invalid_argument(
          fmt::format("{} has {} input(s), expected {}", who, node.input_size(), count_range(inputs)));
    if (!within(node.output_size(), schema->outputs))
      return invalid_argument(
          fmt::format("{} has {} output(s), expected {}", who, node.output_size(), count_range(schema->outputs)));
  }
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (&a == opset_attr || &a == domain_attr) continue;
    const kernels::AttrSpec* spec = form ? find_spec(form->attributes, a.name()) : nullptr;
    if (!spec && schema) spec = schema->attribute(a.name());
    if (!spec && !schema) continue;  // com.microsoft: checked by its kernel, as in any model
    if (!spec) {
      std::string names;
      for (const auto& s : schema->attributes) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
      if (form)
        for (const auto& s : form->attributes) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
      return invalid_argument(fmt::format("{} has the attribute '{}', which neither {}-{} nor spindle's fused form of it "
                                          "defines (they have {})",
                                          who, a.name(), node.op_type(), schema->since_version,
                                          names.empty() ? "no attributes" : names));
    }
    SPINDLE_RETURN_IF_ERROR(check_attribute_type(a, *spec, who));
  }
  if (schema) SPINDLE_RETURN_IF_ERROR(check_required(node, *schema, who));
  *domain = d;
  *opset = static_cast<int>(version);
  return Status::ok();
}

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
    SPINDLE_RETURN_IF_ERROR(check_attribute_type(a, *spec, who));
  }
  return check_required(node, *schema, who);
}

}  // namespace spindle::graph
