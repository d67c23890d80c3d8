// qlinear_gate.cpp — spindle.QLinearGateMul (1), which the optimizer's
// QLinearGateMulFusion writes for a squeeze-excite scaling between
// quantized tensors, DQ(G) -> f -> Mul(., DQ(X)) -> Q:
//
//   Y = Q(table[G] * DQ(X)), G broadcast against X (numpy rules)
//
// Inputs: X (uint8 / int8), x_scale (one float32), x_zero_point (optional,
// one value of X's type), G (uint8 / int8), table (256 float32: f(DQ(g)) for
// each byte g of G, computed by the float kernels when the pass fused the
// unit), y_scale, y_zero_point (optional, X's type; Y has X's type).
// Attribute channels_last (0): X and Y are the NCHW tensors' NHWC
// permutations ([N, spatial..., C]), as NhwcTransformer keeps them;
// gate_channels_last (0): G is too (X's rank), else G is as the NCHW op
// reads it (a [N, C, 1, 1] gate has the same bytes either way). The float arithmetic is the unfused one's, value by value
// (DequantizeLinear, the Mul, QuantizeLinear: primitives/quant/requant.h),
// so the result has its bits. A G of shape [N or 1, C or 1, 1, ...] (one
// gate per channel) runs rows of pixels' channels (NHWC) or planes (NCHW), split
// across the pool by shape; a G of X's shape and layout (a Swish) runs X's
// rows with a gate per value; other broadcasts expand X and the gates first.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_params.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

namespace {

using qparams::require_q8_input;
using qparams::scalar_scale;
using qparams::scalar_zero_point;

// Physical dimension of logical (NCHW) dimension d, for rank r.
int64_t physical_dim(int64_t d, int64_t r, bool channels_last) {
  if (!channels_last || d == 0) return d;
  return d == 1 ? r - 1 : d - 1;
}

Shape logical_shape(const Shape& s, bool channels_last) {
  Shape l(s.size());
  const int64_t r = static_cast<int64_t>(s.size());
  for (int64_t d = 0; d < r; ++d) l[static_cast<size_t>(d)] = s[static_cast<size_t>(physical_dim(d, r, channels_last))];
  return l;
}

Shape physical_shape(const Shape& l, bool channels_last) {
  Shape s(l.size());
  const int64_t r = static_cast<int64_t>(l.size());
  for (int64_t d = 0; d < r; ++d) s[static_cast<size_t>(physical_dim(d, r, channels_last))] = l[static_cast<size_t>(d)];
  return s;
}

// Offsets into a tensor of physical shape `phys` (NHWC when `in_last`; its
// logical shape left-padded with ones to out's rank) for each element of the
// output in its physical order (NHWC when `out_last`).
std::vector<int64_t> broadcast_offsets(const Shape& phys, bool in_last, const Shape& out_l, bool out_last) {
  const int64_t r = static_cast<int64_t>(out_l.size());
  const Shape l = logical_shape(phys, in_last);
  // Strides of the logical dimensions in the tensor's memory (0: broadcast).
  Shape pstride(phys.size(), 1);
  for (int64_t d = static_cast<int64_t>(phys.size()) - 2; d >= 0; --d)
    pstride[static_cast<size_t>(d)] = pstride[static_cast<size_t>(d + 1)] * phys[static_cast<size_t>(d + 1)];
  Shape lstride(static_cast<size_t>(r), 0);
  const int64_t pad = r - static_cast<int64_t>(l.size());
  for (int64_t d = 0; d < static_cast<int64_t>(l.size()); ++d)
    if (l[static_cast<size_t>(d)] != 1)
      lstride[static_cast<size_t>(d + pad)] =
          pstride[static_cast<size_t>(physical_dim(d, static_cast<int64_t>(l.size()), in_last))];
  const Shape out_p = physical_shape(out_l, out_last);
  const int64_t total = shape_numel(out_p);
  std::vector<int64_t> off(static_cast<size_t>(total));
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);  // physical multi-index
  for (int64_t i = 0; i < total; ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < r; ++d)
      o += idx[static_cast<size_t>(physical_dim(d, r, out_last))] * lstride[static_cast<size_t>(d)];
    off[static_cast<size_t>(i)] = o;
    for (int64_t p = r - 1; p >= 0 && ++idx[static_cast<size_t>(p)] == out_p[static_cast<size_t>(p)]; --p)
      idx[static_cast<size_t>(p)] = 0;
  }
  return off;
}

class QLinearGateMulKernel final : public OpKernel {
 public:
  explicit QLinearGateMulKernel(const NodeInfo& node)
      : channels_last_(node.attrs.get_int("channels_last", 0) != 0),
        gate_last_(node.attrs.get_int("gate_channels_last", 0) != 0) {
    if (gate_last_ && !channels_last_)
      fail(node, "attribute gate_channels_last is 1, expected 0 when channels_last is 0");
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& G = ctx.input(3);
    const Tensor& table = ctx.input(4);
    require_q8_input(node, X, "X");
    require_q8_input(node, G, "G");
    if (table.dtype() != DataType::kFloat32 || table.numel() != 256)
      fail(node, fmt::format("input table is {}, expected 256 float32 values", table.describe()));
    const float sx = scalar_scale(ctx, 1, "x_scale"), sy = scalar_scale(ctx, 5, "y_scale");
    const int32_t zx = scalar_zero_point(ctx, 2, "x_zero_point", X.dtype());
    const int32_t zy = scalar_zero_point(ctx, 6, "y_zero_point", X.dtype());
    if (channels_last_ && X.rank() < 3)
      fail(node, fmt::format("input X is {}, expected rank >= 3 with channels_last", X.describe()));
    if (gate_last_ && G.rank() != X.rank())
      fail(node, fmt::format("input G is {}, expected X's rank {} with gate_channels_last", G.describe(), X.rank()));
    const Shape xl = logical_shape(X.shape(), channels_last_), gl = logical_shape(G.shape(), gate_last_);
    const Shape shapes[] = {xl, gl};
    const Shape out_l = broadcast_shapes(node, shapes);
    size_numel(node, out_l, "output Y");
    Tensor& Y = ctx.output(0, X.dtype(), physical_shape(out_l, channels_last_));
    const int64_t total = Y.numel();
    if (total == 0) return;
    const float* t = table.data<float>();
    const auto* gb = static_cast<const uint8_t*>(G.raw_data());
    QuantRow q;
    q.sign = X.dtype() == DataType::kInt8;
    q.a_scale = sx;
    q.a_zero = static_cast<float>(zx);
    q.y_scale = sy;
    q.y_zero = static_cast<float>(zy);
    q.lo = q.sign ? -128.0f : 0.0f;
    q.hi = q.sign ? 127.0f : 255.0f;
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    auto* y = static_cast<uint8_t*>(Y.raw_mutable_data());

    // One gate per value in X's layout (a Swish, X * Sigmoid(X)): X's rows
    // as they are, each block's gates looked up into the thread's scratch.
    if (gl == out_l && xl == out_l && gate_last_ == channels_last_) {
      per_value(ctx, q, x, y, total, t, gb);
      return;
    }

    // The gates, f(DQ(g)), as the float kernels computed them.
    std::vector<float> gates(static_cast<size_t>(G.numel()));
    for (size_t i = 0; i < gates.size(); ++i) gates[i] = t[gb[i]];
    if (per_channel(ctx, q, x, y, total, gates, xl, gl, out_l)) return;
    any_broadcast(ctx, q, X, G, out_l, gates, y, total);
  }

 private:
  static void per_value(KernelContext& ctx, const QuantRow& q, const uint8_t* x, uint8_t* y, int64_t total,
                        const float* t, const uint8_t* gb) {
    static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_gate_row);
    parallel_for(ctx.pool(), 0, total, grain_for_cost(ops_cost(1.0)), [&](int64_t i0, int64_t i1) {
      constexpr int64_t kBlock = 4096;
      float* ge = scratch_floats(0, static_cast<size_t>(kBlock));
      QuantRow row = q;
      row.gate = ge;
      row.gate_per_value = true;
      for (int64_t b0 = i0; b0 < i1; b0 += kBlock) {
        const int64_t n = std::min(kBlock, i1 - b0);
        for (int64_t i = 0; i < n; ++i) ge[i] = t[gb[b0 + i]];
        row.n = n;
        row.a = x + b0;
        row.y = y + b0;
        row_fn(row);
      }
    });
  }

  // One gate per (n, c); false when the gate is not of that form.
  bool per_channel(KernelContext& ctx, const QuantRow& q, const uint8_t* x, uint8_t* y, int64_t total,
                   const std::vector<float>& gates, const Shape& xl, const Shape& gl, const Shape& out_l) const {
    static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_gate_row);
    // One gate per (n, c): G's logical shape, left-padded, is [N | 1, C | 1, 1, ...].
    const int64_t r = static_cast<int64_t>(xl.size());
    Shape gp(static_cast<size_t>(r), 1);
    std::copy(gl.begin(), gl.end(), gp.end() - static_cast<int64_t>(gl.size()));
    bool gate_per_channel = out_l == xl && r >= 2;
    for (int64_t d = 2; d < r && gate_per_channel; ++d) gate_per_channel = gp[static_cast<size_t>(d)] == 1;
    if (!gate_per_channel) return false;
    const int64_t N = xl[0], C = xl[1], inner = C > 0 && N > 0 ? total / (N * C) : 0;
    const int64_t gs_n = gp[0] == 1 ? 0 : gp[1], gs_c = gp[1] == 1 ? 0 : 1;
    if (channels_last_) {
      // Rows of `reps` pixels of C channels (about 1024 values), the
      // image's gates repeated along a row.
      const int64_t reps = std::max<int64_t>(1, 1024 / std::max<int64_t>(C, 1));
      const int64_t images = gs_n == 0 ? 1 : N;
      std::vector<float> repeated(static_cast<size_t>(images * reps * C));
      for (int64_t n = 0; n < images; ++n)
        for (int64_t k = 0; k < reps * C; ++k)
          repeated[static_cast<size_t>(n * reps * C + k)] = gates[static_cast<size_t>(n * gs_n + (k % C) * gs_c)];
      const int64_t runs = ceil_div(inner, reps);  // rows per image
      parallel_for(ctx.pool(), 0, N * runs, grain_for_cost(ops_cost(static_cast<double>(reps * C))),
                   [&](int64_t r0, int64_t r1) {
        QuantRow row = q;
        row.gate_per_value = true;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t n = r / runs, p0 = (r % runs) * reps, p1 = std::min(inner, p0 + reps);
          const int64_t at = (n * inner + p0) * C;
          row.n = (p1 - p0) * C;
          row.a = x + at;
          row.y = y + at;
          row.gate = repeated.data() + (gs_n == 0 ? 0 : n) * reps * C;
          row_fn(row);
        }
      });
    } else {
      // Planes of `inner` values, one gate each.
      parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(static_cast<double>(inner))),
                   [&](int64_t p0, int64_t p1) {
        QuantRow row = q;
        row.n = inner;
        for (int64_t p = p0; p < p1; ++p) {
          row.a = x + p * inner;
          row.y = y + p * inner;
          row.gate = gates.data() + (p / C) * gs_n + (p % C) * gs_c;
          row_fn(row);
        }
      });
    }
    return true;
  }

  void any_broadcast(KernelContext& ctx, const QuantRow& q, const Tensor& X, const Tensor& G, const Shape& out_l,
                     const std::vector<float>& gates, uint8_t* y, int64_t total) const {
    static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_gate_row);
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    // Any other broadcast: X's values and the gates expanded to the output.
    const std::vector<int64_t> xo = broadcast_offsets(X.shape(), channels_last_, out_l, channels_last_);
    const std::vector<int64_t> go = broadcast_offsets(G.shape(), gate_last_, out_l, channels_last_);
    std::vector<uint8_t> xe(static_cast<size_t>(total));
    std::vector<float> ge(static_cast<size_t>(total));
    for (int64_t i = 0; i < total; ++i) {
      xe[static_cast<size_t>(i)] = x[xo[static_cast<size_t>(i)]];
      ge[static_cast<size_t>(i)] = gates[static_cast<size_t>(go[static_cast<size_t>(i)])];
    }
    parallel_for(ctx.pool(), 0, total, grain_for_cost(ops_cost(1.0)), [&](int64_t i0, int64_t i1) {
      QuantRow row = q;
      row.n = i1 - i0;
      row.a = xe.data() + i0;
      row.y = y + i0;
      row.gate = ge.data() + i0;
      row.gate_per_value = true;
      row_fn(row);
    });
  }

  bool channels_last_, gate_last_;
};

}  // namespace

void register_qlinear_gate(KernelRegistry& r) {
  r.add("spindle", "QLinearGateMul", 1, 1, factory_of<QLinearGateMulKernel>());
}

}  // namespace spindle::kernels::nn
