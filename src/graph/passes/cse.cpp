// cse.cpp — common subexpression elimination: a node that computes what an
// earlier node computes (same operator, attributes and inputs) is removed
// and its readers read the earlier node's outputs.
//
// Exported decoders recompute the same shape arithmetic in every layer (the
// causal mask and the positions from the input's shape: Shape, Gather,
// Unsqueeze, Concat, Equal, Where ...), each layer from its own copy of the
// same small constants; a decode step of an 8-layer model ran ~500 such
// nodes. Small constants with the same type, shape and bytes count as one
// value here, so those layers' chains collapse into one.
//
// Only standard (ai.onnx) operators are merged, never the random ones, nor
// nodes with subgraphs, nor a node one of whose outputs is a graph output
// (its name must survive). Nodes are in topological order, so a node's
// inputs are final when it is keyed.
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace spindle::graph::passes {

namespace {

// Constants up to this size are compared by content.
constexpr size_t kContentKeyBytes = 256;

bool is_random(const std::string& op) {
  static const std::unordered_set<std::string> ops = {"RandomNormal",     "RandomUniform", "RandomNormalLike",
                                                      "RandomUniformLike", "Multinomial",   "Bernoulli",
                                                      "Dropout"};
  return ops.count(op) != 0;
}

void append_bytes(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }

template <class T>
void append_value(std::string& key, const T& v) {
  append_bytes(key, &v, sizeof(v));
}

void append_tensor(std::string& key, const Tensor& t) {
  append_value(key, static_cast<int>(t.dtype()));
  append_value(key, t.rank());
  for (int64_t d : t.shape()) append_value(key, d);
  append_bytes(key, t.raw_data(), t.nbytes());
}

// The attributes as bytes; false when one cannot be compared cheaply (a
// subgraph, a large tensor).
bool append_attributes(std::string& key, const Attributes& attrs) {
  for (const auto& [name, value] : attrs.all()) {
    key += name;
    key += '\0';
    append_value(key, value.index());
    if (const auto* i = std::get_if<int64_t>(&value)) append_value(key, *i);
    else if (const auto* f = std::get_if<float>(&value)) append_value(key, *f);
    else if (const auto* s = std::get_if<std::string>(&value)) append_value(key, s->size()), key += *s;
    else if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
      append_value(key, is->size());
      for (int64_t v : *is) append_value(key, v);
    } else if (const auto* fs = std::get_if<std::vector<float>>(&value)) {
      append_value(key, fs->size());
      for (float v : *fs) append_value(key, v);
    } else if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
      append_value(key, ss->size());
      for (const std::string& v : *ss) append_value(key, v.size()), key += v;
    } else if (const auto* t = std::get_if<Tensor>(&value)) {
      if (t->is_sequence() || t->nbytes() > kContentKeyBytes) return false;
      append_tensor(key, *t);
    } else if (const auto* ty = std::get_if<TypeAttr>(&value)) {
      append_value(key, ty->sequence);
      append_value(key, static_cast<int>(ty->dtype));
    } else {
      return false;  // a graph
    }
  }
  return true;
}

// Each small initializer's representative: the first with the same type,
// shape and bytes.
std::unordered_map<int, int> same_constants(const Graph& g) {
  std::unordered_map<int, int> rep;
  std::map<std::string, int> first;
  for (const auto& [id, t] : g.initializers) {
    if (!t.defined() || t.is_sequence() || t.nbytes() > kContentKeyBytes || t.dtype() == DataType::kString) continue;
    std::string key;
    append_tensor(key, t);
    rep[id] = first.emplace(std::move(key), id).first->second;
  }
  return rep;
}

}  // namespace

void eliminate_common_subexpressions(Graph& g, PassRecord& record) {
  const std::unordered_map<int, int> constant_rep = same_constants(g);
  std::vector<int> forward(static_cast<size_t>(g.num_values()), -1);  // a removed node's output -> the kept one's
  std::unordered_map<std::string, size_t> seen;                       // key -> index of the node kept
  std::vector<bool> dead(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    read_forwarded(g, i, forward);
    const Node& n = g.nodes[i];
    if (!n.domain.empty() || is_random(n.op_type) || !n.outer_names.empty() || n.outputs.empty()) continue;
    std::string key = n.op_type;
    key += '\0';
    append_value(key, n.opset);
    append_value(key, n.inputs.size());
    for (int in : n.inputs) {
      const auto c = constant_rep.find(in);
      append_value(key, c == constant_rep.end() ? in : c->second);
    }
    append_value(key, n.outputs.size());
    if (!append_attributes(key, n.attrs)) continue;
    const auto [it, added] = seen.emplace(std::move(key), i);
    if (added) continue;
    const Node& kept = g.nodes[it->second];
    bool mergeable = true;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int out = n.outputs[o];
      if (out < 0) continue;
      if (g.is_graph_output(out) || kept.outputs[o] < 0) mergeable = false;
    }
    if (!mergeable) continue;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) forward[static_cast<size_t>(n.outputs[o])] = kept.outputs[o];
    dead[i] = true;
    ++record.count;
  }
  g.compact(dead);
}

}  // namespace spindle::graph::passes
