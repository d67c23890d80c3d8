// rotary_half.cpp — spindle.RotaryHalf: the rotary position embedding that
// LLaMA-style exporters write with rotate_half, made one node by the
// optimizer (graph/passes/rotary_fusion.cpp):
//
//   y = x * cos + Concat(Neg(Slice(x, half, end, axis)), Slice(x, 0, half, axis), concat_axis) * sin
//
// Fast path: float32, axis and concat_axis the last axis, whose size is
// 2 * half, end reaching past it, cos and sin of the last axis' size
// broadcast along the others without widening x. Each row of x (its last
// axis) is one item: y[i] = x[i] * c[i] + r[i] * s[i], r[i] = -x[i + half]
// below half and x[i - half] above, the products rounded and then added as
// the separate Mul, Mul and Add do (Neg is exact), so the bits are the
// unfused graph's at any thread count. Any other case runs the replaced
// nodes one after another, with their checks and messages.
#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/transformer.h"

namespace spindle::kernels::nn {

namespace {

class RotaryHalfKernel final : public OpKernel {
 public:
  explicit RotaryHalfKernel(const NodeInfo& node)
      : half_(node.attrs.get_int("half", 0)), axis_(node.attrs.get_int("axis", -1)),
        end_(node.attrs.get_int("end", 0)), concat_axis_(node.attrs.get_int("concat_axis", -1)) {
    if (half_ <= 0) fail(node, fmt::format("attribute half is {}, expected 1 or more", half_));
  }

  void compute(KernelContext& ctx) const override {
    if (!fast(ctx)) fallback(ctx);
  }

 private:
  // Strides of t (cos or sin) over x's leading axes, when t broadcasts to x
  // without widening it and its last axis is x's.
  static bool lead_strides(const Tensor& t, const Shape& xs, Shape& st) {
    if (t.dtype() != DataType::kFloat32 || t.rank() < 1 || t.rank() > static_cast<int64_t>(xs.size()) ||
        t.shape().back() != xs.back())
      return false;
    const size_t off = xs.size() - t.shape().size();
    for (size_t i = 0; i < t.shape().size(); ++i)
      if (t.shape()[i] != 1 && t.shape()[i] != xs[off + i]) return false;
    st = broadcast_strides(t.shape(), xs);
    return true;
  }

  bool fast(KernelContext& ctx) const {
    const Tensor& X = ctx.input(0);
    const Tensor& C = ctx.input(1);
    const Tensor& S = ctx.input(2);
    if (X.dtype() != DataType::kFloat32 || X.rank() < 1) return false;
    const int64_t rank = X.rank(), D = X.shape().back();
    auto last = [&](int64_t a) { return a == rank - 1 || a == -1; };
    const int64_t end = end_ < 0 ? end_ + D : end_;
    if (!last(axis_) || !last(concat_axis_) || D != 2 * half_ || end < D) return false;
    const Shape& xs = X.shape();
    Shape cs, ss;
    if (!lead_strides(C, xs, cs) || !lead_strides(S, xs, ss)) return false;
    Tensor& Y = ctx.output(0, DataType::kFloat32, xs);
    const int64_t rows = X.numel() / std::max<int64_t>(D, 1);
    if (rows == 0 || D == 0) return true;
    const float* x = X.data<float>();
    const float* c = C.data<float>();
    const float* s = S.data<float>();
    float* y = Y.mutable_data<float>();
    const size_t L = xs.size() - 1;
    const int64_t h = half_;
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(4.0 * static_cast<double>(D))), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t co = 0, so = 0, rem = r;
        for (size_t a = L; a-- > 0;) {
          const int64_t idx = rem % xs[a];
          rem /= xs[a];
          co += idx * cs[a], so += idx * ss[a];
        }
        const float* xr = x + r * D;
        const float* cr = c + co;
        const float* sr = s + so;
        float* yr = y + r * D;
        for (int64_t i = 0; i < h; ++i) {
          const float a = xr[i] * cr[i];
          const float b = -xr[i + h] * sr[i];
          yr[i] = a + b;
        }
        for (int64_t i = h; i < D; ++i) {
          const float a = xr[i] * cr[i];
          const float b = xr[i - h] * sr[i];
          yr[i] = a + b;
        }
      }
    });
    return true;
  }

  // The replaced nodes, one after another.
  void fallback(KernelContext& ctx) const {
    auto one = [&](const char* op, int opset, Attributes attrs, std::vector<Tensor> in) {
      return run_replaced(ctx.node(), ctx.pool(), op, opset, std::move(attrs), std::move(in));
    };
    auto i64 = [](int64_t v) { return Tensor::from_vector<int64_t>({1}, {v}); };
    const Tensor& x = ctx.input(0);
    Tensor upper = one("Slice", 13, {}, {x, i64(half_), i64(end_), i64(axis_)});
    Tensor lower = one("Slice", 13, {}, {x, i64(0), i64(half_), i64(axis_)});
    Attributes ca;
    ca.set("axis", concat_axis_);
    Tensor r = one("Concat", 13, std::move(ca), {one("Neg", 13, {}, {std::move(upper)}), std::move(lower)});
    Tensor a = one("Mul", 14, {}, {x, ctx.input(1)});
    Tensor b = one("Mul", 14, {}, {std::move(r), ctx.input(2)});
    ctx.set_output(0, one("Add", 14, {}, {std::move(a), std::move(b)}));
  }

  int64_t half_, axis_, end_, concat_axis_;
};

}  // namespace

void register_rotary_half(KernelRegistry& r) { r.add("spindle", "RotaryHalf", 1, 1, factory_of<RotaryHalfKernel>()); }

}  // namespace spindle::kernels::nn
