// type_inference.cpp — element types of graph outputs a model leaves
// undeclared, from spindle's own type rules (see graph.h, infer_output_types).
//
// Only element types are inferred (shapes are known at run time). libonnx's
// shape inference is never run: it crashes on hostile models (a ConvTranspose
// whose weight is declared rank 1). Most operators produce the element type
// of their first input; the table below lists the exceptions. A value whose
// type stays unknown keeps kUndefined and takes the computed tensor's type at
// run time.

#include <algorithm>

#include "graph/graph.h"
#include "kernels/custom/custom_op_kernel.h"

namespace spindle::graph {
namespace {

DataType attr_dtype(const Node& n, const char* attr, DataType def) {
  if (!n.attrs.has(attr)) return def;
  const int64_t v = n.attrs.get_int(attr);
  return (v >= 1 && v <= 13) || v == 16 ? static_cast<DataType>(v) : DataType::kUndefined;
}

// Output `o` of node `n`, given its inputs' types (kUndefined when unknown).
DataType output_type(const Node& n, int o, const std::vector<DataType>& in) {
  auto input = [&](size_t i) { return i < in.size() ? in[i] : DataType::kUndefined; };
  auto first_known = [&] {
    for (DataType t : in)
      if (t != DataType::kUndefined) return t;
    return DataType::kUndefined;
  };
  const std::string& op = n.op_type;
  if (n.domain == "com.microsoft" && (op == "MatMulIntegerToFloat" || op == "MatMulNBits")) return DataType::kFloat32;
  if (!n.domain.empty()) return n.domain == "com.microsoft" ? first_known() : DataType::kUndefined;
  if (op == "Shape" || op == "Size" || op == "ArgMax" || op == "ArgMin" || op == "NonZero" ||
      op == "NonMaxSuppression" || op == "SequenceLength" || (op == "TopK" && o == 1) || (op == "Unique" && o > 0))
    return DataType::kInt64;
  if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" || op == "Not" ||
      op == "And" || op == "Or" || op == "Xor" || op == "IsNaN" || op == "IsInf" || op == "OptionalHasElement")
    return DataType::kBool;
  if (op == "Cast") return attr_dtype(n, "to", DataType::kUndefined);
  if (op == "CastLike") return input(1);
  if (op == "MatMulInteger" || op == "ConvInteger") return DataType::kInt32;
  if (op == "DequantizeLinear" || op == "TfIdfVectorizer") return DataType::kFloat32;
  if (op == "QuantizeLinear") return input(2) != DataType::kUndefined ? input(2) : DataType::kUInt8;
  if (op == "DynamicQuantizeLinear") return o == 1 ? DataType::kFloat32 : DataType::kUInt8;
  if (op == "QLinearConv" || op == "QLinearMatMul") return input(7);
  if (op == "StringNormalizer") return DataType::kString;
  if (op == "RegexFullMatch") return DataType::kBool;
  if (op == "Where") return input(1);
  if (op == "OneHot") return input(2);
  if (op == "Multinomial") return attr_dtype(n, "dtype", DataType::kInt32);
  if (op == "RandomNormal" || op == "RandomUniform" || op == "SequenceEmpty") return attr_dtype(n, "dtype", DataType::kFloat32);
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" || op == "MelWeightMatrix")
    return attr_dtype(n, "output_datatype", DataType::kFloat32);
  if (op == "RandomNormalLike" || op == "RandomUniformLike" || op == "EyeLike" || op == "Bernoulli")
    return attr_dtype(n, "dtype", input(0));
  if (op == "ConstantOfShape" || op == "Constant") {
    if (n.attrs.has("value")) return n.attrs.get_tensor("value").dtype();
    if (op == "ConstantOfShape") return DataType::kFloat32;
    if (n.attrs.has("value_float") || n.attrs.has("value_floats")) return DataType::kFloat32;
    if (n.attrs.has("value_int") || n.attrs.has("value_ints")) return DataType::kInt64;
    if (n.attrs.has("value_string") || n.attrs.has("value_strings")) return DataType::kString;
    return DataType::kUndefined;
  }
  if (op == "Optional" && n.attrs.has("type")) return n.attrs.get_type("type").dtype;
  // Control flow: types come from the subgraphs (already inferred) and the
  // carried inputs.
  auto body_output = [&](const char* attr, int i) {
    auto it = n.attrs.all().find(attr);
    if (it == n.attrs.all().end() || !std::holds_alternative<GraphAttr>(it->second)) return DataType::kUndefined;
    const Graph& body = *std::get<GraphAttr>(it->second).graph;
    return i >= 0 && static_cast<size_t>(i) < body.output_info.size() ? body.output_info[static_cast<size_t>(i)].dtype
                                                                       : DataType::kUndefined;
  };
  if (op == "If") {
    const DataType t = body_output("then_branch", o);
    return t != DataType::kUndefined ? t : body_output("else_branch", o);
  }
  if (op == "Loop") {
    const int carried = static_cast<int>(n.inputs.size() - n.outer_names.size()) - 2;
    if (o < carried) return input(static_cast<size_t>(o) + 2);
    return body_output("body", o + 1);
  }
  if (op == "Scan") {
    // num_scan_inputs comes from the model: clamped to the inputs there are
    // (node_check refuses a wrong count later, naming it).
    const int64_t given = static_cast<int64_t>(n.inputs.size() - n.outer_names.size());
    const int64_t states = given - std::clamp<int64_t>(n.attrs.get_int("num_scan_inputs", 0), 0, given);
    if (o < states) return input(static_cast<size_t>(o));
    return body_output("body", o);
  }
  if (op == "SequenceMap") return body_output("body", o);
  return input(0) != DataType::kUndefined ? input(0) : first_known();
}

}  // namespace

void infer_output_types(Graph& g, const std::map<std::string, DataType>& outer, const CustomOpDomains* custom_ops) {
  std::vector<DataType> type(static_cast<size_t>(g.num_values()), DataType::kUndefined);
  for (int id = 0; id < g.num_values(); ++id)
    if (auto it = outer.find(g.value_name(id)); it != outer.end()) type[static_cast<size_t>(id)] = it->second;
  for (size_t i = 0; i < g.inputs.size() && i < g.input_info.size(); ++i)
    if (g.input_info[i].dtype != DataType::kUndefined) type[static_cast<size_t>(g.inputs[i])] = g.input_info[i].dtype;
  for (const auto& [id, t] : g.initializers) type[static_cast<size_t>(id)] = t.dtype();
  for (const Node& n : g.nodes) {
    std::vector<DataType> in;
    for (int id : n.inputs) in.push_back(id >= 0 ? type[static_cast<size_t>(id)] : DataType::kUndefined);
    if (auto op = kernels::find_custom_op(custom_ops, n.domain, n.op_type, n.opset)) {
      std::vector<DataType> declared;
      try {
        declared = op->output_types();
      } catch (const Error&) {
        // An undeclarable type: creating the node's kernel reports it; the types stay unknown.
      }
      std::vector<DataType> out;
      for (size_t o = 0; o < n.outputs.size(); ++o) out.push_back(kernels::declared_type(declared, o));
      // Outputs the op leaves open: its own inference (ONNX Runtime's InferOutputShapeFn) may know them.
      if (std::find(out.begin(), out.end(), DataType::kUndefined) != out.end()) {
        CustomKernelInfo node;
        node.node_name = n.name;
        node.op_type = n.op_type;
        node.domain = n.domain;
        node.opset = n.opset;
        for (size_t i = 0; i < n.inputs.size() - n.outer_names.size(); ++i) {
          node.input_names.push_back(n.inputs[i] >= 0 ? g.value_name(n.inputs[i]) : "");
          node.input_types.push_back(in[i]);
        }
        for (int id : n.outputs) node.output_names.push_back(id >= 0 ? g.value_name(id) : "");
        node.attributes = kernels::custom_attributes(n.attrs);
        out = kernels::inferred_output_types(*op, node, std::move(out));
      }
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] >= 0) type[static_cast<size_t>(n.outputs[o])] = out[o];
      continue;
    }
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) {
        try {
          type[static_cast<size_t>(n.outputs[o])] = output_type(n, static_cast<int>(o), in);
        } catch (const Error&) {
          // A malformed attribute: the node's kernel reports it; the type stays unknown.
        }
      }
  }
  for (size_t i = 0; i < g.outputs.size() && i < g.output_info.size(); ++i)
    if (g.output_info[i].dtype == DataType::kUndefined) g.output_info[i].dtype = type[static_cast<size_t>(g.outputs[i])];
}

}  // namespace spindle::graph
