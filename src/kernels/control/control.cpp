// control.cpp — the control-flow operators: If (opset 1+), Loop (1+), Scan
// (8 with a batch axis, 9+) and SequenceMap (17). Their graph attributes arrive compiled
// (NodeInfo::subgraph); values the subgraphs read from enclosing graphs are
// the node's outer inputs (KernelContext::outer_inputs), passed through to
// every run of a subgraph.
//
// A subgraph runs sequentially on the thread that runs the node; its kernels
// use the same intra-op pool. RunOptions::terminate is checked between
// iterations and between a subgraph's nodes. Loop and Scan stack per-iteration outputs;
// slices and stacks copy rows of bytes (strings element by element).
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels {
namespace {

using tensor::prod;

bool read_bool(const NodeInfo& node, const Tensor& t, const char* what) {
  if (!t.is_tensor() || t.numel() != 1 || (t.dtype() != DataType::kBool && dtype_size(t.dtype()) == 0))
    fail(node, fmt::format("{} is {}, expected a single bool", what, t.describe()));
  if (t.dtype() == DataType::kBool) return t.data<bool>()[0];
  return t.to_int64_vector()[0] != 0;
}

// Copies element `src_index` of src into element `dst_index` of dst, where
// an element is `inner` consecutive values (any element type).
void copy_block(const Tensor& src, int64_t src_index, Tensor& dst, int64_t dst_index, int64_t inner) {
  if (src.dtype() == DataType::kString) {
    std::copy_n(src.data<std::string>() + src_index * inner, inner, dst.mutable_data<std::string>() + dst_index * inner);
    return;
  }
  const size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw_mutable_data()) + static_cast<size_t>(dst_index * inner) * es,
              static_cast<const char*>(src.raw_data()) + static_cast<size_t>(src_index * inner) * es,
              static_cast<size_t>(inner) * es);
}

void check_copyable(const NodeInfo& node, const Tensor& t, const std::string& what) {
  if (!t.is_tensor() || (t.dtype() != DataType::kString && dtype_size(t.dtype()) == 0))
    fail(node, fmt::format("{} is {}, expected a tensor", what, t.describe()));
}

// Stacks same-shaped tensors along a new axis `axis` (0..rank).
Tensor stack(const NodeInfo& node, const std::vector<Tensor>& items, int64_t axis, DataType dtype_if_empty,
             const std::string& what) {
  if (items.empty()) return Tensor(dtype_if_empty == DataType::kUndefined ? DataType::kFloat32 : dtype_if_empty, {0});
  const Tensor& first = items[0];
  for (size_t i = 0; i < items.size(); ++i) {
    check_copyable(node, items[i], fmt::format("{} of iteration {}", what, i));
    if (items[i].dtype() != first.dtype() || items[i].shape() != first.shape())
      fail(node, fmt::format("{} of iteration {} is {}, expected {} like iteration 0", what, i, items[i].describe(),
                             first.describe()));
  }
  const Shape& s = first.shape();
  if (axis < 0 || axis > static_cast<int64_t>(s.size()))
    fail(node, fmt::format("{} axis {} is out of range for stacking rank-{} tensors", what, axis, s.size()));
  Shape out_shape = s;
  const auto n = static_cast<int64_t>(items.size());
  out_shape.insert(out_shape.begin() + axis, n);
  Tensor out(first.dtype(), out_shape);
  const int64_t outer = prod(s, 0, static_cast<size_t>(axis));
  const int64_t inner = prod(s, static_cast<size_t>(axis), s.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < outer; ++o) copy_block(items[static_cast<size_t>(t)], o, out, o * n + t, inner);
  return out;
}

// Slice `index` of x along `axis`, the axis removed.
Tensor slice(const Tensor& x, int64_t axis, int64_t index) {
  const Shape& s = x.shape();
  Shape out_shape = s;
  out_shape.erase(out_shape.begin() + axis);
  Tensor out(x.dtype(), out_shape);
  const int64_t outer = prod(s, 0, static_cast<size_t>(axis));
  const int64_t inner = prod(s, static_cast<size_t>(axis) + 1, s.size());
  const int64_t n = s[static_cast<size_t>(axis)];
  for (int64_t o = 0; o < outer; ++o) copy_block(x, o * n + index, out, o, inner);
  return out;
}

// ---------------------------------------------------------------- If

class IfKernel final : public OpKernel {
 public:
  explicit IfKernel(const NodeInfo& node) {
    for (const char* b : {"then_branch", "else_branch"})
      if (node.subgraph(b).num_outputs() != node.num_outputs)
        fail(node, fmt::format("{} has {} outputs, expected {} like the node", b, node.subgraph(b).num_outputs(),
                               node.num_outputs));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const bool cond = read_bool(node, ctx.input(0), "cond");
    const Subgraph& branch = node.subgraph(cond ? "then_branch" : "else_branch");
    std::vector<Tensor> out = branch.run({}, ctx.outer_inputs(), ctx.pool(), ctx.limits());
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, std::move(out[static_cast<size_t>(i)]));
  }
};

// ---------------------------------------------------------------- Loop

// Loop(M?, cond?, v_initial...; body): body(i, cond, v...) -> (cond, v...,
// scan...). Runs while i < M (when M is given) and cond (when cond is given);
// outputs the final v... and each scan output stacked over the iterations.
class LoopKernel final : public OpKernel {
 public:
  explicit LoopKernel(const NodeInfo& node) {
    const Subgraph& body = node.subgraph("body");
    const int carried = node.num_inputs - 2;
    if (carried < 0) fail(node, fmt::format("has {} inputs, expected M, cond and the loop-carried values", node.num_inputs));
    if (body.num_inputs() != carried + 2)
      fail(node, fmt::format("body takes {} inputs, expected {} (iteration number, condition and {} carried values)",
                             body.num_inputs(), carried + 2, carried));
    if (body.num_outputs() < carried + 1)
      fail(node, fmt::format("body has {} outputs, expected at least {} (condition and {} carried values)",
                             body.num_outputs(), carried + 1, carried));
    if (node.num_outputs > body.num_outputs() - 1)
      fail(node, fmt::format("has {} outputs, more than the body's {} carried and scan outputs", node.num_outputs,
                             body.num_outputs() - 1));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Subgraph& body = node.subgraph("body");
    const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
    int64_t max_trips = 0;
    if (has_m) {
      const Tensor& m = ctx.input(0);
      if (m.numel() != 1 || m.dtype() != DataType::kInt64)
        fail(node, fmt::format("M is {}, expected an int64 scalar", m.describe()));
      max_trips = m.data<int64_t>()[0];
    }
    bool cond = has_cond ? read_bool(node, ctx.input(1), "cond") : true;
    if (!has_m && !has_cond) fail(node, "has neither a trip count M nor a condition: it would never end");
    const int carried = ctx.num_inputs() - 2;
    std::vector<Tensor> args(static_cast<size_t>(carried) + 2);
    for (int v = 0; v < carried; ++v) args[static_cast<size_t>(v) + 2] = ctx.value_input(v + 2);
    const int num_scans = body.num_outputs() - 1 - carried;
    std::vector<std::vector<Tensor>> scans(static_cast<size_t>(num_scans));
    const int64_t cap = !has_m && ctx.limits() ? ctx.limits()->max_loop_iterations : 0;
    for (int64_t i = 0; (!has_m || i < max_trips) && cond; ++i) {
      ctx.check_terminate();
      if (cap > 0 && i >= cap)
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("{}: ran {} iterations without a trip count M and its condition is still true; the cap is "
                                "session.max_loop_iterations = {}",
                                node.label(), i, cap));
      args[0] = Tensor::scalar<int64_t>(i);
      args[1] = Tensor::scalar<bool>(cond);
      std::vector<Tensor> out = body.run(args, ctx.outer_inputs(), ctx.pool(), ctx.limits());
      if (has_cond) cond = read_bool(node, out[0], "the body's condition output");
      for (int v = 0; v < carried; ++v) args[static_cast<size_t>(v) + 2] = std::move(out[static_cast<size_t>(v) + 1]);
      for (int k = 0; k < num_scans; ++k)
        scans[static_cast<size_t>(k)].push_back(std::move(out[static_cast<size_t>(1 + carried + k)]));
    }
    for (int v = 0; v < carried && v < ctx.num_outputs(); ++v) ctx.set_output(v, args[static_cast<size_t>(v) + 2]);
    for (int k = 0; k < num_scans && carried + k < ctx.num_outputs(); ++k)
      ctx.set_output(carried + k, stack(node, scans[static_cast<size_t>(k)], 0, body.output_dtype(1 + carried + k),
                                        fmt::format("scan output {}", k)));
  }
};

// ---------------------------------------------------------------- Scan

// Scan(states..., scan inputs...; body, num_scan_inputs, axes, directions),
// opset 9+: body(states..., slices...) -> (states..., scan elements...).
class ScanKernel final : public OpKernel {
 public:
  explicit ScanKernel(const NodeInfo& node) : m_(node.attrs.get_int("num_scan_inputs")) {
    const Subgraph& body = node.subgraph("body");
    // Checked before subtracting: the count comes from the model (-2^63 overflowed).
    if (m_ < 1 || m_ > node.num_inputs)
      fail(node, fmt::format("num_scan_inputs {} does not fit the node's {} inputs", m_, node.num_inputs));
    n_ = node.num_inputs - m_;
    if (body.num_inputs() != node.num_inputs)
      fail(node, fmt::format("body takes {} inputs, expected {} ({} states and {} scan inputs)", body.num_inputs(),
                             node.num_inputs, n_, m_));
    k_ = body.num_outputs() - n_;
    if (k_ < 0 || node.num_outputs != body.num_outputs())
      fail(node, fmt::format("has {} outputs and its body {}, expected the same number, at least {} states",
                             node.num_outputs, body.num_outputs(), n_));
    in_axes_ = node.attrs.get_ints("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(m_), 0));
    in_dirs_ = node.attrs.get_ints("scan_input_directions", std::vector<int64_t>(static_cast<size_t>(m_), 0));
    out_axes_ = node.attrs.get_ints("scan_output_axes", std::vector<int64_t>(static_cast<size_t>(k_), 0));
    out_dirs_ = node.attrs.get_ints("scan_output_directions", std::vector<int64_t>(static_cast<size_t>(k_), 0));
    if (static_cast<int64_t>(in_axes_.size()) != m_ || static_cast<int64_t>(in_dirs_.size()) != m_ ||
        static_cast<int64_t>(out_axes_.size()) != k_ || static_cast<int64_t>(out_dirs_.size()) != k_)
      fail(node, fmt::format("scan_input_axes / directions need {} entries and scan_output_axes / directions {}", m_, k_));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Subgraph& body = node.subgraph("body");
    std::vector<Tensor> args(static_cast<size_t>(n_ + m_));
    for (int64_t s = 0; s < n_; ++s) args[static_cast<size_t>(s)] = ctx.input(static_cast<int>(s));
    std::vector<int64_t> axes(static_cast<size_t>(m_));
    int64_t steps = -1;
    for (int64_t j = 0; j < m_; ++j) {
      const Tensor& x = ctx.input(static_cast<int>(n_ + j));
      check_copyable(node, x, fmt::format("scan input {}", j));
      int64_t a = in_axes_[static_cast<size_t>(j)];
      if (a < -x.rank() || a >= x.rank())
        fail(node, fmt::format("scan_input_axes[{}] = {} is out of range for scan input {}", j, a, x.describe()));
      a = a < 0 ? a + x.rank() : a;
      axes[static_cast<size_t>(j)] = a;
      if (steps >= 0 && x.dim(a) != steps)
        fail(node, fmt::format("scan input {} ({}) has {} steps on axis {}, expected {} like scan input 0", j,
                               x.describe(), x.dim(a), a, steps));
      steps = x.dim(a);
    }
    std::vector<std::vector<Tensor>> scans(static_cast<size_t>(k_));
    for (int64_t t = 0; t < steps; ++t) {
      ctx.check_terminate();
      for (int64_t j = 0; j < m_; ++j) {
        const int64_t at = in_dirs_[static_cast<size_t>(j)] == 1 ? steps - 1 - t : t;
        args[static_cast<size_t>(n_ + j)] = slice(ctx.input(static_cast<int>(n_ + j)), axes[static_cast<size_t>(j)], at);
      }
      std::vector<Tensor> out = body.run(args, ctx.outer_inputs(), ctx.pool(), ctx.limits());
      for (int64_t s = 0; s < n_; ++s) args[static_cast<size_t>(s)] = std::move(out[static_cast<size_t>(s)]);
      for (int64_t k = 0; k < k_; ++k) scans[static_cast<size_t>(k)].push_back(std::move(out[static_cast<size_t>(n_ + k)]));
    }
    for (int64_t s = 0; s < n_; ++s) ctx.set_output(static_cast<int>(s), args[static_cast<size_t>(s)]);
    for (int64_t k = 0; k < k_; ++k) {
      auto& items = scans[static_cast<size_t>(k)];
      if (out_dirs_[static_cast<size_t>(k)] == 1) std::reverse(items.begin(), items.end());
      int64_t a = out_axes_[static_cast<size_t>(k)];
      const int64_t r = items.empty() ? 0 : items[0].rank() + 1;
      if (a < 0) a += r;
      ctx.set_output(static_cast<int>(n_ + k),
                     stack(node, items, a, body.output_dtype(static_cast<int>(n_ + k)), fmt::format("scan output {}", k)));
    }
  }

 private:
  int64_t m_, n_ = 0, k_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

// Scan opset 8: (sequence_lens?, states..., scan inputs...; body,
// num_scan_inputs, directions). Every state and scan input has a batch axis
// 0 and scan inputs a time axis 1; the body runs per batch item over its
// first sequence_lens[b] steps (all of them when absent). Scan outputs are
// [batch, time, ...], zero past an item's length.
class Scan8Kernel final : public OpKernel {
 public:
  explicit Scan8Kernel(const NodeInfo& node) : m_(node.attrs.get_int("num_scan_inputs")) {
    const Subgraph& body = node.subgraph("body");
    if (m_ < 1 || m_ > node.num_inputs - 1)
      fail(node, fmt::format("num_scan_inputs {} does not fit the node's {} inputs", m_, node.num_inputs));
    n_ = node.num_inputs - 1 - m_;
    if (body.num_inputs() != n_ + m_)
      fail(node, fmt::format("body takes {} inputs, expected {} ({} states and {} scan inputs)", body.num_inputs(),
                             n_ + m_, n_, m_));
    k_ = body.num_outputs() - n_;
    if (k_ < 0 || node.num_outputs != body.num_outputs())
      fail(node, fmt::format("has {} outputs and its body {}, expected the same number, at least {} states",
                             node.num_outputs, body.num_outputs(), n_));
    dirs_ = node.attrs.get_ints("directions", std::vector<int64_t>(static_cast<size_t>(m_), 0));
    if (static_cast<int64_t>(dirs_.size()) != m_)
      fail(node, fmt::format("directions has {} entries, expected {}", dirs_.size(), m_));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Subgraph& body = node.subgraph("body");
    int64_t batch = -1, steps = -1;
    for (int64_t i = 0; i < n_ + m_; ++i) {
      const Tensor& t = ctx.input(static_cast<int>(1 + i));
      check_copyable(node, t, fmt::format("input {}", 1 + i));
      const bool scan = i >= n_;
      if (t.rank() < (scan ? 2 : 1) || (batch >= 0 && t.dim(0) != batch) || (scan && steps >= 0 && t.dim(1) != steps))
        fail(node, fmt::format("input {} is {}, expected batch {} first{}", 1 + i, t.describe(), batch,
                               scan ? fmt::format(" and {} time steps second", steps) : ""));
      batch = t.dim(0);
      if (scan) steps = t.dim(1);
    }
    std::vector<int64_t> lens(static_cast<size_t>(batch), steps);
    if (ctx.has_input(0)) {
      lens = ctx.input(0).to_int64_vector();
      if (static_cast<int64_t>(lens.size()) != batch)
        fail(node, fmt::format("sequence_lens is {}, expected {} values", ctx.input(0).describe(), batch));
      for (int64_t l : lens)
        if (l < 1 || l > steps) fail(node, fmt::format("sequence_lens holds {}, expected 1..{}", l, steps));
    }
    std::vector<std::vector<Tensor>> states(static_cast<size_t>(n_)), scans(static_cast<size_t>(k_));
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> args(static_cast<size_t>(n_ + m_));
      for (int64_t s = 0; s < n_; ++s) args[static_cast<size_t>(s)] = slice(ctx.input(static_cast<int>(1 + s)), 0, b);
      std::vector<std::vector<Tensor>> per_step(static_cast<size_t>(k_));
      const int64_t len = lens[static_cast<size_t>(b)];
      for (int64_t t = 0; t < len; ++t) {
        ctx.check_terminate();
        for (int64_t j = 0; j < m_; ++j) {
          const int64_t at = dirs_[static_cast<size_t>(j)] == 1 ? len - 1 - t : t;
          args[static_cast<size_t>(n_ + j)] = slice(slice(ctx.input(static_cast<int>(1 + n_ + j)), 0, b), 0, at);
        }
        std::vector<Tensor> out = body.run(args, ctx.outer_inputs(), ctx.pool(), ctx.limits());
        for (int64_t s = 0; s < n_; ++s) args[static_cast<size_t>(s)] = std::move(out[static_cast<size_t>(s)]);
        for (int64_t k = 0; k < k_; ++k) per_step[static_cast<size_t>(k)].push_back(std::move(out[static_cast<size_t>(n_ + k)]));
      }
      for (int64_t s = 0; s < n_; ++s) states[static_cast<size_t>(s)].push_back(args[static_cast<size_t>(s)]);
      for (int64_t k = 0; k < k_; ++k) {
        Tensor stacked = stack(node, per_step[static_cast<size_t>(k)], 0, DataType::kUndefined, fmt::format("scan output {}", k));
        if (len < steps) {  // pad with zeros to the full time axis
          Shape full = stacked.shape();
          full[0] = steps;
          Tensor padded(stacked.dtype(), full);
          const int64_t inner = stacked.numel() / len;
          for (int64_t t = 0; t < len; ++t) copy_block(stacked, t, padded, t, inner);
          stacked = padded;
        }
        scans[static_cast<size_t>(k)].push_back(std::move(stacked));
      }
    }
    for (int64_t s = 0; s < n_; ++s)
      ctx.set_output(static_cast<int>(s), stack(node, states[static_cast<size_t>(s)], 0, body.output_dtype(static_cast<int>(s)),
                                                fmt::format("state {}", s)));
    for (int64_t k = 0; k < k_; ++k)
      ctx.set_output(static_cast<int>(n_ + k), stack(node, scans[static_cast<size_t>(k)], 0,
                                                     body.output_dtype(static_cast<int>(n_ + k)), fmt::format("scan output {}", k)));
  }

 private:
  int64_t m_, n_ = 0, k_ = 0;
  std::vector<int64_t> dirs_;
};

// ---------------------------------------------------------------- SequenceMap

// SequenceMap(input_sequence, additional...; body): runs body once per item
// of input_sequence; additional inputs that are sequences give their item of
// the same position, tensors are passed whole. Each body output becomes a
// sequence.
class SequenceMapKernel final : public OpKernel {
 public:
  explicit SequenceMapKernel(const NodeInfo& node) {
    const Subgraph& body = node.subgraph("body");
    if (body.num_inputs() != node.num_inputs || body.num_outputs() != node.num_outputs)
      fail(node, fmt::format("body takes {} inputs and gives {} outputs, expected {} and {} like the node",
                             body.num_inputs(), body.num_outputs(), node.num_inputs, node.num_outputs));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Subgraph& body = node.subgraph("body");
    const auto n = static_cast<int64_t>(ctx.sequence_input(0).sequence_items().size());
    for (int i = 1; i < ctx.num_inputs(); ++i) {
      const Tensor& v = ctx.value_input(i);
      if (v.is_sequence() && static_cast<int64_t>(v.sequence_items().size()) != n)
        fail(node, fmt::format("input {} is a {}, expected {} items like input 0", i, v.describe(), n));
    }
    std::vector<std::vector<Tensor>> outs(static_cast<size_t>(ctx.num_outputs()));
    std::vector<Tensor> args(static_cast<size_t>(ctx.num_inputs()));
    for (int64_t t = 0; t < n; ++t) {
      ctx.check_terminate();
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const Tensor& v = ctx.value_input(i);
        args[static_cast<size_t>(i)] = v.is_sequence() ? v.sequence_items()[static_cast<size_t>(t)] : v;
      }
      std::vector<Tensor> out = body.run(args, ctx.outer_inputs(), ctx.pool(), ctx.limits());
      for (int o = 0; o < ctx.num_outputs(); ++o) outs[static_cast<size_t>(o)].push_back(std::move(out[static_cast<size_t>(o)]));
    }
    for (int o = 0; o < ctx.num_outputs(); ++o) {
      auto& items = outs[static_cast<size_t>(o)];
      DataType dt = items.empty() ? body.output_dtype(o) : items[0].dtype();
      if (dt == DataType::kUndefined) dt = DataType::kFloat32;
      ctx.set_output(o, Tensor::sequence(dt, std::move(items)));
    }
  }
};

}  // namespace

void register_control_kernels(KernelRegistry& r) {
  r.add("", "If", 1, 17, factory_of<IfKernel>());
  r.add("", "Loop", 1, 17, factory_of<LoopKernel>());
  r.add("", "Scan", 8, 8, factory_of<Scan8Kernel>());
  r.add("", "Scan", 9, 17, factory_of<ScanKernel>());
  r.add("", "SequenceMap", 17, 17, factory_of<SequenceMapKernel>());
  // They pass values through to their subgraphs without reading them.
  for (const char* op : {"If", "Loop", "Scan", "SequenceMap"}) r.allow_strings("", op);
}

}  // namespace spindle::kernels
