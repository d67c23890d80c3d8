// loss.cpp — NegativeLogLikelihoodLoss (opsets 12, 13) and
// SoftmaxCrossEntropyLoss (12, 13), float32 and float64, int32 or int64
// targets.
//
// Both see the input as (N, C, D) with D = d1 * ... * dk (1 for a 2-D input)
// and the target as (N, D):
//   loss[n][d] = -input[n][t][d] * w[t],  t = target[n][d], w = weight or 1;
//   a target equal to ignore_index gives loss 0 and weight 0.
// reduction "none" returns loss shaped like the target; "sum" its sum;
// "mean" sum(loss) / sum(w of the elements not ignored). SCE applies
// log-softmax over C first (and returns it as the optional second output).
// Sums run in a fixed order (n, then d), so results do not depend on the
// thread count; these ops are small and run on the calling thread.
#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels {
namespace {

enum class Reduction { kNone, kSum, kMean };

Reduction parse_reduction(const NodeInfo& node) {
  const std::string r = node.attrs.get_string("reduction", "mean");
  if (r == "none") return Reduction::kNone;
  if (r == "sum") return Reduction::kSum;
  if (r == "mean") return Reduction::kMean;
  fail(node, fmt::format("attribute reduction is '{}', expected 'none', 'sum' or 'mean'", r));
}

struct Geometry {
  int64_t N = 0, C = 0, D = 1;
  Shape target_shape;
};

Geometry check_shapes(const NodeInfo& node, const Tensor& input, const Tensor& target, const Tensor* weight,
                      const char* input_name) {
  require_float(node, input, input_name, /*allow_float64=*/true);
  if (target.dtype() != DataType::kInt32 && target.dtype() != DataType::kInt64)
    fail(node, fmt::format("target is {}, expected int32 or int64", target.describe()));
  if (input.rank() < 2)
    fail(node, fmt::format("input {} has shape {}, expected (N, C, d1, ..., dk)", input_name,
                           shape_to_string(input.shape())));
  Geometry g;
  g.N = input.dim(0);
  g.C = input.dim(1);
  for (int i = 2; i < input.rank(); ++i) g.D *= input.dim(i);
  Shape expected{g.N};
  for (int i = 2; i < input.rank(); ++i) expected.push_back(input.dim(i));
  if (target.shape() != expected)
    fail(node, fmt::format("target has shape {}, expected {} for {} of shape {}", shape_to_string(target.shape()),
                           shape_to_string(expected), input_name, shape_to_string(input.shape())));
  if (weight) {
    if (weight->dtype() != input.dtype())
      fail(node, fmt::format("weight is {}, expected the dtype of input {} ({})", weight->describe(), input_name,
                             dtype_name(input.dtype())));
    if (weight->shape() != Shape{g.C})
      fail(node, fmt::format("weight has shape {}, expected [{}] (one weight per class)",
                             shape_to_string(weight->shape()), g.C));
  }
  g.target_shape = expected;
  return g;
}

// The NLL of `logp` (N x C x D) into `out` (per element for kNone, else one
// value).
template <class T, class I>
void nll(const NodeInfo& node, const Geometry& g, const T* logp, const I* target, const T* weight,
         std::optional<int64_t> ignore, Reduction red, T* out) {
  double sum = 0.0, wsum = 0.0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t d = 0; d < g.D; ++d) {
      const int64_t t = static_cast<int64_t>(target[n * g.D + d]);
      T loss = 0;
      T w = 0;
      if (!(ignore && t == *ignore)) {
        if (t < 0 || t >= g.C)
          fail(node, fmt::format("target[{}] is {}, expected a class index in [0, {}) or ignore_index", n * g.D + d, t,
                                 g.C));
        w = weight ? weight[t] : T(1);
        loss = -logp[(n * g.C + t) * g.D + d] * w;
      }
      if (red == Reduction::kNone) out[n * g.D + d] = loss;
      sum += static_cast<double>(loss);
      wsum += static_cast<double>(w);
    }
  if (red == Reduction::kSum) *out = static_cast<T>(sum);
  if (red == Reduction::kMean) *out = static_cast<T>(sum / wsum);
}

template <class F>
void dispatch_types(const Tensor& input, const Tensor& target, F&& f) {
  auto with_index = [&](auto t_tag) {
    if (target.dtype() == DataType::kInt32) f(t_tag, int32_t{});
    else f(t_tag, int64_t{});
  };
  if (input.dtype() == DataType::kFloat32) with_index(float{});
  else with_index(double{});
}

class LossKernel final : public OpKernel {
 public:
  LossKernel(const NodeInfo& node, bool softmax) : softmax_(softmax), reduction_(parse_reduction(node)) {
    if (node.attrs.has("ignore_index")) ignore_ = node.attrs.get_int("ignore_index");
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const char* input_name = softmax_ ? "scores" : "input";
    const Tensor& input = ctx.input(0);
    const Tensor& target = ctx.input(1);
    const Tensor* weight = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const Geometry g = check_shapes(node, input, target, weight, input_name);
    const Shape out_shape = reduction_ == Reduction::kNone ? g.target_shape : Shape{};
    Tensor& out = ctx.output(0, input.dtype(), out_shape);
    dispatch_types(input, target, [&](auto t_tag, auto i_tag) {
      using T = decltype(t_tag);
      using I = decltype(i_tag);
      const T* logp = input.data<T>();
      Tensor scratch;  // log-probabilities when output 1 is not wanted
      if (softmax_) {
        Tensor* lp = nullptr;
        if (ctx.wants_output(1)) {
          lp = &ctx.output(1, input.dtype(), input.shape());
        } else {
          scratch = Tensor(input.dtype(), input.shape());
          lp = &scratch;
        }
        log_softmax(input.data<T>(), g, lp->mutable_data<T>());
        logp = lp->data<T>();
      }
      nll<T, I>(node, g, logp, target.data<I>(), weight ? weight->data<T>() : nullptr, ignore_, reduction_,
                out.mutable_data<T>());
    });
  }

 private:
  // log-softmax over C of x (N x C x D).
  template <class T>
  static void log_softmax(const T* x, const Geometry& g, T* y) {
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t d = 0; d < g.D; ++d) {
        const T* xs = x + n * g.C * g.D + d;
        T* ys = y + n * g.C * g.D + d;
        T mx = xs[0];
        for (int64_t c = 1; c < g.C; ++c) mx = std::max(mx, xs[c * g.D]);
        T s = 0;
        for (int64_t c = 0; c < g.C; ++c) s += std::exp(xs[c * g.D] - mx);
        const T lse = mx + std::log(s);
        for (int64_t c = 0; c < g.C; ++c) ys[c * g.D] = xs[c * g.D] - lse;
      }
  }

  bool softmax_;
  Reduction reduction_;
  std::optional<int64_t> ignore_;
};

}  // namespace

void register_loss_kernels(KernelRegistry& r) {
  // Opset 13 only widened the types (bfloat16); same semantics as 12.
  r.add("", "NegativeLogLikelihoodLoss", 12, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<LossKernel>(node, false);
  });
  r.add("", "SoftmaxCrossEntropyLoss", 12, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<LossKernel>(node, true);
  });
}

}  // namespace spindle::kernels
