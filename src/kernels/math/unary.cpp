// unary.cpp — unary elementwise ops and activations, IsNaN / IsInf, Clip.
//
// dtypes: Abs and Sign take every numeric type, Neg and Relu the signed ones,
// Clip every numeric type; everything else float32 / float64.
//
// Speed: the loops are plain loops over contiguous pointers. Exp, Sigmoid,
// Tanh, Erf (and Gelu, Elu, Selu, Celu, built on them) use the vectorizable
// polynomials of vec_math.h for float32 (within 1e-6 relative of std::, see
// there and the MathVecMath tests); float64 uses std::. Floor / Ceil / Round
// are built on nearbyint (which the compiler vectorizes without needing
// -fno-trapping-math), Sqrt uses the SSE/AVX square root directly (std::sqrt
// does not vectorize without -fno-math-errno). The other transcendental ops
// (Log, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
// Softplus, Mish) call std:: per element.
#include <cmath>
#include <limits>

#if defined(__AVX__) || defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/math/elementwise.h"
#include "kernels/math/math_ops.h"
#include "kernels/math/vec_math.h"

namespace spindle::kernels::math {
namespace {

enum class UOp {
  kAbs, kNeg, kSign, kRelu,  // generic
  kSqrt, kExp, kLog, kReciprocal, kFloor, kCeil, kRound, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh,
  kAsinh, kAcosh, kAtanh, kErf, kTanh, kSigmoid, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish,
  kSoftplus, kSoftsign, kThresholdedRelu, kShrink, kGelu, kGeluTanh, kMish
};

struct Params {
  float alpha = 0, beta = 0, gamma = 0;
};

template <class T>
inline T t_exp(T x) {
  if constexpr (std::is_same_v<T, float>) return vm::fast_exp(x);
  else return std::exp(x);
}
template <class T>
inline T t_tanh(T x) {
  if constexpr (std::is_same_v<T, float>) return vm::fast_tanh(x);
  else return std::tanh(x);
}
template <class T>
inline T t_erf(T x) {
  if constexpr (std::is_same_v<T, float>) return vm::fast_erf(x);
  else return std::erf(x);
}
template <class T>
inline T t_sigmoid(T x) {
  if constexpr (std::is_same_v<T, float>) return vm::fast_sigmoid(x);
  else return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}
// floor / ceil from round-to-nearest-even (exact for every float).
template <class T>
inline T t_floor(T x) {
  const T r = std::nearbyint(x);
  return r > x ? r - 1 : r;
}
template <class T>
inline T t_ceil(T x) {
  const T r = std::nearbyint(x);
  return r < x ? r + 1 : r;
}

template <class T>
void sqrt_loop(ThreadPool* pool, T* out, const T* in, int64_t n) {
  Cost cost{static_cast<double>(sizeof(T)), static_cast<double>(sizeof(T)), 4.0};
  parallel_for(pool, n, cost, [&](int64_t b, int64_t e) {
    int64_t i = b;
    if constexpr (std::is_same_v<T, float>) {
#if defined(__AVX__)
      for (; i + 8 <= e; i += 8) _mm256_storeu_ps(out + i, _mm256_sqrt_ps(_mm256_loadu_ps(in + i)));
#elif defined(__SSE2__)
      for (; i + 4 <= e; i += 4) _mm_storeu_ps(out + i, _mm_sqrt_ps(_mm_loadu_ps(in + i)));
#endif
    }
    for (; i < e; ++i) out[i] = std::sqrt(in[i]);
  });
}

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
    case UOp::kRelu: return run_unary(pool, o, x, n, [](T v) { return v > T(0) ? v : T(0); }, 0.5);
    default: break;
  }
}

template <class T>
void unary_float(ThreadPool* pool, UOp op, const Params& p, T* o, const T* x, int64_t n) {
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta), gamma = static_cast<T>(p.gamma);
  constexpr double kStd = 20.0;  // cost of a std:: transcendental call
  switch (op) {
    case UOp::kSqrt: return sqrt_loop(pool, o, x, n);
    case UOp::kExp: return run_unary(pool, o, x, n, [](T v) { return t_exp(v); }, 4.0);
    case UOp::kLog: return run_unary(pool, o, x, n, [](T v) { return std::log(v); }, kStd);
    case UOp::kReciprocal: return run_unary(pool, o, x, n, [](T v) { return T(1) / v; }, 2.0);
    case UOp::kFloor: return run_unary(pool, o, x, n, [](T v) { return t_floor(v); }, 1.0);
    case UOp::kCeil: return run_unary(pool, o, x, n, [](T v) { return t_ceil(v); }, 1.0);
    case UOp::kRound: return run_unary(pool, o, x, n, [](T v) { return std::nearbyint(v); }, 1.0);
    case UOp::kSin: return run_unary(pool, o, x, n, [](T v) { return std::sin(v); }, kStd);
    case UOp::kCos: return run_unary(pool, o, x, n, [](T v) { return std::cos(v); }, kStd);
    case UOp::kTan: return run_unary(pool, o, x, n, [](T v) { return std::tan(v); }, kStd);
    case UOp::kAsin: return run_unary(pool, o, x, n, [](T v) { return std::asin(v); }, kStd);
    case UOp::kAcos: return run_unary(pool, o, x, n, [](T v) { return std::acos(v); }, kStd);
    case UOp::kAtan: return run_unary(pool, o, x, n, [](T v) { return std::atan(v); }, kStd);
    case UOp::kSinh: return run_unary(pool, o, x, n, [](T v) { return std::sinh(v); }, kStd);
    case UOp::kCosh: return run_unary(pool, o, x, n, [](T v) { return std::cosh(v); }, kStd);
    case UOp::kAsinh: return run_unary(pool, o, x, n, [](T v) { return std::asinh(v); }, kStd);
    case UOp::kAcosh: return run_unary(pool, o, x, n, [](T v) { return std::acosh(v); }, kStd);
    case UOp::kAtanh: return run_unary(pool, o, x, n, [](T v) { return std::atanh(v); }, kStd);
    case UOp::kErf: return run_unary(pool, o, x, n, [](T v) { return t_erf(v); }, 6.0);
    case UOp::kTanh: return run_unary(pool, o, x, n, [](T v) { return t_tanh(v); }, 6.0);
    case UOp::kSigmoid: return run_unary(pool, o, x, n, [](T v) { return t_sigmoid(v); }, 6.0);
    case UOp::kLeakyRelu: return run_unary(pool, o, x, n, [alpha](T v) { return v < 0 ? alpha * v : v; }, 1.0);
    case UOp::kElu:
      return run_unary(pool, o, x, n, [alpha](T v) { return v < 0 ? alpha * (t_exp(v) - T(1)) : v; }, 5.0);
    case UOp::kSelu:
      return run_unary(
          pool, o, x, n, [alpha, gamma](T v) { return v > 0 ? gamma * v : gamma * (alpha * t_exp(v) - alpha); }, 5.0);
    case UOp::kCelu:
      return run_unary(
          pool, o, x, n,
          [alpha](T v) {
            const T neg = alpha * (t_exp(v / alpha) - T(1));
            return (v > 0 ? v : T(0)) + (neg < 0 ? neg : T(0));
          },
          5.0);
    case UOp::kHardSigmoid:
      return run_unary(
          pool, o, x, n,
          [alpha, beta](T v) {
            T r = alpha * v + beta;
            r = r < 0 ? T(0) : r;
            return r > 1 ? T(1) : r;
          },
          1.0);
    case UOp::kHardSwish:
      return run_unary(
          pool, o, x, n,
          [](T v) {
            T r = v * (T(1) / T(6)) + T(0.5);
            r = r < 0 ? T(0) : r;
            r = r > 1 ? T(1) : r;
            return v * r;
          },
          1.0);
    case UOp::kSoftplus:
      // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
      return run_unary(
          pool, o, x, n, [](T v) { return (v > 0 ? v : T(0)) + std::log1p(std::exp(-std::fabs(v))); }, 2 * kStd);
    case UOp::kMish:
      // x * tanh(softplus(x)), softplus as above.
      return run_unary(
          pool, o, x, n,
          [](T v) { return v * std::tanh((v > 0 ? v : T(0)) + std::log1p(std::exp(-std::fabs(v)))); }, 3 * kStd);
    case UOp::kSoftsign: return run_unary(pool, o, x, n, [](T v) { return v / (T(1) + std::fabs(v)); }, 2.0);
    case UOp::kThresholdedRelu: return run_unary(pool, o, x, n, [alpha](T v) { return v > alpha ? v : T(0); }, 0.5);
    case UOp::kShrink:
      // alpha = lambd, beta = bias.
      return run_unary(
          pool, o, x, n, [alpha, beta](T v) { return v < -alpha ? v + beta : v > alpha ? v - beta : T(0); }, 1.0);
    case UOp::kGelu:
      return run_unary(
          pool, o, x, n, [](T v) { return T(0.5) * v * (T(1) + t_erf(v * T(0.70710678118654752440))); }, 8.0);
    case UOp::kGeluTanh:
      return run_unary(
          pool, o, x, n,
          [](T v) {
            const T inner = T(0.79788456080286535588) * (v + T(0.044715) * v * v * v);
            return T(0.5) * v * (T(1) + t_tanh(inner));
          },
          8.0);
    default: break;
  }
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
