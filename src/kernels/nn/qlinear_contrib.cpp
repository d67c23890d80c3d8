// qlinear_contrib.cpp — quantized operators of the com.microsoft domain (as
// ONNX Runtime defines them), which QDQ models carry and the optimizer's
// QDQFusion pass writes:
//   QLinearAdd, QLinearMul (1): C = Q(DQ(A) op DQ(B)), numpy broadcasting;
//   QLinearSigmoid, QLinearLeakyRelu (1): Y = Q(f(DQ(X))), one table of 256
//     values per node run;
//   QLinearGlobalAveragePool (1): Y = Q(mean of DQ(X) over each plane), NCHW
//     or channels_last (blocks of channels summed a pixel row at a time);
//   QGemm (1): Y = alpha (A - a_zp)(B - b_zp) a_scale b_scale + C a_scale
//     b_scale, quantized with y_scale / y_zero_point when given, else float32;
//     a constant B is packed once for the int8 GEMM (qgemm.h).
// Zero points are optional (0 of the data's type); scales are float32. The
// element-wise ops compute in float32 exactly as the unfused
// DequantizeLinear, float op, QuantizeLinear sequence does (round half to
// even, saturation), so they give the same bits; except QLinearAdd, which
// computes ONNX Runtime's QLinearAdd arithmetic (qlinear_binary_row: the
// scales' ratios and fused multiply-adds; ONNX Runtime's bits, which can be
// one step from the unfused ops' where a sum sits at a rounding tie), as
// ONNX Runtime does for the QLinearAdd its QDQ fusion writes. QGemm's C
// broadcasts to M x N. QLinearAdd accepts a
// spindle attribute `activation` = "Relu" (the QDQFusion pass folds a Relu
// before the output quantization into it: the output is then clamped below
// at C_zero_point, which is what quantizing the Relu's output gives).
// Blocks of elements, planes or output rows split across the pool by shape.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_params.h"
#include "primitives/gemm/qgemm.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

namespace {

using qparams::is_q8;
using qparams::require_q8_input;
using qparams::scalar_scale;
using qparams::scalar_zero_point;

// QuantizeLinear of one float value, as its kernel computes it.
template <class Q>
Q quantize_value(float v, float scale, int32_t zp) {
  const double q = static_cast<double>(std::nearbyint(v / scale)) + static_cast<double>(zp);
  if (std::isnan(q)) return Q{0};
  return static_cast<Q>(std::clamp(q, static_cast<double>(std::numeric_limits<Q>::min()),
                                   static_cast<double>(std::numeric_limits<Q>::max())));
}

// DequantizeLinear of every value of a type: table[v - min].
std::vector<float> dequant_table(DataType t, int32_t zp, float scale) {
  std::vector<float> table(256);
  const int lo = t == DataType::kUInt8 ? 0 : -128;
  for (int i = 0; i < 256; ++i)
    table[static_cast<size_t>(i)] = static_cast<float>(static_cast<int64_t>(lo + i) - zp) * scale;
  return table;
}

template <class Q>
int index_of(Q v) {
  return std::is_same_v<Q, uint8_t> ? static_cast<int>(v) : static_cast<int>(v) + 128;
}

// ---------------------------------------------------------------- binary

enum class BinOp { kAdd, kMul };

// The offsets into A and B (element strides as, bs over `shape`) of row r of
// the output's last dimension.
std::pair<int64_t, int64_t> row_offsets(const Shape& shape, const Shape& as, const Shape& bs, int64_t r) {
  int64_t ao = 0, bo = 0;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
    const int64_t idx = r % shape[static_cast<size_t>(d)];
    r /= shape[static_cast<size_t>(d)];
    ao += idx * as[static_cast<size_t>(d)];
    bo += idx * bs[static_cast<size_t>(d)];
  }
  return {ao, bo};
}

// QLinearAdd in ONNX Runtime's arithmetic (qlinear_binary_row): rows along the
// output's last dimension of more than one value; an input broadcast along
// it is one value for the row (with A that one, the operands swap, as ONNX
// Runtime's kernel swaps them). q carries the scales, zero points and range.
template <class Q>
void ratio_add(KernelContext& ctx, const Tensor& A, const Tensor& B, const Shape& out_shape, QuantRow q, Q* y) {
  static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_binary_row);
  Shape shape = out_shape;
  while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
  const Shape as = broadcast_strides(A.shape(), shape), bs = broadcast_strides(B.shape(), shape);
  const int64_t rank = static_cast<int64_t>(shape.size()), total = shape_numel(shape);
  const int64_t inner = rank == 0 ? 1 : shape.back(), rows = inner > 0 ? total / inner : 0;
  const bool a_one = rank == 0 || as.back() == 0, b_one = !a_one && (rank == 0 || bs.back() == 0);
  const Q* a = A.data<Q>();
  const Q* b = B.data<Q>();
  if (a_one) {
    std::swap(q.a_scale, q.b_scale);
    std::swap(q.a_zero, q.b_zero);
  }
  q.b_scalar = a_one || b_one;
  q.n = inner;
  const int64_t grain = std::max<int64_t>(1, grain_for_cost(ops_cost(4.0)) / std::max<int64_t>(inner, 1));
  parallel_for(ctx.pool(), 0, rows, grain, [&](int64_t r0, int64_t r1) {
    QuantRow row = q;
    for (int64_t r = r0; r < r1; ++r) {
      const auto [ao, bo] = row_offsets(shape, as, bs, r);
      row.a = a_one ? b + bo : a + ao;
      row.b = a_one ? a + ao : b + bo;
      row.y = y + r * inner;
      row_fn(row);
    }
  });
}

class QLinearBinaryKernel final : public OpKernel {
 public:
  QLinearBinaryKernel(const NodeInfo& node, BinOp op) : op_(op) {
    const std::string act = node.attrs.get_string("activation", "");
    if (!act.empty() && (act != "Relu" || op != BinOp::kAdd))
      fail_unsupported(node, fmt::format("attribute activation is '{}', expected Relu (QLinearAdd) or none", act));
    relu_ = act == "Relu";
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(3);
    require_q8_input(node, A, "A");
    require_q8_input(node, B, "B");
    if (A.dtype() != B.dtype())
      fail(node, fmt::format("inputs A {} and B {} differ in type, expected the same", A.describe(), B.describe()));
    const float sa = scalar_scale(ctx, 1, "A_scale"), sb = scalar_scale(ctx, 4, "B_scale"),
                sc = scalar_scale(ctx, 6, "C_scale");
    const int32_t za = scalar_zero_point(ctx, 2, "A_zero_point", A.dtype());
    const int32_t zb = scalar_zero_point(ctx, 5, "B_zero_point", B.dtype());
    const int32_t zc = scalar_zero_point(ctx, 7, "C_zero_point", A.dtype());
    const Shape shapes[] = {A.shape(), B.shape()};
    const Shape out_shape = broadcast_shapes(node, shapes);
    size_numel(node, out_shape, "output C");
    Tensor& Y = ctx.output(0, A.dtype(), out_shape);
    const std::vector<float> ta = dequant_table(A.dtype(), za, sa), tb = dequant_table(B.dtype(), zb, sb);
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* a = A.data<Q>();
      const Q* b = B.data<Q>();
      Q* y = Y.mutable_data<Q>();
      const Q floor = relu_ ? static_cast<Q>(std::max<int32_t>(zc, std::numeric_limits<Q>::min())) : std::numeric_limits<Q>::min();
      auto one = [&](Q av, Q bv) {
        const float fa = ta[static_cast<size_t>(index_of(av))], fb = tb[static_cast<size_t>(index_of(bv))];
        const Q q = quantize_value<Q>(fa * fb, sc, zc);  // QLinearMul (QLinearAdd: ratio_add)
        return q < floor ? floor : q;
      };
      const int64_t total = shape_numel(out_shape);
      const int64_t grain = grain_for_cost(ops_cost(4.0));  // an element: dequantize, op, requantize
      if (op_ == BinOp::kAdd) {
        QuantRow q;
        q.sign = std::is_same_v<Q, int8_t>;
        q.a_scale = sa, q.a_zero = static_cast<float>(za), q.b_scale = sb, q.b_zero = static_cast<float>(zb);
        q.y_scale = sc, q.y_zero = static_cast<float>(zc);
        q.lo = static_cast<float>(floor), q.hi = static_cast<float>(std::numeric_limits<Q>::max());
        if (total > 0) ratio_add<Q>(ctx, A, B, out_shape, q, y);
        return;
      }
      if (A.shape() == B.shape() && std::isfinite(sc) && sc != 0.0f) {
        // The same float operations in a loop the compiler vectorizes: the
        // quotient is rounded half to even by adding and subtracting 1.5 *
        // 2^23 (exact below 2^22; it is clamped to +-2^22 first, which
        // saturates the same way).
        const float lo = static_cast<float>(floor), hi = static_cast<float>(std::numeric_limits<Q>::max());
        const float fza = static_cast<float>(za), fzb = static_cast<float>(zb), fzc = static_cast<float>(zc);
        static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_binary_row);
        parallel_for(ctx.pool(), 0, total, grain, [&](int64_t i0, int64_t i1) {
          QuantRow q;
          q.n = i1 - i0;
          q.sign = std::is_same_v<Q, int8_t>;
          q.a = a + i0;
          q.b = b + i0;
          q.y = y + i0;
          q.a_scale = sa;
          q.a_zero = fza;
          q.b_scale = sb;
          q.b_zero = fzb;
          q.y_scale = sc;
          q.y_zero = fzc;
          q.lo = lo;
          q.hi = hi;
          q.multiply = true;
          row_fn(q);
        });
        return;
      }
      if (A.shape() == B.shape() || B.numel() == 1 || A.numel() == 1) {
        const bool a1 = A.numel() == 1 && total != 1, b1 = B.numel() == 1 && total != 1;
        parallel_for(ctx.pool(), 0, total, grain, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) y[i] = one(a[a1 ? 0 : i], b[b1 ? 0 : i]);
        });
        return;
      }
      // General broadcasting: rows of the last output dimension.
      const Shape as = broadcast_strides(A.shape(), out_shape), bs = broadcast_strides(B.shape(), out_shape);
      const int64_t inner = out_shape.back(), rows = inner > 0 ? total / inner : 0;
      parallel_for(ctx.pool(), 0, rows, std::max<int64_t>(1, grain / std::max<int64_t>(inner, 1)),
                   [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const auto [ao, bo] = row_offsets(out_shape, as, bs, r);
          const int64_t sa_in = as.back(), sb_in = bs.back();
          for (int64_t i = 0; i < inner; ++i) y[r * inner + i] = one(a[ao + i * sa_in], b[bo + i * sb_in]);
        }
      });
    };
    if (A.dtype() == DataType::kUInt8) run(uint8_t{});
    else run(int8_t{});
  }

 private:
  BinOp op_;
  bool relu_ = false;
};

// ---------------------------------------------------------------- unary (tables)

enum class UnOp { kSigmoid, kLeakyRelu };

class QLinearUnaryKernel final : public OpKernel {
 public:
  QLinearUnaryKernel(const NodeInfo& node, UnOp op) : op_(op), alpha_(node.attrs.get_float("alpha", 0.01f)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_q8_input(node, X, "X");
    const float sx = scalar_scale(ctx, 1, "X_scale"), sy = scalar_scale(ctx, 3, "Y_scale");
    const int32_t zx = scalar_zero_point(ctx, 2, "X_zero_point", X.dtype());
    const int32_t zy = scalar_zero_point(ctx, 4, "Y_zero_point", X.dtype());
    Tensor& Y = ctx.output(0, X.dtype(), X.shape());
    const std::vector<float> tx = dequant_table(X.dtype(), zx, sx);
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      Q table[256];
      for (int i = 0; i < 256; ++i) {
        const float v = tx[static_cast<size_t>(i)];
        const float f = op_ == UnOp::kSigmoid ? 1.0f / (1.0f + std::exp(-v)) : (v >= 0.0f ? v : alpha_ * v);
        table[i] = quantize_value<Q>(f, sy, zy);
      }
      const Q* x = X.data<Q>();
      Q* y = Y.mutable_data<Q>();
      parallel_for(ctx.pool(), 0, X.numel(), grain_for_cost(ops_cost(1.0)), [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) y[i] = table[index_of(x[i])];
      });
    };
    if (X.dtype() == DataType::kUInt8) run(uint8_t{});
    else run(int8_t{});
  }

 private:
  UnOp op_;
  float alpha_;
};

// ---------------------------------------------------------------- global average pool

class QLinearGlobalAveragePoolKernel final : public OpKernel {
 public:
  explicit QLinearGlobalAveragePoolKernel(const NodeInfo& node)
      : channels_last_(node.attrs.get_int("channels_last", 0) != 0) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_q8_input(node, X, "X");
    if (X.rank() < 3)
      fail(node, fmt::format("input X is {}, expected rank >= 3 (N x C x spatial...)", X.describe()));
    const float sx = scalar_scale(ctx, 1, "x_scale"), sy = scalar_scale(ctx, 3, "y_scale");
    const int32_t zx = scalar_zero_point(ctx, 2, "x_zero_point", X.dtype());
    const int32_t zy = scalar_zero_point(ctx, 4, "y_zero_point", X.dtype());
    const int64_t N = X.dim(0), C = channels_last_ ? X.dim(-1) : X.dim(1);
    Shape ys = X.shape();
    for (int64_t d = 1; d < X.rank(); ++d)
      if (channels_last_ ? d != X.rank() - 1 : d != 1) ys[static_cast<size_t>(d)] = 1;
    const int64_t count = N * C > 0 ? X.numel() / (N * C) : 0;
    if (count == 0) fail(node, fmt::format("input X is {}, expected non-empty planes", X.describe()));
    Tensor& Y = ctx.output(0, X.dtype(), ys);
    // mean = (sum - count * zx) * sx / count, in double; then quantized as QuantizeLinear.
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* x = X.data<Q>();
      Q* y = Y.mutable_data<Q>();
      auto store = [&](int64_t p, int64_t sum) {
        const double mean = static_cast<double>(sum - count * zx) * static_cast<double>(sx) / static_cast<double>(count);
        const double q = std::nearbyint(mean / static_cast<double>(sy)) + zy;
        const double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
        y[p] = static_cast<Q>(std::isnan(q) ? 0.0 : std::clamp(q, lo, hi));
      };
      // Channels-last with int32 sums exact (count * 255 < 2^31): blocks of
      // kBlock channels, each summing the pixels' rows of channels
      // (contiguous, vectorized) instead of one strided channel at a time.
      constexpr int64_t kBlock = 64;
      if (channels_last_ && count <= (int64_t{1} << 23)) {
        const int64_t blocks = ceil_div(C, kBlock);
        parallel_for(ctx.pool(), 0, N * blocks, grain_for_cost(ops_cost(static_cast<double>(count * kBlock) / 16)),
                     [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            const int64_t n = b / blocks, c0 = (b % blocks) * kBlock, width = std::min(kBlock, C - c0);
            int32_t acc[kBlock] = {};
            const Q* xn = x + n * count * C + c0;
            for (int64_t i = 0; i < count; ++i) {
              const Q* row = xn + i * C;
              for (int64_t c = 0; c < width; ++c) acc[c] += row[c];
            }
            for (int64_t c = 0; c < width; ++c) store(n * C + c0 + c, acc[c]);
          }
        });
        return;
      }
      parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(static_cast<double>(count) / 4)), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t n = p / C, c = p % C;
          int64_t sum = 0;
          if (channels_last_) {
            const Q* xn = x + n * count * C + c;
            for (int64_t i = 0; i < count; ++i) sum += xn[i * C];
          } else {
            const Q* xp = x + p * count;
            for (int64_t i = 0; i < count; ++i) sum += xp[i];
          }
          store(p, sum);
        }
      });
    };
    if (X.dtype() == DataType::kUInt8) run(uint8_t{});
    else run(int8_t{});
  }

 private:
  bool channels_last_;
};

// ---------------------------------------------------------------- QGemm

// QGemm's b_zero_point (input 5) per column: N values (0 when absent).
std::vector<int32_t> qgemm_b_zero_points(KernelContext& ctx, const Tensor& B, int64_t N) {
  std::vector<int32_t> zb(static_cast<size_t>(N), 0);
  if (!ctx.has_input(5)) return zb;
  const Tensor& z = ctx.input(5);
  if (z.dtype() != B.dtype() || (z.numel() != 1 && z.numel() != N))
    fail(ctx.node(), fmt::format("input b_zero_point is {}, expected {} with one value or {}", z.describe(),
                                 dtype_name(B.dtype()), N));
  for (int64_t j = 0; j < N; ++j) {
    const int64_t at = z.numel() == 1 ? 0 : j;
    zb[static_cast<size_t>(j)] = B.dtype() == DataType::kUInt8 ? z.data<uint8_t>()[at] : z.data<int8_t>()[at];
  }
  return zb;
}

// QGemm's C (input 6; int32 at A * B's scale, broadcast to M x N): per column
// (N values, 0 when absent), or, when it differs between rows ([M, 1] or
// [M, N]; rows set), M x N values.
std::vector<int32_t> qgemm_c(KernelContext& ctx, int64_t M, int64_t N, bool& rows) {
  std::vector<int32_t> bias(static_cast<size_t>(N), 0);
  rows = false;
  if (!ctx.has_input(6)) return bias;
  const Tensor& c = ctx.input(6);
  const Shape mn{M, N};
  bool fits = c.rank() <= 2;
  for (int64_t d = 1; fits && d <= c.rank(); ++d) fits = c.dim(-d) == 1 || c.dim(-d) == mn[static_cast<size_t>(2 - d)];
  if (c.dtype() != DataType::kInt32 || !fits)
    fail(ctx.node(), fmt::format("input C is {}, expected int32 that broadcasts to {} (one value, one per column, "
                                 "one per row or one per output)", c.describe(), shape_to_string(mn)));
  const Shape st = broadcast_strides(c.shape(), mn);
  rows = M > 1 && st[0] != 0;
  if (rows) bias.resize(static_cast<size_t>(M * N));
  const int32_t* cv = c.data<int32_t>();
  for (int64_t i = 0; i < (rows ? M : 1); ++i)
    for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(i * N + j)] = cv[i * st[0] + j * st[1]];
  return bias;
}

class QGemmKernel final : public OpKernel {
 public:
  explicit QGemmKernel(const NodeInfo& node)
      : alpha_(node.attrs.get_float("alpha", 1.0f)), trans_a_(node.attrs.get_int("transA", 0) != 0),
        trans_b_(node.attrs.get_int("transB", 0) != 0) {
    const Tensor* b = node.const_input(3);
    if (node.prepack && b && b->rank() == 2 && is_q8(b->dtype())) {
      const int64_t k = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
      packed_ = qgemm_pack_b(b->raw_data(), b->dtype() == DataType::kInt8, k, n, b->dim(1), trans_b_);
      packed_shape_ = b->shape();
      has_packed_ = true;
    }
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(3);
    require_q8_input(node, A, "A");
    require_q8_input(node, B, "B");
    if (A.rank() != 2 || B.rank() != 2)
      fail(node, fmt::format("inputs A {} and B {}: expected 2-D matrices", A.describe(), B.describe()));
    const int64_t M = trans_a_ ? A.dim(1) : A.dim(0), K = trans_a_ ? A.dim(0) : A.dim(1);
    const int64_t KB = trans_b_ ? B.dim(1) : B.dim(0), N = trans_b_ ? B.dim(0) : B.dim(1);
    if (K != KB)
      fail(node, fmt::format("inputs A {} and B {}: inner dimensions {} and {} differ (transA={}, transB={})",
                             A.describe(), B.describe(), K, KB, trans_a_, trans_b_));
    const float sa = scalar_scale(ctx, 1, "a_scale");
    const int32_t za = scalar_zero_point(ctx, 2, "a_zero_point", A.dtype());
    const Tensor& bs = ctx.input(4);
    if (bs.dtype() != DataType::kFloat32 || (bs.numel() != 1 && bs.numel() != N))
      fail(node, fmt::format("input b_scale is {}, expected float32 with one value or {} (one per column)", bs.describe(), N));
    const std::vector<int32_t> zb = qgemm_b_zero_points(ctx, B, N);
    bool bias_rows = false;
    const std::vector<int32_t> bias = qgemm_c(ctx, M, N, bias_rows);
    const bool quantized = ctx.has_input(7);
    float sy = 1.0f;
    int32_t zy = 0;
    DataType out_type = DataType::kFloat32;
    if (quantized) {
      sy = scalar_scale(ctx, 7, "y_scale");
      out_type = ctx.has_input(8) ? ctx.input(8).dtype() : DataType::kUInt8;
      if (!is_q8(out_type)) fail(node, fmt::format("input y_zero_point is {}, expected uint8 or int8", ctx.input(8).describe()));
      zy = scalar_zero_point(ctx, 8, "y_zero_point", out_type);
    }
    // Per column: the factor from the accumulator to the output (float32, as
    // ONNX Runtime computes it). A quantized output is requantized in
    // qgemm's epilogue with requant_row's arithmetic (ONNX Runtime's).
    std::vector<float> scale(static_cast<size_t>(N));
    for (int64_t j = 0; j < N; ++j) {
      const float s = alpha_ * sa * bs.data<float>()[bs.numel() == 1 ? 0 : j];
      scale[static_cast<size_t>(j)] = quantized ? s / sy : s;
    }
    RequantRow rq;
    if (quantized) {
      rq.bias = bias.data();
      rq.scale = scale.data();
      rq.zp = static_cast<float>(zy);
      rq.lo = out_type == DataType::kUInt8 ? 0.0f : -128.0f;
      rq.hi = out_type == DataType::kUInt8 ? 255.0f : 127.0f;
      rq.y_signed = out_type == DataType::kInt8;
    }
    QGemmPackedB local;
    const QGemmPackedB* packed = &packed_;
    if (!has_packed_ || B.shape() != packed_shape_ || (B.dtype() == DataType::kInt8) != packed_.b_signed) {
      local = qgemm_pack_b(B.raw_data(), B.dtype() == DataType::kInt8, K, N, B.dim(1), trans_b_);
      packed = &local;
    }
    // A row-major M x K (transposed into a copy when transA).
    std::vector<uint8_t> a_copy;
    const uint8_t* a = static_cast<const uint8_t*>(A.raw_data());
    if (trans_a_) {
      a_copy.resize(static_cast<size_t>(M * K));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t p = 0; p < K; ++p) a_copy[static_cast<size_t>(i * K + p)] = a[p * M + i];
      a = a_copy.data();
    }
    Tensor& Y = ctx.output(0, out_type, {M, N});
    const int64_t panel = std::max<int64_t>(packed->panel_columns, 1);
    const int64_t nt = std::min(N, std::max(panel, round_up(std::max<int64_t>(N / 8, 1), panel)));
    const int64_t col_blocks = std::max<int64_t>(ceil_div(N, nt), 1);
    const int64_t mt = 64, row_blocks = std::max<int64_t>(ceil_div(M, mt), 1);
    parallel_for(ctx.pool(), 0, row_blocks * col_blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t r0 = (blk / col_blocks) * mt, rows = std::min(mt, M - r0);
        const int64_t c0 = (blk % col_blocks) * nt, c1 = std::min(N, c0 + nt), cols = c1 - c0;
        if (rows <= 0 || cols <= 0) continue;
        QGemmArgs args;
        args.a = a + r0 * K;
        args.a_signed = A.dtype() == DataType::kInt8;
        args.lda = K;
        args.a_zero_point = za;
        args.m = rows;
        args.b = packed;
        args.b_zero_points = zb.data();
        args.per_column_b_zero_points = true;
        args.col_begin = c0;
        args.col_end = c1;
        if (quantized && !bias_rows) {
          args.requant = &rq;
          args.yq = static_cast<uint8_t*>(Y.raw_mutable_data()) + r0 * N + c0;
          args.ldyq = N;
          qgemm(args);
          continue;
        }
        int32_t* acc = reinterpret_cast<int32_t*>(scratch_floats(2, static_cast<size_t>(rows * cols)));
        args.c = acc;
        args.ldc = cols;
        qgemm(args);
        for (int64_t i = 0; i < rows; ++i) {
          const int32_t* brow = bias.data() + (bias_rows ? (r0 + i) * N : 0) + c0;
          if (quantized) {  // C per row: the epilogue's arithmetic, a row at a time
            static const auto requant_fn = SPINDLE_ISA_SELECT(requant_row);
            RequantRow row = rq;
            row.acc = acc + i * cols;
            row.n = cols;
            row.bias = brow;
            row.scale = scale.data() + c0;
            row.y = static_cast<uint8_t*>(Y.raw_mutable_data()) + (r0 + i) * N + c0;
            requant_fn(row);
            continue;
          }
          for (int64_t j = 0; j < cols; ++j) {
            const double v = (static_cast<double>(acc[i * cols + j]) + brow[j]) *
                             static_cast<double>(scale[static_cast<size_t>(c0 + j)]);
            Y.mutable_data<float>()[(r0 + i) * N + c0 + j] = static_cast<float>(v);
          }
        }
      }
    });
  }

 private:
  float alpha_;
  bool trans_a_, trans_b_;
  bool has_packed_ = false;
  QGemmPackedB packed_;
  Shape packed_shape_;
};

}  // namespace

void register_qlinear_contrib(KernelRegistry& r) {
  const std::string ms = "com.microsoft";
  r.add(ms, "QLinearAdd", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearBinaryKernel>(n, BinOp::kAdd);
  });
  r.add(ms, "QLinearMul", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearBinaryKernel>(n, BinOp::kMul);
  });
  r.add(ms, "QLinearSigmoid", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearUnaryKernel>(n, UnOp::kSigmoid);
  });
  r.add(ms, "QLinearLeakyRelu", 1, 1, [](const NodeInfo& n) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearUnaryKernel>(n, UnOp::kLeakyRelu);
  });
  r.add(ms, "QLinearGlobalAveragePool", 1, 1, factory_of<QLinearGlobalAveragePoolKernel>());
  r.add(ms, "QGemm", 1, 1, factory_of<QGemmKernel>());
}

}  // namespace spindle::kernels::nn
