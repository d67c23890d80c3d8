// softmax.cpp — Softmax, LogSoftmax, Hardmax.
//
// Opset < 13: the input is coerced to 2D [prod(dims[:axis]), prod(dims[axis:])]
// (axis default 1) and normalized along the rows. Opset 13+: normalized along
// `axis` (default -1), viewed as [outer, D, inner].
//   inner == 1 (the last axis, the common case): per row, max with 32
//   accumulator lanes, then exp(x - max) (vec_math polynomial, float32) stored
//   and summed in lanes, then one scaling pass — all vectorizable loops;
//   inner > 1: columns are processed in chunks of up to 256, vectorized
//   across the chunk.
// The per-row and per-chunk loops are in softmax.isa.cpp, compiled per ISA
// level. Rows (or column chunks) are split across the pool; each row is computed
// by one thread in a fixed order, so results are bitwise identical for any
// thread count. dtypes: float32, float64.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/math/elementwise.h"
#include "kernels/reduce/reduce_ops.h"
#include "primitives/softmax/softmax_isa.h"

namespace spindle::kernels::reduce {
namespace {

using SKind = SoftmaxKind;

template <class T>
void softmax_rows(SKind kind, const T* x, T* y, int64_t rows, int64_t D, ThreadPool* pool) {
  static const auto row_f32 = SPINDLE_ISA_SELECT(softmax_row_float);
  static const auto row_f64 = SPINDLE_ISA_SELECT(softmax_row_double);
  Cost cost;
  cost.bytes_loaded = static_cast<double>(D) * sizeof(T) * 2;
  cost.bytes_stored = static_cast<double>(D) * sizeof(T);
  cost.compute_cycles = static_cast<double>(D) * 3.0;
  parallel_for(pool, rows, cost, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, float>) row_f32(kind, x + r * D, y + r * D, D);
      else row_f64(kind, x + r * D, y + r * D, D);
    }
  });
}

// [outer, D, inner] with inner > 1: columns in chunks.
template <class T>
void softmax_cols(SKind kind, const T* x, T* y, int64_t outer, int64_t D, int64_t inner, ThreadPool* pool) {
  static const auto cols_f32 = SPINDLE_ISA_SELECT(softmax_cols_float);
  static const auto cols_f64 = SPINDLE_ISA_SELECT(softmax_cols_double);
  Cost cost;
  cost.bytes_loaded = static_cast<double>(D) * sizeof(T) * 2;
  cost.bytes_stored = static_cast<double>(D) * sizeof(T);
  cost.compute_cycles = static_cast<double>(D) * 3.0;
  parallel_for(pool, 0, outer * inner, column_grain(cost, inner), [&](int64_t b, int64_t e) {
    int64_t pos = b;
    while (pos < e) {
      const int64_t o = pos / inner, c0 = pos % inner;
      const int64_t n = std::min({inner - c0, e - pos, kSoftmaxChunk});
      const int64_t at = o * D * inner + c0;
      if constexpr (std::is_same_v<T, float>) cols_f32(kind, x + at, y + at, D, inner, n);
      else cols_f64(kind, x + at, y + at, D, inner, n);
      pos += n;
    }
  });
}

class SoftmaxKernel final : public OpKernel {
 public:
  SoftmaxKernel(const NodeInfo& node, SKind kind)
      : kind_(kind), coerce_2d_(node.opset < 13), axis_(node.attrs.get_int("axis", node.opset < 13 ? 1 : -1)) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank == 0) fail(node, fmt::format("input {} must have rank >= 1", x.describe()));
    const int64_t axis = normalize_axis(node, axis_, rank);
    int64_t outer = 1, D = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
    if (coerce_2d_) {
      for (int64_t d = axis; d < rank; ++d) D *= x.dim(d);
    } else {
      D = x.dim(axis);
      for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
    }
    math::dispatch<float, double>(x.dtype(), node, "input", [&](auto tag) {
      using T = decltype(tag);
      Tensor& out = ctx.output(0, x.dtype(), x.shape());
      if (x.numel() == 0) return;
      if (inner == 1) softmax_rows<T>(kind_, x.data<T>(), out.mutable_data<T>(), outer, D, ctx.pool());
      else softmax_cols<T>(kind_, x.data<T>(), out.mutable_data<T>(), outer, D, inner, ctx.pool());
    });
  }

 private:
  SKind kind_;
  bool coerce_2d_;
  int64_t axis_;
};

}  // namespace

void register_softmax(KernelRegistry& r) {
  const std::pair<const char*, SKind> ops[] = {
      {"Softmax", SKind::kSoftmax}, {"LogSoftmax", SKind::kLogSoftmax}, {"Hardmax", SKind::kHardmax}};
  for (const auto& [name, kind] : ops) {
    auto f = [kind = kind](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
      return std::make_unique<SoftmaxKernel>(node, kind);
    };
    r.add("", name, 1, 12, f);   // coerce to 2D at axis (default 1)
    r.add("", name, 13, 17, f);  // along axis (default -1)
  }
}

}  // namespace spindle::kernels::reduce
