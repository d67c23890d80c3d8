// graph.h — spindle's graph IR: values, nodes, initializers.
//
// Values are numbered; a node refers to its inputs and outputs by value id
// (-1 for an absent optional input). Initializers are constant values known
// at load time (model initializers, Constant nodes after folding). The loader
// builds a Graph from an onnx ModelProto; the optimizer rewrites it; the
// executors run it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/attributes.h"
#include "spindle/custom_op.h"
#include "spindle/model_metadata.h"
#include "spindle/status.h"
#include "spindle/tensor.h"

namespace spindle::graph {

// Element type and shape of a graph input or output; -1 marks a dynamic
// dimension (its symbolic name, if any, is in dim_names). A sequence value
// has is_sequence set, its items' element type and no shape; an optional
// value has is_optional set and describes what it may hold.
struct ValueInfo {
  std::string name;
  bool is_optional = false;  // optional(tensor) or optional(seq(tensor))
  bool is_sequence = false;
  DataType dtype = DataType::kUndefined;
  Shape shape;
  std::vector<std::string> dim_names;
  std::vector<std::string> dim_denotations;  // each dimension's denotation ("DATA_BATCH"), "" when none
  bool has_shape = false;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 0;
  Attributes attrs;
  std::vector<int> inputs;   // value ids, -1 = absent
  std::vector<int> outputs;  // value ids, -1 = unused optional output
  // Values of this graph (or enclosing ones) read by the node's subgraphs,
  // by name; they are the node's last inputs, after its own.
  std::vector<std::string> outer_names;
  std::string label() const { return name.empty() ? op_type : op_type + " '" + name + "'"; }
};

class Graph {
 public:
  int value_id(const std::string& name) const;  // -1 when unknown
  int add_value(const std::string& name);       // existing id or a new one
  const std::string& value_name(int id) const { return value_names_[static_cast<size_t>(id)]; }
  int num_values() const { return static_cast<int>(value_names_.size()); }

  bool is_initializer(int id) const { return initializers.count(id) != 0; }
  const Tensor* initializer(int id) const {
    auto it = initializers.find(id);
    return it == initializers.end() ? nullptr : &it->second;
  }
  bool is_graph_output(int id) const;

  // Node indices that consume value `id`, in node order. With `at_most`, it
  // stops once it found more than that many (callers asking "exactly one?"
  // pay nothing for a value a thousand nodes read).
  std::vector<int> consumers(int id, size_t at_most = SIZE_MAX) const;
  // Node index producing `id` (the first in node order), or -1.
  int producer(int id) const;
  // These three read an index of who reads and writes each value, built on
  // first use, so that a pass asking them for every node stays linear. Code
  // that gives a node inputs or outputs it did not have (rewiring it in
  // place) calls reindex(node) afterwards; what a node no longer reads or
  // writes is filtered out when read. Appending nodes, compact() and
  // topological_sort() rebuild it; invalidate_uses() after changing
  // `outputs`.
  void reindex(int node);
  void invalidate_uses() { uses_.reset(); }

  // Removes nodes marked dead (keeps order of the others).
  void compact(const std::vector<bool>& dead);
  // Nodes sorted so that producers come first; fails on a cycle.
  Status topological_sort();

  std::vector<Node> nodes;
  std::map<int, Tensor> initializers;
  std::vector<int> inputs;   // graph inputs that are not initializers, in model order, then captures
  // A subgraph's values read from enclosing graphs, by name; their ids end
  // `inputs`.
  std::vector<std::string> captures;
  std::vector<int> outputs;  // graph outputs
  std::vector<ValueInfo> input_info, output_info;
  // Initializers the main graph also lists as inputs (IR version 4 and
  // later): their initializer is a default that a run may replace with a
  // feed. They stay in `initializers` (the loader's graph treats them as
  // constants); a session turns them into inputs. In model order.
  std::vector<int> overridable;
  std::vector<ValueInfo> overridable_info;
  std::map<std::string, int> opsets;  // domain -> version
  std::filesystem::path base_dir;     // for external data
  ModelMetadata metadata;  // producer, names, doc strings, version, metadata_props

 private:
  struct UseIndex {
    size_t num_nodes = 0;  // nodes when built: a different count means rebuild
    std::vector<std::vector<int>> readers, writers;  // per value id, may hold stale entries
    std::vector<char> is_output;
  };
  const UseIndex& uses() const;

  std::vector<std::string> value_names_;
  std::map<std::string, int> ids_;
  mutable std::optional<UseIndex> uses_;
};

// What bounds loading one model (session.max_graph_nodes,
// session.load_timeout_ms): a model's load is bounded as its runs are.
struct LoadLimits {
  int64_t max_nodes = 0;  // nodes once functions are expanded, every graph counted; 0 = no cap
  int64_t timeout_ms = 0;  // for messages
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // kResourceExhausted naming `origin`, what was being done and the key once
  // the deadline has passed.
  Status check(const std::string& origin, const char* doing) const;
};

struct LoadOptions {
  // Validate every node of the default domain against spindle's operator
  // signatures (kernels/op_schema.h): arity, attribute names and types.
  bool run_checker = true;
  LoadLimits limits;
  // Operators defined by the application (SessionOptions::custom_op_domains;
  // may be null): nodes of theirs are accepted and typed from their
  // declarations.
  const CustomOpDomains* custom_ops = nullptr;
};

// Parses, checks and converts a model; every unsupported operator is listed
// in one error. `origin` names the file in messages. External data is read
// from files inside `base_dir` only (an empty base_dir refuses external
// data: a model given as bytes has no directory of its own).
Result<Graph> load_model_bytes(std::span<const uint8_t> bytes, const std::string& origin,
                               const std::filesystem::path& base_dir, const LoadOptions& options = {});
Result<Graph> load_model_file(const std::filesystem::path& path, const LoadOptions& options = {});

// Fills in the element types of g's outputs that the model leaves
// undeclared, from spindle's type rules (type_inference.cpp); `outer` holds
// the types of values visible from enclosing graphs. Never runs libonnx's
// shape inference. Types it cannot tell stay kUndefined (taken from the
// computed tensors at run time).
// Outputs of custom operators (`custom_ops`, may be null) take their
// declared types.
void infer_output_types(Graph& g, const std::map<std::string, DataType>& outer,
                        const CustomOpDomains* custom_ops = nullptr);

// The training operator Gradient (ai.onnx.preview.training): not a kernel,
// expanded by the loader into the nodes that compute it (gradient.cpp).
bool is_gradient_node(const std::string& domain, const std::string& op_type);
// Replaces every Gradient node of g with backward nodes; kUnsupported names
// an op on the path that cannot be differentiated.
Status expand_gradients(Graph& g);

enum class OptimizationLevel { kDisableAll = 0, kBasic = 1, kExtended = 2, kAll = 99 };

// What one optimizer pass did: how many rewrites it made (what a rewrite is
// depends on the pass: a node folded, a pattern fused, a Conv put in the
// blocked layout) and, for some, a detail ("3 scalar Mul / Add folded").
struct PassRecord {
  std::string name;
  int count = 0;
  std::string detail;
};
// The passes that ran, in order.
struct OptimizerStats {
  std::vector<PassRecord> passes;
  // The record of pass `name`, or nullptr when it did not run.
  const PassRecord* find(const std::string& name) const;
};

// The optimizer's passes by name, in the order they run, with the lowest
// level that runs each (src/graph/optimizer.cpp holds the table; ONNX
// Runtime's names where a pass does what its transformer of that name does).
struct PassInfo {
  const char* name;
  OptimizationLevel level;
  const char* what;  // one line: what the pass rewrites
};
const std::vector<PassInfo>& optimizer_passes();
// kInvalidArgument naming the unknown names and listing the known ones when
// `names` holds a name that is no pass.
Status check_pass_names(const std::vector<std::string>& names, const std::string& key);

// Rewrites g in place: the passes of optimizer_passes() up to `level`, but
// those named in `disabled`. `limits`' deadline is checked between passes
// and between the nodes constant folding runs.
Result<OptimizerStats> optimize(Graph& g, OptimizationLevel level, const LoadLimits& limits = {},
                                const std::vector<std::string>& disabled = {});

}  // namespace spindle::graph
