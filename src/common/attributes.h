// attributes.h — the attributes of a graph node: named values of the kinds
// ONNX allows (ints, floats, strings, their lists, tensors, types and
// subgraphs), with typed getters that name the attribute when it is missing
// or of the wrong kind.
//
// It sits below both users: the graph layer (src/graph/) stores them on each
// Node as the loader read them, and the kernel layer (src/kernels/) reads
// them when it creates a node's kernel. A graph-valued attribute is held as an
// opaque graph::Graph here; only the executor (src/exec/) looks inside it,
// compiling it into a kernels::Subgraph.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "spindle/tensor.h"

namespace spindle {

namespace graph {
class Graph;
}

// A graph-valued attribute (If branches, Loop / Scan / SequenceMap bodies)
// as the loader built it. The executor compiles it into a kernels::Subgraph
// for the node's kernel (kernels::NodeInfo::subgraph).
struct GraphAttr {
  std::shared_ptr<const graph::Graph> graph;
};

// A type-valued attribute (Optional's `type`): a tensor or a sequence of
// tensors of `dtype`.
struct TypeAttr {
  bool sequence = false;
  DataType dtype = DataType::kUndefined;
};

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor, GraphAttr, TypeAttr>;

class Attributes {
 public:
  Attributes() = default;
  Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void erase(const std::string& name) { values_.erase(name); }
  // Getters with a default; the one-argument forms throw when the attribute is
  // missing. A wrong attribute type throws kInvalidArgument naming it.
  int64_t get_int(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& def) const;
  std::vector<float> get_floats(const std::string& name) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& def) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  Tensor get_tensor(const std::string& name) const;
  TypeAttr get_type(const std::string& name) const;
  bool has_graph() const;  // any graph-valued attribute
  const std::map<std::string, AttrValue>& all() const { return values_; }

 private:
  const AttrValue& at(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace spindle
