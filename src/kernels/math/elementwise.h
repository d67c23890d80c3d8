// elementwise.h — the broadcasting elementwise engine of src/kernels/math and
// the dtype dispatch helpers shared by the math kernels.
//
// run_elementwise(pool, out, out_shape, op, cycles, ins...) computes
//   out[i] = op(in0[bcast i], in1[bcast i], ...)
// for 1..3 inputs broadcast (NumPy rules) to out_shape. The shapes are first
// collapsed: size-1 output dims are dropped and adjacent dims merged whenever
// every input is contiguous across them, so same-shape inputs become one flat
// loop, [N,C,H,W] + [C,1,1] becomes [N, C, H*W] with a per-row constant and a
// scalar operand becomes a stride-0 input. The innermost collapsed dim has
// stride 1 or 0 for every input; one instantiation of the inner loop per
// stride pattern (2^arity) is selected, each a plain loop over contiguous
// pointers with the stride-0 operands hoisted, which the compiler vectorizes.
// The flat output range is split across the pool with parallel_for (chunks
// may start mid-row); small tensors run inline.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/kernel.h"

namespace spindle::kernels::math {

// ------------------------------------------------------------------ plan

template <size_t N>
struct BroadcastPlan {
  int64_t numel = 0;
  // Collapsed dims, outermost first; the last one is the inner loop.
  std::vector<int64_t> dims;
  // strides[d][k]: element stride of input k along collapsed dim d.
  std::vector<std::array<int64_t, N>> strides;
  unsigned inner_mask = 0;  // bit k set: input k has stride 0 in the inner dim
};

template <size_t N>
BroadcastPlan<N> make_plan(const Shape& out_shape, const std::array<const Shape*, N>& in_shapes) {
  BroadcastPlan<N> plan;
  plan.numel = shape_numel(out_shape);
  std::array<Shape, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = broadcast_strides(*in_shapes[k], out_shape);
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    std::array<int64_t, N> s;
    for (size_t k = 0; k < N; ++k) s[k] = st[k][d];
    if (!plan.dims.empty()) {
      // Merge into the previous dim when every input is contiguous across.
      bool merge = true;
      for (size_t k = 0; k < N; ++k)
        if (plan.strides.back()[k] != s[k] * out_shape[d]) merge = false;
      if (merge) {
        plan.dims.back() *= out_shape[d];
        plan.strides.back() = s;
        continue;
      }
    }
    plan.dims.push_back(out_shape[d]);
    plan.strides.push_back(s);
  }
  if (plan.dims.empty()) {  // scalar output
    plan.dims.push_back(1);
    plan.strides.push_back({});
  }
  plan.inner_mask = 0;
  for (size_t k = 0; k < N; ++k)
    if (plan.strides.back()[k] == 0) plan.inner_mask |= 1u << k;
  return plan;
}

// ------------------------------------------------------------------ inner loops

template <unsigned Mask, class O, class Op, class... I, size_t... K>
inline void inner_loop_impl(O* o, int64_t n, const Op& op, std::index_sequence<K...>, const I*... p) {
  // Stride-0 operands are loaded once; the rest are contiguous.
  // The op (and its captured parameters) is copied to a local so that the
  // stores to o cannot alias it.
  const std::tuple<I...> scal{(((Mask >> K) & 1u) ? p[0] : I{})...};
  const Op f = op;
  for (int64_t i = 0; i < n; ++i) o[i] = f((((Mask >> K) & 1u) ? std::get<K>(scal) : p[i])...);
}

template <unsigned Mask, class O, class Op, class... I>
void inner_loop(O* o, int64_t n, const Op& op, const I*... p) {
  inner_loop_impl<Mask>(o, n, op, std::index_sequence_for<I...>{}, p...);
}

template <class O, class Op, class... I>
using InnerFn = void (*)(O*, int64_t, const Op&, const I*...);

template <class O, class Op, class... I, unsigned... M>
constexpr auto inner_table(std::integer_sequence<unsigned, M...>) {
  return std::array<InnerFn<O, Op, I...>, sizeof...(M)>{&inner_loop<M, O, Op, I...>...};
}

// ------------------------------------------------------------------ engine

// Runs the plan over output elements [begin, end).
template <class O, class Op, class... I, size_t... K>
void run_range(const BroadcastPlan<sizeof...(I)>& plan, InnerFn<O, Op, I...> fn, O* out, const Op& op,
               int64_t begin, int64_t end, std::index_sequence<K...>, const I*... in) {
  constexpr size_t N = sizeof...(I);
  const size_t nd = plan.dims.size();
  const int64_t inner = plan.dims.back();
  // Decompose the starting row index over the outer dims.
  int64_t row = begin / inner;
  int64_t off = begin % inner;
  std::array<int64_t, 8> idx{};  // collapsed rank is at most 8 for ONNX-size ranks; checked below
  std::vector<int64_t> idx_heap;
  int64_t* ix = idx.data();
  if (nd > idx.size()) {
    idx_heap.assign(nd, 0);
    ix = idx_heap.data();
  }
  std::array<int64_t, N> base{};
  {
    int64_t r = row;
    for (size_t d = nd - 1; d-- > 0;) {
      ix[d] = r % plan.dims[d];
      r /= plan.dims[d];
      for (size_t k = 0; k < N; ++k) base[k] += ix[d] * plan.strides[d][k];
    }
  }
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = plan.strides.back()[k];
  int64_t pos = begin;
  while (pos < end) {
    const int64_t len = std::min(inner - off, end - pos);
    fn(out + pos, len, op, (in + base[K] + off * inner_stride[K])...);
    pos += len;
    off = 0;
    // Odometer over the outer dims.
    for (size_t d = nd - 1; d-- > 0;) {
      if (++ix[d] < plan.dims[d]) {
        for (size_t k = 0; k < N; ++k) base[k] += plan.strides[d][k];
        break;
      }
      for (size_t k = 0; k < N; ++k) base[k] -= (plan.dims[d] - 1) * plan.strides[d][k];
      ix[d] = 0;
    }
  }
}

// One inner loop per stride pattern (index: the inner_mask of the plan).
template <class O, class Op, class... I>
using InnerTable = std::array<InnerFn<O, Op, I...>, (1u << sizeof...(I))>;

// As run_elementwise below, with the inner loops given by the caller (the
// per-ISA float kernels of binary.cpp).
template <class O, class Op, class... I>
void run_elementwise_with(ThreadPool* pool, const InnerTable<O, Op, I...>& table, O* out, const Shape& out_shape,
                          const Op& op, double cycles, const std::pair<const I*, const Shape*>... ins) {
  constexpr size_t N = sizeof...(I);
  static_assert(N >= 1 && N <= 3);
  const BroadcastPlan<N> plan = make_plan<N>(out_shape, {ins.second...});
  if (plan.numel == 0) return;
  const InnerFn<O, Op, I...> fn = table[plan.inner_mask];
  Cost cost;
  cost.bytes_loaded = static_cast<double>((sizeof(I) + ... + 0));
  cost.bytes_stored = sizeof(O);
  cost.compute_cycles = cycles;
  parallel_for(pool, plan.numel, cost, [&](int64_t b, int64_t e) {
    run_range<O, Op, I...>(plan, fn, out, op, b, e, std::index_sequence_for<I...>{}, ins.first...);
  });
}

// out must already have out_shape; inputs broadcast to it. `cycles` is the
// compute cost per element for the pool's grain heuristics.
template <class O, class Op, class... I>
void run_elementwise(ThreadPool* pool, O* out, const Shape& out_shape, const Op& op, double cycles,
                     const std::pair<const I*, const Shape*>... ins) {
  static constexpr auto table =
      inner_table<O, Op, I...>(std::make_integer_sequence<unsigned, (1u << sizeof...(I))>{});
  run_elementwise_with<O, Op, I...>(pool, table, out, out_shape, op, cycles, ins...);
}

// Same-shape unary map over n contiguous elements.
template <class O, class I, class Op>
void run_unary(ThreadPool* pool, O* out, const I* in, int64_t n, const Op& op, double cycles) {
  Cost cost;
  cost.bytes_loaded = sizeof(I);
  cost.bytes_stored = sizeof(O);
  cost.compute_cycles = cycles;
  parallel_for(pool, n, cost, [&](int64_t b, int64_t e) {
    O* o = out + b;
    const I* x = in + b;
    const int64_t m = e - b;
    const Op f = op;  // local copy: the stores to o cannot alias its captures
    for (int64_t i = 0; i < m; ++i) o[i] = f(x[i]);
  });
}

// ------------------------------------------------------------------ float16

// float16 and bfloat16 ("half" types here) kernels compute in float32 and
// round back to nearest even: for +, -, *, /, min, max and fmod of float16 or
// bfloat16 values that is the correctly rounded result (float32 holds more
// than twice the significand bits of either).
inline bool is_half(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }
inline Tensor half_to_float32(ThreadPool* pool, const Tensor& x) {
  Tensor f(DataType::kFloat32, x.shape());
  const auto* in = static_cast<const uint16_t*>(x.raw_data());
  if (x.dtype() == DataType::kBFloat16)
    run_unary(pool, f.mutable_data<float>(), in, x.numel(), [](uint16_t h) { return bfloat16_to_float(h); }, 1.0);
  else
    run_unary(pool, f.mutable_data<float>(), in, x.numel(), [](uint16_t h) { return float16_to_float(h); }, 2.0);
  return f;
}
// Rounds float32 `f` into `out`, a float16 or bfloat16 tensor of its size.
inline void float32_to_half(ThreadPool* pool, const Tensor& f, Tensor& out) {
  auto* o = static_cast<uint16_t*>(out.raw_mutable_data());
  if (out.dtype() == DataType::kBFloat16)
    run_unary(pool, o, f.data<float>(), f.numel(), [](float v) { return float_to_bfloat16(v); }, 2.0);
  else
    run_unary(pool, o, f.data<float>(), f.numel(), [](float v) { return float_to_float16(v); }, 2.0);
}

// ------------------------------------------------------------------ dtypes

// Calls f(T{}) with the C++ type of dtype, for the types listed in Ts;
// otherwise fails naming the op and the dtype.
template <class... Ts, class F>
void dispatch(DataType dt, const NodeInfo& node, const char* what, F&& f) {
  bool done = false;
  ((!done && dt == dtype_of<Ts>() ? (f(Ts{}), done = true) : false), ...);
  if (!done) fail_unsupported(node, fmt::format("{} of dtype {} is not supported", what, dtype_name(dt)));
}

#define SPINDLE_FLOAT_TYPES float, double
#define SPINDLE_INT_TYPES int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
#define SPINDLE_NUMERIC_TYPES SPINDLE_FLOAT_TYPES, SPINDLE_INT_TYPES
#define SPINDLE_SIGNED_TYPES float, double, int8_t, int16_t, int32_t, int64_t

template <class T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

// Wrapping integer arithmetic (no signed-overflow UB).
template <class T>
inline T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <class T>
inline T wrap_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return static_cast<T>(a - b);
  }
}
template <class T>
inline T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else if constexpr (std::is_integral_v<T>) {
    // uint8/uint16 promote to int: multiply as unsigned int.
    return static_cast<T>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
  } else {
    return a * b;
  }
}

// Legacy (opset < 7) broadcasting of Add/Sub/Mul/Div/Pow/And/Or/Xor/Equal/
// Less/Greater: with broadcast=1, B's dims align with A's starting at `axis`
// (default: suffix alignment); returns B's shape as a rank(A) shape.
inline Shape legacy_broadcast_shape(const NodeInfo& node, const Shape& a, const Shape& b) {
  if (node.opset >= 7 || node.attrs.get_int("broadcast", 0) == 0) return b;
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  int64_t axis = node.attrs.get_int("axis", ra - rb);
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra)
    fail(node, fmt::format("legacy broadcast of B {} into A {} at axis {} is out of range", shape_to_string(b),
                           shape_to_string(a), axis));
  Shape out(static_cast<size_t>(ra), 1);
  for (int64_t i = 0; i < rb; ++i) out[static_cast<size_t>(axis + i)] = b[static_cast<size_t>(i)];
  return out;
}

}  // namespace spindle::kernels::math
