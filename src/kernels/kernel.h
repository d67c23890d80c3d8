// kernel.h — the operator kernel interface and registry.
//
// A kernel is created once per graph node at session load (from the node's
// attributes and opset; it may pre-pack constant inputs) and then computed
// any number of times, possibly from several runs at once: compute() is
// const and must not mutate the kernel. Kernels are single-threaded inside a
// block and get parallelism only from ctx.pool (the session's intra-op
// pool, may be null) through spindle::parallel_for.
//
// Errors: kernels throw spindle::Error with a message that names the op, the
// input and what was expected (e.g. "Conv: input X is float32 1x3x8, expected
// rank 4"). Unsupported attribute values throw kUnsupported at creation.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/attributes.h"
#include "spindle/tensor.h"
#include "spindle/thread_pool.h"

namespace spindle::kernels {

// What bounds one run (RunOptions and the session's limits): executors check
// it between nodes, control-flow kernels between iterations, and the memory
// budget is active on the threads that run nodes.
struct RunLimits {
  const std::atomic<bool>* terminate = nullptr;  // RunOptions::terminate (may be null)
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int64_t timeout_ms = 0;           // RunOptions::timeout_ms, for messages
  int64_t max_loop_iterations = 0;  // session.max_loop_iterations: Loops without a trip count; 0 = no cap
  std::shared_ptr<MemoryBudget> memory;  // session.max_tensor_bytes / max_run_bytes (may be null)
  // Throws kCancelled when terminate is set, kResourceExhausted past the
  // deadline; `where` (a node label, may be empty) starts the message.
  void check(const std::string& where) const;
};

// now + ms, saturated: a limit too far away to represent (10^13 ms, 2^62 ms)
// is no limit rather than a deadline that wrapped into the past.
std::chrono::steady_clock::time_point deadline_after(int64_t ms);

// A compiled subgraph that a control-flow kernel runs. Its inputs are the
// formal inputs of the graph (a Loop body's iteration number, condition and
// carried values...); the values it reads from enclosing graphs are inputs of
// the node after its own (NodeInfo::num_inputs), which run() receives as
// `outer` and picks from by name. run() may be called from several threads
// at once; each call has its own frame.
class Subgraph {
 public:
  virtual ~Subgraph() = default;
  virtual int num_inputs() const = 0;
  virtual int num_outputs() const = 0;
  // Element type of output i as declared (kUndefined when not declared).
  virtual DataType output_dtype(int i) const = 0;
  // `limits` (may be null) are checked between the subgraph's nodes.
  virtual std::vector<Tensor> run(std::span<const Tensor> inputs, std::span<const Tensor> outer, ThreadPool* pool,
                                  const RunLimits* limits) const = 0;
};

// What a kernel factory knows about its node.
struct NodeInfo {
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  int opset = 0;       // opset version imported by the model for `domain`
  std::string name;
  Attributes attrs;
  int num_inputs = 0;   // as written in the node, optional inputs included (may be absent)
  // Values of enclosing graphs that the node's subgraphs read, passed after
  // the node's own inputs (Node::outer_names says which).
  int num_outer_inputs = 0;
  int num_outputs = 1;
  // Bit i set: output i (of the first 64) is written as "" in the model, an
  // optional output nobody asked for (KernelContext::wants_output).
  uint64_t absent_outputs = 0;
  // Inputs whose values are known at load time (initializers, folded
  // constants); null where the value is only known at run time.
  std::vector<const Tensor*> const_inputs;
  const Tensor* const_input(int i) const {
    return i < static_cast<int>(const_inputs.size()) ? const_inputs[static_cast<size_t>(i)] : nullptr;
  }
  // Shapes of the inputs known before any run (every dimension static: the
  // graph's inputs as declared, propagated through the nodes whose output
  // shapes follow from their inputs'); nullopt where a shape is only known
  // at run time. Kernels may prepare for these shapes at creation.
  std::vector<std::optional<Shape>> input_shapes;
  const Shape* input_shape(int i) const {
    return i < static_cast<int>(input_shapes.size()) && input_shapes[static_cast<size_t>(i)]
               ? &*input_shapes[static_cast<size_t>(i)]
               : nullptr;
  }
  // Kernels may pack constant inputs into their compute layout at creation
  // (false: session.disable_prepacking = "1"; they then read them as given).
  bool prepack = true;
  // Compiled graph attributes by attribute name (control-flow ops).
  std::map<std::string, std::shared_ptr<const Subgraph>> subgraphs;
  // Throws a clear error when the attribute is missing.
  const Subgraph& subgraph(const std::string& attr) const;
  // "Conv 'conv1'" — for error messages.
  std::string label() const { return name.empty() ? op_type : op_type + " '" + name + "'"; }
};

using OutputAllocator = std::function<Tensor(DataType, const Shape&)>;

class KernelContext {
 public:
  KernelContext(const NodeInfo& node, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                ThreadPool* pool, const OutputAllocator* allocator = nullptr)
      : node_(node), inputs_(inputs), num_all_inputs_(inputs.size()), outputs_(outputs), pool_(pool),
        allocator_(allocator) {}
  // Inputs by pointer (null = absent), so that the executor hands a node the
  // values it holds without copying them (a node without outer inputs).
  KernelContext(const NodeInfo& node, std::span<const Tensor* const> inputs, std::span<Tensor> outputs,
                ThreadPool* pool, const OutputAllocator* allocator = nullptr)
      : node_(node), input_ptrs_(inputs.data()), num_all_inputs_(inputs.size()), outputs_(outputs), pool_(pool),
        allocator_(allocator) {}

  // Inputs as written in the node; values read by its subgraphs from this
  // graph follow them (outer_inputs(); empty for a context made from pointers).
  int num_inputs() const { return static_cast<int>(num_all_inputs_) - node_.num_outer_inputs; }
  std::span<const Tensor> outer_inputs() const {
    return input_ptrs_ ? std::span<const Tensor>() : inputs_.subspan(static_cast<size_t>(num_inputs()));
  }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // True when input i is given (optional inputs may be absent or empty-named).
  bool has_input(int i) const { return i < num_inputs() && raw_input(i) && raw_input(i)->defined(); }
  // Input i as a tensor; throws a clear error when it is absent, when it is
  // a sequence value, or when it is a string tensor and the op was not
  // registered with KernelRegistry::allow_strings.
  const Tensor& input(int i) const;
  // Input i as a sequence value; throws when it is absent or a tensor.
  const Tensor& sequence_input(int i) const;
  // Input i whatever it is (tensor or sequence; Identity); throws when absent.
  const Tensor& value_input(int i) const;
  // Allocates output i (contents unspecified: the kernel writes every element).
  Tensor& output(int i, DataType dtype, const Shape& shape);
  // Sets output i to an existing tensor (views: Reshape, Identity, Squeeze...).
  void set_output(int i, Tensor t);
  // Whether output i is asked for: within the outputs given and not an
  // optional one the model left out ("").
  bool wants_output(int i) const {
    return i < num_outputs() && !(i < 64 && ((node_.absent_outputs >> i) & 1) != 0);
  }
  ThreadPool* pool() const { return pool_; }
  // The run's limits (cancel flag, deadline, Loop cap; may be null): kernels
  // that loop over subgraph runs check them between iterations.
  void set_limits(const RunLimits* limits) { limits_ = limits; }
  const RunLimits* limits() const { return limits_; }
  // Throws kCancelled when the run was cancelled, kResourceExhausted past its deadline.
  void check_terminate() const;
  const NodeInfo& node() const { return node_; }

 private:
  const NodeInfo& node_;
  const Tensor* raw_input(int i) const {
    return input_ptrs_ ? input_ptrs_[static_cast<size_t>(i)] : &inputs_[static_cast<size_t>(i)];
  }
  std::span<const Tensor> inputs_;
  const Tensor* const* input_ptrs_ = nullptr;  // set instead of inputs_ by the pointer constructor
  size_t num_all_inputs_;
  std::span<Tensor> outputs_;
  ThreadPool* pool_;
  const OutputAllocator* allocator_;
  const RunLimits* limits_ = nullptr;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void compute(KernelContext& ctx) const = 0;
  // True when the kernel keeps constant input i in a form of its own (packed
  // at creation) and computes without the original: the plan then drops the
  // original's storage when no other node, graph output or subgraph reads
  // it, and compute() sees input i absent (has_input(i) false). A kernel
  // saying true must take the input's shape from what it kept.
  virtual bool owns_constant_input(int /*i*/) const { return false; }
  // Bytes of constant data the kernel holds in its own form (packed weights).
  virtual size_t packed_bytes() const { return 0; }
};

// Creates the kernel for a node; throws Error (kUnsupported / kInvalidArgument)
// when attributes are unsupported or invalid.
using KernelFactory = std::function<std::unique_ptr<OpKernel>(const NodeInfo&)>;

// Factory of a kernel class constructed from its NodeInfo.
template <class K>
KernelFactory factory_of() {
  return [](const NodeInfo& node) -> std::unique_ptr<OpKernel> { return std::make_unique<K>(node); };
}

class KernelRegistry {
 public:
  // All built-in kernels.
  static const KernelRegistry& global();
  // Registers op_type of `domain` for opsets [since_min, since_max].
  void add(const std::string& domain, const std::string& op_type, int since_min, int since_max,
           KernelFactory factory);
  const KernelFactory* find(const std::string& domain, const std::string& op_type, int opset) const;
  // Marks op_type's kernels as reading string tensors (every other kernel
  // gets a kUnsupported error when fed one, before it touches the data).
  void allow_strings(const std::string& domain, const std::string& op_type);
  bool takes_strings(const std::string& domain, const std::string& op_type) const;
  // "Add", "Conv", ... for docs and `spindle info`.
  std::vector<std::string> op_types(const std::string& domain = "") const;
  // Every registered operator with its opset ranges ("1-6, 7-17"; adjacent
  // ranges merged), sorted by domain and op type: for docs/operators.md.
  struct OpRanges {
    std::string domain, op_type, opsets;
  };
  std::vector<OpRanges> ranges() const;

 private:
  struct Entry {
    int since_min, since_max;
    KernelFactory factory;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Entry>> entries_;
  std::set<std::pair<std::string, std::string>> string_ops_;
};

// Convenience for a kernel that is a plain function of its context.
template <class F>
KernelFactory simple_kernel(F fn) {
  struct K final : OpKernel {
    explicit K(F f) : f(std::move(f)) {}
    void compute(KernelContext& ctx) const override { f(ctx); }
    F f;
  };
  return [fn](const NodeInfo&) -> std::unique_ptr<OpKernel> { return std::make_unique<K>(fn); };
}

// Creates the kernel for (op_type, opset) and runs it once on `inputs`.
// Used by constant folding and by kernel tests. Throws Error.
std::vector<Tensor> run_kernel_once(const NodeInfo& node, std::vector<Tensor> inputs, ThreadPool* pool = nullptr);
std::vector<Tensor> run_kernel_once(const std::string& op_type, int opset, Attributes attrs,
                                    std::vector<Tensor> inputs, int num_outputs = 1, ThreadPool* pool = nullptr);

// Family registration (one per folder under src/kernels).
void register_math_kernels(KernelRegistry& r);    // math/: elementwise, activations, comparisons, Where, Cast
void register_loss_kernels(KernelRegistry& r);    // loss/: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_linalg_kernels(KernelRegistry& r);  // linalg/: Einsum, Det, MeanVarianceNormalization, windows, quantization
void register_reduce_kernels(KernelRegistry& r);  // reduce/: Reduce*, ArgMax/ArgMin, Softmax, LogSoftmax
void register_nn_kernels(KernelRegistry& r);      // nn/: Conv, ConvTranspose, pools, norms, MatMul, Gemm, Resize
void register_tensor_kernels(KernelRegistry& r);  // tensor/: shape and data movement ops
void register_control_kernels(KernelRegistry& r);  // control/: If, Loop, Scan, SequenceMap
void register_text_kernels(KernelRegistry& r);    // text/: StringNormalizer, TfIdfVectorizer
void register_detection_kernels(KernelRegistry& r);  // detection/: NonMaxSuppression, RoiAlign, MaxUnpool, GridSample

// Throws Error(kInvalidArgument, "<label>: <message>").
[[noreturn]] void fail(const NodeInfo& node, const std::string& message);
[[noreturn]] void fail_unsupported(const NodeInfo& node, const std::string& message);

// Input checks shared by the kernel families; each names the node and the input.
// Requires `t` to be float32 (or float64 too, when allow_float64):
// "<label>: input <name> is <dtype shape>, expected float32". Another float
// type (valid ONNX that the kernel lacks) is kUnsupported, any other type
// kInvalidArgument.
void require_float(const NodeInfo& node, const Tensor& t, const char* name, bool allow_float64 = false);
// Normalizes `axis` into [0, rank); throws kInvalidArgument "<label>: <what>
// <axis> is out of range for a rank-<rank> tensor (expected [-rank, rank-1])".
int64_t normalize_axis(const NodeInfo& node, int64_t axis, int64_t rank, const char* what = "axis");

// Checked size arithmetic for kernels that compute shapes, element counts or
// workspace sizes from data or attributes (hostile models choose them). Each
// throws Error(kInvalidArgument) "<label>: <what> ..." naming the node, the
// operands or the shape when a size is negative or the result does not fit in
// int64; they never wrap.
int64_t size_mul(const NodeInfo& node, int64_t a, int64_t b, const char* what);
int64_t size_add(const NodeInfo& node, int64_t a, int64_t b, const char* what);
// Element count of `shape` (dims >= 0); `what` names it ("output 0", "repeats").
int64_t size_numel(const NodeInfo& node, std::span<const int64_t> shape, const char* what);

}  // namespace spindle::kernels
