// gradient_ops.cpp — the two helper ops of the Gradient expansion
// (src/graph/gradient.cpp), in spindle's own domain "spindle":
//   ConstantLike(x; value)  a tensor shaped and typed like x, every element
//                           `value` (float and double)
//   SumToShape(g, like)     g summed over the axes along which like's shape
//                           was broadcast to g's, giving like's shape; the
//                           sums run serially in index order, so results do
//                           not depend on the thread count.
#include "kernels/broadcast.h"
#include "kernels/math/elementwise.h"
#include "kernels/math/math_ops.h"

namespace spindle::kernels::math {
namespace {

class ConstantLikeKernel final : public OpKernel {
 public:
  explicit ConstantLikeKernel(const NodeInfo& node) : value_(node.attrs.get_float("value")) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    dispatch<SPINDLE_FLOAT_TYPES>(x.dtype(), ctx.node(), "input", [&](auto tag) {
      using T = decltype(tag);
      Tensor& y = ctx.output(0, x.dtype(), x.shape());
      std::fill_n(y.mutable_data<T>(), y.numel(), static_cast<T>(value_));
    });
  }

 private:
  float value_;
};

void sum_to_shape(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& g = ctx.input(0);
  const Shape& target = ctx.input(1).shape();
  const Shape both[2] = {g.shape(), target};
  if (broadcast_shapes(node, both) != g.shape())
    fail(node, fmt::format("{} does not broadcast to the gradient's shape {}", shape_to_string(target),
                           shape_to_string(g.shape())));
  dispatch<SPINDLE_FLOAT_TYPES>(g.dtype(), node, "input", [&](auto tag) {
    using T = decltype(tag);
    Tensor& y = ctx.output(0, g.dtype(), target);
    T* out = y.mutable_data<T>();
    std::fill_n(out, y.numel(), T(0));
    const T* in = g.data<T>();
    // Output strides aligned to g's dims, 0 on broadcast axes.
    const Shape strides = broadcast_strides(target, g.shape());
    const Shape& dims = g.shape();
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t o = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      out[o] += in[i];
      for (size_t d = dims.size(); d-- > 0;) {
        o += strides[d];
        if (++idx[d] < dims[d]) break;
        o -= strides[d] * dims[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace

void register_gradient_ops(KernelRegistry& r) {
  r.add("spindle", "ConstantLike", 1, 1, factory_of<ConstantLikeKernel>());
  r.add("spindle", "SumToShape", 1, 1, simple_kernel(sum_to_shape));
}

}  // namespace spindle::kernels::math
