// concat.cpp — Concat and Split: row-wise copies of byte runs (see
// copy_row_parts), where a row is one index of the dims before the axis.
#include <memory>

#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// ---------------------------------------------------------------- Concat

// Opsets 1..3 (axis optional, default 1), 4..10 (axis required), 11..17
// (negative axis).
class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const NodeInfo& node) {
    axis_ = node.opset < 4 ? node.attrs.get_int("axis", 1) : node.attrs.get_int("axis");
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    if (ctx.num_inputs() == 0) fail(node, "expected at least one input");
    const Tensor& x0 = ctx.input(0);
    const size_t es = elem_size(node, x0, "0");
    const int64_t r = x0.rank();
    if (r == 0) fail(node, fmt::format("input 0 is {}, expected rank >= 1", x0.describe()));
    const int64_t axis = normalize_axis(node, axis_, r);
    const size_t ax = static_cast<size_t>(axis);
    Shape out_shape = x0.shape();
    out_shape[ax] = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& xi = ctx.input(i);
      if (xi.dtype() != x0.dtype())
        fail(node, fmt::format("input {} is {}, expected {} like input 0", i, xi.describe(), dtype_name(x0.dtype())));
      bool ok = xi.rank() == r;
      for (size_t d = 0; ok && d < static_cast<size_t>(r); ++d) ok = d == ax || xi.shape()[d] == x0.shape()[d];
      if (!ok)
        fail(node, fmt::format("input {} is {}, expected rank {} and the dims of input 0 ({}) except on axis {}", i,
                               xi.describe(), r, shape_to_string(x0.shape()), axis));
      out_shape[ax] = size_add(node, out_shape[ax], xi.shape()[ax], "the concatenated axis");
    }
    if (ctx.num_inputs() == 1) {
      ctx.set_output(0, x0);
      return;
    }
    Tensor& y = ctx.output(0, x0.dtype(), out_shape);
    const int64_t outer = prod(out_shape, 0, ax);
    const int64_t inner = prod(out_shape, ax + 1, out_shape.size()) * static_cast<int64_t>(es);
    const int64_t out_row = out_shape[ax] * inner;
    std::vector<RowPart> parts;
    char* dst = static_cast<char*>(y.raw_mutable_data());
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const Tensor& xi = ctx.input(i);
      const int64_t bytes = xi.shape()[ax] * inner;
      parts.push_back(RowPart{static_cast<const char*>(xi.raw_data()), bytes, dst, out_row, bytes});
      dst += bytes;
    }
    copy_row_parts(ctx.pool(), outer, parts);
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- Split

// Opset 1: split from the attribute or the optional input 1; 2..10: split
// attribute; 11..12: negative axis; 13..: split from the optional input 1;
// 18..: or `num_outputs` parts of ceil(size / num_outputs), the last one
// smaller. Without either, the axis is divided into equal parts (it must
// divide).
class SplitKernel final : public OpKernel {
 public:
  explicit SplitKernel(const NodeInfo& node) : opset_(node.opset) {
    axis_ = node.attrs.get_int("axis", 0);
    if (opset_ < 13 && node.attrs.has("split")) {
      split_attr_ = node.attrs.get_ints("split");
      has_split_attr_ = true;
    }
    num_outputs_ = opset_ >= 18 ? node.attrs.get_int("num_outputs", 0) : 0;
    if (node.attrs.has("num_outputs") && (num_outputs_ < 1 || num_outputs_ != node.num_outputs))
      fail(node, fmt::format("num_outputs is {}, expected the node's output count {}", num_outputs_, node.num_outputs));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "input");
    const int64_t axis = normalize_axis(node, axis_, x.rank());
    const size_t ax = static_cast<size_t>(axis);
    const int64_t dim = x.shape()[ax];
    const int n = ctx.num_outputs();
    std::vector<int64_t> split;
    if (has_split_attr_) split = split_attr_;
    else if ((opset_ >= 13 || opset_ == 1) && ctx.has_input(1)) split = read_int_list(node, ctx.input(1), "split");
    if (!split.empty() && num_outputs_ > 0)
      fail(node, "has both the split input and the num_outputs attribute, expected one of them");
    if (split.empty() && num_outputs_ > 0) {
      const int64_t chunk = (dim + n - 1) / n;
      for (int i = 0; i < n; ++i) split.push_back(std::clamp<int64_t>(dim - chunk * i, 0, chunk));
      if (n > 1 && split.back() == 0)
        fail(node, fmt::format("axis {} of {} has size {}, too small for {} outputs of size {}", axis, x.describe(),
                               dim, n, chunk));
    }
    if (split.empty()) {
      if (dim % n != 0)
        fail(node, fmt::format("axis {} of {} has size {}, which does not split into {} equal parts", axis,
                               x.describe(), dim, n));
      split.assign(static_cast<size_t>(n), dim / n);
    }
    if (static_cast<int>(split.size()) != n)
      fail(node, fmt::format("split {} has {} entries, expected one per output ({})", dims_string(split), split.size(),
                             n));
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0) fail(node, fmt::format("split {} has a negative entry", dims_string(split)));
      sum = size_add(node, sum, s, "the sum of split");
    }
    if (sum != dim)
      fail(node, fmt::format("split {} sums to {}, expected the size {} of axis {} of {}", dims_string(split), sum, dim,
                             axis, x.describe()));
    const int64_t outer = prod(x.shape(), 0, ax);
    const int64_t inner = prod(x.shape(), ax + 1, x.shape().size()) * static_cast<int64_t>(es);
    const int64_t in_row = dim * inner;
    std::vector<RowPart> parts;
    const char* src = static_cast<const char*>(x.raw_data());
    for (int i = 0; i < n; ++i) {
      Shape s = x.shape();
      s[ax] = split[static_cast<size_t>(i)];
      Tensor& y = ctx.output(i, x.dtype(), s);
      const int64_t bytes = s[ax] * inner;
      parts.push_back(RowPart{src, in_row, static_cast<char*>(y.raw_mutable_data()), bytes, bytes});
      src += bytes;
    }
    copy_row_parts(ctx.pool(), outer, parts);
  }

 private:
  int opset_;
  int64_t axis_;
  int64_t num_outputs_ = 0;
  bool has_split_attr_ = false;
  std::vector<int64_t> split_attr_;
};

}  // namespace

void register_concat(KernelRegistry& r) {
  r.add("", "Concat", 1, 17, factory_of<ConcatKernel>());
  r.add("", "Split", 1, kMaxOpset, factory_of<SplitKernel>());
}

}  // namespace spindle::kernels::tensor
