// executor.cpp — Plan, Frame and the two executors (see executor.h).
#include "exec/executor.h"

#include <algorithm>
#include <condition_variable>
#include <new>
#include <queue>
#include <set>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fmt/format.h>

#include "common/buffer_cache.h"
#include "exec/static_shapes.h"
#include "graph/node_info.h"
#include "kernels/custom/custom_op_kernel.h"
#include "primitives/gemm/packing_scope.h"

namespace spindle::exec {

// ---------------------------------------------------------------- Plan

namespace {

// The control-flow node running on this thread while its run is profiled:
// the subgraphs it runs report their nodes through the run's hooks, nested
// under it (set by run_node around the node's kernel).
struct ProfiledParent {
  const RunControl* control;
  int id;
  const kernels::NodeInfo* info;
};
thread_local const ProfiledParent* tl_profiled_parent = nullptr;

// A graph attribute compiled for its node's kernel: runs sequentially on the
// calling thread (kernels inside still use the intra-op pool). Frames are
// kept between calls, so a Loop body or an If branch run again (next
// iteration, next run of the session) reuses its frame and the buffers the
// frame recycled; calls on several threads at once (concurrent session runs,
// nested subgraphs) each take a frame of their own from the free list.
class CompiledSubgraph final : public kernels::Subgraph {
 public:
  CompiledSubgraph(std::unique_ptr<Plan> plan, std::vector<size_t> outer_index, std::string attr)
      : plan_(std::move(plan)), outer_index_(std::move(outer_index)), attr_(std::move(attr)) {}

  int num_inputs() const override {
    return static_cast<int>(plan_->graph().inputs.size() - plan_->graph().captures.size());
  }
  int num_outputs() const override { return static_cast<int>(plan_->graph().outputs.size()); }
  DataType output_dtype(int i) const override { return plan_->graph().output_info[static_cast<size_t>(i)].dtype; }

  std::vector<Tensor> run(std::span<const Tensor> inputs, std::span<const Tensor> outer, ThreadPool* pool,
                          const kernels::RunLimits* limits) const override {
    const graph::Graph& g = plan_->graph();
    const size_t formal = static_cast<size_t>(num_inputs());
    if (inputs.size() != formal)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("subgraph '{}' takes {} inputs, got {}", g.metadata.graph_name, formal, inputs.size()));
    FrameLease lease(*this);
    Frame& frame = *lease.frame;
    frame.begin_run();
    for (size_t i = 0; i < formal; ++i) frame.values()[static_cast<size_t>(g.inputs[i])] = inputs[i];
    for (size_t c = 0; c < outer_index_.size(); ++c)
      frame.values()[static_cast<size_t>(g.inputs[formal + c])] = outer[outer_index_[c]];
    RunControl control;
    control.limits = limits;
    if (const ProfiledParent* p = tl_profiled_parent) {
      control.on_node = p->control->on_node;
      control.on_block = p->control->on_block;
      control.scope = (p->control->scope.empty() ? "" : p->control->scope + "/") + p->info->op_type + "/" + attr_;
      control.parent = p->id;
      control.nested_ids = p->control->nested_ids;
    }
    std::vector<Tensor> out;
    try {
      run_sequential(*plan_, frame, pool, control);
      for (int id : g.outputs) out.push_back(frame.values()[static_cast<size_t>(id)]);
    } catch (...) {
      frame.end_run();
      throw;
    }
    frame.end_run();
    return out;
  }

 private:
  // A frame taken from the free list (or made) for one call, and given back.
  struct FrameLease {
    const CompiledSubgraph& owner;
    std::unique_ptr<Frame> frame;
    explicit FrameLease(const CompiledSubgraph& o) : owner(o) {
      std::lock_guard<std::mutex> lock(owner.frames_mu_);
      if (!owner.free_frames_.empty()) {
        frame = std::move(owner.free_frames_.back());
        owner.free_frames_.pop_back();
      }
      if (!frame) frame = std::make_unique<Frame>(*owner.plan_);
    }
    ~FrameLease() {
      std::lock_guard<std::mutex> lock(owner.frames_mu_);
      owner.free_frames_.push_back(std::move(frame));
    }
  };

  std::unique_ptr<Plan> plan_;
  std::vector<size_t> outer_index_;  // capture c is outer[outer_index_[c]]
  std::string attr_;                 // the node's attribute this graph is ("then_branch", "body")
  mutable std::mutex frames_mu_;
  mutable std::vector<std::unique_ptr<Frame>> free_frames_;
};

// A value the subgraph reads from the enclosing graph that is a constant
// there (an initializer, possibly one the enclosing graph's optimizer made)
// becomes a constant of the subgraph, so the subgraph's own constant folding,
// fusions and kernel set-up see it as the weights it is. Exporters put a
// branch's or loop body's weights in the main graph (PyTorch does), and
// without this a Conv inside an If would re-slice and re-concatenate its
// weights on every run.
void inline_constant_captures(const graph::Node& n, const graph::Graph& enclosing, graph::Graph& g) {
  const size_t formal_outer_start = n.inputs.size() - n.outer_names.size();
  const size_t formal = g.inputs.size() - g.captures.size();
  for (size_t c = g.captures.size(); c-- > 0;) {
    auto it = std::find(n.outer_names.begin(), n.outer_names.end(), g.captures[c]);
    if (it == n.outer_names.end()) continue;  // reported by compile_subgraph
    const int outer_id = n.inputs[formal_outer_start + static_cast<size_t>(it - n.outer_names.begin())];
    const Tensor* value = outer_id >= 0 ? enclosing.initializer(outer_id) : nullptr;
    if (!value) continue;
    const size_t pos = formal + c;
    g.initializers[g.inputs[pos]] = *value;  // shares the buffer
    g.inputs.erase(g.inputs.begin() + static_cast<std::ptrdiff_t>(pos));
    g.input_info.erase(g.input_info.begin() + static_cast<std::ptrdiff_t>(pos));
    g.captures.erase(g.captures.begin() + static_cast<std::ptrdiff_t>(c));
  }
}

// What a custom op's kernel is told about its node: names, the types known
// now (graph inputs, constants, the op's declared or inferred outputs), the
// attributes and the constant inputs.
CustomKernelInfo custom_kernel_info(const graph::Graph& g, const graph::Node& n, const CustomOp& op) {
  CustomKernelInfo info;
  info.node_name = n.name;
  info.op_type = n.op_type;
  info.domain = n.domain;
  info.opset = n.opset;
  const size_t own_inputs = n.inputs.size() - n.outer_names.size();
  for (size_t i = 0; i < own_inputs; ++i) {
    const int id = n.inputs[i];
    info.input_names.push_back(id >= 0 ? g.value_name(id) : "");
    const Tensor* constant = id >= 0 ? g.initializer(id) : nullptr;
    DataType t = constant ? constant->dtype() : DataType::kUndefined;
    for (size_t k = 0; k < g.inputs.size() && k < g.input_info.size() && t == DataType::kUndefined; ++k)
      if (g.inputs[k] == id) t = g.input_info[k].dtype;
    info.input_types.push_back(t);
    info.constant_inputs.push_back(constant ? *constant : Tensor());
  }
  for (size_t o = 0; o < n.outputs.size(); ++o)
    info.output_names.push_back(n.outputs[o] >= 0 ? g.value_name(n.outputs[o]) : "");
  info.attributes = kernels::custom_attributes(n.attrs);
  for (const auto& [name, value] : n.attrs.all())
    if (const Tensor* t = std::get_if<Tensor>(&value)) info.tensor_attributes.emplace(name, *t);
  // The declared output types, with those the op leaves open inferred from this node.
  const std::vector<DataType> declared = op.output_types();
  std::vector<DataType> types;
  for (size_t o = 0; o < n.outputs.size(); ++o) types.push_back(kernels::declared_type(declared, o));
  info.output_types = kernels::inferred_output_types(op, info, std::move(types));
  return info;
}

Result<std::shared_ptr<const kernels::Subgraph>> compile_subgraph(const graph::Node& n, const std::string& attr,
                                                                  const graph::Graph& sub, const graph::Graph& enclosing,
                                                                  graph::OptimizationLevel level, bool prepack,
                                                                  const CustomOpDomains* custom_ops) {
  graph::Graph g = sub;
  g.metadata.graph_name = fmt::format("{} of {}", attr, n.label());
  if (level != graph::OptimizationLevel::kDisableAll) {
    inline_constant_captures(n, enclosing, g);
    auto stats = graph::optimize(g, level);
    if (!stats.is_ok()) return stats.status();
  }
  std::vector<size_t> outer_index;
  for (const std::string& c : g.captures) {
    auto it = std::find(n.outer_names.begin(), n.outer_names.end(), c);
    if (it == n.outer_names.end())
      return internal_error(fmt::format("{}: '{}' reads '{}', which the node does not pass", n.label(), attr, c));
    outer_index.push_back(static_cast<size_t>(it - n.outer_names.begin()));
  }
  SPINDLE_ASSIGN_OR_RETURN(std::unique_ptr<Plan> plan, Plan::compile(std::move(g), level, prepack, custom_ops, false));
  return std::shared_ptr<const kernels::Subgraph>(std::make_shared<CompiledSubgraph>(std::move(plan), std::move(outer_index), attr));
}

}  // namespace

namespace {

// Returns the pages of freed heap memory to the system. The originals the
// plan drops are freed one by one while packed copies are allocated, and
// glibc's heap (whose mmap threshold grows to the largest block freed) keeps
// the holes resident: ResNet-50 held ~50 MB more than its weights after
// creation. Trimming every kTrimBytes of dropped originals keeps the
// resident size near what is live.
class HeapTrimmer {
 public:
  void freed(size_t bytes) {
    pending_ += bytes;
    if (pending_ >= kTrimBytes) trim();
  }
  void trim() {
    if (pending_ == 0) return;
    pending_ = 0;
    release_cached_buffers();  // the originals just dropped
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
  }

 private:
  static constexpr size_t kTrimBytes = size_t{8} << 20;
  size_t pending_ = 0;
};

// What a kernel factory knows of n from the node alone (no constants,
// shapes or subgraphs yet).
kernels::NodeInfo node_info(const graph::Node& n, bool prepack) {
  kernels::NodeInfo info = graph::node_basics(n);
  info.prepack = prepack;
  return info;
}

// Bytes that dropping t frees (its storage when nothing else holds it).
size_t freed_by_dropping(const Tensor& t) {
  const auto& b = t.buffer();
  return b && b.use_count() == 1 && !t.is_sequence() ? b->size() : 0;
}

}  // namespace

Result<std::unique_ptr<Plan>> Plan::compile(graph::Graph g, graph::OptimizationLevel subgraph_level, bool prepack,
                                            const CustomOpDomains* custom_ops, bool checked_inputs) {
  auto plan = std::unique_ptr<Plan>(new Plan());
  plan->graph_ = std::move(g);
  const graph::Graph& graph = plan->graph_;
  const auto& registry = kernels::KernelRegistry::global();
  const size_t num_values = static_cast<size_t>(graph.num_values());
  std::vector<int> producer(num_values, -1);
  // Constants held once: an initializer nothing reads (constant folding
  // consumed it) is dropped now, and one whose every reader keeps it in a
  // form of its own (packed weights) as soon as its last reader is created,
  // so the original and the packed copy coexist for one node at most. A
  // graph output, or an input of a node whose kernel reads it as given
  // (control-flow nodes pass the values their subgraphs capture as inputs),
  // keeps the original.
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(num_values);  // (node, input) pairs
  std::vector<char> needed(num_values, 0);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (size_t k = 0; k < graph.nodes[i].inputs.size(); ++k)
      if (const int in = graph.nodes[i].inputs[k]; in >= 0 && graph.is_initializer(in))
        readers[static_cast<size_t>(in)].emplace_back(i, k);
  for (int out : graph.outputs) needed[static_cast<size_t>(out)] = 1;
  std::vector<size_t> pending(num_values, 0);
  HeapTrimmer trimmer;
  for (auto it = plan->graph_.initializers.begin(); it != plan->graph_.initializers.end();) {
    const size_t v = static_cast<size_t>(it->first);
    pending[v] = readers[v].size();
    if (pending[v] == 0 && !needed[v]) {
      const size_t bytes = freed_by_dropping(it->second);
      it = plan->graph_.initializers.erase(it);
      trimmer.freed(bytes);
    } else {
      it = std::next(it);
    }
  }
  // Kernels packing one constant the same way share one packed copy
  // (packing_scope.h); a constant leaves the scope before it is freed.
  kernels::nn::PackingScope packing;
  for (const auto& [id, t] : plan->graph_.initializers)
    if (t.defined() && !t.is_sequence() && t.nbytes() > 0) packing.add_source(t.raw_data());
  const std::vector<std::optional<Shape>> shapes = static_value_shapes(graph, checked_inputs);
  plan->nodes_.resize(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const graph::Node& n = graph.nodes[i];
    PlanNode& p = plan->nodes_[i];
    p.info = node_info(n, prepack);
    for (const auto& [attr, value] : n.attrs.all())
      if (const auto* ga = std::get_if<GraphAttr>(&value)) {
        auto sub = compile_subgraph(n, attr, *ga->graph, graph, subgraph_level, prepack, custom_ops);
        if (!sub.is_ok())
          return Status(sub.status().code(), fmt::format("in graph '{}' of node {}: {}", attr, n.label(), sub.status().message()));
        p.info.subgraphs[attr] = std::move(sub).value();
      }
    for (int in : n.inputs) {
      p.info.const_inputs.push_back(in >= 0 ? graph.initializer(in) : nullptr);
      p.info.input_shapes.push_back(in >= 0 ? shapes[static_cast<size_t>(in)] : std::nullopt);
    }
    p.inputs = n.inputs;
    p.outputs = n.outputs;
    auto custom = kernels::find_custom_op(custom_ops, n.domain, n.op_type, n.opset);
    const kernels::KernelFactory* factory = custom ? nullptr : registry.find(n.domain, n.op_type, n.opset);
    if (!factory && !custom) return unsupported(fmt::format("no kernel for node {} (opset {})", n.label(), n.opset));
    try {
      p.kernel = custom ? kernels::make_custom_kernel(custom, p.info, custom_kernel_info(graph, n, *custom))
                        : (*factory)(p.info);
    } catch (const Error& e) {
      return Status(e.code(), fmt::format("creating the kernel of node {}: {}", n.label(), e.status().message()));
    } catch (const std::exception& e) {
      return internal_error(fmt::format("creating the kernel of node {}: {}", n.label(), e.what()));
    }
    for (int out : n.outputs)
      if (out >= 0) producer[static_cast<size_t>(out)] = static_cast<int>(i);
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int in = n.inputs[k];
      if (in < 0 || !p.info.const_inputs[k]) continue;
      const size_t v = static_cast<size_t>(in);
      if (static_cast<int>(k) >= p.info.num_inputs || !p.kernel->owns_constant_input(static_cast<int>(k)))
        needed[v] = 1;
      if (--pending[v] > 0 || needed[v]) continue;
      for (const auto& [node, input] : readers[v]) plan->nodes_[node].info.const_inputs[input] = nullptr;
      if (auto t = plan->graph_.initializers.find(in); t != plan->graph_.initializers.end()) {
        const size_t bytes = freed_by_dropping(t->second);
        // Storage other values or kernels still hold stays, unchanged: its
        // packings stay shared (values folded from one weight).
        if (bytes > 0) packing.remove_source(t->second.raw_data());
        plan->graph_.initializers.erase(t);
        trimmer.freed(bytes);
      }
    }
  }
  trimmer.trim();
  plan->value_uses_.assign(num_values, 0);
  for (size_t i = 0; i < plan->nodes_.size(); ++i) {
    PlanNode& p = plan->nodes_[i];
    std::set<int> deps;
    for (int in : p.inputs) {
      if (in < 0) continue;
      ++plan->value_uses_[static_cast<size_t>(in)];
      const int prod = producer[static_cast<size_t>(in)];
      if (prod >= 0) deps.insert(prod);
    }
    p.num_deps = static_cast<int>(deps.size());
    for (int d : deps) plan->nodes_[static_cast<size_t>(d)].users.push_back(static_cast<int>(i));
  }
  // Longest remaining path, computed backwards over the topological order.
  for (size_t i = plan->nodes_.size(); i-- > 0;) {
    PlanNode& p = plan->nodes_[i];
    int64_t best = 0;
    for (int u : p.users) best = std::max(best, plan->nodes_[static_cast<size_t>(u)].priority);
    p.priority = best + 1;
  }
  plan->keep_.assign(num_values, 0);
  for (int out : graph.outputs) plan->keep_[static_cast<size_t>(out)] = 1;
  for (const auto& [id, _] : graph.initializers) plan->keep_[static_cast<size_t>(id)] = 1;
  return plan;
}

std::shared_ptr<const NodeSubset> Plan::subset(std::vector<int> values) const {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  {
    std::lock_guard<std::mutex> lock(subsets_mu_);
    if (auto it = subsets_.find(values); it != subsets_.end()) return it->second;
  }
  // Walks back from the requested values over the topological order: a node
  // runs when a running node (or the request) reads one of its outputs.
  const size_t num_values = value_uses_.size();
  std::vector<char> wanted(num_values, 0);
  for (int v : values)
    if (v >= 0 && static_cast<size_t>(v) < num_values) wanted[static_cast<size_t>(v)] = 1;
  auto s = std::make_shared<NodeSubset>();
  s->run.assign(nodes_.size(), 0);
  s->value_uses.assign(num_values, 0);
  for (size_t i = nodes_.size(); i-- > 0;) {
    const PlanNode& n = nodes_[i];
    if (!std::any_of(n.outputs.begin(), n.outputs.end(), [&](int o) { return o >= 0 && wanted[static_cast<size_t>(o)]; }))
      continue;
    s->run[i] = 1;
    ++s->count;
    for (int in : n.inputs)
      if (in >= 0) {
        wanted[static_cast<size_t>(in)] = 1;
        ++s->value_uses[static_cast<size_t>(in)];
      }
  }
  std::shared_ptr<const NodeSubset> result;
  if (s->count < static_cast<int>(nodes_.size())) result = std::move(s);
  std::lock_guard<std::mutex> lock(subsets_mu_);
  if (subsets_.size() < kMaxSubsets) subsets_.emplace(std::move(values), result);
  return result;
}

Plan::ConstantBytes Plan::constant_bytes() const {
  ConstantBytes c;
  for (const auto& [id, t] : graph_.initializers)
    if (t.defined() && !t.is_sequence()) c.initializers += t.nbytes();
  for (const PlanNode& n : nodes_) c.packed += n.kernel->packed_bytes();
  return c;
}

// ---------------------------------------------------------------- Frame

Frame::Frame(const Plan& plan)
    : plan_(plan),
      values_(static_cast<size_t>(plan.graph().num_values())),
      uses_(new std::atomic<int>[plan.value_uses().size()]),
      deps_(new std::atomic<int>[plan.nodes().size()]) {
  for (const auto& [id, t] : plan.graph().initializers) values_[static_cast<size_t>(id)] = t;
  for (size_t v = 0; v < values_.size(); ++v)
    if (!values_[v].defined()) transient_.push_back(static_cast<int>(v));
  max_cached_ = std::max<size_t>(max_cached_, values_.size());
  allocator_ = [this](DataType dtype, const Shape& shape) { return allocate(dtype, shape); };
}

void Frame::begin_run(const NodeSubset* subset) {
  subset_ = subset;
  const auto& uses = subset ? subset->value_uses : plan_.value_uses();
  for (size_t v = 0; v < uses.size(); ++v) uses_[v].store(uses[v], std::memory_order_relaxed);
  const auto& nodes = plan_.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) deps_[n].store(nodes[n].num_deps, std::memory_order_relaxed);
}

void Frame::end_run() {
  for (int v : transient_) {
    Tensor& t = values_[static_cast<size_t>(v)];
    if (t.defined()) recycle(std::move(t));
  }
}

void Frame::release_use(int value) {
  if (uses_[static_cast<size_t>(value)].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (plan_.keep(value)) return;
  recycle(std::move(values_[static_cast<size_t>(value)]));
}

void Frame::recycle(Tensor t) {
  std::shared_ptr<Buffer> b = t.buffer();
  { const Tensor dropped = std::move(t); }  // its hold on b released (cheaper than assigning an empty tensor)
  // Not when still shared (a view, an output, a sequence item), borrowed, or
  // holding std::string objects.
  if (!b || !b->owned() || b->holds_strings() || b.use_count() != 1) return;
  std::shared_ptr<Buffer> dropped;  // freed after the lock is released
  std::lock_guard<std::mutex> lock(cache_mu_);
  if (cache_.size() >= max_cached_) {
    if (b->size() <= cache_.front()->size()) return;  // b itself is the smallest
    dropped = std::move(cache_.front());
    cache_.erase(cache_.begin());
  }
  const auto at = std::upper_bound(cache_.begin(), cache_.end(), b->size(),
                                   [](size_t size, const std::shared_ptr<Buffer>& c) { return size < c->size(); });
  cache_.insert(at, std::move(b));
}

size_t Frame::cached_buffers() {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return cache_.size();
}

Tensor Frame::allocate(DataType dtype, const Shape& shape) {
  if (dtype == DataType::kString) return Tensor(dtype, shape);
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    const auto it = std::lower_bound(cache_.begin(), cache_.end(), bytes,
                                     [](const std::shared_ptr<Buffer>& c, size_t size) { return c->size() < size; });
    if (it != cache_.end() && (*it)->size() <= bytes * 2 + 4096) {
      std::shared_ptr<Buffer> b = std::move(*it);
      cache_.erase(it);
      return Tensor(dtype, shape, std::move(b));
    }
  }
  return Tensor(dtype, shape, Buffer::allocate(bytes));
}

// ---------------------------------------------------------------- running one node

namespace {

void check_terminate(const RunControl& control) {
  if (control.limits) control.limits->check("");
}

// A node's output slots: up to N empty tensors constructed in place on the
// stack (only as many as the node has: most nodes have one, and a node's
// fixed overhead counts on graphs of many small ones, such as a decode
// step's shape arithmetic), more on the heap.
template <size_t N>
class OutputSlots {
 public:
  explicit OutputSlots(size_t n) : n_(n) {
    if (n > N) {
      heap_.resize(n);
      ptr_ = heap_.data();
    } else {
      for (size_t i = 0; i < n; ++i) new (&inline_.t[i]) Tensor();
      ptr_ = inline_.t;
    }
  }
  ~OutputSlots() {
    if (n_ <= N)
      for (size_t i = 0; i < n_; ++i) ptr_[i].~Tensor();
  }
  OutputSlots(const OutputSlots&) = delete;
  OutputSlots& operator=(const OutputSlots&) = delete;
  std::span<Tensor> span() const { return {ptr_, n_}; }

 private:
  size_t n_;
  Tensor* ptr_ = nullptr;
  std::vector<Tensor> heap_;
  union Inline {  // its tensors' lifetimes are the constructor's and destructor's business
    Inline() {}
    ~Inline() {}
    Tensor t[N];
  } inline_;
};

void run_node(const Plan& plan, Frame& frame, int index, ThreadPool* intra, const RunControl& control) {
  const PlanNode& n = plan.nodes()[static_cast<size_t>(index)];
  std::vector<Tensor>& values = frame.values();
  // The node's inputs are pointers to the frame's values (no copies; the
  // values vector is never resized during a run) and its outputs go to a
  // small array on the stack: no heap allocation per node unless it has
  // many of either. A node whose subgraphs read outer values gets the
  // contiguous copies its kernel's outer_inputs() span needs.
  constexpr size_t kInline = 8;
  const size_t num_in = n.inputs.size(), num_out = n.outputs.size();
  const Tensor* in_inline[kInline * 2];
  std::vector<const Tensor*> in_heap;
  const Tensor** in_ptrs = in_inline;
  if (num_in > kInline * 2) {
    in_heap.resize(num_in);
    in_ptrs = in_heap.data();
  }
  for (size_t i = 0; i < num_in; ++i) in_ptrs[i] = n.inputs[i] >= 0 ? &values[static_cast<size_t>(n.inputs[i])] : nullptr;
  std::vector<Tensor> copied_inputs;
  if (n.info.num_outer_inputs > 0)
    for (size_t i = 0; i < num_in; ++i) copied_inputs.push_back(in_ptrs[i] ? *in_ptrs[i] : Tensor());
  OutputSlots<kInline> slots(num_out);
  const std::span<Tensor> outputs = slots.span();
  const bool profiled = control.on_node || control.on_block;
  // Nodes of a subgraph take a fresh id per run (a Loop body's nodes are
  // events of their own in every iteration).
  const int id = profiled && control.parent >= 0 && control.nested_ids ? control.nested_ids->fetch_add(1) : index;
  const auto start = control.on_node ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  // Reports this node's parallel_for blocks when profiling.
  struct NodeBlocks final : BlockTracer {
    const RunControl& control;
    int node;
    NodeBlocks(const RunControl& c, int n) : control(c), node(n) {}
    void on_block(int tid, int64_t s, int64_t e) override { control.on_block(node, tid, s, e); }
  } blocks(control, id);
  // A control-flow node's subgraphs report their nodes under this one.
  const ProfiledParent parent{&control, id, &n.info};
  struct ParentScope {
    const ProfiledParent* saved = tl_profiled_parent;
    explicit ParentScope(const ProfiledParent* p) {
      if (p) tl_profiled_parent = p;
    }
    ~ParentScope() { tl_profiled_parent = saved; }
  } parent_scope(profiled && !n.info.subgraphs.empty() ? &parent : nullptr);
  try {
    BlockTraceScope trace(control.on_block ? &blocks : nullptr);
    MemoryBudget::Scope budget(control.limits && control.limits->memory ? &control.limits->memory : nullptr);
    auto compute = [&](kernels::KernelContext&& ctx) {
      ctx.set_limits(control.limits);
      n.kernel->compute(ctx);
    };
    if (n.info.num_outer_inputs > 0)
      compute(kernels::KernelContext(n.info, std::span<const Tensor>(copied_inputs), outputs, intra, &frame.allocator()));
    else
      compute(kernels::KernelContext(n.info, std::span<const Tensor* const>(in_ptrs, num_in), outputs, intra,
                                     &frame.allocator()));
  } catch (const Error& e) {
    // Budget errors come from the allocator, which does not know the node.
    if (e.status().code() == StatusCode::kResourceExhausted && !e.status().message().starts_with(n.info.op_type))
      throw Error(StatusCode::kResourceExhausted, fmt::format("{}: {}", n.info.label(), e.status().message()));
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(StatusCode::kResourceExhausted, fmt::format("{}: out of memory", n.info.label()));
  } catch (const std::length_error&) {
    throw Error(StatusCode::kResourceExhausted, fmt::format("{}: a buffer size exceeds what can be allocated", n.info.label()));
  } catch (const std::exception& e) {
    throw Error(StatusCode::kRuntimeError, fmt::format("{}: {}", n.info.label(), e.what()));
  }
  if (control.on_node) control.on_node(NodeSpan{id, control.parent, n.info, control.scope}, start, std::chrono::steady_clock::now());
  copied_inputs.clear();
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const int out = n.outputs[o];
    if (out < 0) continue;
    if (!outputs[o].defined())
      throw Error(StatusCode::kInternal, fmt::format("{} did not produce its output {}", n.info.label(), o));
    values[static_cast<size_t>(out)] = std::move(outputs[o]);
    if (frame.value_uses(out) == 0 && !plan.keep(out))
      values[static_cast<size_t>(out)] = Tensor();  // nobody reads it
  }
  for (int in : n.inputs)
    if (in >= 0) frame.release_use(in);
}

}  // namespace

namespace {

// A profiled top-level run: the ids of nodes inside subgraphs start past the
// plan's nodes. Null when the control needs no change.
std::unique_ptr<RunControl> with_nested_ids(const Plan& plan, const RunControl& control, std::atomic<int>& ids) {
  if ((!control.on_node && !control.on_block) || control.nested_ids) return nullptr;
  ids.store(static_cast<int>(plan.nodes().size()));
  auto c = std::make_unique<RunControl>(control);
  c->nested_ids = &ids;
  return c;
}

}  // namespace

// What running node i + 1 reads first, asked for while node i runs: its
// kernel, its input and output ids and the frame's tensors they name, and
// node i + 2's fields. A decode step's kernels stream ~20 MB of weights, so
// each node found the plan's few lines about it evicted (the loads of its
// ids were run_node's hottest instructions, run_node 6.5% of the 4-bit
// decoder's step; with the prefetches the step's p50 went 1.47-1.51 ->
// 1.46-1.47 ms, three alternations).
void prefetch_node(const Plan& plan, Frame& frame, size_t i) {
  const auto& nodes = plan.nodes();
  if (i + 2 < nodes.size()) {
    const PlanNode& after = nodes[i + 2];
    __builtin_prefetch(&after.kernel);
    __builtin_prefetch(&after.outputs);
  }
  if (i + 1 >= nodes.size()) return;
  const PlanNode& next = nodes[i + 1];
  __builtin_prefetch(next.kernel.get());
  __builtin_prefetch(next.inputs.data());
  __builtin_prefetch(next.outputs.data());
  const std::vector<Tensor>& values = frame.values();
  for (int in : next.inputs)
    if (in >= 0) __builtin_prefetch(&values[static_cast<size_t>(in)]);
}

void run_sequential(const Plan& plan, Frame& frame, ThreadPool* intra, const RunControl& control) {
  std::atomic<int> ids{0};
  if (auto c = with_nested_ids(plan, control, ids)) return run_sequential(plan, frame, intra, *c);
  const int n = static_cast<int>(plan.nodes().size());
  const NodeSubset* subset = frame.subset();
  for (int i = 0; i < n; ++i) {
    if (subset && !subset->run[static_cast<size_t>(i)]) continue;
    check_terminate(control);
    prefetch_node(plan, frame, static_cast<size_t>(i));
    run_node(plan, frame, i, intra, control);
  }
}

// ---------------------------------------------------------------- parallel

namespace {

struct ParallelRun {
  const Plan& plan;
  Frame& frame;
  ThreadPool* intra;
  TaskPool& inter;
  const RunControl& control;
  std::mutex mu;
  std::condition_variable cv;
  std::priority_queue<std::pair<int64_t, int>> ready;  // (priority, -index): longest path first, then plan order
  int remaining = 0;
  int tasks_alive = 0;   // tasks scheduled and not finished (they reference this run)
  int tasks_queued = 0;  // of those, the ones not started yet
  bool failed = false;
  std::exception_ptr error;

  bool done_locked() const { return failed || remaining == 0; }

  void push_locked(int node) { ready.emplace(plan.nodes()[static_cast<size_t>(node)].priority, -node); }

  // Runs ready nodes until none is left.
  void drain() {
    std::vector<int> newly;
    for (;;) {
      int node;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (failed || ready.empty()) return;
        node = -ready.top().second;
        ready.pop();
      }
      try {
        check_terminate(control);
        run_node(plan, frame, node, intra, control);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed) {
          failed = true;
          error = std::current_exception();
        }
        cv.notify_all();
        return;
      }
      newly.clear();
      // A node skipped by the frame's subset is never ready: every producer
      // of a node that runs runs too, so the counts of those still reach 0.
      const NodeSubset* subset = frame.subset();
      for (int u : plan.nodes()[static_cast<size_t>(node)].users)
        if (frame.deps()[u].fetch_sub(1, std::memory_order_acq_rel) == 1 && (!subset || subset->run[static_cast<size_t>(u)]))
          newly.push_back(u);
      int spawn = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        for (int u : newly) push_locked(u);
        --remaining;
        // This thread takes one ready node; others go to idle pool threads.
        const int want = static_cast<int>(ready.size()) - 1;
        const int room = inter.num_threads() - tasks_alive;
        spawn = std::max(0, std::min(want, room));
        tasks_alive += spawn;
        tasks_queued += spawn;
        if (remaining == 0 || ready.size() > 1) cv.notify_all();
      }
      for (int s = 0; s < spawn; ++s) inter.schedule([this] { task(); });
    }
  }

  void task() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --tasks_queued;
    }
    drain();
    std::lock_guard<std::mutex> lock(mu);
    --tasks_alive;
    if (tasks_alive == 0) cv.notify_all();
  }
};

}  // namespace

void run_parallel(const Plan& plan, Frame& frame, ThreadPool* intra, TaskPool& inter, const RunControl& control) {
  std::atomic<int> ids{0};
  if (auto c = with_nested_ids(plan, control, ids)) return run_parallel(plan, frame, intra, inter, *c);
  ParallelRun run{plan, frame, intra, inter, control};
  const auto& nodes = plan.nodes();
  const NodeSubset* subset = frame.subset();
  run.remaining = subset ? subset->count : static_cast<int>(nodes.size());
  if (run.remaining == 0) return;
  int spawn = 0;
  {
    std::lock_guard<std::mutex> lock(run.mu);
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].num_deps == 0 && (!subset || subset->run[i])) run.push_locked(static_cast<int>(i));
    spawn = std::max(0, std::min(static_cast<int>(run.ready.size()) - 1, inter.num_threads()));
    run.tasks_alive = spawn;
    run.tasks_queued = spawn;
  }
  for (int s = 0; s < spawn; ++s) inter.schedule([&run] { run.task(); });
  for (;;) {
    run.drain();
    std::unique_lock<std::mutex> lock(run.mu);
    run.cv.wait(lock, [&] { return run.done_locked() || !run.ready.empty(); });
    if (run.done_locked()) {
      // Tasks of this run still reference `run`: wait until none is left.
      // While some have not started, run queued work (ours or any): the
      // caller may itself be an inter-op thread (run_async), and the pool's
      // other threads may all be busy. Once all have started, sleep until
      // the last one ends (it notifies). No timed poll.
      while (run.tasks_alive > 0) {
        if (run.tasks_queued == 0) {
          run.cv.wait(lock, [&] { return run.tasks_alive == 0 || run.tasks_queued > 0; });
          continue;
        }
        lock.unlock();
        // False when a pool thread has just taken our task and is about to
        // start it: a moment's wait.
        if (!inter.try_run_one()) std::this_thread::yield();
        lock.lock();
      }
      break;
    }
  }
  if (run.failed) std::rethrow_exception(run.error);
}

}  // namespace spindle::exec
