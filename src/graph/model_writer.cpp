// model_writer.cpp — see model_writer.h.
#include "graph/model_writer.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "graph/node_check.h"
#include "kernels/op_schema.h"

namespace spindle::graph {
namespace {

// The IR version a model importing `opset` of the default domain needs (at
// least 4: initializers need not be graph inputs).
int64_t ir_version_for(int opset) {
  if (opset >= 23) return 11;
  if (opset >= 21) return 10;
  if (opset >= 19) return 9;
  if (opset >= 15) return 8;
  if (opset >= 12) return 7;
  if (opset >= 11) return 6;
  if (opset >= 10) return 5;
  return 4;
}

void write_type(const ValueInfo& v, onnx::TypeProto* type) {
  if (v.is_optional) type = type->mutable_optional_type()->mutable_elem_type();
  if (v.is_sequence) type = type->mutable_sequence_type()->mutable_elem_type();
  if (v.dtype == DataType::kUndefined) return;
  onnx::TypeProto_Tensor* t = type->mutable_tensor_type();
  t->set_elem_type(static_cast<int32_t>(v.dtype));
  if (!v.has_shape || v.is_sequence) return;
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    onnx::TensorShapeProto_Dimension* d = shape->add_dim();
    if (v.shape[i] >= 0)
      d->set_dim_value(v.shape[i]);
    else if (i < v.dim_names.size() && !v.dim_names[i].empty())
      d->set_dim_param(v.dim_names[i]);
  }
}

void write_value_info(const ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (v.dtype != DataType::kUndefined || v.is_optional || v.is_sequence) write_type(v, p->mutable_type());
}

// A tensor's dtype, dims and values (raw_data; string_data for strings).
Status tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  if (!t.is_tensor())
    return unsupported(fmt::format("constant '{}' is {}, which an ONNX initializer or attribute cannot hold", name,
                                   t.is_sequence() ? "a nested sequence" : "an optional"));
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  const Tensor c = t.is_contiguous() ? t : t.clone();
  if (t.dtype() == DataType::kString) {
    const std::string* s = c.data<std::string>();
    for (int64_t i = 0; i < c.numel(); ++i) p->add_string_data(s[i]);
  } else if (c.nbytes() > 0) {
    p->set_raw_data(c.raw_data(), c.nbytes());
  } else {
    p->set_raw_data(std::string());
  }
  return Status::ok();
}

class Writer {
 public:
  explicit Writer(const Graph& main) {
    for (const auto& [domain, version] : main.opsets) opsets_[domain] = version;
  }

  Status graph(const Graph& g, onnx::GraphProto* gp, bool subgraph) {
    if (!subgraph) {
      gp->set_name(g.metadata.graph_name);
      gp->set_doc_string(g.metadata.graph_description);
    }
    // Initializers nothing reads (the inputs of folded nodes) are left out,
    // as the session drops them; a subgraph's reads from here are its node's
    // inputs.
    std::set<int> read(g.outputs.begin(), g.outputs.end());
    read.insert(g.inputs.begin(), g.inputs.end());
    for (const Node& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (const auto& [id, t] : g.initializers)
      if (read.count(id)) SPINDLE_RETURN_IF_ERROR(constant(t, g.value_name(id), gp));
    const size_t formal = g.inputs.size() - g.captures.size();
    for (size_t i = 0; i < formal; ++i) {
      ValueInfo v = g.input_info[i];
      v.name = g.value_name(g.inputs[i]);
      write_value_info(v, gp->add_input());
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      ValueInfo v = i < g.output_info.size() ? g.output_info[i] : ValueInfo{};
      v.name = g.value_name(g.outputs[i]);
      write_value_info(v, gp->add_output());
    }
    for (const Node& n : g.nodes) SPINDLE_RETURN_IF_ERROR(node(g, n, gp->add_node()));
    return Status::ok();
  }

  // A constant as an initializer; a constant sequence (constant folding
  // makes them) as a SequenceConstruct of initializers, or SequenceEmpty.
  Status constant(const Tensor& t, const std::string& name, onnx::GraphProto* gp) {
    if (!t.is_sequence()) return tensor_to_proto(t, name, gp->add_initializer());
    onnx::NodeProto* n = gp->add_node();
    n->set_name(name + "/constant");
    n->add_output(name);
    const std::vector<Tensor>& items = t.sequence_items();
    if (items.empty()) {
      n->set_op_type("SequenceEmpty");
      onnx::AttributeProto* dtype = n->add_attribute();
      dtype->set_name("dtype");
      dtype->set_type(onnx::AttributeProto::INT);
      dtype->set_i(static_cast<int32_t>(t.dtype()));
    } else {
      n->set_op_type("SequenceConstruct");
      for (size_t i = 0; i < items.size(); ++i) {
        const std::string item = fmt::format("{}/item{}", name, i);
        SPINDLE_RETURN_IF_ERROR(tensor_to_proto(items[i], item, gp->add_initializer()));
        n->add_input(item);
      }
    }
    return Status::ok();
  }

  // The imports: the model's, with the domains the optimizer's nodes added.
  void imports(onnx::ModelProto& model) const {
    for (const auto& [domain, version] : opsets_) {
      onnx::OperatorSetIdProto* op = model.add_opset_import();
      op->set_domain(domain);
      op->set_version(version);
    }
  }

  int default_opset() const {
    auto it = opsets_.find("");
    return it == opsets_.end() ? 1 : it->second;
  }

 private:
  Status node(const Graph& g, const Node& n, onnx::NodeProto* np) {
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    // The values a node's subgraphs read from here are its last inputs in
    // the graph; in the file they are read by name.
    const size_t own = n.inputs.size() - n.outer_names.size();
    for (size_t i = 0; i < own; ++i) np->add_input(n.inputs[i] < 0 ? std::string() : g.value_name(n.inputs[i]));
    for (int out : n.outputs) np->add_output(out < 0 ? std::string() : g.value_name(out));
    for (const auto& [name, value] : n.attrs.all())
      SPINDLE_RETURN_IF_ERROR(attribute(name, value, np->add_attribute(), n));
    if (standard(n, own)) {
      np->set_domain(n.domain);
      opsets_.emplace(n.domain, n.opset);  // a domain the optimizer introduced
      return Status::ok();
    }
    np->set_domain(kExtendedDomain);
    opsets_.emplace(kExtendedDomain, 1);
    onnx::AttributeProto* opset = np->add_attribute();
    opset->set_name(kExtendedOpsetAttr);
    opset->set_type(onnx::AttributeProto::INT);
    opset->set_i(n.opset);
    if (!n.domain.empty()) {
      onnx::AttributeProto* domain = np->add_attribute();
      domain->set_name(kExtendedDomainAttr);
      domain->set_type(onnx::AttributeProto::STRING);
      domain->set_s(n.domain);
    }
    return Status::ok();
  }

  // Whether the file can hold n as it is: its domain at the version the file
  // imports, and, for an ONNX operator, only the inputs and attributes of its
  // signature; for another domain, none of the attributes spindle adds.
  bool standard(const Node& n, size_t own_inputs) const {
    auto imported = opsets_.find(n.domain);
    if (n.domain == "spindle") return imported == opsets_.end() || imported->second == n.opset;
    const FusedForm* form = fused_form(n.domain, n.op_type);
    if (!n.domain.empty()) {
      if (imported != opsets_.end() && imported->second != n.opset) return false;
      if (form)
        for (const kernels::AttrSpec& a : form->attributes)
          if (n.attrs.has(a.name)) return false;
      return true;
    }
    const int file_opset = default_opset();
    const kernels::OpSchema* schema = kernels::find_schema(n.op_type, file_opset);
    if (n.opset != file_opset && (!schema || schema != kernels::find_schema(n.op_type, n.opset))) return false;
    if (!schema || !schema->documented()) return true;
    const auto in = static_cast<int>(own_inputs);
    const auto out = static_cast<int>(n.outputs.size());
    if (in < schema->inputs.first || in > schema->inputs.second || out < schema->outputs.first ||
        out > schema->outputs.second)
      return false;
    for (const auto& [name, value] : n.attrs.all())
      if (!schema->attribute(name)) return false;
    return true;
  }

  Status attribute(const std::string& name, const AttrValue& value, onnx::AttributeProto* a, const Node& n) {
    a->set_name(name);
    return std::visit(
        [&](const auto& v) -> Status {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            a->set_type(onnx::AttributeProto::INT);
            a->set_i(v);
          } else if constexpr (std::is_same_v<T, float>) {
            a->set_type(onnx::AttributeProto::FLOAT);
            a->set_f(v);
          } else if constexpr (std::is_same_v<T, std::string>) {
            a->set_type(onnx::AttributeProto::STRING);
            a->set_s(v);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            a->set_type(onnx::AttributeProto::INTS);
            for (int64_t x : v) a->add_ints(x);
          } else if constexpr (std::is_same_v<T, std::vector<float>>) {
            a->set_type(onnx::AttributeProto::FLOATS);
            for (float x : v) a->add_floats(x);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            a->set_type(onnx::AttributeProto::STRINGS);
            for (const std::string& x : v) a->add_strings(x);
          } else if constexpr (std::is_same_v<T, Tensor>) {
            a->set_type(onnx::AttributeProto::TENSOR);
            Status s = tensor_to_proto(v, name, a->mutable_t());
            if (!s.is_ok()) return Status(s.code(), fmt::format("node {}: {}", n.label(), s.message()));
          } else if constexpr (std::is_same_v<T, GraphAttr>) {
            a->set_type(onnx::AttributeProto::GRAPH);
            onnx::GraphProto* gp = a->mutable_g();
            gp->set_name(name);
            return graph(*v.graph, gp, true);
          } else {
            static_assert(std::is_same_v<T, TypeAttr>);
            a->set_type(onnx::AttributeProto::TYPE_PROTO);
            ValueInfo info;
            info.is_sequence = v.sequence;
            info.dtype = v.dtype;
            write_type(info, a->mutable_tp());
          }
          return Status::ok();
        },
        value);
  }

  std::map<std::string, int> opsets_;
};

std::string system_error_text() { return std::strerror(errno); }

// Moves the main graph's large initializers into `file` beside the model.
Status write_external(onnx::GraphProto& gp, const std::filesystem::path& path, const WriteOptions& options) {
  const std::filesystem::path data_path = path.parent_path() / options.external_file;
  std::ofstream out(data_path, std::ios::binary | std::ios::trunc);
  if (!out)
    return invalid_argument(fmt::format("cannot write the optimized model's external data file '{}': {}",
                                        data_path.string(), system_error_text()));
  int64_t offset = 0;
  for (onnx::TensorProto& t : *gp.mutable_initializer()) {
    if (t.data_type() == onnx::TensorProto::STRING || static_cast<int64_t>(t.raw_data().size()) < options.external_min_bytes)
      continue;
    const std::string& bytes = t.raw_data();
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [key, value] : {std::pair<const char*, std::string>{"location", options.external_file},
                                     {"offset", std::to_string(offset)},
                                     {"length", std::to_string(bytes.size())}}) {
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    offset += static_cast<int64_t>(bytes.size());
    t.clear_raw_data();
  }
  out.close();
  if (!out)
    return invalid_argument(
        fmt::format("writing the optimized model's external data file '{}' failed: {}", data_path.string(), system_error_text()));
  return Status::ok();
}

Status write_to(std::ofstream& out, const Graph& g, const std::filesystem::path& path, const WriteOptions& options) {
  onnx::ModelProto model;
  Writer writer(g);
  SPINDLE_RETURN_IF_ERROR(writer.graph(g, model.mutable_graph(), false));
  writer.imports(model);
  model.set_ir_version(ir_version_for(writer.default_opset()));
  model.set_producer_name(g.metadata.producer_name);
  model.set_domain(g.metadata.domain);
  model.set_doc_string(g.metadata.description);
  model.set_model_version(g.metadata.version);
  std::map<std::string, std::string> props = g.metadata.custom_metadata_map;
  props[kAppliedPassesKey] = fmt::format("{}", fmt::join(options.applied_passes, ","));
  for (const auto& [key, value] : props) {
    onnx::StringStringEntryProto* p = model.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }
  if (!options.external_file.empty()) SPINDLE_RETURN_IF_ERROR(write_external(*model.mutable_graph(), path, options));
  if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return invalid_argument(fmt::format("the optimized model for '{}' is {} bytes, over protobuf's 2 GiB; set the session "
                                        "config entry session.optimized_model_external_initializers_file_name to keep "
                                        "its weights in a file beside it",
                                        path.string(), model.ByteSizeLong()));
  if (!model.SerializeToOstream(&out))
    return invalid_argument(fmt::format("writing the optimized model to '{}' failed: {}", path.string(), system_error_text()));
  out.close();
  if (!out)
    return invalid_argument(fmt::format("writing the optimized model to '{}' failed: {}", path.string(), system_error_text()));
  return Status::ok();
}

}  // namespace

Status write_model(const Graph& g, const std::filesystem::path& path, const WriteOptions& options) {
  // Opened first: a path that cannot be written fails before any work.
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return invalid_argument(fmt::format("cannot write the optimized model to '{}' (optimized_model_filepath): {}",
                                        path.string(), system_error_text()));
  Status s = write_to(out, g, path, options);
  if (!s.is_ok()) {
    // No half-written model is left behind.
    out.close();
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  return s;
}

std::vector<std::string> take_applied_passes(ModelMetadata& metadata) {
  auto it = metadata.custom_metadata_map.find(kAppliedPassesKey);
  if (it == metadata.custom_metadata_map.end()) return {};
  const std::string list = it->second;
  metadata.custom_metadata_map.erase(it);
  std::vector<std::string> names;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    for (const PassInfo& p : optimizer_passes())
      if (name == p.name && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    at = comma + 1;
  }
  return names;
}

}  // namespace spindle::graph
