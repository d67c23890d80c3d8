// functions.cpp — see functions.h.
//
// Debian's libonnx 1.12 parses FunctionProto without the fields IR 9 and 10
// added (attribute_proto = 11: attribute defaults; overload = 13); protobuf
// keeps them as unknown fields, read here.
#include "graph/functions.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/unknown_field_set.h>

namespace spindle::graph {
namespace {

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::map<std::string, onnx::AttributeProto> defaults;  // attribute_proto (IR 9)
  std::string overload;                                  // IR 10
};

// Length-delimited unknown fields with number `field` (fields of a newer
// ONNX schema than the one libonnx was built with).
template <class Message>
std::vector<std::string> unknown_bytes(const Message& m, int field) {
  std::vector<std::string> out;
  const google::protobuf::UnknownFieldSet& u = m.unknown_fields();
  for (int i = 0; i < u.field_count(); ++i)
    if (u.field(i).number() == field && u.field(i).type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(u.field(i).length_delimited());
  return out;
}

// Reads attribute_proto (field 11) and overload (field 13) of a FunctionProto.
Status read_new_fields(const onnx::FunctionProto& fp, Function& f, const std::string& origin) {
  for (const std::string& bytes : unknown_bytes(fp, 11)) {
    onnx::AttributeProto a;
    if (!a.ParseFromString(bytes))
      return invalid_argument(fmt::format("{}: function '{}' has an attribute default that does not parse", origin,
                                          fp.name()));
    f.defaults[a.name()] = a;
  }
  for (const std::string& bytes : unknown_bytes(fp, 13)) f.overload = bytes;
  return Status::ok();
}

struct Inliner {
  const std::string& origin;
  std::map<std::tuple<std::string, std::string, std::string>, Function> functions;  // domain, name, overload
  int counter = 0;

  static std::string norm(const std::string& d) { return d == "ai.onnx" ? "" : d; }

  const Function* find(const onnx::NodeProto& n) const {
    // NodeProto.overload (field 16, IR 10) is unknown to libonnx 1.12 too.
    std::string overload;
    for (const std::string& bytes : unknown_bytes(n, 16)) overload = bytes;
    auto it = functions.find({norm(n.domain()), n.op_type(), overload});
    return it == functions.end() ? nullptr : &it->second;
  }

  // Renames values in a subgraph of a function body: names the function body
  // defines are mapped, the subgraph's own are left alone.
  static void rename_in_graph(onnx::GraphProto& g, const std::map<std::string, std::string>& names) {
    auto map = [&](std::string* s) {
      auto it = names.find(*s);
      if (it != names.end()) *s = it->second;
    };
    for (auto& n : *g.mutable_node()) {
      for (auto& in : *n.mutable_input()) map(&in);
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) rename_in_graph(*a.mutable_g(), names);
        for (auto& sg : *a.mutable_graphs()) rename_in_graph(sg, names);
      }
    }
  }

  // Resolves ref_attr_name references of a body node (and of its subgraphs'
  // nodes) against the call's attributes and the function's defaults.
  Status resolve_refs(onnx::NodeProto& n, const onnx::NodeProto& call, const Function& f) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> out;
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) SPINDLE_RETURN_IF_ERROR(resolve_graph(*a.mutable_g(), call, f));
      for (auto& sg : *a.mutable_graphs()) SPINDLE_RETURN_IF_ERROR(resolve_graph(sg, call, f));
      if (a.ref_attr_name().empty()) {
        *out.Add() = a;
        continue;
      }
      const onnx::AttributeProto* given = nullptr;
      for (const auto& ca : call.attribute())
        if (ca.name() == a.ref_attr_name()) given = &ca;
      if (!given) {
        auto d = f.defaults.find(a.ref_attr_name());
        if (d != f.defaults.end()) given = &d->second;
      }
      if (!given) continue;  // not given and no default: the attribute is absent
      onnx::AttributeProto resolved = *given;
      resolved.set_name(a.name());
      *out.Add() = std::move(resolved);
    }
    n.mutable_attribute()->Swap(&out);
    return Status::ok();
  }

  Status resolve_graph(onnx::GraphProto& g, const onnx::NodeProto& call, const Function& f) {
    for (auto& n : *g.mutable_node()) SPINDLE_RETURN_IF_ERROR(resolve_refs(n, call, f));
    return Status::ok();
  }

  Status expand(const onnx::NodeProto& call, const Function& f, int depth,
                google::protobuf::RepeatedPtrField<onnx::NodeProto>& out) {
    const onnx::FunctionProto& fp = *f.proto;
    if (depth > 32)
      return invalid_argument(fmt::format("{}: function '{}' calls itself, directly or not (more than 32 nested calls)",
                                          origin, fp.name()));
    if (call.input_size() > fp.input_size() || call.output_size() > fp.output_size())
      return invalid_argument(fmt::format("{}: node '{}' calls function '{}' with {} inputs and {} outputs, expected at "
                                          "most {} and {}", origin, call.name(), fp.name(), call.input_size(),
                                          call.output_size(), fp.input_size(), fp.output_size()));
    const std::string prefix = fmt::format("{}__{}__", call.name().empty() ? fp.name() : call.name(), counter++);
    std::map<std::string, std::string> names;
    for (int i = 0; i < fp.input_size(); ++i) names[fp.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < fp.output_size(); ++i) names[fp.output(i)] = i < call.output_size() ? call.output(i) : prefix + fp.output(i);
    for (const auto& n : fp.node())
      for (const auto& o : n.output())
        if (!o.empty() && !names.count(o)) names[o] = prefix + o;
    for (const auto& body : fp.node()) {
      onnx::NodeProto n = body;
      for (auto& in : *n.mutable_input()) {
        auto it = names.find(in);
        if (it != names.end()) in = it->second;
      }
      for (auto& o : *n.mutable_output()) o = o.empty() ? o : names[o];
      if (!n.name().empty()) n.set_name(prefix + n.name());
      SPINDLE_RETURN_IF_ERROR(resolve_refs(n, call, f));
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) rename_in_graph(*a.mutable_g(), names);
        for (auto& sg : *a.mutable_graphs()) rename_in_graph(sg, names);
      }
      if (const Function* inner = find(n)) {
        SPINDLE_RETURN_IF_ERROR(expand(n, *inner, depth + 1, out));
      } else {
        SPINDLE_RETURN_IF_ERROR(inline_subgraphs(n, depth + 1));
        *out.Add() = std::move(n);
      }
    }
    return Status::ok();
  }

  // ---- counting: nodes once every call is expanded, saturating at kMany.
  static constexpr int64_t kMany = INT64_MAX / 4;
  static int64_t add(int64_t a, int64_t b) { return std::min(kMany, a + b); }
  std::map<const Function*, int64_t> sizes;   // memo
  std::set<const Function*> in_progress;      // a call cycle: expand() reports it

  int64_t count_graph(const onnx::GraphProto& g) { return count_nodes(g.node()); }
  int64_t count_nodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes) {
    int64_t total = 0;
    for (const auto& n : nodes) {
      if (const Function* f = find(n)) {
        total = add(total, function_size(*f));
        continue;
      }
      total = add(total, 1);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) total = add(total, count_graph(a.g()));
        for (const auto& sg : a.graphs()) total = add(total, count_graph(sg));
      }
    }
    return total;
  }
  int64_t function_size(const Function& f) {
    if (auto it = sizes.find(&f); it != sizes.end()) return it->second;
    if (!in_progress.insert(&f).second) return 0;
    const int64_t n = count_nodes(f.proto->node());
    in_progress.erase(&f);
    return sizes[&f] = n;
  }

  Status inline_subgraphs(onnx::NodeProto& n, int depth) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) SPINDLE_RETURN_IF_ERROR(inline_graph(*a.mutable_g(), depth));
      for (auto& sg : *a.mutable_graphs()) SPINDLE_RETURN_IF_ERROR(inline_graph(sg, depth));
    }
    return Status::ok();
  }

  Status inline_graph(onnx::GraphProto& g, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (auto& n : *g.mutable_node()) {
      if (const Function* f = find(n)) {
        SPINDLE_RETURN_IF_ERROR(expand(n, *f, depth, out));
      } else {
        SPINDLE_RETURN_IF_ERROR(inline_subgraphs(n, depth));
        *out.Add() = std::move(n);
      }
    }
    g.mutable_node()->Swap(&out);
    return Status::ok();
  }
};

}  // namespace

Status inline_functions(onnx::ModelProto& model, const std::string& origin, int64_t max_nodes) {
  Inliner inliner{origin, {}, 0, {}, {}};
  std::map<std::string, int64_t> imports;
  for (const auto& op : model.opset_import()) imports[Inliner::norm(op.domain())] = op.version();
  for (const auto& fp : model.functions()) {
    Function f;
    f.proto = &fp;
    SPINDLE_RETURN_IF_ERROR(read_new_fields(fp, f, origin));
    auto key = std::make_tuple(Inliner::norm(fp.domain()), fp.name(), f.overload);
    if (inliner.functions.count(key))
      return invalid_argument(fmt::format("{}: function '{}' of domain '{}' is defined twice", origin, fp.name(), fp.domain()));
    for (const auto& op : fp.opset_import()) {
      const std::string d = Inliner::norm(op.domain());
      if (!imports.count(d)) {
        imports[d] = op.version();
        auto* added = model.add_opset_import();
        added->set_domain(d);
        added->set_version(op.version());
      }
    }
    inliner.functions.emplace(std::move(key), std::move(f));
  }
  const int64_t nodes = inliner.count_graph(model.graph());
  if (max_nodes > 0 && nodes > max_nodes)
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: the model has {} nodes once its functions are expanded (subgraphs included), more "
                              "than session.max_graph_nodes = {}",
                              origin, nodes >= Inliner::kMany ? std::string("over 10^18") : std::to_string(nodes),
                              max_nodes));
  if (model.functions_size() == 0) return Status::ok();
  return inliner.inline_graph(*model.mutable_graph(), 0);
}

}  // namespace spindle::graph
