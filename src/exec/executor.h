// executor.h — compiled plans and the sequential / parallel executors.
//
// A Plan is built once per session: the optimized graph in topological
// order, one kernel per node, per-value use counts (liveness) and, for the
// parallel executor, dependency counts and longest-remaining-path
// priorities. A Frame holds one run's values; frames are pooled by the
// session, so their buffers (recycled as soon as a value's last consumer
// finishes) are reused across runs. Many runs may execute at once, each with
// its own frame.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/graph.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle::exec {

struct PlanNode {
  kernels::NodeInfo info;
  std::unique_ptr<kernels::OpKernel> kernel;
  std::vector<int> inputs;   // value ids, -1 = absent
  std::vector<int> outputs;  // value ids, -1 = unused
  std::vector<int> users;    // nodes that consume any output (deduplicated)
  int num_deps = 0;          // distinct producer nodes among inputs
  int64_t priority = 0;      // longest path to a sink, in nodes
};

// The nodes a run needs when the caller asks for some of the graph's
// outputs: those whose results any requested output depends on. The others
// are skipped (ONNX operators have no side effects to keep).
struct NodeSubset {
  std::vector<char> run;        // per plan node: 1 = runs
  std::vector<int> value_uses;  // Plan::value_uses counting the nodes that run only
  int count = 0;                // nodes that run
};

class Plan {
 public:
  // Creates every kernel; errors name the node. Graph attributes (control
  // flow) are optimized at `subgraph_level` and compiled into Subgraphs for
  // their node's kernel.
  // `prepack` is NodeInfo::prepack for every kernel (subgraphs included).
  // Nodes of `custom_ops` (may be null) get their custom kernel, looked up
  // before the built-in registry. Kernels get the static shapes of their
  // inputs (NodeInfo::input_shapes), from the graph's declared inputs when
  // `checked_inputs` (the feeds are checked against them: not so for a
  // subgraph's inputs).
  static Result<std::unique_ptr<Plan>> compile(graph::Graph g,
                                               graph::OptimizationLevel subgraph_level = graph::OptimizationLevel::kAll,
                                               bool prepack = true, const CustomOpDomains* custom_ops = nullptr,
                                               bool checked_inputs = true);

  const graph::Graph& graph() const { return graph_; }
  const std::vector<PlanNode>& nodes() const { return nodes_; }
  // Number of node inputs reading each value (a value read twice by one node counts twice).
  const std::vector<int>& value_uses() const { return value_uses_; }
  // Whether the value must survive the run (graph output).
  bool keep(int value) const { return keep_[static_cast<size_t>(value)] != 0; }
  // Constant data the plan holds (subgraphs not counted): the initializers
  // it keeps as given and the weights its kernels packed.
  struct ConstantBytes {
    size_t initializers = 0, packed = 0;
  };
  ConstantBytes constant_bytes() const;
  // The nodes needed to produce `values` (graph outputs; order and repeats do
  // not matter), or null when that is every node. Computed once per distinct
  // set and cached (up to kMaxSubsets sets); safe to call from many threads.
  std::shared_ptr<const NodeSubset> subset(std::vector<int> values) const;
  static constexpr size_t kMaxSubsets = 64;

 private:
  graph::Graph graph_;
  std::vector<PlanNode> nodes_;
  std::vector<int> value_uses_;
  std::vector<char> keep_;
  mutable std::mutex subsets_mu_;
  mutable std::map<std::vector<int>, std::shared_ptr<const NodeSubset>> subsets_;
};

// Per-run state; reused across runs (its buffer cache persists).
class Frame {
 public:
  explicit Frame(const Plan& plan);
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

  // Resets values and counters for a new run (initializers bound, feeds
  // empty). With `subset`, the run executes only its nodes (the executors
  // read it back with subset()); the caller keeps it alive until end_run.
  void begin_run(const NodeSubset* subset = nullptr);
  // Drops every value that is not kept, recycling buffers.
  void end_run();

  std::vector<Tensor>& values() { return values_; }
  // Marks one use of `value` done; recycles it when it was the last.
  void release_use(int value);
  Tensor allocate(DataType dtype, const Shape& shape);
  const kernels::OutputAllocator& allocator() const { return allocator_; }
  // Buffers kept for reuse (at most max_cached_buffers()).
  size_t cached_buffers();
  size_t max_cached_buffers() const { return max_cached_; }
  std::atomic<int>* deps() { return deps_.get(); }
  // The nodes this run executes (null: all of them).
  const NodeSubset* subset() const { return subset_; }
  // Node inputs reading `value` among the nodes this run executes.
  int value_uses(int value) const {
    return (subset_ ? subset_->value_uses : plan_.value_uses())[static_cast<size_t>(value)];
  }

 private:
  void recycle(Tensor t);
  const Plan& plan_;
  const NodeSubset* subset_ = nullptr;
  std::vector<Tensor> values_;
  std::vector<int> transient_;  // the values that are not initializers (end_run drops what they hold)
  std::unique_ptr<std::atomic<int>[]> uses_;
  std::unique_ptr<std::atomic<int>[]> deps_;
  std::mutex cache_mu_;
  // Recycled buffers sorted by size (equal sizes in the order recycled): a
  // vector, so recycling and reusing allocate nothing once it has grown.
  std::vector<std::shared_ptr<Buffer>> cache_;
  // Buffers also arrive from elsewhere on every run (an If branch's or a
  // Loop body's outputs, allocated by the subgraph's own frame; feeds the
  // caller let go of) and would pile up run after run: the cache holds at
  // most one buffer per value of the plan (and 16), the smallest dropped first.
  size_t max_cached_ = 16;
  kernels::OutputAllocator allocator_;
};

// A node as the profiling hooks see it. Top-level nodes are identified by
// their plan index; nodes inside subgraphs (If branches, Loop / Scan bodies)
// get ids past the top level's, fresh for every run of the subgraph, so each
// iteration's nodes are events of their own.
struct NodeSpan {
  int id;
  int parent;                    // id of the control-flow node whose subgraph ran it; -1 at top level
  const kernels::NodeInfo& info;
  const std::string& scope;      // "" at top level, else e.g. "If/then_branch", "Loop/body/If/else_branch"
};

struct RunControl {
  const kernels::RunLimits* limits = nullptr;  // cancel flag, deadline, Loop cap, memory budget (may be null)
  // Called after each node with its span (profiling); may be empty. Nodes
  // inside subgraphs are reported through the same hooks.
  std::function<void(const NodeSpan& node, std::chrono::steady_clock::time_point start,
                     std::chrono::steady_clock::time_point end)>
      on_node;
  // Called for each parallel_for block of a node's kernel, on the thread
  // that ran it (profiling); may be empty. `node` is NodeSpan::id; times are
  // steady_clock ns.
  std::function<void(int node, int tid, int64_t start_ns, int64_t end_ns)> on_block;
  // Set by the executor for a subgraph's run: where it is and the source of
  // nested node ids shared with the whole run.
  std::string scope;
  int parent = -1;
  std::atomic<int>* nested_ids = nullptr;
};

// Runs every node (or the frame's subset's) on the calling thread in plan order.
void run_sequential(const Plan& plan, Frame& frame, ThreadPool* intra, const RunControl& control);
// Runs ready nodes (of the frame's subset, if it has one) concurrently on `inter` (the caller works too), highest
// priority first. Rethrows the first kernel error after in-flight nodes end.
void run_parallel(const Plan& plan, Frame& frame, ThreadPool* intra, TaskPool& inter, const RunControl& control);

}  // namespace spindle::exec
