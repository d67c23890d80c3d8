// unary.isa.cpp — the float32 / float64 unary ops of unary.cpp over one
// contiguous chunk, compiled once per ISA level (src/primitives/isa/dispatch.h).
//
// Each op is a plain loop the compiler vectorizes at the level's width.
// Exp, Sigmoid, Tanh, Erf (and Elu, Selu, Celu, Gelu built on them) use the
// polynomials of vec_math.h for float32 (within 1e-6 relative of the libm
// functions); float64 and the other transcendental ops call libm per element.
// Floor / Ceil are built on nearbyint (exact for every value).
#include <type_traits>

#include "kernels/math/unary_isa.h"
#include "primitives/math/gelu.h"
#include "primitives/math/vec_exp.h"
#include "primitives/math/vec_math.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

using math::UOp;

using vm::t_erf;
using vm::t_exp;
using vm::t_sigmoid;
using vm::t_tanh;

// o[i] = f(x[i]); f is copied to a local so that the stores cannot alias it.
template <class T, class F>
inline void map(T* __restrict o, const T* __restrict x, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

// a * b + c, for float one fused multiply-add where the level has one (as
// the fused activations of Conv / Gemm compute HardSigmoid and HardSwish).
template <class T>
inline T mul_add(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return vm::fma_or_mul_add(a, b, c);
  else return a * b + c;
}

template <class T>
void unary_chunk(UOp op, const math::UnaryParams& p, T* o, const T* x, int64_t n) {
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta), gamma = static_cast<T>(p.gamma);
  switch (op) {
    case UOp::kSqrt: return map(o, x, n, [](T v) { return vm::f_sqrt(v); });
    case UOp::kExp: return map(o, x, n, [](T v) { return t_exp(v); });
    case UOp::kLog: return map(o, x, n, [](T v) { return vm::f_log(v); });
    case UOp::kReciprocal: return map(o, x, n, [](T v) { return T(1) / v; });
    case UOp::kFloor:
      return map(o, x, n, [](T v) {
        const T r = vm::f_nearbyint(v);
        return r > v ? r - 1 : r;
      });
    case UOp::kCeil:
      return map(o, x, n, [](T v) {
        const T r = vm::f_nearbyint(v);
        return r < v ? r + 1 : r;
      });
    case UOp::kRound: return map(o, x, n, [](T v) { return vm::f_nearbyint(v); });
    case UOp::kSin: return map(o, x, n, [](T v) { return vm::f_sin(v); });
    case UOp::kCos: return map(o, x, n, [](T v) { return vm::f_cos(v); });
    case UOp::kTan: return map(o, x, n, [](T v) { return vm::f_tan(v); });
    case UOp::kAsin: return map(o, x, n, [](T v) { return vm::f_asin(v); });
    case UOp::kAcos: return map(o, x, n, [](T v) { return vm::f_acos(v); });
    case UOp::kAtan: return map(o, x, n, [](T v) { return vm::f_atan(v); });
    case UOp::kSinh: return map(o, x, n, [](T v) { return vm::f_sinh(v); });
    case UOp::kCosh: return map(o, x, n, [](T v) { return vm::f_cosh(v); });
    case UOp::kAsinh: return map(o, x, n, [](T v) { return vm::f_asinh(v); });
    case UOp::kAcosh: return map(o, x, n, [](T v) { return vm::f_acosh(v); });
    case UOp::kAtanh: return map(o, x, n, [](T v) { return vm::f_atanh(v); });
    case UOp::kErf: return map(o, x, n, [](T v) { return t_erf(v); });
    case UOp::kTanh: return map(o, x, n, [](T v) { return t_tanh(v); });
    case UOp::kSigmoid: return map(o, x, n, [](T v) { return t_sigmoid(v); });
    case UOp::kLeakyRelu: return map(o, x, n, [alpha](T v) { return v < 0 ? alpha * v : v; });
    case UOp::kElu: return map(o, x, n, [alpha](T v) { return v < 0 ? alpha * (t_exp(v) - T(1)) : v; });
    case UOp::kSelu:
      return map(o, x, n, [alpha, gamma](T v) { return v > 0 ? gamma * v : gamma * (alpha * t_exp(v) - alpha); });
    case UOp::kCelu:
      return map(o, x, n, [alpha](T v) {
        const T neg = alpha * (t_exp(v / alpha) - T(1));
        return (v < 0 ? T(0) : v) + (neg < 0 ? neg : T(0));  // NaN stays NaN
      });
    case UOp::kHardSigmoid:
      return map(o, x, n, [alpha, beta](T v) {
        T r = mul_add(v, alpha, beta);
        r = r < 0 ? T(0) : r;
        return r > 1 ? T(1) : r;
      });
    case UOp::kHardSwish:
      return map(o, x, n, [](T v) {
        T r = mul_add(v, T(1) / T(6), T(0.5));
        r = r < 0 ? T(0) : r;
        r = r > 1 ? T(1) : r;
        return v * r;
      });
    case UOp::kSoftplus:
      // log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
      return map(o, x, n, [](T v) { return (v > 0 ? v : T(0)) + vm::f_log1p(vm::f_exp(-vm::f_abs(v))); });
    case UOp::kMish:
      // x * tanh(softplus(x)), softplus as above.
      return map(o, x, n, [](T v) {
        return v * t_tanh((v > 0 ? v : T(0)) + vm::f_log1p(vm::f_exp(-vm::f_abs(v))));
      });
    case UOp::kSoftsign: return map(o, x, n, [](T v) { return v / (T(1) + vm::f_abs(v)); });
    case UOp::kThresholdedRelu: return map(o, x, n, [alpha](T v) { return v > alpha ? v : T(0); });
    case UOp::kShrink:
      // alpha = lambd, beta = bias.
      return map(o, x, n, [alpha, beta](T v) { return v < -alpha ? v + beta : v > alpha ? v - beta : T(0); });
    case UOp::kGelu:
      return map(o, x, n, [](T v) { return T(0.5) * v * (T(1) + t_erf(v * T(0.70710678118654752440))); });
    case UOp::kGeluTanh:
      return map(o, x, n, [](T v) {
        const T inner = T(0.79788456080286535588) * (v + T(0.044715) * v * v * v);
        return T(0.5) * v * (T(1) + t_tanh(inner));
      });
    default: break;
  }
}

}  // namespace

void unary_float_chunk(UOp op, const math::UnaryParams& p, float* out, const float* in, int64_t n) {
  if (op == UOp::kGelu) return gelu_loop(out, in, n);
  if (op == UOp::kGeluTanh) return gelu_tanh_loop(out, in, n);
  unary_chunk<float>(op, p, out, in, n);
}
void unary_double_chunk(UOp op, const math::UnaryParams& p, double* out, const double* in, int64_t n) {
  unary_chunk<double>(op, p, out, in, n);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
