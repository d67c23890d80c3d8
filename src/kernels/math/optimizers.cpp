// optimizers.cpp — the training optimizers of ai.onnx.preview.training
// (opset 1): Adagrad, Momentum (standard and Nesterov) and Adam. Each takes
// R (learning rate, scalar), T (update count, int64 scalar), then N tensors
// X, N gradients G and N (Adam: 2N) optimizer states, and returns the N new
// Xs followed by the new states. float and double; every element is updated
// independently, in parallel blocks.
#include <cmath>

#include "kernels/math/elementwise.h"
#include "kernels/math/math_ops.h"

namespace spindle::kernels::math {
namespace {

enum class Rule { kAdagrad, kMomentum, kNesterov, kAdam };

class OptimizerKernel final : public OpKernel {
 public:
  OptimizerKernel(const NodeInfo& node, Rule rule) : rule_(rule) {
    const auto& a = node.attrs;
    norm_ = a.get_float("norm_coefficient", 0.0f);
    switch (rule) {
      case Rule::kAdagrad:
        epsilon_ = a.get_float("epsilon", 1e-6f);
        decay_ = a.get_float("decay_factor", 0.0f);
        break;
      case Rule::kMomentum: case Rule::kNesterov: {
        alpha_ = a.get_float("alpha");
        beta_ = a.get_float("beta");
        norm_ = a.get_float("norm_coefficient");
        const std::string mode = a.get_string("mode");
        if (mode == "nesterov") rule_ = Rule::kNesterov;
        else if (mode == "standard") rule_ = Rule::kMomentum;
        else fail(node, fmt::format("mode '{}' is not one of standard, nesterov", mode));
        break;
      }
      case Rule::kAdam:
        alpha_ = a.get_float("alpha", 0.9f);
        beta_ = a.get_float("beta", 0.999f);
        epsilon_ = a.get_float("epsilon", 1e-6f);
        norm_post_ = a.get_float("norm_coefficient_post", 0.0f);
        break;
    }
    const int per = rule == Rule::kAdam ? 4 : 3;  // X, G and one or two states
    const int rest = node.num_inputs - 2;
    if (rest <= 0 || rest % per != 0)
      fail(node, fmt::format("has {} inputs, expected R, T and {} groups of N tensors", node.num_inputs, per));
    n_ = rest / per;
    if (node.num_outputs != n_ * (per - 1))
      fail(node, fmt::format("has {} outputs, expected {} (the new X and states of {} tensor(s))", node.num_outputs,
                             n_ * (per - 1), n_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& r_t = ctx.input(0);
    const Tensor& t_t = ctx.input(1);
    if (r_t.numel() != 1) fail(node, fmt::format("R is {}, expected a scalar", r_t.describe()));
    if (t_t.numel() != 1 || t_t.dtype() != DataType::kInt64) fail(node, fmt::format("T is {}, expected an int64 scalar", t_t.describe()));
    const double t = static_cast<double>(t_t.data<int64_t>()[0]);
    dispatch<SPINDLE_FLOAT_TYPES>(r_t.dtype(), node, "R", [&](auto tag) {
      using F = decltype(tag);
      const double r = static_cast<double>(r_t.data<F>()[0]);
      for (int i = 0; i < n_; ++i) update<F>(ctx, i, r, t);
    });
  }

 private:
  template <class F>
  void update(KernelContext& ctx, int i, double r, double t) const {
    const NodeInfo& node = ctx.node();
    const bool adam = rule_ == Rule::kAdam;
    const Tensor& x = ctx.input(2 + i);
    std::vector<const Tensor*> others = {&ctx.input(2 + n_ + i), &ctx.input(2 + 2 * n_ + i)};
    if (adam) others.push_back(&ctx.input(2 + 3 * n_ + i));
    for (const Tensor* o : others)
      if (o->dtype() != x.dtype() || o->shape() != x.shape())
        fail(node, fmt::format("tensor {} has X {} but a gradient or state {}, expected the same type and shape", i,
                               x.describe(), o->describe()));
    if (x.dtype() != dtype_of<F>()) fail(node, fmt::format("X {} is {}, expected {} like R", i, x.describe(), dtype_name(dtype_of<F>())));
    const F* xp = x.data<F>();
    const F* g = others[0]->data<F>();
    const F* s1 = others[1]->data<F>();
    const F* s2 = adam ? others[2]->data<F>() : nullptr;
    F* x_new = ctx.output(i, x.dtype(), x.shape()).template mutable_data<F>();
    F* s1_new = ctx.output(n_ + i, x.dtype(), x.shape()).template mutable_data<F>();
    F* s2_new = adam ? ctx.output(2 * n_ + i, x.dtype(), x.shape()).template mutable_data<F>() : nullptr;
    // Per-run scalars.
    const double r_adagrad = r / (1 + t * decay_);
    const double beta_momentum = t > 0 ? beta_ : 1.0;
    const double r_adam = t > 0 ? r * std::sqrt(1 - std::pow(beta_, t)) / (1 - std::pow(alpha_, t)) : r;
    parallel_for(ctx.pool(), x.numel(), Cost{4.0 * sizeof(F), 3.0 * sizeof(F), 20}, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const double gr = norm_ * static_cast<double>(xp[k]) + static_cast<double>(g[k]);
        switch (rule_) {
          case Rule::kAdagrad: {
            const double h = static_cast<double>(s1[k]) + gr * gr;
            s1_new[k] = static_cast<F>(h);
            x_new[k] = static_cast<F>(static_cast<double>(xp[k]) - r_adagrad * gr / (std::sqrt(h) + epsilon_));
            break;
          }
          case Rule::kMomentum: case Rule::kNesterov: {
            const double v = alpha_ * static_cast<double>(s1[k]) + beta_momentum * gr;
            s1_new[k] = static_cast<F>(v);
            const double step = rule_ == Rule::kMomentum ? v : gr + alpha_ * v;
            x_new[k] = static_cast<F>(static_cast<double>(xp[k]) - r * step);
            break;
          }
          case Rule::kAdam: {
            const double v = alpha_ * static_cast<double>(s1[k]) + (1 - alpha_) * gr;
            const double h = beta_ * static_cast<double>(s2[k]) + (1 - beta_) * gr * gr;
            s1_new[k] = static_cast<F>(v);
            s2_new[k] = static_cast<F>(h);
            const double xn = static_cast<double>(xp[k]) - r_adam * v / (std::sqrt(h) + epsilon_);
            x_new[k] = static_cast<F>((1 - norm_post_) * xn);
            break;
          }
        }
      }
    });
  }

  Rule rule_;
  int n_ = 0;
  double norm_ = 0, epsilon_ = 0, decay_ = 0, alpha_ = 0, beta_ = 0, norm_post_ = 0;
};

}  // namespace

void register_optimizers(KernelRegistry& r) {
  const std::string domain = "ai.onnx.preview.training";
  r.add(domain, "Adagrad", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<OptimizerKernel>(n, Rule::kAdagrad);
  });
  r.add(domain, "Momentum", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<OptimizerKernel>(n, Rule::kMomentum);
  });
  r.add(domain, "Adam", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<OptimizerKernel>(n, Rule::kAdam);
  });
}

}  // namespace spindle::kernels::math
