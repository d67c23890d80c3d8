// basic.cpp — ops that produce a value without moving data, or as a
// zero-copy view of their input: Constant, Identity, Reshape, Squeeze, Unsqueeze, Flatten, Shape, Size.
#include <cstring>
#include <memory>
#include <set>

#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// ---------------------------------------------------------------- Constant

// Opsets 1..17: `value` (tensor) from 1, value_float(s) / value_int(s) from
// 12 (accepted at any opset). sparse_value and strings are unsupported.
class ConstantKernel final : public OpKernel {
 public:
  explicit ConstantKernel(const NodeInfo& node) {
    const Attributes& a = node.attrs;
    int count = 0;
    for (const char* k : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                          "value_strings", "sparse_value"})
      count += a.has(k) ? 1 : 0;
    if (count != 1) fail(node, fmt::format("expected exactly one value attribute, found {}", count));
    if (a.has("value")) {
      value_ = a.get_tensor("value");
      if (dtype_size(value_.dtype()) == 0)
        fail_unsupported(node, fmt::format("value is {}, which is not supported", value_.describe()));
    } else if (a.has("value_float")) {
      value_ = Tensor::scalar<float>(a.get_float("value_float"));
    } else if (a.has("value_floats")) {
      const std::vector<float> v = a.get_floats("value_floats");
      value_ = Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v);
    } else if (a.has("value_int")) {
      value_ = Tensor::scalar<int64_t>(a.get_int("value_int"));
    } else if (a.has("value_ints")) {
      const std::vector<int64_t> v = a.get_ints("value_ints");
      value_ = Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    } else {
      fail_unsupported(node, "string and sparse constants are not supported");
    }
  }
  void compute(KernelContext& ctx) const override { ctx.set_output(0, value_); }

 private:
  Tensor value_;
};

// ---------------------------------------------------------------- Identity

// Any value: a tensor of any element type, a sequence or an optional.
void identity(KernelContext& ctx) {
  const Tensor& x = ctx.value_input(0);
  if (x.is_tensor()) check_viewable(ctx.node(), x, "input");
  ctx.set_output(0, x);
}

// ---------------------------------------------------------------- Reshape

// Opsets 1..4: `shape` attribute; 5..13: `shape` input; 14..17: allowzero.
class ReshapeKernel final : public OpKernel {
 public:
  explicit ReshapeKernel(const NodeInfo& node) : opset_(node.opset) {
    if (opset_ < 5) {
      shape_attr_ = node.attrs.get_ints("shape", {});
    }
    if (opset_ >= 14) allowzero_ = node.attrs.get_int("allowzero", 0) != 0;
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    check_viewable(node, x, "data");
    const std::vector<int64_t> req = opset_ < 5 ? shape_attr_ : read_int_list(node, ctx.input(1), "shape");
    Shape out(req.size());
    int64_t infer = -1;
    int64_t known = 1;
    bool has_zero = false;
    for (size_t i = 0; i < req.size(); ++i) {
      int64_t d = req[i];
      if (d == -1) {
        if (infer >= 0) fail(node, fmt::format("shape {} has more than one -1", dims_string(req)));
        infer = static_cast<int64_t>(i);
        continue;
      }
      if (d < -1) fail(node, fmt::format("shape {} has the invalid dimension {}", dims_string(req), d));
      if (d == 0) {
        has_zero = true;
        if (!allowzero_) {
          if (static_cast<int64_t>(i) >= x.rank())
            fail(node, fmt::format("shape {} copies dimension {} (0) but the input {} has rank {}", dims_string(req),
                                   i, x.describe(), x.rank()));
          d = x.shape()[i];
        }
      }
      out[i] = d;
      known = size_mul(node, known, d, "the product of the given shape dimensions");
    }
    if (infer >= 0) {
      if (allowzero_ && has_zero)
        fail(node, fmt::format("shape {} has both -1 and 0 with allowzero=1", dims_string(req)));
      if (known == 0 || x.numel() % known != 0)
        fail(node, fmt::format("cannot reshape {} ({} elements) to {}: the -1 dimension cannot be inferred",
                               x.describe(), x.numel(), dims_string(req)));
      out[static_cast<size_t>(infer)] = x.numel() / known;
    }
    const int64_t out_numel = size_numel(node, out, "the reshaped output");
    if (out_numel != x.numel())
      fail(node, fmt::format("cannot reshape {} ({} elements) to shape {} ({} elements): element counts differ",
                             x.describe(), x.numel(), dims_string(req), out_numel));
    ctx.set_output(0, x.reshaped(out));
  }

 private:
  int opset_;
  std::vector<int64_t> shape_attr_;
  bool allowzero_ = false;
};

// ---------------------------------------------------------------- Squeeze / Unsqueeze

// Axes from the attribute (opsets < 13) or the optional input 1 (13+).
std::vector<int64_t> axes_of(const KernelContext& ctx, bool from_input, bool* given) {
  if (from_input) {
    *given = ctx.has_input(1);
    return *given ? read_int_list(ctx.node(), ctx.input(1), "axes") : std::vector<int64_t>{};
  }
  *given = ctx.node().attrs.has("axes");
  return ctx.node().attrs.get_ints("axes", {});
}

// Squeeze: opsets 1..10 (axes attr), 11..12 (negative axes), 13..17 (axes input).
void squeeze(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  check_viewable(node, x, "data");
  bool given = false;
  const std::vector<int64_t> axes = axes_of(ctx, node.opset >= 13, &given);
  std::vector<bool> drop(static_cast<size_t>(x.rank()), false);
  if (given && !axes.empty()) {
    for (int64_t a : axes) {
      const int64_t ax = normalize_axis(node, a, x.rank(), "axes value");
      if (x.shape()[static_cast<size_t>(ax)] != 1)
        fail(node, fmt::format("cannot squeeze axis {} of {}: its size is {}, expected 1", a, x.describe(),
                               x.shape()[static_cast<size_t>(ax)]));
      drop[static_cast<size_t>(ax)] = true;
    }
  } else {
    for (size_t i = 0; i < drop.size(); ++i) drop[i] = x.shape()[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < drop.size(); ++i)
    if (!drop[i]) out.push_back(x.shape()[i]);
  ctx.set_output(0, x.reshaped(out));
}

// Unsqueeze: opsets 1..10 (axes attr), 11..12 (negative axes), 13..17 (axes input).
void unsqueeze(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  check_viewable(node, x, "data");
  bool given = false;
  const std::vector<int64_t> axes = axes_of(ctx, node.opset >= 13, &given);
  if (!given) fail(node, "axes are required");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    const int64_t ax = normalize_axis(node, a, out_rank, "axes value");
    if (inserted[static_cast<size_t>(ax)]) fail(node, fmt::format("axes {} repeat axis {}", dims_string(axes), ax));
    inserted[static_cast<size_t>(ax)] = true;
  }
  Shape out(static_cast<size_t>(out_rank));
  size_t j = 0;
  for (size_t i = 0; i < out.size(); ++i) out[i] = inserted[i] ? 1 : x.shape()[j++];
  ctx.set_output(0, x.reshaped(out));
}

// ---------------------------------------------------------------- Flatten

// Opsets 1..8, 9..10 (all types), 11..17 (negative axis). axis in [-r, r].
void flatten(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  check_viewable(node, x, "input");
  const int64_t r = x.rank();
  int64_t axis = node.attrs.get_int("axis", 1);
  if (axis < -r || axis > r)
    fail(node, fmt::format("axis {} is out of range for a rank-{} tensor (expected [{}, {}])", axis, r, -r, r));
  if (axis < 0) axis += r;
  const Shape& s = x.shape();
  ctx.set_output(0, x.reshaped({prod(s, 0, static_cast<size_t>(axis)), prod(s, static_cast<size_t>(axis), s.size())}));
}

// ---------------------------------------------------------------- Shape / Size

// Shape: opsets 1..14; 15..17 add start / end (clamped to [0, rank]).
void shape(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t r = x.rank();
  int64_t start = 0, end = r;
  if (node.opset >= 15) {
    start = node.attrs.get_int("start", 0);
    end = node.attrs.get_int("end", r);
  }
  auto clampi = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  start = clampi(start);
  end = std::max(start, clampi(end));
  std::vector<int64_t> dims(x.shape().begin() + start, x.shape().begin() + end);
  Tensor& y = ctx.output(0, DataType::kInt64, {end - start});
  std::copy(dims.begin(), dims.end(), y.mutable_data<int64_t>());
}

// Size: opsets 1..17; an int64 scalar.
void size(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0, DataType::kInt64, {});
  *y.mutable_data<int64_t>() = x.numel();
}

}  // namespace

void register_basic(KernelRegistry& r) {
  r.add("", "Constant", 1, 17, factory_of<ConstantKernel>());
  r.add("", "Identity", 1, 17, simple_kernel(identity));
  r.add("", "Reshape", 1, 17, factory_of<ReshapeKernel>());
  r.add("", "Squeeze", 1, 17, simple_kernel(squeeze));
  r.add("", "Unsqueeze", 1, 17, simple_kernel(unsqueeze));
  r.add("", "Flatten", 1, 17, simple_kernel(flatten));
  r.add("", "Shape", 1, 17, simple_kernel(shape));
  r.add("", "Size", 1, 17, simple_kernel(size));
  for (const char* op : {"Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Shape", "Size"}) r.allow_strings("", op);
}

}  // namespace spindle::kernels::tensor
