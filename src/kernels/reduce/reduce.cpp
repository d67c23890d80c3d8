// reduce.cpp — ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1
// ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare, ArgMax, ArgMin.
//
// The input is viewed as collapsed dims (size-1 dims dropped, adjacent dims
// of the same kind — reduced or kept — merged). Two shapes of loop cover
// every case:
//   A. the innermost dim is reduced: each output element reduces contiguous
//      rows (e.g. ReduceMean over the last axis); a row is reduced with 32
//      independent accumulator lanes (a plain loop the compiler vectorizes)
//      combined pairwise at the end;
//   B. the innermost dim is kept: each output row accumulates whole input
//      rows elementwise (vectorized across the row).
// Work is split across OUTPUT elements only and every output is computed by
// one thread in an order that depends only on the shape, so results are
// bitwise identical for any thread count.
//
// dtypes: float32 / float64 for all; int32 / int64 for Sum Mean Max Min Prod
// L1 SumSquare (integer arithmetic wraps); ArgMax / ArgMin also int8 / uint8.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/math/elementwise.h"
#include "kernels/op_schema.h"
#include "kernels/reduce/reduce_ops.h"
#include "primitives/math/vec_math.h"

namespace spindle::kernels::reduce {
namespace {

using math::dispatch;
using math::wrap_add;
using math::wrap_mul;

enum class RKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

const char* kind_name(RKind k) {
  switch (k) {
    case RKind::kSum: return "ReduceSum";
    case RKind::kMean: return "ReduceMean";
    case RKind::kMax: return "ReduceMax";
    case RKind::kMin: return "ReduceMin";
    case RKind::kProd: return "ReduceProd";
    case RKind::kL1: return "ReduceL1";
    case RKind::kL2: return "ReduceL2";
    case RKind::kLogSum: return "ReduceLogSum";
    case RKind::kLogSumExp: return "ReduceLogSumExp";
    case RKind::kSumSquare: return "ReduceSumSquare";
  }
  return "?";
}

// ------------------------------------------------------------------ policies
// map(x, shift) is applied to each element, comb() folds, identity() starts.

template <class T>
struct SumP {
  static T identity() { return T(0); }
  static T map(T x, T) { return x; }
  static T comb(T a, T b) { return wrap_add(a, b); }
};
template <class T>
struct ProdP {
  static T identity() { return T(1); }
  static T map(T x, T) { return x; }
  static T comb(T a, T b) { return wrap_mul(a, b); }
};
template <class T>
struct MaxP {
  static T identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  static T map(T x, T) { return x; }
  // NaN-propagating.
  static T comb(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a > b || a != a) ? a : b;
    else return a > b ? a : b;
  }
};
template <class T>
struct MinP {
  static T identity() { return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                                            : std::numeric_limits<T>::max(); }
  static T map(T x, T) { return x; }
  static T comb(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return (a < b || a != a) ? a : b;
    else return a < b ? a : b;
  }
};
template <class T>
struct L1P {
  static T identity() { return T(0); }
  static T map(T x, T) {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
    else return x < 0 ? static_cast<T>(T(0) - x) : x;
  }
  static T comb(T a, T b) { return wrap_add(a, b); }
};
template <class T>
struct SqP {
  static T identity() { return T(0); }
  static T map(T x, T) { return wrap_mul(x, x); }
  static T comb(T a, T b) { return wrap_add(a, b); }
};
template <class T>
struct ExpP {  // sum of exp(x - shift)
  static T identity() { return T(0); }
  static T map(T x, T shift) {
    if constexpr (std::is_same_v<T, float>) return vm::fast_exp(x - shift);
    else return std::exp(x - shift);
  }
  static T comb(T a, T b) { return a + b; }
};

// Reduces n contiguous elements with kLanes independent accumulators.
template <class T, class P>
inline T reduce_row(const T* __restrict x, int64_t n, T shift) {
  constexpr int kLanes = 128 / sizeof(T) < 16 ? 16 : 128 / sizeof(T);  // 32 floats, 16 doubles
  if (n < kLanes) {
    T a = P::identity();
    for (int64_t i = 0; i < n; ++i) a = P::comb(a, P::map(x[i], shift));
    return a;
  }
  T lanes[kLanes];
  for (int j = 0; j < kLanes; ++j) lanes[j] = P::identity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = P::comb(lanes[j], P::map(x[i + j], shift));
  for (int j = 0; i + j < n; ++j) lanes[j] = P::comb(lanes[j], P::map(x[i + j], shift));
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] = P::comb(lanes[j], lanes[j + w]);
  return lanes[0];
}

// ------------------------------------------------------------------ plan

struct Plan {
  // Collapsed dims, outermost first.
  std::vector<int64_t> kept_dims, kept_strides;  // kept dims (input strides)
  std::vector<int64_t> red_dims, red_strides;    // reduced dims (input strides)
  bool inner_reduced = false;                    // innermost collapsed dim is reduced
  int64_t inner = 1;                             // its size
  int64_t num_out = 1;                           // output elements
  int64_t count = 1;                             // elements reduced per output
};

Plan make_plan(const Shape& shape, const std::vector<bool>& reduced) {
  Plan p;
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && red.back() == reduced[d]) {
      dims.back() *= shape[d];
      continue;
    }
    dims.push_back(shape[d]);
    red.push_back(reduced[d]);
  }
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  for (size_t d = 0; d < dims.size(); ++d) {
    if (red[d]) {
      p.red_dims.push_back(dims[d]);
      p.red_strides.push_back(strides[d]);
      p.count *= dims[d];
    } else {
      p.kept_dims.push_back(dims[d]);
      p.kept_strides.push_back(strides[d]);
      p.num_out *= dims[d];
    }
  }
  if (!dims.empty()) {
    p.inner_reduced = red.back();
    p.inner = dims.back();
    if (p.inner_reduced) {
      p.red_dims.pop_back();
      p.red_strides.pop_back();
    } else {
      p.kept_dims.pop_back();
      p.kept_strides.pop_back();
    }
  } else {
    p.inner_reduced = true;  // a single element, reduced as a row of 1
    p.inner = 1;
  }
  return p;
}

// Input offset of outer kept index q (over kept_dims, row-major).
inline int64_t kept_offset(const Plan& p, int64_t q) {
  int64_t off = 0;
  for (size_t d = p.kept_dims.size(); d-- > 0;) {
    off += (q % p.kept_dims[d]) * p.kept_strides[d];
    q /= p.kept_dims[d];
  }
  return off;
}

// Calls fn(offset) for every combination of the outer reduced dims.
template <class F>
inline void for_each_reduced(const Plan& p, F&& fn) {
  const size_t nd = p.red_dims.size();
  if (nd == 0) {
    fn(int64_t{0});
    return;
  }
  int64_t total = 1;
  for (int64_t d : p.red_dims) total *= d;
  std::vector<int64_t> ix(nd, 0);
  int64_t off = 0;
  for (int64_t t = 0; t < total; ++t) {
    fn(off);
    for (size_t d = nd; d-- > 0;) {
      off += p.red_strides[d];
      if (++ix[d] < p.red_dims[d]) break;
      off -= p.red_dims[d] * p.red_strides[d];
      ix[d] = 0;
    }
  }
}

// acc[m] = fold over the reduction of output m (shift[m] passed to map; may
// be null = 0). acc has p.num_out elements in output order.
template <class T, class P>
void run_plan(ThreadPool* pool, const Plan& p, const T* x, T* acc, const T* shift) {
  if (p.num_out == 0) return;
  Cost cost;
  cost.bytes_loaded = static_cast<double>(p.count) * sizeof(T);
  cost.bytes_stored = sizeof(T);
  cost.compute_cycles = static_cast<double>(p.count) * 0.25;
  if (p.inner_reduced) {
    // A: per output element, contiguous rows of p.inner.
    parallel_for(pool, p.num_out, cost, [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m) {
        const T* base = x + kept_offset(p, m);
        const T s = shift ? shift[m] : T(0);
        T a = P::identity();
        bool first = true;
        for_each_reduced(p, [&](int64_t off) {
          const T r = reduce_row<T, P>(base + off, p.inner, s);
          a = first ? r : P::comb(a, r);
          first = false;
        });
        acc[m] = a;
      }
    });
    return;
  }
  // B: output rows of p.inner contiguous elements; each accumulates input
  // rows elementwise. Split across the pool over output elements.
  const int64_t L = p.inner;
  parallel_for(pool, 0, p.num_out, column_grain(cost, L), [&](int64_t b, int64_t e) {
    int64_t pos = b;
    while (pos < e) {
      const int64_t q = pos / L, c0 = pos % L;
      const int64_t len = std::min(L - c0, e - pos);
      const T* base = x + kept_offset(p, q) + c0;
      T* __restrict a = acc + pos;
      const T* sh = shift ? shift + pos : nullptr;
      for (int64_t j = 0; j < len; ++j) a[j] = P::identity();
      for_each_reduced(p, [&](int64_t off) {
        const T* __restrict row = base + off;
        if (sh) {
          for (int64_t j = 0; j < len; ++j) a[j] = P::comb(a[j], P::map(row[j], sh[j]));
        } else {
          for (int64_t j = 0; j < len; ++j) a[j] = P::comb(a[j], P::map(row[j], T(0)));
        }
      });
      pos += len;
    }
  });
}

// ------------------------------------------------------------------ kernel

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const NodeInfo& node, RKind kind, bool axes_input) : kind_(kind), axes_input_(axes_input) {
    keepdims_ = node.attrs.get_int("keepdims", 1) != 0;
    noop_with_empty_axes_ = axes_input && node.attrs.get_int("noop_with_empty_axes", 0) != 0;
    if (!axes_input && node.attrs.has("axes")) {
      axes_ = node.attrs.get_ints("axes");
      has_axes_ = true;
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    std::vector<int64_t> axes = axes_;
    bool has_axes = has_axes_;
    if (axes_input_ && ctx.has_input(1)) {
      axes = ctx.input(1).to_int64_vector();
      has_axes = true;
    }
    if (has_axes && axes.empty()) has_axes = false;
    // noop_with_empty_axes and no axes: nothing is reduced, but each element
    // still goes through the reduction's map (x^2, log x, |x|), as in ONNX's
    // reference and ONNX Runtime.
    const bool noop = !has_axes && noop_with_empty_axes_;
    std::vector<bool> reduced(static_cast<size_t>(rank), !has_axes && !noop);
    for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(node, a, rank))] = true;
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[static_cast<size_t>(d)]) out_shape.push_back(x.dim(d));
      else if (keepdims_) out_shape.push_back(1);
    }
    const bool int_ok = kind_ != RKind::kL2 && kind_ != RKind::kLogSum && kind_ != RKind::kLogSumExp;
    auto go = [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, x.dtype(), out_shape);
      run<T>(ctx.pool(), x.shape(), reduced, x.data<T>(), out.mutable_data<T>());
    };
    if (int_ok) dispatch<float, double, int32_t, int64_t>(x.dtype(), node, "input data", go);
    else dispatch<float, double>(x.dtype(), node, "input data", go);
  }

 private:
  template <class T>
  void run(ThreadPool* pool, const Shape& shape, const std::vector<bool>& reduced, const T* x, T* out) const {
    const Plan p = make_plan(shape, reduced);
    const T count = static_cast<T>(p.count);
    auto finalize = [&](auto fn) {
      for (int64_t m = 0; m < p.num_out; ++m) out[m] = fn(out[m]);
    };
    switch (kind_) {
      case RKind::kSum: return run_plan<T, SumP<T>>(pool, p, x, out, nullptr);
      case RKind::kMean:
        run_plan<T, SumP<T>>(pool, p, x, out, nullptr);
        if (p.count == 0) return finalize([](T) { return std::numeric_limits<T>::quiet_NaN(); });
        return finalize([count](T v) { return static_cast<T>(v / count); });
      case RKind::kMax: return run_plan<T, MaxP<T>>(pool, p, x, out, nullptr);
      case RKind::kMin: return run_plan<T, MinP<T>>(pool, p, x, out, nullptr);
      case RKind::kProd: return run_plan<T, ProdP<T>>(pool, p, x, out, nullptr);
      case RKind::kL1: return run_plan<T, L1P<T>>(pool, p, x, out, nullptr);
      case RKind::kSumSquare: return run_plan<T, SqP<T>>(pool, p, x, out, nullptr);
      case RKind::kL2:
        if constexpr (std::is_floating_point_v<T>) {
          run_plan<T, SqP<T>>(pool, p, x, out, nullptr);
          return finalize([](T v) { return std::sqrt(v); });
        }
        break;
      case RKind::kLogSum:
        if constexpr (std::is_floating_point_v<T>) {
          run_plan<T, SumP<T>>(pool, p, x, out, nullptr);
          return finalize([](T v) { return std::log(v); });
        }
        break;
      case RKind::kLogSumExp:
        if constexpr (std::is_floating_point_v<T>) {
          // max first (as the shift; 0 where it is not finite), then
          // shift + log(sum(exp(x - shift))).
          std::vector<T> shift(static_cast<size_t>(p.num_out));
          run_plan<T, MaxP<T>>(pool, p, x, shift.data(), nullptr);
          for (T& s : shift)
            if (!std::isfinite(s)) s = T(0);
          run_plan<T, ExpP<T>>(pool, p, x, out, shift.data());
          for (int64_t m = 0; m < p.num_out; ++m) out[m] = shift[static_cast<size_t>(m)] + std::log(out[m]);
          return;
        }
        break;
    }
  }

  RKind kind_;
  bool axes_input_;
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  bool has_axes_ = false;
  std::vector<int64_t> axes_;
};

// ------------------------------------------------------------------ ArgMax / ArgMin

class ArgKernel final : public OpKernel {
 public:
  ArgKernel(const NodeInfo& node, bool is_max)
      : is_max_(is_max),
        axis_(node.attrs.get_int("axis", 0)),
        keepdims_(node.attrs.get_int("keepdims", 1) != 0),
        last_(node.attrs.get_int("select_last_index", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    const int64_t axis = normalize_axis(node, axis_, rank);
    const int64_t R = x.dim(axis);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
    Shape out_shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis) out_shape.push_back(x.dim(d));
      else if (keepdims_) out_shape.push_back(1);
    }
    if (R == 0 && outer * inner > 0) fail(node, fmt::format("cannot reduce over the empty axis {} of input {}", axis, x.describe()));
    dispatch<float, double, int32_t, int64_t, int8_t, uint8_t>(x.dtype(), node, "input data", [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, DataType::kInt64, out_shape);
      if (is_max_) run<T, true>(ctx.pool(), x.data<T>(), out.mutable_data<int64_t>(), outer, R, inner);
      else run<T, false>(ctx.pool(), x.data<T>(), out.mutable_data<int64_t>(), outer, R, inner);
    });
  }

 private:
  template <class T, bool Max>
  static bool better(T v, T best, bool last) {
    if constexpr (Max) return last ? v >= best : v > best;
    else return last ? v <= best : v < best;
  }

  template <class T, bool Max>
  void run(ThreadPool* pool, const T* x, int64_t* out, int64_t outer, int64_t R, int64_t inner) const {
    const bool last = last_;
    Cost cost;
    cost.bytes_loaded = static_cast<double>(R) * sizeof(T);
    cost.bytes_stored = 8;
    cost.compute_cycles = static_cast<double>(R) * 0.5;
    parallel_for(pool, 0, outer * inner, column_grain(cost, inner), [&](int64_t b, int64_t e) {
      int64_t pos = b;
      while (pos < e) {
        const int64_t o = pos / inner, c0 = pos % inner;
        const int64_t len = std::min(inner - c0, e - pos);
        const T* base = x + o * R * inner + c0;
        if (inner == 1) {
          T best = base[0];
          int64_t bi = 0;
          for (int64_t r = 1; r < R; ++r)
            if (better<T, Max>(base[r], best, last)) {
              best = base[r];
              bi = r;
            }
          out[pos] = bi;
        } else {
          constexpr int64_t kChunk = 256;
          T best[kChunk];
          for (int64_t j0 = 0; j0 < len; j0 += kChunk) {
            const int64_t n = std::min(kChunk, len - j0);
            int64_t* __restrict idx = out + pos + j0;
            for (int64_t j = 0; j < n; ++j) {
              best[j] = base[j0 + j];
              idx[j] = 0;
            }
            for (int64_t r = 1; r < R; ++r) {
              const T* __restrict row = base + r * inner + j0;
              for (int64_t j = 0; j < n; ++j) {
                const bool up = better<T, Max>(row[j], best[j], last);
                best[j] = up ? row[j] : best[j];
                idx[j] = up ? r : idx[j];
              }
            }
          }
        }
        pos += len;
      }
    });
  }

  bool is_max_;
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

}  // namespace

void register_reduce(KernelRegistry& r) {
  for (RKind k : {RKind::kSum, RKind::kMean, RKind::kMax, RKind::kMin, RKind::kProd, RKind::kL1, RKind::kL2,
                  RKind::kLogSum, RKind::kLogSumExp, RKind::kSumSquare}) {
    // `axes` is an attribute up to opset 12 (ReduceSum) / 17 (the others)
    // and an optional input (with noop_with_empty_axes) from 13 / 18.
    const int input_from = k == RKind::kSum ? 13 : 18;
    auto attr_form = [k](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
      return std::make_unique<ReduceKernel>(node, k, false);
    };
    auto input_form = [k](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
      return std::make_unique<ReduceKernel>(node, k, true);
    };
    r.add("", kind_name(k), 1, input_from - 1, attr_form);
    r.add("", kind_name(k), input_from, kMaxOpset, input_form);
  }
  // ArgMax / ArgMin: opset 12 adds select_last_index (absent = 0 before).
  r.add("", "ArgMax", 1, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ArgKernel>(node, true);
  });
  r.add("", "ArgMin", 1, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ArgKernel>(node, false);
  });
}

}  // namespace spindle::kernels::reduce
