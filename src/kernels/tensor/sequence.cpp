// sequence.cpp — the sequence operators (opset 11+): SequenceEmpty,
// SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
// SequenceLength, SplitToSequence, ConcatFromSequence; and the optional
// operators (opset 15+): Optional, OptionalHasElement, OptionalGetElement.
//
// A sequence value is a Tensor made by Tensor::sequence: an immutable list
// of tensor handles. Insert and Erase make a new list that shares the
// untouched tensors' buffers; no element data is copied except by
// SplitToSequence and ConcatFromSequence, which reuse the Split and Concat
// kernels (same checks, same parallel row copies).
#include <memory>

#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// A position input: a scalar int32/int64 in [-n, n-1] (or [-n, n] when
// `allow_end`), normalized to [0, n].
int64_t read_position(const NodeInfo& node, const Tensor& t, int64_t n, bool allow_end) {
  if (t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32)
    fail(node, fmt::format("position is {}, expected an int32 or int64 scalar", t.describe()));
  if (t.numel() != 1) fail(node, fmt::format("position is {}, expected a scalar", t.describe()));
  const int64_t p = t.to_int64_vector()[0];
  const int64_t hi = allow_end ? n : n - 1;
  if (p < -n || p > hi)
    fail(node, fmt::format("position {} is out of range for a sequence of {} tensor(s) (expected [{}, {}])", p, n, -n, hi));
  return p < 0 ? p + n : p;
}

void check_item(const NodeInfo& node, const Tensor& seq, const Tensor& t) {
  if (t.dtype() != seq.dtype())
    fail(node, fmt::format("tensor {} cannot join a sequence of {} tensors", t.describe(), dtype_name(seq.dtype())));
}

// SequenceEmpty(dtype = float).
class SequenceEmptyKernel final : public OpKernel {
 public:
  explicit SequenceEmptyKernel(const NodeInfo& node)
      : dtype_(static_cast<DataType>(node.attrs.get_int("dtype", static_cast<int64_t>(DataType::kFloat32)))) {
    if (dtype_ != DataType::kString && dtype_size(dtype_) == 0)
      fail_unsupported(node, fmt::format("dtype {} is not supported", dtype_name(dtype_)));
  }
  void compute(KernelContext& ctx) const override { ctx.set_output(0, Tensor::sequence(dtype_, {})); }

 private:
  DataType dtype_;
};

void sequence_construct(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) fail(ctx.node(), "expected at least one input tensor");
  std::vector<Tensor> items;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    items.push_back(ctx.input(i));
    if (items.back().dtype() != items[0].dtype())
      fail(ctx.node(), fmt::format("input {} is {}, expected {} like input 0", i, items.back().describe(),
                                   dtype_name(items[0].dtype())));
  }
  const DataType dt = items[0].dtype();
  ctx.set_output(0, Tensor::sequence(dt, std::move(items)));
}

void sequence_insert(KernelContext& ctx) {
  const Tensor& seq = ctx.sequence_input(0);
  const Tensor& t = ctx.input(1);
  check_item(ctx.node(), seq, t);
  std::vector<Tensor> items = seq.sequence_items();
  const auto n = static_cast<int64_t>(items.size());
  const int64_t pos = ctx.has_input(2) ? read_position(ctx.node(), ctx.input(2), n, true) : n;
  items.insert(items.begin() + pos, t);
  ctx.set_output(0, Tensor::sequence(seq.dtype(), std::move(items)));
}

void sequence_at(KernelContext& ctx) {
  const Tensor& seq = ctx.sequence_input(0);
  const auto& items = seq.sequence_items();
  const int64_t pos = read_position(ctx.node(), ctx.input(1), static_cast<int64_t>(items.size()), false);
  ctx.set_output(0, items[static_cast<size_t>(pos)]);
}

void sequence_erase(KernelContext& ctx) {
  const Tensor& seq = ctx.sequence_input(0);
  std::vector<Tensor> items = seq.sequence_items();
  const auto n = static_cast<int64_t>(items.size());
  if (n == 0) fail(ctx.node(), "cannot erase from an empty sequence");
  const int64_t pos = ctx.has_input(1) ? read_position(ctx.node(), ctx.input(1), n, false) : n - 1;
  items.erase(items.begin() + pos);
  ctx.set_output(0, Tensor::sequence(seq.dtype(), std::move(items)));
}

void sequence_length(KernelContext& ctx) {
  const Tensor& seq = ctx.sequence_input(0);
  ctx.set_output(0, Tensor::scalar<int64_t>(static_cast<int64_t>(seq.sequence_items().size())));
}

// A Split or Concat kernel made once for a sequence node; errors name the
// sequence node.
std::unique_ptr<OpKernel> inner_kernel(const NodeInfo& outer, NodeInfo& inner, const std::string& op_type,
                                       Attributes attrs) {
  inner.op_type = op_type;
  inner.domain = "";
  inner.opset = 13;
  inner.name = "inside " + outer.label();
  inner.attrs = std::move(attrs);
  return (*KernelRegistry::global().find("", op_type, inner.opset))(inner);
}

// SplitToSequence(input, split?; axis = 0, keepdims = 1).
class SplitToSequenceKernel final : public OpKernel {
 public:
  explicit SplitToSequenceKernel(const NodeInfo& node)
      : axis_(node.attrs.get_int("axis", 0)), keepdims_(node.attrs.get_int("keepdims", 1) != 0) {
    split_ = inner_kernel(node, split_node_, "Split", {{"axis", axis_}});
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.rank() == 0) fail(node, fmt::format("input is {}, expected rank >= 1", x.describe()));
    const int64_t axis = normalize_axis(node, axis_, x.rank());
    const int64_t dim = x.dim(axis);
    std::vector<int64_t> sizes;
    const bool given = ctx.has_input(1);
    if (!given) {
      sizes.assign(static_cast<size_t>(dim), 1);
    } else {
      const Tensor& s = ctx.input(1);
      if (s.rank() == 0) {
        const int64_t chunk = read_int_scalar(node, s, "split");
        if (chunk <= 0) fail(node, fmt::format("split {} must be positive", chunk));
        for (int64_t at = 0; at < dim; at += chunk) sizes.push_back(std::min(chunk, dim - at));
      } else {
        sizes = read_int_list(node, s, "split");
      }
    }
    std::vector<Tensor> items;
    if (!sizes.empty()) {
      std::vector<Tensor> inputs{x, Tensor::from_vector<int64_t>({static_cast<int64_t>(sizes.size())}, sizes)};
      items.resize(sizes.size());
      KernelContext inner(split_node_, inputs, items, ctx.pool());  // counts come from the spans
      split_->compute(inner);
    }
    if (!given && !keepdims_) {
      Shape squeezed = x.shape();
      squeezed.erase(squeezed.begin() + axis);
      for (Tensor& t : items) t = t.reshaped(squeezed);
    }
    ctx.set_output(0, Tensor::sequence(x.dtype(), std::move(items)));
  }

 private:
  int64_t axis_;
  bool keepdims_;
  NodeInfo split_node_;
  std::unique_ptr<OpKernel> split_;
};

// ConcatFromSequence(input; axis, new_axis = 0): Concat of the items, or of
// the items each given a new dimension of size 1 at `axis` (a Stack).
class ConcatFromSequenceKernel final : public OpKernel {
 public:
  explicit ConcatFromSequenceKernel(const NodeInfo& node)
      : axis_(node.attrs.get_int("axis")), new_axis_(node.attrs.get_int("new_axis", 0) != 0) {
    if (node.attrs.has("new_axis") && node.attrs.get_int("new_axis") != 0 && node.attrs.get_int("new_axis") != 1)
      fail(node, fmt::format("new_axis is {}, expected 0 or 1", node.attrs.get_int("new_axis")));
    concat_ = inner_kernel(node, concat_node_, "Concat", {{"axis", axis_}});
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& seq = ctx.sequence_input(0);
    std::vector<Tensor> items = seq.sequence_items();
    if (items.empty()) fail(node, "the input sequence is empty, expected at least one tensor");
    const int64_t r = items[0].rank();
    if (new_axis_) {
      const int64_t axis = normalize_axis(node, axis_, r + 1);
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].rank() != r)
          fail(node, fmt::format("item {} is {}, expected rank {} like item 0", i, items[i].describe(), r));
        Shape s = items[i].shape();
        s.insert(s.begin() + axis, 1);
        items[i] = items[i].reshaped(s);
      }
    }
    std::vector<Tensor> out(1);
    KernelContext inner(concat_node_, items, out, ctx.pool());
    concat_->compute(inner);
    ctx.set_output(0, std::move(out[0]));
  }

 private:
  int64_t axis_;
  bool new_axis_;
  NodeInfo concat_node_;
  std::unique_ptr<OpKernel> concat_;
};

// ---------------------------------------------------------------- optionals

// Optional(input?; type?): an optional holding input, or an empty one of
// `type`.
class OptionalKernel final : public OpKernel {
 public:
  explicit OptionalKernel(const NodeInfo& node) {
    if (node.attrs.has("type")) type_ = node.attrs.get_type("type");
  }
  void compute(KernelContext& ctx) const override {
    if (ctx.has_input(0)) {
      const Tensor& v = ctx.value_input(0);
      if (v.is_optional()) fail(ctx.node(), fmt::format("input is an {}, expected a tensor or a sequence", v.describe()));
      ctx.set_output(0, Tensor::optional(v.dtype(), v.is_sequence(), v));
      return;
    }
    if (type_.dtype == DataType::kUndefined) fail(ctx.node(), "without an input, the attribute 'type' is required");
    ctx.set_output(0, Tensor::optional(type_.dtype, type_.sequence));
  }

 private:
  TypeAttr type_;
};

void optional_has_element(KernelContext& ctx) {
  bool has = ctx.has_input(0);
  if (has && ctx.value_input(0).is_optional()) has = ctx.value_input(0).optional_value() != nullptr;
  ctx.set_output(0, Tensor::scalar<bool>(has));
}

void optional_get_element(KernelContext& ctx) {
  const Tensor& v = ctx.value_input(0);
  if (!v.is_optional()) return ctx.set_output(0, v);
  const Tensor* held = v.optional_value();
  if (!held) fail(ctx.node(), fmt::format("input is an {}", v.describe()));
  ctx.set_output(0, *held);
}

}  // namespace

void register_sequence(KernelRegistry& r) {
  r.add("", "SequenceEmpty", 11, 17, factory_of<SequenceEmptyKernel>());
  r.add("", "SequenceConstruct", 11, 17, simple_kernel(sequence_construct));
  r.add("", "SequenceInsert", 11, 17, simple_kernel(sequence_insert));
  r.add("", "SequenceAt", 11, 17, simple_kernel(sequence_at));
  r.add("", "SequenceErase", 11, 17, simple_kernel(sequence_erase));
  r.add("", "SequenceLength", 11, 17, simple_kernel(sequence_length));
  r.add("", "SplitToSequence", 11, 17, factory_of<SplitToSequenceKernel>());
  r.add("", "ConcatFromSequence", 11, 17, factory_of<ConcatFromSequenceKernel>());
  r.add("", "Optional", 15, 17, factory_of<OptionalKernel>());
  r.add("", "OptionalHasElement", 15, kMaxOpset, simple_kernel(optional_has_element));
  r.add("", "OptionalGetElement", 15, kMaxOpset, simple_kernel(optional_get_element));
  // These only move tensor handles, so any element type goes.
  for (const char* op : {"SequenceConstruct", "SequenceInsert", "SequenceAt", "SequenceErase", "SequenceLength",
                         "Optional", "OptionalHasElement", "OptionalGetElement"})
    r.allow_strings("", op);
}

}  // namespace spindle::kernels::tensor
