// slice.cpp — Slice. The selected region is a strided view of the input
// (negative steps give negative strides); it is returned zero-copy when it is
// contiguous, else copied by strided_copy.
#include <limits>
#include <memory>

#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// Opsets 1..9: starts / ends / axes attributes (step 1). 10: starts, ends,
// axes, steps inputs. 11..12 and 13..17: negative axes. Starts and ends are
// clamped as in the ONNX reference (huge ends like INT64_MAX mean "to the end").
class SliceKernel final : public OpKernel {
 public:
  explicit SliceKernel(const NodeInfo& node) : opset_(node.opset) {
    if (opset_ < 10) {
      starts_ = node.attrs.get_ints("starts");
      ends_ = node.attrs.get_ints("ends");
      if (node.attrs.has("axes")) axes_ = node.attrs.get_ints("axes");
      has_axes_ = node.attrs.has("axes");
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "data");
    const int64_t r = x.rank();
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    bool has_axes = has_axes_;
    if (opset_ >= 10) {
      starts = read_int_list(node, ctx.input(1), "starts");
      ends = read_int_list(node, ctx.input(2), "ends");
      has_axes = ctx.has_input(3);
      if (has_axes) axes = read_int_list(node, ctx.input(3), "axes");
      if (ctx.has_input(4)) steps = read_int_list(node, ctx.input(4), "steps");
    }
    if (starts.size() != ends.size())
      fail(node, fmt::format("starts {} and ends {} have different lengths", dims_string(starts), dims_string(ends)));
    if (!has_axes) {
      axes.resize(starts.size());
      for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
    }
    if (axes.size() != starts.size())
      fail(node, fmt::format("axes {} has {} entries, expected {} like starts", dims_string(axes), axes.size(),
                             starts.size()));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (steps.size() != starts.size())
      fail(node, fmt::format("steps {} has {} entries, expected {} like starts", dims_string(steps), steps.size(),
                             starts.size()));

    // Per-dim start and step of the view (full range, step 1 elsewhere).
    Shape out_shape = x.shape();
    std::vector<int64_t> start(static_cast<size_t>(r), 0), step(static_cast<size_t>(r), 1);
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(normalize_axis(node, axes[i], r, "axes value"));
      if (seen[a]) fail(node, fmt::format("axes {} repeat axis {}", dims_string(axes), a));
      seen[a] = true;
      const int64_t d = x.shape()[a];
      if (steps[i] == 0) fail(node, fmt::format("steps {} has a zero step", dims_string(steps)));
      // A step longer than the dim selects at most one element, as a step of
      // the dim's size does: clamping keeps the arithmetic below in range.
      const int64_t max_step = std::max<int64_t>(d, 1);
      const int64_t st = std::clamp<int64_t>(steps[i], -max_step, max_step);
      int64_t b = starts[i], e = ends[i];
      if (b < 0) b += d;
      if (e < 0) e += d;
      int64_t n;
      if (st > 0) {
        b = std::clamp<int64_t>(b, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        n = e > b ? (e - b + st - 1) / st : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        n = b > e ? (b - e + (-st) - 1) / (-st) : 0;
      }
      out_shape[a] = n;
      start[a] = n > 0 ? b : 0;
      step[a] = st;
    }

    const Shape in_strides = contiguous_strides(x.shape());
    int64_t offset = 0;
    std::vector<int64_t> view_strides(static_cast<size_t>(r));
    for (size_t a = 0; a < static_cast<size_t>(r); ++a) {
      offset += start[a] * in_strides[a];
      view_strides[a] = in_strides[a] * step[a];
    }
    const int64_t numel = shape_numel(out_shape);
    // Contiguous selection: a view into the input's buffer.
    if (numel > 0 && x.buffer()) {
      const Shape out_strides = contiguous_strides(out_shape);
      bool contiguous = true;
      for (size_t a = 0; a < out_shape.size(); ++a)
        if (out_shape[a] > 1 && view_strides[a] != out_strides[a]) contiguous = false;
      if (contiguous) {
        const size_t base = static_cast<size_t>(static_cast<const char*>(x.raw_data()) -
                                                static_cast<const char*>(x.buffer()->data()));
        ctx.set_output(0, Tensor(x.dtype(), out_shape, x.buffer(), base + static_cast<size_t>(offset) * es));
        return;
      }
    }
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    if (numel == 0) return;
    strided_copy(ctx.pool(), static_cast<const char*>(x.raw_data()) + offset * static_cast<int64_t>(es), out_shape,
                 view_strides, es, y.raw_mutable_data());
  }

 private:
  int opset_;
  std::vector<int64_t> starts_, ends_, axes_;
  bool has_axes_ = false;
};

}  // namespace

void register_slice(KernelRegistry& r) { r.add("", "Slice", 1, 17, factory_of<SliceKernel>()); }

}  // namespace spindle::kernels::tensor
