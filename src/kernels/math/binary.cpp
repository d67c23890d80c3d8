// binary.cpp — arithmetic elementwise ops with multidirectional broadcasting:
// Add Sub Mul Div Mod Min Max PRelu Pow, the variadic Sum Mean Max Min, and
// the integer BitShift, BitwiseAnd / Or / Xor / Not.
//
// dtypes: every numeric type (float32/64, int8..int64, uint8..uint64); PRelu
// the signed ones. Integer arithmetic wraps; integer division / modulo by
// zero gives 0 instead of trapping.
#include <cmath>
#include <limits>

#include "kernels/math/binary_isa.h"
#include "kernels/math/elementwise.h"
#include "kernels/math/float_to_int.h"
#include "kernels/math/math_ops.h"

namespace spindle::kernels::math {
namespace {

enum class BinOp { kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kPRelu };

template <class T>
struct AddOp {
  T operator()(T a, T b) const { return wrap_add(a, b); }
};
template <class T>
struct SubOp {
  T operator()(T a, T b) const { return wrap_sub(a, b); }
};
template <class T>
struct MulOp {
  T operator()(T a, T b) const { return wrap_mul(a, b); }
};
template <class T>
struct DivOp {
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      return a / b;
    } else if constexpr (std::is_signed_v<T>) {
      if (b == 0) return 0;
      if (b == -1) return wrap_sub(T(0), a);  // no INT_MIN / -1 trap
      return static_cast<T>(a / b);
    } else {
      return b == 0 ? T(0) : static_cast<T>(a / b);
    }
  }
};
// fmod = 1: the sign of the dividend (C fmod / %); fmod = 0: the sign of the
// divisor (Python %).
template <class T>
struct ModOp {
  bool c_fmod;
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) {
      T r = std::fmod(a, b);
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else if constexpr (std::is_signed_v<T>) {
      if (b == 0 || b == -1) return 0;
      T r = static_cast<T>(a % b);
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      return b == 0 ? T(0) : static_cast<T>(a % b);
    }
  }
};
// NaN-propagating for floats (like numpy maximum / minimum).
template <class T>
struct MaxOp {
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) return (a > b || a != a) ? a : b;
    else return a > b ? a : b;
  }
};
template <class T>
struct MinOp {
  T operator()(T a, T b) const {
    if constexpr (is_float_v<T>) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
  }
};
template <class T>
struct PReluOp {
  T operator()(T x, T slope) const { return x < T(0) ? wrap_mul(slope, x) : x; }
};

const char* bin_op_name(BinOp op) {
  switch (op) {
    case BinOp::kAdd: return "Add";
    case BinOp::kSub: return "Sub";
    case BinOp::kMul: return "Mul";
    case BinOp::kDiv: return "Div";
    case BinOp::kMod: return "Mod";
    case BinOp::kMin: return "Min";
    case BinOp::kMax: return "Max";
    case BinOp::kPRelu: return "PRelu";
  }
  return "?";
}

// float32 Add Sub Mul Div Min Max: the engine's inner loops are the active
// ISA level's (binary.isa.cpp), one per stride pattern; same bits as the
// generic ops above.
const auto binary_float_chunk_fn = SPINDLE_ISA_SELECT(binary_float_chunk);

template <FloatBinOp B, unsigned Mask, class Op>
void float_isa_inner(float* o, int64_t n, const Op&, const float* a, const float* b) {
  binary_float_chunk_fn(B, Mask, o, a, b, n);
}

template <FloatBinOp B, class Op>
void float_isa_apply(ThreadPool* pool, float* out, const Shape& out_shape, double cycles,
                     std::pair<const float*, const Shape*> a, std::pair<const float*, const Shape*> b) {
  static constexpr InnerTable<float, Op, float, float> table{&float_isa_inner<B, 0, Op>, &float_isa_inner<B, 1, Op>,
                                                             &float_isa_inner<B, 2, Op>, &float_isa_inner<B, 3, Op>};
  run_elementwise_with<float, Op, float, float>(pool, table, out, out_shape, Op{}, cycles, a, b);
}

// out (already shaped out_shape) = op(a, b) with broadcasting.
template <class T>
void binary_apply(ThreadPool* pool, BinOp op, bool c_fmod, T* out, const Shape& out_shape, const T* a,
                  const Shape& as, const T* b, const Shape& bs) {
  const std::pair<const T*, const Shape*> A{a, &as}, B{b, &bs};
  const double div_cycles = is_float_v<T> ? 4.0 : 20.0;
  if constexpr (std::is_same_v<T, float>) {
    // The per-ISA float loops divide 8 lanes at a time: ~0.6 cycles an
    // element (an encoder's attention scaling, 49K elements, 9 us on one
    // thread). Costed at the scalar 4 cycles, that loop woke a parked
    // worker at intra 2, and the wake-up alone kept the caller ~20 us
    // (spindle profile --trace: 9 -> 28 us).
    constexpr double kFloatDivCycles = 1.0;
    switch (op) {
      case BinOp::kAdd: return float_isa_apply<FloatBinOp::kAdd, AddOp<float>>(pool, out, out_shape, 0.5, A, B);
      case BinOp::kSub: return float_isa_apply<FloatBinOp::kSub, SubOp<float>>(pool, out, out_shape, 0.5, A, B);
      case BinOp::kMul: return float_isa_apply<FloatBinOp::kMul, MulOp<float>>(pool, out, out_shape, 0.5, A, B);
      case BinOp::kDiv: return float_isa_apply<FloatBinOp::kDiv, DivOp<float>>(pool, out, out_shape, kFloatDivCycles, A, B);
      case BinOp::kMin: return float_isa_apply<FloatBinOp::kMin, MinOp<float>>(pool, out, out_shape, 0.5, A, B);
      case BinOp::kMax: return float_isa_apply<FloatBinOp::kMax, MaxOp<float>>(pool, out, out_shape, 0.5, A, B);
      default: break;
    }
  }
  switch (op) {
    case BinOp::kAdd: return run_elementwise(pool, out, out_shape, AddOp<T>{}, 0.5, A, B);
    case BinOp::kSub: return run_elementwise(pool, out, out_shape, SubOp<T>{}, 0.5, A, B);
    case BinOp::kMul: return run_elementwise(pool, out, out_shape, MulOp<T>{}, 0.5, A, B);
    case BinOp::kDiv: return run_elementwise(pool, out, out_shape, DivOp<T>{}, div_cycles, A, B);
    case BinOp::kMod: return run_elementwise(pool, out, out_shape, ModOp<T>{c_fmod}, 20.0, A, B);
    case BinOp::kMin: return run_elementwise(pool, out, out_shape, MinOp<T>{}, 0.5, A, B);
    case BinOp::kMax: return run_elementwise(pool, out, out_shape, MaxOp<T>{}, 0.5, A, B);
    case BinOp::kPRelu:
      if constexpr (std::is_signed_v<T> || is_float_v<T>) {
        return run_elementwise(pool, out, out_shape, PReluOp<T>{}, 1.0, A, B);
      }
      break;
  }
}

// PRelu before opset 7 took a slope of shape [C] for X of shape [N, C, ...]
// (one slope per channel, as PyTorch exported it); it is laid along axis 1.
Shape legacy_prelu_slope_shape(const NodeInfo& node, const Shape& x, const Shape& slope) {
  if (node.opset >= 7 || slope.size() != 1 || x.size() < 2 || slope[0] != x[1] || slope[0] == 1)
    return slope;
  Shape s(x.size() - 1, 1);
  s[0] = slope[0];
  return s;
}

const char* input_name(int i) { return i == 0 ? "A" : i == 1 ? "B" : "input"; }

class BinaryKernel final : public OpKernel {
 public:
  BinaryKernel(const NodeInfo& node, BinOp op) : op_(op) {
    c_fmod_ = node.attrs.get_int("fmod", 0) != 0;
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (a.dtype() != b.dtype())
      fail(node, fmt::format("inputs {} ({}) and {} ({}) must have the same dtype", input_name(0), a.describe(),
                             input_name(1), b.describe()));
    const Shape bs = op_ == BinOp::kPRelu ? legacy_prelu_slope_shape(node, a.shape(), b.shape())
                                          : legacy_broadcast_shape(node, a.shape(), b.shape());
    const Shape shapes[2] = {a.shape(), bs};
    const Shape out_shape = broadcast_shapes(node, shapes);
    if (op_ == BinOp::kPRelu && out_shape != a.shape())
      fail(node, fmt::format("slope {} does not broadcast to X {}", shape_to_string(b.shape()),
                             shape_to_string(a.shape())));
    Tensor& out = ctx.output(0, a.dtype(), out_shape);
    if (is_half(a.dtype())) {
      const Tensor af = half_to_float32(ctx.pool(), a), bf = half_to_float32(ctx.pool(), b);
      Tensor of(DataType::kFloat32, out_shape);
      binary_apply<float>(ctx.pool(), op_, c_fmod_, of.mutable_data<float>(), out_shape, af.data<float>(), a.shape(),
                          bf.data<float>(), bs);
      return float32_to_half(ctx.pool(), of, out);
    }
    auto go = [&](auto tag) {
      using T = decltype(tag);
      binary_apply<T>(ctx.pool(), op_, c_fmod_, out.mutable_data<T>(), out_shape, a.data<T>(), a.shape(),
                      b.data<T>(), bs);
    };
    if (op_ == BinOp::kPRelu) dispatch<SPINDLE_SIGNED_TYPES>(a.dtype(), node, "input X", go);
    else dispatch<SPINDLE_NUMERIC_TYPES>(a.dtype(), node, "input A", go);
  }

 private:
  BinOp op_;
  bool c_fmod_ = false;
};

// BitShift (11): unsigned integers, NumPy broadcasting; shifting by the
// width of the type or more gives 0.
template <class T>
struct ShiftOp {
  bool left;
  T operator()(T a, T b) const {
    if (b >= static_cast<T>(sizeof(T) * 8)) return 0;
    return left ? static_cast<T>(a << b) : static_cast<T>(a >> b);
  }
};

class BitShiftKernel final : public OpKernel {
 public:
  explicit BitShiftKernel(const NodeInfo& node) {
    const std::string d = node.attrs.get_string("direction");
    if (d != "LEFT" && d != "RIGHT") fail(node, fmt::format("attribute direction is '{}', expected LEFT or RIGHT", d));
    left_ = d == "LEFT";
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (x.dtype() != y.dtype())
      fail(node, fmt::format("inputs X ({}) and Y ({}) must have the same dtype", x.describe(), y.describe()));
    const Shape shapes[2] = {x.shape(), y.shape()};
    const Shape out_shape = broadcast_shapes(node, shapes);
    Tensor& out = ctx.output(0, x.dtype(), out_shape);
    dispatch<uint8_t, uint16_t, uint32_t, uint64_t>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      const std::pair<const T*, const Shape*> A{x.data<T>(), &x.shape()}, B{y.data<T>(), &y.shape()};
      run_elementwise(ctx.pool(), out.mutable_data<T>(), out_shape, ShiftOp<T>{left_}, 0.5, A, B);
    });
  }

 private:
  bool left_ = true;
};

// BitwiseAnd / BitwiseOr / BitwiseXor (18): integers, NumPy broadcasting;
// BitwiseNot (18): one integer input.
enum class BitOp { kAnd, kOr, kXor, kNot };

class BitwiseKernel final : public OpKernel {
 public:
  explicit BitwiseKernel(BitOp op) : op_(op) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (op_ == BitOp::kNot) {
      Tensor& out = ctx.output(0, x.dtype(), x.shape());
      dispatch<SPINDLE_INT_TYPES>(x.dtype(), node, "input X", [&](auto tag) {
        using T = decltype(tag);
        run_unary(ctx.pool(), out.mutable_data<T>(), x.data<T>(), x.numel(), [](T a) { return static_cast<T>(~a); }, 0.5);
      });
      return;
    }
    const Tensor& y = ctx.input(1);
    if (x.dtype() != y.dtype())
      fail(node, fmt::format("inputs A ({}) and B ({}) must have the same dtype", x.describe(), y.describe()));
    const Shape shapes[2] = {x.shape(), y.shape()};
    const Shape out_shape = broadcast_shapes(node, shapes);
    Tensor& out = ctx.output(0, x.dtype(), out_shape);
    dispatch<SPINDLE_INT_TYPES>(x.dtype(), node, "input A", [&](auto tag) {
      using T = decltype(tag);
      const std::pair<const T*, const Shape*> A{x.data<T>(), &x.shape()}, B{y.data<T>(), &y.shape()};
      T* o = out.mutable_data<T>();
      switch (op_) {
        case BitOp::kAnd: return run_elementwise(ctx.pool(), o, out_shape, [](T a, T b) { return static_cast<T>(a & b); }, 0.5, A, B);
        case BitOp::kOr: return run_elementwise(ctx.pool(), o, out_shape, [](T a, T b) { return static_cast<T>(a | b); }, 0.5, A, B);
        default: return run_elementwise(ctx.pool(), o, out_shape, [](T a, T b) { return static_cast<T>(a ^ b); }, 0.5, A, B);
      }
    });
  }

 private:
  BitOp op_;
};

// Sum, Mean, Max, Min over 1..N inputs (Max/Min with two inputs use the same
// kernel): out = in0 op in1, then out = out op in_k in place.
class VariadicKernel final : public OpKernel {
 public:
  VariadicKernel(BinOp op, bool mean) : op_(op), mean_(mean) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const int n = ctx.num_inputs();
    if (n < 1) fail(node, "needs at least one input");
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      if (t.dtype() != ctx.input(0).dtype())
        fail(node, fmt::format("input {} ({}) must have the dtype of input 0 ({})", i, t.describe(),
                               ctx.input(0).describe()));
      shapes.push_back(t.shape());
    }
    const Shape out_shape = broadcast_shapes(node, shapes);
    const DataType dt = ctx.input(0).dtype();
    Tensor& out = ctx.output(0, dt, out_shape);
    // float16 / bfloat16 inputs are widened to float32 (Sum and Mean accumulate in
    // float32 and round once, at the end).
    std::vector<Tensor> inputs;
    for (int i = 0; i < n; ++i)
      inputs.push_back(is_half(dt) ? half_to_float32(ctx.pool(), ctx.input(i)) : ctx.input(i));
    Tensor wide = is_half(dt) ? Tensor(DataType::kFloat32, out_shape) : out;
    dispatch<SPINDLE_NUMERIC_TYPES>(wide.dtype(), node, "input 0", [&](auto tag) {
      using T = decltype(tag);
      T* o = wide.mutable_data<T>();
      ThreadPool* pool = ctx.pool();
      if (n == 1) {
        const std::pair<const T*, const Shape*> A{inputs[0].data<T>(), &shapes[0]};
        run_elementwise(pool, o, out_shape, [](T x) { return x; }, 0.0, A);
      } else {
        binary_apply<T>(pool, op_, false, o, out_shape, inputs[0].data<T>(), shapes[0], inputs[1].data<T>(),
                        shapes[1]);
        for (int i = 2; i < n; ++i)
          binary_apply<T>(pool, op_, false, o, out_shape, o, out_shape, inputs[static_cast<size_t>(i)].data<T>(),
                          shapes[static_cast<size_t>(i)]);
      }
      if (mean_ && n > 1) {
        const T count = static_cast<T>(n);
        run_unary(pool, o, o, out.numel(), [count](T x) { return static_cast<T>(x / count); }, 4.0);
      }
    });
    if (is_half(dt)) float32_to_half(ctx.pool(), wide, out);
  }

 private:
  BinOp op_;
  bool mean_;
};

// Pow: X and Y may differ in type (opset 12+); the output has X's type.
// Scalar exponents 1, 2 and 3 take exact multiply paths (pow(x, 2) is
// exactly x * x in IEEE arithmetic). Integer X: computed in double and
// converted like ONNX Runtime does (an out-of-range or NaN result gives the
// type's minimum: float_to_int.h), never undefined behaviour.
template <class X>
struct PowOp {
  template <class Y>
  X operator()(X x, Y y) const {
    if constexpr (std::is_same_v<X, float>) return std::pow(x, static_cast<float>(y));
    else if constexpr (std::is_integral_v<X>) return float_to_int<X>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    else return static_cast<X>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
};

class PowKernel final : public OpKernel {
 public:
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    const Shape ys = legacy_broadcast_shape(node, x.shape(), y.shape());
    const Shape shapes[2] = {x.shape(), ys};
    const Shape out_shape = broadcast_shapes(node, shapes);
    Tensor& out = ctx.output(0, x.dtype(), out_shape);
    ThreadPool* pool = ctx.pool();
    dispatch<float, double, int32_t, int64_t>(x.dtype(), node, "input X", [&](auto xtag) {
      using X = decltype(xtag);
      X* o = out.mutable_data<X>();
      const X* xp = x.data<X>();
      if (y.numel() == 1 && out_shape == x.shape() && is_float_v<X>) {
        double e = 0;
        dispatch<SPINDLE_NUMERIC_TYPES>(y.dtype(), node, "input Y",
                                        [&](auto ytag) { e = static_cast<double>(y.data<decltype(ytag)>()[0]); });
        if (e == 1.0) return run_unary(pool, o, xp, x.numel(), [](X v) { return v; }, 0.0);
        if (e == 2.0) return run_unary(pool, o, xp, x.numel(), [](X v) { return v * v; }, 0.5);
        if (e == 3.0) return run_unary(pool, o, xp, x.numel(), [](X v) { return v * v * v; }, 1.0);
      }
      dispatch<SPINDLE_NUMERIC_TYPES>(y.dtype(), node, "input Y", [&](auto ytag) {
        using Y = decltype(ytag);
        const std::pair<const X*, const Shape*> A{xp, &x.shape()};
        const std::pair<const Y*, const Shape*> B{y.data<Y>(), &ys};
        run_elementwise(pool, o, out_shape, [](X a, Y b) { return PowOp<X>{}(a, b); }, 30.0, A, B);
      });
    });
  }
};

KernelFactory binary(BinOp op) {
  return [op](const NodeInfo& node) -> std::unique_ptr<OpKernel> { return std::make_unique<BinaryKernel>(node, op); };
}
KernelFactory variadic(BinOp op, bool mean) {
  return [op, mean](const NodeInfo&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<VariadicKernel>(op, mean);
  };
}

}  // namespace

void register_binary(KernelRegistry& r) {
  // Opsets 1-6 carry the legacy `broadcast` / `axis` attributes (handled by
  // legacy_broadcast_shape); 7+ broadcast NumPy-style.
  for (BinOp op : {BinOp::kAdd, BinOp::kSub, BinOp::kMul, BinOp::kDiv}) {
    r.add("", bin_op_name(op), 1, 6, binary(op));
    r.add("", bin_op_name(op), 7, 17, binary(op));
  }
  r.add("", "Mod", 1, 17, binary(BinOp::kMod));
  // PRelu: opset < 7 slope is one element, X's shape or one value per channel
  // (dimension 1); 7+ broadcasts unidirectionally to X. Both are checked by
  // "broadcast result == X's shape".
  r.add("", "PRelu", 1, 17, binary(BinOp::kPRelu));
  r.add("", "Sum", 1, 17, variadic(BinOp::kAdd, false));
  r.add("", "Mean", 1, 17, variadic(BinOp::kAdd, true));
  r.add("", "Max", 1, 17, variadic(BinOp::kMax, false));
  r.add("", "Min", 1, 17, variadic(BinOp::kMin, false));
  r.add("", "BitShift", 11, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<BitShiftKernel>(node);
  });
  for (const auto& entry : {std::pair{"BitwiseAnd", BitOp::kAnd}, std::pair{"BitwiseOr", BitOp::kOr},
                             std::pair{"BitwiseXor", BitOp::kXor}, std::pair{"BitwiseNot", BitOp::kNot}}) {
    const BitOp op = entry.second;  // (clang 14 cannot capture a structured binding)
    r.add("", entry.first, 18, 18, [op](const NodeInfo&) -> std::unique_ptr<OpKernel> {
      return std::make_unique<BitwiseKernel>(op);
    });
  }
  auto pow = [](const NodeInfo&) -> std::unique_ptr<OpKernel> { return std::make_unique<PowKernel>(); };
  r.add("", "Pow", 1, 6, pow);
  r.add("", "Pow", 7, 17, pow);
}

}  // namespace spindle::kernels::math
