// unary.cpp — unary elementwise ops and activations, IsNaN / IsInf, Clip.
//
// dtypes: Abs and Sign take every numeric type, Neg and Relu the signed ones,
// Clip every numeric type; everything else float32 / float64.
//
// Speed: the float32 / float64 ops other than Abs, Neg, Sign and Relu run
// in unary.isa.cpp, compiled per ISA level (AVX-512, AVX2+FMA, SSE2) and
// chosen at start-up; see there for the polynomials used. The rest are plain
// loops over contiguous pointers.
#include <cmath>
#include <limits>

#include "kernels/math/elementwise.h"
#include "kernels/math/math_ops.h"
#include "kernels/math/unary_isa.h"

namespace spindle::kernels::math {
namespace {

using Params = UnaryParams;

template <class T>
void unary_generic(ThreadPool* pool, UOp op, T* o, const T* x, int64_t n) {
  switch (op) {
    case UOp::kAbs:
      if constexpr (std::is_unsigned_v<T>) return run_unary(pool, o, x, n, [](T v) { return v; }, 0.0);
      else if constexpr (is_float_v<T>) return run_unary(pool, o, x, n, [](T v) { return std::fabs(v); }, 0.5);
      else return run_unary(pool, o, x, n, [](T v) { return v < 0 ? wrap_sub(T(0), v) : v; }, 0.5);
    case UOp::kNeg:
      if constexpr (is_float_v<T>) return run_unary(pool, o, x, n, [](T v) { return -v; }, 0.5);
      else return run_unary(pool, o, x, n, [](T v) { return wrap_sub(T(0), v); }, 0.5);
    case UOp::kSign:
      if constexpr (is_float_v<T>)
        return run_unary(pool, o, x, n, [](T v) { return v > 0 ? T(1) : v < 0 ? T(-1) : v; }, 0.5);
      else return run_unary(pool, o, x, n, [](T v) { return static_cast<T>((v > T(0)) - (v < T(0))); }, 0.5);
    case UOp::kRelu: return run_unary(pool, o, x, n, [](T v) { return v < T(0) ? T(0) : v; }, 0.5);  // NaN stays NaN
    default: break;
  }
}

// Cycles per element, for the pool's grain heuristics.
double unary_cycles(UOp op) {
  switch (op) {
    case UOp::kSqrt: return 4.0;
    case UOp::kExp: return 4.0;
    case UOp::kReciprocal: return 2.0;
    case UOp::kFloor:
    case UOp::kCeil:
    case UOp::kRound:
    case UOp::kLeakyRelu:
    case UOp::kHardSigmoid:
    case UOp::kHardSwish:
    case UOp::kShrink: return 1.0;
    case UOp::kThresholdedRelu: return 0.5;
    case UOp::kSoftsign: return 2.0;
    case UOp::kErf:
    case UOp::kTanh:
    case UOp::kSigmoid: return 6.0;
    case UOp::kElu:
    case UOp::kSelu:
    case UOp::kCelu: return 5.0;
    case UOp::kGelu:
    case UOp::kGeluTanh: return 8.0;
    case UOp::kSoftplus: return 40.0;
    case UOp::kMish: return 60.0;
    default: return 20.0;  // a libm call
  }
}

template <class T>
void unary_float(ThreadPool* pool, UOp op, const Params& p, T* o, const T* x, int64_t n) {
  static const auto float_fn = SPINDLE_ISA_SELECT(unary_float_chunk);
  static const auto double_fn = SPINDLE_ISA_SELECT(unary_double_chunk);
  Cost cost{static_cast<double>(sizeof(T)), static_cast<double>(sizeof(T)), unary_cycles(op)};
  parallel_for(pool, n, cost, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) float_fn(op, p, o + b, x + b, e - b);
    else double_fn(op, p, o + b, x + b, e - b);
  });
}

class UnaryKernel final : public OpKernel {
 public:
  UnaryKernel(UOp op, Params p) : op_(op), p_(p) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const NodeInfo& node = ctx.node();
    const int64_t n = x.numel();
    auto generic = [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, x.dtype(), x.shape());
      unary_generic<T>(ctx.pool(), op_, out.mutable_data<T>(), x.data<T>(), n);
    };
    switch (op_) {
      case UOp::kAbs:
      case UOp::kSign: dispatch<SPINDLE_NUMERIC_TYPES>(x.dtype(), node, "input X", generic); return;
      case UOp::kNeg:
      case UOp::kRelu: dispatch<SPINDLE_SIGNED_TYPES>(x.dtype(), node, "input X", generic); return;
      default: break;
    }
    dispatch<SPINDLE_FLOAT_TYPES>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, x.dtype(), x.shape());
      unary_float<T>(ctx.pool(), op_, p_, out.mutable_data<T>(), x.data<T>(), n);
    });
  }

 private:
  UOp op_;
  Params p_;
};

// IsNaN; IsInf with detect_negative / detect_positive.
class ClassifyKernel final : public OpKernel {
 public:
  ClassifyKernel(bool nan, bool neg, bool pos) : nan_(nan), neg_(neg), pos_(pos) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    dispatch<SPINDLE_FLOAT_TYPES>(x.dtype(), ctx.node(), "input X", [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, DataType::kBool, x.shape());
      bool* o = out.mutable_data<bool>();
      const T inf = std::numeric_limits<T>::infinity();
      if (nan_) return run_unary(ctx.pool(), o, x.data<T>(), x.numel(), [](T v) -> bool { return v != v; }, 0.5);
      const bool neg = neg_, pos = pos_;
      run_unary(ctx.pool(), o, x.data<T>(), x.numel(),
                [=](T v) -> bool { return (pos && v == inf) || (neg && v == -inf); }, 0.5);
    });
  }

 private:
  bool nan_, neg_, pos_;
};

// Clip: opset < 11 bounds are the min / max attributes (float); 11+ the
// optional inputs 1 and 2 (absent or empty-named = unbounded).
class ClipKernel final : public OpKernel {
 public:
  explicit ClipKernel(const NodeInfo& node) : attr_form_(node.opset < 11) {
    if (attr_form_) {
      min_ = node.attrs.get_float("min", -std::numeric_limits<float>::infinity());
      max_ = node.attrs.get_float("max", std::numeric_limits<float>::infinity());
    }
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    dispatch<SPINDLE_NUMERIC_TYPES>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      if constexpr (is_float_v<T>) {
        lo = -std::numeric_limits<T>::infinity();
        hi = std::numeric_limits<T>::infinity();
      }
      if (attr_form_) {
        if constexpr (is_float_v<T>) {
          lo = static_cast<T>(min_);
          hi = static_cast<T>(max_);
        } else {
          fail_unsupported(node, fmt::format("input X of dtype {} needs opset 12 or later", dtype_name(x.dtype())));
        }
      } else {
        auto bound = [&](int i, T& v, const char* name) {
          if (!ctx.has_input(i)) return;
          const Tensor& t = ctx.input(i);
          if (t.dtype() != x.dtype())
            fail(node, fmt::format("{} ({}) must have the dtype of input ({})", name, t.describe(), x.describe()));
          if (t.numel() != 1) fail(node, fmt::format("{} must be a scalar, got {}", name, t.describe()));
          v = t.data<T>()[0];
        };
        bound(1, lo, "min");
        bound(2, hi, "max");
      }
      Tensor& out = ctx.output(0, x.dtype(), x.shape());
      run_unary(ctx.pool(), out.mutable_data<T>(), x.data<T>(), x.numel(),
                [lo, hi](T v) {
                  v = v < lo ? lo : v;
                  return v > hi ? hi : v;
                },
                0.5);
    });
  }

 private:
  bool attr_form_;
  float min_ = 0, max_ = 0;
};

void add_unary(KernelRegistry& r, const char* name, UOp op, float alpha = 0, float beta = 0, float gamma = 0,
               const char* domain = "", int since_min = 1, int since_max = 17) {
  r.add(domain, name, since_min, since_max, [op, alpha, beta, gamma](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    Params p;
    p.alpha = node.attrs.get_float("alpha", alpha);
    p.beta = node.attrs.get_float("beta", beta);
    p.gamma = node.attrs.get_float("gamma", gamma);
    if (op == UOp::kShrink) {
      p.alpha = node.attrs.get_float("lambd", 0.5f);
      p.beta = node.attrs.get_float("bias", 0.0f);
    }
    UOp k = op;
    if (op == UOp::kGelu) {
      const std::string approx = node.attrs.get_string("approximate", "none");
      if (approx == "tanh") k = UOp::kGeluTanh;
      else if (approx != "none") fail_unsupported(node, fmt::format("approximate='{}' is not supported", approx));
    }
    return std::make_unique<UnaryKernel>(k, p);
  });
}

}  // namespace

void register_unary(KernelRegistry& r) {
  // All of these keep their semantics across opsets 1-17 (opset 1-5
  // versions only add the ignored `consumed_inputs` attribute; later ones
  // widen the dtypes).
  add_unary(r, "Abs", UOp::kAbs);
  add_unary(r, "Neg", UOp::kNeg);
  add_unary(r, "Sign", UOp::kSign);
  add_unary(r, "Relu", UOp::kRelu);
  add_unary(r, "Sqrt", UOp::kSqrt);
  add_unary(r, "Exp", UOp::kExp);
  add_unary(r, "Log", UOp::kLog);
  add_unary(r, "Reciprocal", UOp::kReciprocal);
  add_unary(r, "Floor", UOp::kFloor);
  add_unary(r, "Ceil", UOp::kCeil);
  add_unary(r, "Round", UOp::kRound);
  add_unary(r, "Sin", UOp::kSin);
  add_unary(r, "Cos", UOp::kCos);
  add_unary(r, "Tan", UOp::kTan);
  add_unary(r, "Asin", UOp::kAsin);
  add_unary(r, "Acos", UOp::kAcos);
  add_unary(r, "Atan", UOp::kAtan);
  add_unary(r, "Sinh", UOp::kSinh);
  add_unary(r, "Cosh", UOp::kCosh);
  add_unary(r, "Asinh", UOp::kAsinh);
  add_unary(r, "Acosh", UOp::kAcosh);
  add_unary(r, "Atanh", UOp::kAtanh);
  add_unary(r, "Erf", UOp::kErf);
  add_unary(r, "Tanh", UOp::kTanh);
  add_unary(r, "Sigmoid", UOp::kSigmoid);
  add_unary(r, "LeakyRelu", UOp::kLeakyRelu, 0.01f);
  add_unary(r, "Elu", UOp::kElu, 1.0f);
  add_unary(r, "Selu", UOp::kSelu, 1.67326319217681884765625f, 0.0f, 1.05070102214813232421875f);
  add_unary(r, "Celu", UOp::kCelu, 1.0f);
  add_unary(r, "HardSigmoid", UOp::kHardSigmoid, 0.2f, 0.5f);
  add_unary(r, "HardSwish", UOp::kHardSwish);
  add_unary(r, "Softplus", UOp::kSoftplus);
  add_unary(r, "Softsign", UOp::kSoftsign);
  add_unary(r, "ThresholdedRelu", UOp::kThresholdedRelu, 1.0f);
  add_unary(r, "Shrink", UOp::kShrink);
  add_unary(r, "Mish", UOp::kMish, 0, 0, 0, "", 18, 18);
  // Gelu: ai.onnx opset 20 (approximate = "none" | "tanh") and the
  // com.microsoft contrib op (erf form).
  add_unary(r, "Gelu", UOp::kGelu, 0, 0, 0, "", 20, 20);
  add_unary(r, "Gelu", UOp::kGelu, 0, 0, 0, "com.microsoft", 1, 1);

  r.add("", "IsNaN", 1, 17, [](const NodeInfo&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ClassifyKernel>(true, false, false);
  });
  r.add("", "IsInf", 1, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ClassifyKernel>(false, node.attrs.get_int("detect_negative", 1) != 0,
                                            node.attrs.get_int("detect_positive", 1) != 0);
  });
  auto clip = [](const NodeInfo& node) -> std::unique_ptr<OpKernel> { return std::make_unique<ClipKernel>(node); };
  r.add("", "Clip", 1, 10, clip);
  r.add("", "Clip", 11, 17, clip);
}

}  // namespace spindle::kernels::math
