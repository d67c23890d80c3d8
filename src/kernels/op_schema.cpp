// op_schema.cpp — the operator signature table (op_schemas.inc) and its
// look-ups; see op_schema.h.
#include "kernels/op_schema.h"

#include <algorithm>
#include <set>

namespace spindle::kernels {
namespace {

constexpr int kUnbounded = OpSchema::kUnbounded;

const std::vector<OpSchema>& table() {
  static const std::vector<OpSchema> schemas = {
#include "kernels/op_schemas.inc"
  };
  return schemas;
}

}  // namespace

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kTensor: return "tensor";
    case AttrType::kGraph: return "graph";
    case AttrType::kSparseTensor: return "sparse tensor";
    case AttrType::kTypeProto: return "type";
    case AttrType::kInts: return "list of ints";
    case AttrType::kFloats: return "list of floats";
    case AttrType::kStrings: return "list of strings";
    case AttrType::kTensors: return "list of tensors";
    case AttrType::kGraphs: return "list of graphs";
    case AttrType::kSparseTensors: return "list of sparse tensors";
    case AttrType::kTypeProtos: return "list of types";
  }
  return "?";
}

const AttrSpec* OpSchema::attribute(std::string_view name) const {
  for (const AttrSpec& a : attributes)
    if (name == a.name) return &a;
  return nullptr;
}

const OpSchema* find_schema(std::string_view op_type, int opset) {
  const auto& t = table();  // sorted by op_type, then since_version
  auto it = std::lower_bound(t.begin(), t.end(), op_type,
                             [](const OpSchema& s, std::string_view op) { return std::string_view(s.op_type) < op; });
  const OpSchema* found = nullptr;
  for (; it != t.end() && op_type == it->op_type && it->since_version <= opset; ++it) found = &*it;
  return found;
}

int first_opset(std::string_view op_type) {
  const OpSchema* s = find_schema(op_type, kMaxOpset);
  if (!s) return 0;
  int first = s->since_version;
  while (const OpSchema* prev = find_schema(op_type, first - 1)) first = prev->since_version;
  return first;
}

bool widens_types_only(std::string_view op_type, int since_version) {
  // From ONNX's docs/Changelog.md, opsets 18-23: revisions whose inputs,
  // outputs, attributes and semantics are those of the previous version and
  // only add element types (bfloat16, float8, int4, float4...). Cast-19,
  // CastLike-19 and QuantizeLinear-19 add `saturate`, which applies to
  // float8 targets only; DequantizeLinear/QuantizeLinear 21 and 23 add block
  // quantization and output types, which their kernel checks itself.
  static const std::set<std::pair<std::string_view, int>> revisions = [] {
    std::set<std::pair<std::string_view, int>> s;
    for (std::string_view op : {"Cast", "CastLike", "Constant", "Identity", "If", "Loop", "Reshape", "Scan", "Shape",
                                "Size", "DequantizeLinear", "QuantizeLinear"})
      s.insert({op, 19});
    s.insert({"Equal", 19});
    for (std::string_view op : {"ConstantOfShape", "IsInf", "IsNaN", "ReduceMax", "ReduceMin"}) s.insert({op, 20});
    for (std::string_view op : {"Cast", "CastLike", "Constant", "ConstantOfShape", "Flatten", "Identity", "If", "Loop",
                                "Pad", "QLinearMatMul", "Reshape", "Scan", "Shape", "Size", "Squeeze", "Transpose",
                                "Unsqueeze", "DequantizeLinear", "QuantizeLinear"})
      s.insert({op, 21});
    for (std::string_view op :
         {"Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "AveragePool", "Bernoulli", "Conv", "ConvTranspose",
          "Cos", "Cosh", "DeformConv", "Det", "Dropout", "Elu", "EyeLike", "GRU", "GlobalAveragePool", "GlobalLpPool",
          "GlobalMaxPool", "GridSample", "HardSigmoid", "HardSwish", "InstanceNormalization", "LSTM",
          "LpNormalization", "LpPool", "MaxPool", "MaxRoiPool", "MaxUnpool", "Mish", "Multinomial",
          "NegativeLogLikelihoodLoss", "RNN", "RandomNormal", "RandomNormalLike", "RandomUniform",
          "RandomUniformLike", "RoiAlign", "Round", "Selu", "Sin", "Sinh", "Softplus", "Softsign", "Tan",
          "ThresholdedRelu"})
      s.insert({op, 22});
    for (std::string_view op : {"Cast", "CastLike", "Constant", "ConstantOfShape", "DequantizeLinear", "Flatten",
                                "Identity", "If", "Loop", "Pad", "QuantizeLinear", "Reshape", "Scan", "Shape", "Size",
                                "Squeeze", "Transpose", "Unsqueeze"})
      s.insert({op, 23});
    return s;
  }();
  return revisions.count({op_type, since_version}) != 0;
}

}  // namespace spindle::kernels
