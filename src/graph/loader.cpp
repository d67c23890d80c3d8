// loader.cpp — onnx ModelProto to Graph (see graph.h).
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include "graph/functions.h"
#include "graph/graph.h"
#include "graph/model_stream.h"
#include "graph/node_check.h"
#include "graph/onnx_convert.h"
#include "io/regular_file.h"
#include "io/tensor_proto.h"
#include "kernels/custom/custom_op_kernel.h"
#include "kernels/kernel.h"
#include "kernels/op_schema.h"

namespace spindle::graph {

// ---------------------------------------------------------------- Graph

int Graph::value_id(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

int Graph::add_value(const std::string& name) {
  auto [it, inserted] = ids_.emplace(name, static_cast<int>(value_names_.size()));
  if (inserted) value_names_.push_back(name);
  return it->second;
}

namespace {

void add_use(std::vector<std::vector<int>>& lists, int value, int node) {
  if (value < 0) return;
  if (static_cast<size_t>(value) >= lists.size()) lists.resize(static_cast<size_t>(value) + 1);
  std::vector<int>& l = lists[static_cast<size_t>(value)];
  if (l.empty() || l.back() != node) l.push_back(node);
}

// The nodes of `candidates` (node indices, possibly repeated or stale) whose
// `side` (inputs or outputs) still holds `id`, sorted and unique.
template <class Side>
std::vector<int> still_using(const std::vector<Node>& nodes, std::vector<int> candidates, int id, Side side) {
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<int> out;
  for (int n : candidates) {
    const std::vector<int>& v = nodes[static_cast<size_t>(n)].*side;
    if (std::find(v.begin(), v.end(), id) != v.end()) out.push_back(n);
  }
  return out;
}

}  // namespace

const Graph::UseIndex& Graph::uses() const {
  if (uses_ && uses_->num_nodes == nodes.size()) return *uses_;
  UseIndex u;
  u.num_nodes = nodes.size();
  u.readers.resize(value_names_.size());
  u.writers.resize(value_names_.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int in : nodes[n].inputs) add_use(u.readers, in, static_cast<int>(n));
    for (int out : nodes[n].outputs) add_use(u.writers, out, static_cast<int>(n));
  }
  u.is_output.assign(value_names_.size(), 0);
  for (int id : outputs)
    if (id >= 0 && static_cast<size_t>(id) < u.is_output.size()) u.is_output[static_cast<size_t>(id)] = 1;
  uses_ = std::move(u);
  return *uses_;
}

void Graph::reindex(int node) {
  if (!uses_ || uses_->num_nodes != nodes.size()) return;  // rebuilt when next read
  const Node& n = nodes[static_cast<size_t>(node)];
  for (int in : n.inputs) add_use(uses_->readers, in, node);
  for (int out : n.outputs) add_use(uses_->writers, out, node);
}

bool Graph::is_graph_output(int id) const {
  const std::vector<char>& flags = uses().is_output;
  return id >= 0 && static_cast<size_t>(id) < flags.size() && flags[static_cast<size_t>(id)];
}

std::vector<int> Graph::consumers(int id, size_t at_most) const {
  const UseIndex& u = uses();
  if (id < 0 || static_cast<size_t>(id) >= u.readers.size()) return {};
  const std::vector<int>& seen = u.readers[static_cast<size_t>(id)];
  if (at_most >= seen.size()) return still_using(nodes, seen, id, &Node::inputs);
  std::vector<int> out;
  for (int n : seen) {
    const std::vector<int>& in = nodes[static_cast<size_t>(n)].inputs;
    if (std::find(out.begin(), out.end(), n) != out.end() || std::find(in.begin(), in.end(), id) == in.end()) continue;
    out.push_back(n);
    if (out.size() > at_most) break;
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Graph::producer(int id) const {
  const UseIndex& u = uses();
  if (id < 0 || static_cast<size_t>(id) >= u.writers.size()) return -1;
  const std::vector<int> w = still_using(nodes, u.writers[static_cast<size_t>(id)], id, &Node::outputs);
  return w.empty() ? -1 : w.front();
}

void Graph::compact(const std::vector<bool>& dead) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(nodes[i]));
  nodes = std::move(kept);
  uses_.reset();
}

Status Graph::topological_sort() {
  std::vector<int> producer_of(static_cast<size_t>(num_values()), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int out : nodes[n].outputs)
      if (out >= 0) producer_of[static_cast<size_t>(out)] = static_cast<int>(n);
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> users(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int in : nodes[n].inputs) {
      if (in < 0) continue;
      const int p = producer_of[static_cast<size_t>(in)];
      if (p >= 0) {
        ++pending[n];
        users[static_cast<size_t>(p)].push_back(static_cast<int>(n));
      }
    }
  std::vector<int> order;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (pending[n] == 0) order.push_back(static_cast<int>(n));
  for (size_t i = 0; i < order.size(); ++i)
    for (int u : users[static_cast<size_t>(order[i])])
      if (--pending[static_cast<size_t>(u)] == 0) order.push_back(u);
  if (order.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n)
      if (pending[n] > 0) return invalid_argument(fmt::format("the graph has a cycle through node {}", nodes[n].label()));
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  for (int n : order) sorted.push_back(std::move(nodes[static_cast<size_t>(n)]));
  nodes = std::move(sorted);
  uses_.reset();
  return Status::ok();
}

Status LoadLimits::check(const std::string& origin, const char* doing) const {
  if (deadline == std::chrono::steady_clock::time_point::max() || std::chrono::steady_clock::now() <= deadline)
    return Status::ok();
  return Status(StatusCode::kResourceExhausted,
                fmt::format("{}creating the session took longer than session.load_timeout_ms = {} ms (while {})",
                            origin.empty() ? std::string() : origin + ": ", timeout_ms, doing));
}

// ---------------------------------------------------------------- loading

namespace {

// A graph input or output: a tensor of a supported element type, a sequence
// of such tensors, an optional of either, or a clear kUnsupported error
// (maps, sparse tensors, float8...).
Result<ValueInfo> value_info(const onnx::ValueInfoProto& v, const char* kind) {
  ValueInfo info;
  info.name = v.name();
  const onnx::TypeProto* type = &v.type();
  if (type->has_optional_type()) {
    info.is_optional = true;
    type = &type->optional_type().elem_type();
    if (type->value_case() == onnx::TypeProto::VALUE_NOT_SET) return info;
  }
  if (type->has_sequence_type()) {
    info.is_sequence = true;
    type = &type->sequence_type().elem_type();
    if (type->value_case() == onnx::TypeProto::VALUE_NOT_SET) return info;
  }
  if (type->value_case() != onnx::TypeProto::VALUE_NOT_SET && !type->has_tensor_type()) {
    const char* what = type->has_sequence_type() ? "a sequence"
                       : type->has_map_type()    ? "a map"
                       : type->has_optional_type() ? "an optional"
                                                   : "a non-tensor value";
    return unsupported(fmt::format("graph {} '{}' is {}{}{}; spindle supports tensors, sequences of tensors and "
                                   "optionals of those",
                                   kind, v.name(), info.is_optional ? "an optional of " : "",
                                   info.is_sequence ? "a sequence of " : "", what));
  }
  if (type->has_tensor_type()) {
    const auto& tt = type->tensor_type();
    if (tt.elem_type() != 0) {
      auto dt = io::dtype_from_onnx(tt.elem_type());
      if (!dt.is_ok()) return unsupported(fmt::format("graph {} '{}': {}", kind, v.name(), dt.status().message()));
      info.dtype = dt.value();
    }
    if (tt.has_shape() && !info.is_sequence) {
      info.has_shape = true;
      for (const auto& d : tt.shape().dim()) {
        info.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
        info.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
        info.dim_denotations.push_back(d.denotation());
      }
    }
  }
  return info;
}

// protobuf's default recursion limit (100) allows only ~30 nested If
// levels; real models need far fewer than this.
constexpr int kMaxMessageDepth = 1000;

// Kinds of ONNX messages that can nest (the rest are leaves here).
enum class Msg { kModel, kGraph, kNode, kAttribute, kFunction, kValueInfo, kType, kTypeElem, kMapType, kTraining, kLeaf };

Msg child_message(Msg m, int field) {
  switch (m) {
    case Msg::kModel: return field == 7 ? Msg::kGraph : field == 25 ? Msg::kFunction : field == 20 ? Msg::kTraining : Msg::kLeaf;
    case Msg::kGraph: return field == 1 ? Msg::kNode : field >= 11 && field <= 13 ? Msg::kValueInfo : Msg::kLeaf;
    case Msg::kNode: return field == 5 ? Msg::kAttribute : Msg::kLeaf;
    case Msg::kAttribute: return field == 6 || field == 11 ? Msg::kGraph : field == 14 || field == 15 ? Msg::kType : Msg::kLeaf;
    case Msg::kFunction: return field == 7 ? Msg::kNode : field == 11 ? Msg::kAttribute : Msg::kLeaf;
    case Msg::kValueInfo: return field == 2 ? Msg::kType : Msg::kLeaf;
    case Msg::kType: return field == 4 || field == 9 ? Msg::kTypeElem : field == 5 ? Msg::kMapType : Msg::kLeaf;
    case Msg::kTypeElem: return field == 1 ? Msg::kType : Msg::kLeaf;
    case Msg::kMapType: return field == 2 ? Msg::kType : Msg::kLeaf;
    case Msg::kTraining: return field == 1 || field == 2 ? Msg::kGraph : Msg::kLeaf;
    case Msg::kLeaf: break;
  }
  return Msg::kLeaf;
}

// How deep a serialized ModelProto nests graphs, nodes, attributes and
// types, walked without recursion (to tell protobuf's depth limit from
// truncation when parsing fails).
int message_depth(std::span<const uint8_t> bytes) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  std::vector<std::pair<Msg, google::protobuf::io::CodedInputStream::Limit>> stack{{Msg::kModel, 0}};
  size_t depth = 0;
  while (!stack.empty()) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {
      if (stack.size() == 1) break;
      in.PopLimit(stack.back().second);
      stack.pop_back();
      continue;
    }
    const Msg c = WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED
                      ? child_message(stack.back().first, WireFormatLite::GetTagFieldNumber(tag))
                      : Msg::kLeaf;
    if (c == Msg::kLeaf) {
      if (!WireFormatLite::SkipField(&in, tag)) break;
      continue;
    }
    uint32_t len = 0;
    if (!in.ReadVarint32(&len)) break;
    stack.emplace_back(c, in.PushLimit(static_cast<int>(len)));
    depth = std::max(depth, stack.size() - 1);
  }
  return static_cast<int>(depth);
}

// Builds a Graph (the main graph or a subgraph of a control-flow node) from
// its GraphProto. Unsupported operators, in any graph, are collected into
// `missing` so that one error lists them all.
struct GraphBuilder {
  const std::string& origin;
  const std::filesystem::path& base_dir;
  const std::map<std::string, int>& opsets;
  bool check_nodes;  // LoadOptions::run_checker
  // The ModelProto is the loader's own and read once: each initializer's
  // bytes are freed as soon as they are converted, so a model's weights are
  // not held twice while it is loaded.
  bool release_initializers = false;
  std::vector<std::string> missing;
  std::set<std::string> missing_seen;
  const CustomOpDomains* custom_ops = nullptr;  // LoadOptions::custom_ops
  // IR version 4 and later: an initializer the main graph lists as an input
  // may be fed (Graph::overridable); before, it is a constant.
  bool overridable_initializers = false;
  // The main graph's initializers whose raw_data was left in the model file
  // (model_stream.h), by index; null when the model was parsed whole.
  const std::vector<std::optional<io::FileRange>>* payloads = nullptr;

  // Single assignment, as the onnx checker requires: every name of a graph
  // is an initializer, an input or a node's output, once (an input may also
  // be an initializer: its default value). What assigned each id:
  struct Assignments {
    const std::string& origin;
    const Graph& g;
    std::map<int, std::string> by;
    Status assign(int id, std::string what) {
      auto [it, fresh] = by.emplace(id, what);
      if (fresh) return Status::ok();
      return invalid_argument(fmt::format("{}: '{}' is assigned twice, as {} and as {}; a graph assigns each name once "
                                          "(single static assignment)",
                                          origin, g.value_name(id), it->second, what));
    }
  };

  // A subgraph reads values of enclosing graphs by name: those become
  // `captures`, inputs after its formal ones.
  // `outer`: element types of values visible from enclosing graphs.
  Status build(const onnx::GraphProto& gp, Graph& g, bool subgraph, const std::map<std::string, DataType>& outer) {
    g.base_dir = base_dir;
    g.opsets = opsets;
    Assignments assigned{origin, g, {}};
    SPINDLE_RETURN_IF_ERROR(load_values(gp, g, subgraph, assigned));

    std::map<std::string, DataType> known = outer;  // what this graph's subgraphs can see
    for (const auto& [id, t] : g.initializers) known[g.value_name(id)] = t.dtype();
    for (size_t i = 0; i < g.inputs.size(); ++i) known[g.value_name(g.inputs[i])] = g.input_info[i].dtype;
    for (const auto& np : gp.node()) SPINDLE_RETURN_IF_ERROR(load_node(np, g, known, assigned));
    if (!missing.empty()) return Status::ok();  // reported by the caller, with every graph's
    if (Status s = expand_gradients(g); !s.is_ok()) return Status(s.code(), fmt::format("{}: {}", origin, s.message()));
    SPINDLE_RETURN_IF_ERROR(resolve_captures(g, subgraph));
    SPINDLE_RETURN_IF_ERROR(g.topological_sort());
    infer_output_types(g, outer, custom_ops);
    return Status::ok();
  }

  // Initializers, inputs and outputs of one graph.
  Status load_values(const onnx::GraphProto& gp, Graph& g, bool subgraph, Assignments& assigned) {
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& init = gp.initializer(i);
      const int id = g.add_value(init.name());
      SPINDLE_RETURN_IF_ERROR(assigned.assign(id, "an initializer"));
      const io::FileRange* raw = nullptr;
      if (payloads && !subgraph && static_cast<size_t>(i) < payloads->size() && (*payloads)[static_cast<size_t>(i)])
        raw = &*(*payloads)[static_cast<size_t>(i)];
      auto t = io::tensor_from_proto(init, base_dir, raw);
      if (!t.is_ok())
        return Status(t.status().code(), fmt::format("{}: initializer '{}': {}", origin, init.name(), t.status().message()));
      g.initializers[id] = std::move(t).value();
      if (release_initializers && !subgraph) {
        onnx::TensorProto emptied;
        emptied.Swap(const_cast<onnx::TensorProto*>(&init));  // the caller's non-const ModelProto
      }
    }
    if (gp.sparse_initializer_size() > 0)
      return unsupported(fmt::format("{}: sparse initializers are not supported", origin));
    for (const auto& in : gp.input()) {
      const int id = g.add_value(in.name());
      if (!g.is_initializer(id)) SPINDLE_RETURN_IF_ERROR(assigned.assign(id, "a graph input"));
      const bool with_default = !subgraph && g.is_initializer(id);  // an initializer with a default value
      if (with_default && !overridable_initializers) continue;      // constant here
      auto info = value_info(in, "input");
      if (!info.is_ok()) return Status(info.status().code(), fmt::format("{}: {}", origin, info.status().message()));
      (with_default ? g.overridable : g.inputs).push_back(id);
      (with_default ? g.overridable_info : g.input_info).push_back(std::move(info).value());
    }
    for (const auto& out : gp.output()) {
      g.outputs.push_back(g.add_value(out.name()));
      auto info = value_info(out, "output");
      if (!info.is_ok()) return Status(info.status().code(), fmt::format("{}: {}", origin, info.status().message()));
      g.output_info.push_back(std::move(info).value());
    }
    return Status::ok();
  }

  // One node, its subgraphs built recursively; an operator nobody
  // implements is recorded in `missing` and skipped.
  Status load_node(const onnx::NodeProto& np, Graph& g, const std::map<std::string, DataType>& known,
                   Assignments& assigned) {
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    auto opset = opsets.find(n.domain);
    if (opset == opsets.end())
      return invalid_argument(
          fmt::format("{}: node {} uses domain '{}', which the model does not import", origin, n.label(), n.domain));
    n.opset = opset->second;
    // An optimized model's ONNX operator in a fused form (model_writer.h):
    // checked here, then the operator of its own domain and version.
    const bool extended = n.domain == kExtendedDomain;
    if (extended)
      if (Status s = check_extended_node(np, &n.domain, &n.opset); !s.is_ok())
        return Status(s.code(), fmt::format("{}: {}", origin, s.message()));
    const auto& registry = kernels::KernelRegistry::global();
    if (!is_gradient_node(n.domain, n.op_type) && !registry.find(n.domain, n.op_type, n.opset) &&
        !kernels::find_custom_op(custom_ops, n.domain, n.op_type, n.opset)) {
      const std::string what = fmt::format("{}{} (opset {})", n.domain.empty() ? "" : n.domain + ".", n.op_type, n.opset);
      if (missing_seen.insert(what).second) missing.push_back(what);
      return Status::ok();
    }
    if (check_nodes && n.domain.empty() && !extended)
      if (Status s = check_node(np, n.opset); !s.is_ok()) return Status(s.code(), fmt::format("{}: {}", origin, s.message()));
    std::vector<std::string> outer;  // names the node's subgraphs read from here or above
    std::function<Result<AttrValue>(const onnx::GraphProto&)> load_subgraph =
        [&](const onnx::GraphProto& sub) -> Result<AttrValue> {
      auto sg = std::make_shared<Graph>();
      SPINDLE_RETURN_IF_ERROR(build(sub, *sg, true, known));
      for (const auto& c : sg->captures)
        if (std::find(outer.begin(), outer.end(), c) == outer.end()) outer.push_back(c);
      return AttrValue(GraphAttr{std::move(sg)});
    };
    auto attrs = attributes_from_proto(np, base_dir, &load_subgraph);
    if (!attrs.is_ok()) return Status(attrs.status().code(), fmt::format("{}: {}", origin, attrs.status().message()));
    n.attrs = std::move(attrs).value();
    if (extended) {
      n.attrs.erase(kExtendedDomainAttr);
      n.attrs.erase(kExtendedOpsetAttr);
    }
    for (const auto& in : np.input()) n.inputs.push_back(in.empty() ? -1 : g.add_value(in));
    for (const auto& name : outer) n.inputs.push_back(g.add_value(name));
    n.outer_names = std::move(outer);
    for (const auto& out : np.output()) {
      n.outputs.push_back(out.empty() ? -1 : g.add_value(out));
      if (!out.empty())
        SPINDLE_RETURN_IF_ERROR(assigned.assign(n.outputs.back(), fmt::format("an output of node {}", n.label())));
    }
    g.nodes.push_back(std::move(n));
    return Status::ok();
  }

  // Every value read must be produced, fed or constant; in a subgraph the
  // others come from enclosing graphs and become captures.
  Status resolve_captures(Graph& g, bool subgraph) {
    std::set<int> available(g.inputs.begin(), g.inputs.end());
    for (const auto& [id, _] : g.initializers) available.insert(id);
    for (const Node& n : g.nodes)
      for (int out : n.outputs) available.insert(out);
    auto capture = [&](int id) {
      g.captures.push_back(g.value_name(id));
      g.inputs.push_back(id);
      ValueInfo info;
      info.name = g.value_name(id);
      g.input_info.push_back(std::move(info));
      available.insert(id);
    };
    for (const Node& n : g.nodes)
      for (int in : n.inputs)
        if (in >= 0 && !available.count(in)) {
          if (!subgraph)
            return invalid_argument(fmt::format("{}: node {} reads '{}', which no node, input or initializer provides",
                                                origin, n.label(), g.value_name(in)));
          capture(in);
        }
    for (int out : g.outputs)
      if (!available.count(out)) {
        if (!subgraph) return invalid_argument(fmt::format("{}: graph output '{}' is never produced", origin, g.value_name(out)));
        capture(out);
      }
    return Status::ok();
  }
};

}  // namespace

namespace {
// Converts a parsed model (freeing its initializers' bytes as it goes).
Result<Graph> convert_model(onnx::ModelProto& model, const std::string& origin, const std::filesystem::path& base_dir,
                            const LoadOptions& options,
                            const std::vector<std::optional<io::FileRange>>* payloads = nullptr);
}  // namespace

Result<Graph> load_model_bytes(std::span<const uint8_t> bytes, const std::string& origin,
                               const std::filesystem::path& base_dir, const LoadOptions& options) {
  if (bytes.empty()) return invalid_argument(fmt::format("{}: the model is empty (0 bytes)", origin));
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    return invalid_argument(fmt::format("{}: the model is {} bytes; protobuf reads at most 2 GiB (keep large weights in "
                                        "external data files)",
                                        origin, bytes.size()));
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  stream.SetRecursionLimit(kMaxMessageDepth);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage()) {
    if (const int depth = message_depth(bytes); depth > kMaxMessageDepth)
      return invalid_argument(fmt::format("{}: the model nests protobuf messages {} levels deep, more than the limit of {} "
                                          "(subgraphs inside subgraphs, e.g. If within If, about {} levels at most)",
                                          origin, depth, kMaxMessageDepth, kMaxMessageDepth / 3));
    return invalid_argument(fmt::format("{}: not a valid ONNX model (protobuf parsing failed; {} bytes, truncated or not a "
                                        "ModelProto?)",
                                        origin, bytes.size()));
  }
  return convert_model(model, origin, base_dir, options);
}

namespace {

Result<Graph> convert_model(onnx::ModelProto& model, const std::string& origin, const std::filesystem::path& base_dir,
                            const LoadOptions& options, const std::vector<std::optional<io::FileRange>>* payloads) {
  if (!model.has_graph() || (model.graph().node_size() == 0 && model.graph().output_size() == 0))
    return invalid_argument(fmt::format("{}: not a valid ONNX model (no graph)", origin));
  SPINDLE_RETURN_IF_ERROR(options.limits.check(origin, "parsing the model"));
  SPINDLE_RETURN_IF_ERROR(inline_functions(model, origin, options.limits.max_nodes));
  // The payloads are matched to the main graph's initializers by position.
  if (payloads && static_cast<size_t>(model.graph().initializer_size()) != payloads->size())
    return internal_error(fmt::format("{}: {} initializers after inlining functions, {} payloads found in the file", origin,
                                      model.graph().initializer_size(), payloads->size()));
  // Element types of outputs the model leaves undeclared are inferred by
  // spindle (infer_output_types); libonnx's shape inference never runs: it
  // crashes on hostile models. Validation is spindle's own (node_check.h).

  Graph g;
  g.base_dir = base_dir;
  g.metadata.producer_name = model.producer_name();
  g.metadata.graph_name = model.graph().name();
  g.metadata.domain = model.domain();
  g.metadata.description = model.doc_string();
  g.metadata.graph_description = model.graph().doc_string();
  g.metadata.version = model.model_version();
  for (const auto& p : model.metadata_props()) g.metadata.custom_metadata_map[p.key()] = p.value();
  for (const auto& op : model.opset_import()) {
    const std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
    if (d.empty() && op.version() > kernels::kMaxOpset)
      return unsupported(fmt::format("{}: the model imports opset {} of the default ONNX domain; spindle supports "
                                     "opsets 1 to {}", origin, op.version(), kernels::kMaxOpset));
    g.opsets[d] = static_cast<int>(op.version());
  }
  if (!g.opsets.count("")) g.opsets[""] = 1;
  SPINDLE_RETURN_IF_ERROR(options.limits.check(origin, "expanding the model's functions"));
  GraphBuilder builder{origin, base_dir, g.opsets, options.run_checker, true, {}, {}, options.custom_ops};
  builder.overridable_initializers = model.ir_version() >= 4;
  builder.payloads = payloads;
  SPINDLE_RETURN_IF_ERROR(builder.build(model.graph(), g, false, {}));
  SPINDLE_RETURN_IF_ERROR(options.limits.check(origin, "loading the model's graph"));
  if (!builder.missing.empty())
    return unsupported(fmt::format("{}: {} operator(s) not supported by spindle: {}", origin, builder.missing.size(),
                                   fmt::join(builder.missing, ", ")));
  return g;
}

}  // namespace

Result<Graph> load_model_file(const std::filesystem::path& path, const LoadOptions& options) {
  // A regular file of at most 2 GiB - 1 (protobuf's limit), checked before
  // reading: /dev/zero or a FIFO would otherwise be read without end.
  SPINDLE_ASSIGN_OR_RETURN(io::RegularFile file, io::RegularFile::open(path, "model file", io::kMaxProtoFileBytes));
  std::error_code ec;
  const std::filesystem::path base_dir = std::filesystem::absolute(path, ec).parent_path();
  // Most of a model's bytes are its weights: parsed without them, each is
  // read from the file straight into its tensor.
  if (std::optional<StrippedModel> stripped = strip_initializer_payloads(file)) {
    onnx::ModelProto model;
    google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(stripped->bytes.data()),
                                                  static_cast<int>(stripped->bytes.size()));
    stream.SetRecursionLimit(kMaxMessageDepth);
    if (model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage() &&
        model.graph().initializer_size() == static_cast<int>(stripped->payloads.size())) {
      std::string().swap(stripped->bytes);
      return convert_model(model, path.string(), base_dir, options, &stripped->payloads);
    }
  }
  if (file.size() > 0) {
    onnx::ModelProto model;
    bool parsed = false;
    {
      FileChunks chunks(file);
      google::protobuf::io::CopyingInputStreamAdaptor input(&chunks, 1 << 20);
      google::protobuf::io::CodedInputStream stream(&input);
      stream.SetRecursionLimit(kMaxMessageDepth);
      stream.SetTotalBytesLimit(static_cast<int>(file.size()));
      parsed = model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
    }
    if (parsed) return convert_model(model, path.string(), base_dir, options);
  }
  // Empty or not parsed: the bytes in memory give the precise error.
  SPINDLE_ASSIGN_OR_RETURN(const std::string bytes, file.read_all());
  return load_model_bytes(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), path.string(),
                          base_dir, options);
}

}  // namespace spindle::graph
