// registry.cpp — KernelRegistry, KernelContext (see kernel.h).
#include <new>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/kernel.h"
#include "kernels/op_schema.h"

namespace spindle::kernels {

void fail(const NodeInfo& node, const std::string& message) {
  throw Error(StatusCode::kInvalidArgument, node.label() + ": " + message);
}
void fail_unsupported(const NodeInfo& node, const std::string& message) {
  throw Error(StatusCode::kUnsupported, node.label() + ": " + message);
}

void require_float(const NodeInfo& node, const Tensor& t, const char* name, bool allow_float64) {
  const DataType dt = t.dtype();
  if (dt == DataType::kFloat32 || (allow_float64 && dt == DataType::kFloat64)) return;
  const std::string message =
      fmt::format("input {} is {}, expected float32{}", name, t.describe(), allow_float64 ? " or float64" : "");
  if (dt == DataType::kFloat16 || dt == DataType::kFloat64) fail_unsupported(node, message);
  fail(node, message);
}

int64_t normalize_axis(const NodeInfo& node, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    fail(node, fmt::format("{} {} is out of range for a rank-{} tensor (expected [{}, {}])", what, axis, rank, -rank,
                           rank - 1));
  return axis < 0 ? axis + rank : axis;
}

int64_t size_mul(const NodeInfo& node, int64_t a, int64_t b, const char* what) {
  const std::optional<int64_t> r = checked_mul(a, b);
  if (!r) fail(node, fmt::format("{} = {} x {} is negative or does not fit in a 64-bit size", what, a, b));
  return *r;
}

int64_t size_add(const NodeInfo& node, int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r) || r < 0)
    fail(node, fmt::format("{} = {} + {} is negative or does not fit in a 64-bit size", what, a, b));
  return r;
}

int64_t size_numel(const NodeInfo& node, std::span<const int64_t> shape, const char* what) {
  const std::optional<int64_t> n = checked_numel(shape);
  if (!n)
    fail(node, fmt::format("{} has the shape [{}], which has a negative dimension or more elements than fit in a "
                           "64-bit count",
                           what, fmt::join(shape, ", ")));
  return *n;
}

const Subgraph& NodeInfo::subgraph(const std::string& attr) const {
  auto it = subgraphs.find(attr);
  if (it == subgraphs.end() || !it->second) fail(*this, fmt::format("graph attribute '{}' is missing", attr));
  return *it->second;
}

// ---------------------------------------------------------------- context

const Tensor& KernelContext::value_input(int i) const {
  if (!has_input(i)) fail(node_, fmt::format("input {} is required but was not given", i));
  return *raw_input(i);
}

const Tensor& KernelContext::input(int i) const {
  const Tensor& t = value_input(i);
  if (!t.is_tensor())
    fail(node_, fmt::format("input {} is {} {}, expected a tensor", i, t.is_optional() ? "an" : "a", t.describe()));
  if (t.dtype() == DataType::kString && !KernelRegistry::global().takes_strings(node_.domain, node_.op_type))
    fail_unsupported(node_, fmt::format("input {} is a string tensor ({}); spindle's {} does not take strings", i,
                                        t.describe(), node_.op_type));
  return t;
}

void RunLimits::check(const std::string& where) const {
  const std::string prefix = where.empty() ? std::string() : where + ": ";
  if (terminate && terminate->load(std::memory_order_relaxed))
    throw Error(StatusCode::kCancelled, prefix + "the run was cancelled by RunOptions::terminate");
  if (deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() > deadline)
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{}the run exceeded its time limit of {} ms (RunOptions::timeout_ms)", prefix, timeout_ms));
}

std::chrono::steady_clock::time_point deadline_after(int64_t ms) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  if (ms <= 0) return now;
  // Milliseconds left before time_point::max(), compared without overflow.
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now).count();
  return ms >= room ? Clock::time_point::max() : now + std::chrono::milliseconds(ms);
}

void KernelContext::check_terminate() const {
  if (limits_) limits_->check(node_.label());
}

const Tensor& KernelContext::sequence_input(int i) const {
  const Tensor& t = value_input(i);
  if (!t.is_sequence()) fail(node_, fmt::format("input {} is {}{}, expected a sequence", i, t.is_tensor() ? "the tensor " : "an ", t.describe()));
  return t;
}

Tensor& KernelContext::output(int i, DataType dtype, const Shape& shape) {
  if (i >= num_outputs()) fail(node_, fmt::format("output {} does not exist (node has {})", i, num_outputs()));
  for (int64_t d : shape)
    if (d < 0) fail(node_, fmt::format("output {} would have the negative shape {}", i, shape_to_string(shape)));
  // The message is formatted only when the count overflows: this runs for
  // every output of every node.
  const std::optional<int64_t> counted = checked_numel(shape);
  if (!counted) size_numel(node_, shape, fmt::format("output {}", i).c_str());  // throws, naming the output
  const int64_t numel = *counted;
  if (!checked_mul(numel, static_cast<int64_t>(dtype == DataType::kString ? sizeof(std::string) : dtype_size(dtype))))
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{}: output {} of shape {} ({} elements of {}) does not fit in memory", node_.label(), i,
                            shape_to_string(shape), numel, dtype_name(dtype)));
  Tensor& out = outputs_[static_cast<size_t>(i)];
  try {
    out = allocator_ && *allocator_ ? (*allocator_)(dtype, shape) : Tensor(dtype, shape);
  } catch (const std::bad_alloc&) {
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{}: cannot allocate output {} ({} {}, {} elements)", node_.label(), i, dtype_name(dtype),
                            shape_to_string(shape), numel));
  } catch (const Error& e) {
    // Out of memory or past a budget (Buffer::allocate): name the node and
    // the output too.
    if (e.code() != StatusCode::kResourceExhausted) throw;
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{}: cannot allocate output {} ({} {}, {} elements): {}", node_.label(), i,
                            dtype_name(dtype), shape_to_string(shape), numel, e.status().message()));
  }
  return out;
}

void KernelContext::set_output(int i, Tensor t) {
  if (i >= num_outputs()) fail(node_, fmt::format("output {} does not exist (node has {})", i, num_outputs()));
  outputs_[static_cast<size_t>(i)] = std::move(t);
}

// ---------------------------------------------------------------- registry

void KernelRegistry::add(const std::string& domain, const std::string& op_type, int since_min, int since_max,
                         KernelFactory factory) {
  entries_[{domain, op_type}].push_back(Entry{since_min, since_max, std::move(factory)});
}

const KernelFactory* KernelRegistry::find(const std::string& domain, const std::string& op_type, int opset) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = entries_.find({d, op_type});
  if (it == entries_.end()) return nullptr;
  auto covering = [&](int v) -> const KernelFactory* {
    for (const Entry& e : it->second)
      if (v >= e.since_min && v <= e.since_max) return &e.factory;
    return nullptr;
  };
  if (const KernelFactory* f = covering(opset)) return f;
  if (!d.empty() || opset > kMaxOpset) return nullptr;
  // Registrations up to opset 17 were written against ONNX 1.12. A later
  // opset whose version of the operator is still one of those, or differs
  // from it only by element types (Conv-22 from Conv-11), runs on that kernel.
  constexpr int kBaseOpset = 17;
  const OpSchema* s = find_schema(op_type, opset);
  while (s && widens_types_only(op_type, s->since_version)) s = find_schema(op_type, s->since_version - 1);
  if (!s) return nullptr;
  if (const KernelFactory* f = covering(s->since_version)) return f;  // Gelu-20's kernel at opset 23
  if (s->since_version <= kBaseOpset) return covering(kBaseOpset);
  return nullptr;
}

void KernelRegistry::allow_strings(const std::string& domain, const std::string& op_type) {
  string_ops_.insert({domain, op_type});
}

bool KernelRegistry::takes_strings(const std::string& domain, const std::string& op_type) const {
  return string_ops_.count({domain == "ai.onnx" ? "" : domain, op_type}) != 0;
}

std::vector<std::string> KernelRegistry::op_types(const std::string& domain) const {
  std::vector<std::string> out;
  for (const auto& [key, _] : entries_)
    if (key.first == domain) out.push_back(key.second);
  return out;
}

std::vector<KernelRegistry::OpRanges> KernelRegistry::ranges() const {
  std::vector<OpRanges> out;
  for (const auto& [key, entries] : entries_) {
    std::vector<std::pair<int, int>> spans;
    for (const Entry& e : entries) spans.emplace_back(e.since_min, e.since_max);
    // Default-domain opsets that run on an earlier version's kernel.
    if (key.first.empty())
      for (int v = 1; v <= kMaxOpset; ++v)
        if (find(key.first, key.second, v)) spans.emplace_back(v, v);
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<int, int>> merged;
    for (const auto& s : spans) {
      if (!merged.empty() && s.first <= merged.back().second + 1) merged.back().second = std::max(merged.back().second, s.second);
      else merged.push_back(s);
    }
    std::string text;
    for (const auto& [lo, hi] : merged) text += fmt::format("{}{}-{}", text.empty() ? "" : ", ", lo, hi);
    out.push_back({key.first, key.second, text});
  }
  return out;
}

const KernelRegistry& KernelRegistry::global() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_math_kernels(r);
    register_reduce_kernels(r);
    register_nn_kernels(r);
    register_tensor_kernels(r);
    register_detection_kernels(r);
    register_loss_kernels(r);
    register_linalg_kernels(r);
    register_text_kernels(r);
    register_control_kernels(r);
    return r;
  }();
  return registry;
}

std::vector<Tensor> run_kernel_once(const NodeInfo& node, std::vector<Tensor> inputs, ThreadPool* pool) {
  const KernelFactory* factory = KernelRegistry::global().find(node.domain, node.op_type, node.opset);
  if (!factory)
    throw Error(StatusCode::kUnsupported, fmt::format("no kernel for {} at opset {}", node.op_type, node.opset));
  std::unique_ptr<OpKernel> kernel = (*factory)(node);
  std::vector<Tensor> outputs(static_cast<size_t>(node.num_outputs));
  KernelContext ctx(node, inputs, outputs, pool);
  kernel->compute(ctx);
  return outputs;
}

std::vector<Tensor> run_kernel_once(const std::string& op_type, int opset, Attributes attrs, std::vector<Tensor> inputs,
                                    int num_outputs, ThreadPool* pool) {
  NodeInfo node;
  node.op_type = op_type;
  node.opset = opset;
  node.attrs = std::move(attrs);
  node.num_inputs = static_cast<int>(inputs.size());
  node.num_outputs = num_outputs;
  return run_kernel_once(node, std::move(inputs), pool);
}

}  // namespace spindle::kernels
