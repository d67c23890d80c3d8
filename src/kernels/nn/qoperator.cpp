// qoperator.cpp — com.microsoft quantized operators that ONNX Runtime's
// quantization tool writes into QOperator-format models (the ONNX model
// zoo's int8 DenseNet, GoogLeNet, Inception, ShuffleNet), computed as ONNX
// Runtime 1.30's CPU kernels compute them, so that the bits agree:
//   QLinearConcat (1): Y_scale, Y_zero_point, then (X, X_scale, X_zero_point)
//     for each input; attribute axis (negative counts from the end). Each
//     input is requantized to Y's parameters through a 256-entry table, or
//     copied when its scale and zero point equal Y's.
//   QLinearWhere (1): condition, X, x_scale, x_zero_point, Y, y_scale,
//     y_zero_point, z_scale, z_zero_point; numpy broadcasting of the three;
//     the chosen value requantized to Z's parameters by the same tables.
//   QLinearAveragePool (1): X, x_scale, x_zero_point, y_scale, y_zero_point;
//     AveragePool's attributes (kernel_shape, strides, pads, auto_pad,
//     ceil_mode, count_include_pad) and channels_last (X is N x spatial x C).
//     Values are dequantized to float32 and summed in window order, divided
//     by the window's count (the whole kernel with count_include_pad, else
//     the part inside the input) and requantized as round(avg / y_scale +
//     y_zero_point). A kernel covering the whole unpadded input takes ONNX
//     Runtime's global-pool path instead: integer sums times one float32
//     factor x_scale / (y_scale * count).
//   QLinearSoftmax (1): X, X_scale, x_zero_point, y_scale, y_zero_point;
//     attributes opset (of the Softmax the node replaces: < 13 reduces rows
//     of all dims from axis on, >= 13 the one dim axis) and axis (default -1
//     at every opset: the schema's default, which ONNX Runtime's kernel
//     reads). exp comes from a table of 256 float32
//     values exp((i - 255 + shift) * X_scale) read at i = 255 + x - max(row),
//     shift keeping a row's float32 sum finite; y = round(e * floor(1 /
//     y_scale) / sum) + y_zero_point. x_zero_point cancels out.
// The tables (QLinearConcat, QLinearWhere) dequantize in float32
// (scale * (v - zp)) and quantize as QuantizeLinear (v / scale rounded half
// to even, plus the zero point, saturated). Zero points are optional (0);
// scales are float32 scalars. Rows, planes or output pixels are split
// across the pool by shape only, so results do not depend on the thread
// count.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/ranges.h>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_params.h"
#include "primitives/quant/lookup.h"

namespace spindle::kernels::nn {

namespace {

using qparams::is_q8;
using qparams::require_q8_input;
using qparams::scalar_scale;
using qparams::scalar_zero_point;

using ByteTable = std::array<uint8_t, 256>;

// QuantizeLinear of one float32 value (MLAS's arithmetic: the quotient in
// float32, saturated, rounded half to even; NaN saturates low as its
// max/min sequence makes it).
template <class Q>
Q quantize_linear(float v, float scale, int32_t zp) {
  const float q = v / scale;
  const double lo = static_cast<double>(std::numeric_limits<Q>::min()) - zp;
  const double hi = static_cast<double>(std::numeric_limits<Q>::max()) - zp;
  if (std::isnan(q)) return std::numeric_limits<Q>::min();
  const double r = std::nearbyint(std::clamp(static_cast<double>(q), lo, hi));
  return static_cast<Q>(static_cast<int32_t>(r) + zp);
}

// The requantizing table of ONNX Runtime's QLinearConcat / QLinearWhere:
// entry b (the byte of a Q value v) is Q(x_scale * (v - x_zp)) with Y's
// parameters. `copy` is set instead when the parameters are equal, where
// ONNX Runtime copies the bytes.
template <class Q>
void requant_table(float xs, int32_t xz, float ys, int32_t yz, ByteTable& table, bool& copy) {
  copy = xs == ys && xz == yz;
  for (int b = 0; b < 256; ++b) {
    const auto v = static_cast<Q>(static_cast<uint8_t>(b));
    const float f = xs * static_cast<float>(static_cast<int32_t>(v) - xz);
    table[static_cast<size_t>(b)] = static_cast<uint8_t>(copy ? b : quantize_linear<Q>(f, ys, yz));
  }
}

void requant_table(DataType t, float xs, int32_t xz, float ys, int32_t yz, ByteTable& table, bool& copy) {
  if (t == DataType::kUInt8) requant_table<uint8_t>(xs, xz, ys, yz, table, copy);
  else requant_table<int8_t>(xs, xz, ys, yz, table, copy);
}

// ---------------------------------------------------------------- QLinearConcat

class QLinearConcatKernel final : public OpKernel {
 public:
  explicit QLinearConcatKernel(const NodeInfo& node) {
    if (!node.attrs.has("axis")) fail(node, "attribute axis is missing, expected the (int) axis to concatenate along");
    axis_ = node.attrs.get_int("axis");
    build_constant_tables(node);
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const int n = ctx.num_inputs();
    if (n < 5 || (n - 2) % 3 != 0)
      fail(node, fmt::format("has {} inputs, expected Y_scale, Y_zero_point and then one (X, X_scale, X_zero_point) "
                             "triple per tensor (5, 8, 11, ...)",
                             n));
    const int count = (n - 2) / 3;
    for (int i = 0; i < count; ++i)
      if (!ctx.has_input(2 + 3 * i) || !ctx.has_input(3 + 3 * i))
        fail(node, fmt::format("input X{} or X{}_scale (inputs {} and {}) is absent, expected both", i, i, 2 + 3 * i,
                               3 + 3 * i));
    const Tensor& X0 = ctx.input(2);
    require_q8_input(node, X0, "X0");
    DataType type = X0.dtype();
    if (ctx.has_input(1)) {
      require_q8_input(node, ctx.input(1), "Y_zero_point");
      type = ctx.input(1).dtype();
    }
    const float ys = scalar_scale(ctx, 0, "Y_scale");
    const int32_t yz = scalar_zero_point(ctx, 1, "Y_zero_point", type);
    const int64_t rank = X0.rank();
    if (rank == 0) fail(node, fmt::format("input X0 is {}, expected a tensor of rank >= 1", X0.describe()));
    const int64_t axis = normalize_axis(node, axis_, rank);
    Shape out_shape = X0.shape();
    out_shape[static_cast<size_t>(axis)] = 0;
    std::vector<ByteTable> built(static_cast<size_t>(count));  // the tables not made at creation
    std::vector<const uint8_t*> tables(static_cast<size_t>(count));
    std::vector<char> copies(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      const Tensor& X = ctx.input(2 + 3 * i);
      const std::string name = fmt::format("X{}", i);
      if (X.dtype() != type)
        fail(node, fmt::format("input {} is {}, expected {} (the type of Y_zero_point and X0)", name, X.describe(),
                               dtype_name(type)));
      if (X.rank() != rank)
        fail(node, fmt::format("input {} is {}, expected rank {} (the rank of X0 {})", name, X.describe(), rank,
                               X0.describe()));
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && X.dim(d) != X0.dim(d))
          fail(node, fmt::format("input {} is {}, expected the dims of X0 {} except along axis {}", name,
                                 X.describe(), X0.describe(), axis));
      out_shape[static_cast<size_t>(axis)] =
          size_add(node, out_shape[static_cast<size_t>(axis)], X.dim(axis), "the concatenated axis");
      const std::string scale = name + "_scale", zero = name + "_zero_point";
      const float xs = scalar_scale(ctx, 3 + 3 * i, scale.c_str());
      const int32_t xz = scalar_zero_point(ctx, 4 + 3 * i, zero.c_str(), type);
      const auto at = static_cast<size_t>(i);
      if (at + 1 < made_tables_.size() && type == made_type_ && ys == made_tables_[0].scale &&
          yz == made_tables_[0].zero && xs == made_tables_[at + 1].scale && xz == made_tables_[at + 1].zero) {
        tables[at] = made_tables_[at + 1].table.data();
        copies[at] = made_tables_[at + 1].copy;
        continue;
      }
      bool copy = false;
      requant_table(type, xs, xz, ys, yz, built[at], copy);
      tables[at] = built[at].data();
      copies[at] = copy;
    }
    size_numel(node, out_shape, "output Y");
    Tensor& Y = ctx.output(0, type, out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
    // Per input: its bytes per outer row and where they start in Y's row.
    std::vector<int64_t> pitch(static_cast<size_t>(count)), offset(static_cast<size_t>(count));
    int64_t out_pitch = 0;
    for (int i = 0; i < count; ++i) {
      pitch[static_cast<size_t>(i)] = ctx.input(2 + 3 * i).dim(axis) * inner;
      offset[static_cast<size_t>(i)] = out_pitch;
      out_pitch += pitch[static_cast<size_t>(i)];
    }
    if (outer == 0 || out_pitch == 0) return;
    std::vector<const uint8_t*> srcs(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i)
      srcs[static_cast<size_t>(i)] = static_cast<const uint8_t*>(ctx.input(2 + 3 * i).raw_data());
    auto* y = static_cast<uint8_t*>(Y.raw_mutable_data());
    // The tables applied 64 bytes a step (lookup.h) on pieces of a few
    // vectors or more: one byte at a time, the requantizing inputs of
    // DenseNet-121's 58 Concats (NHWC: pieces of 32 to 1024 channels) took
    // 7.6 ms a run. Below 16 bytes a call's setup outweighs its bytes.
    static const auto lookup = SPINDLE_ISA_SELECT(lookup_bytes);
    constexpr int64_t kVectorPiece = 16;
    // Many rows of short pieces (NHWC: a row a pixel, DenseNet's inputs 32
    // channels each): each input's pieces of a block of rows in one call,
    // the table set up once for them, not once per piece.
    if (outer >= 64 && out_pitch <= 64 * count) {
      by_input(ctx, srcs, pitch, offset, copies, tables, outer, out_pitch, y);
      return;
    }
    // Blocks are ranges of Y's bytes, not rows: concatenating the channels
    // of one image is a single row. A range is walked as its pieces of the
    // inputs' segments.
    parallel_for(ctx.pool(), 0, outer * out_pitch, grain_for_cost(ops_cost(1.0)), [&](int64_t b0, int64_t b1) {
      // Row r of Y, byte w of it, in input k's segment; each piece moves on
      // to the next segment (or row) without a division or a search.
      int64_t r = b0 / out_pitch, w = b0 % out_pitch;
      size_t k = 0;
      while (offset[k] + pitch[k] <= w) ++k;
      for (int64_t p = b0; p < b1;) {
        const int64_t at = w - offset[k], n = std::min(pitch[k] - at, b1 - p);
        const uint8_t* src = srcs[k] + r * pitch[k] + at;
        if (copies[k]) std::memcpy(y + p, src, static_cast<size_t>(n));
        else if (n >= kVectorPiece) lookup(src, y + p, n, tables[k]);
        else
          for (int64_t j = 0; j < n; ++j) y[p + j] = tables[k][src[j]];
        p += n;
        w += n;
        if (w == out_pitch) w = 0, k = 0, ++r;
        while (offset[k] + pitch[k] <= w) ++k;  // an input of no bytes along the axis is skipped
      }
    });
  }

 private:
  // QLinearConcat's pieces input by input: for each input k and block of
  // rows, its pieces (pitch[k] bytes a row) of every row into Y's rows
  // (out_pitch bytes apart, at offset[k]): copied, or through the input's
  // table in one lookup_rows call.
  static void by_input(KernelContext& ctx, const std::vector<const uint8_t*>& srcs, const std::vector<int64_t>& pitch,
                       const std::vector<int64_t>& offset, const std::vector<char>& copies,
                       const std::vector<const uint8_t*>& tables, int64_t outer, int64_t out_pitch, uint8_t* y) {
    static const auto lookup_rows_fn = SPINDLE_ISA_SELECT(lookup_rows);
    const int64_t count = static_cast<int64_t>(srcs.size());
    const int64_t row_block = std::max<int64_t>(1, (int64_t{16} << 10) / out_pitch), blocks = ceil_div(outer, row_block);
    parallel_for(ctx.pool(), 0, blocks * count, grain_for_cost(ops_cost(static_cast<double>(row_block * out_pitch) / count)),
                 [&](int64_t i0, int64_t i1) {
      for (int64_t item = i0; item < i1; ++item) {
        const int64_t rb = item / count, r0 = rb * row_block, rows = std::min(row_block, outer - r0);
        const size_t k = static_cast<size_t>(item % count);
        if (pitch[k] == 0) continue;
        const uint8_t* src = srcs[k] + r0 * pitch[k];
        uint8_t* dst = y + r0 * out_pitch + offset[k];
        if (copies[k])
          for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * out_pitch, src + r * pitch[k], static_cast<size_t>(pitch[k]));
        else lookup_rows_fn(src, pitch[k], dst, out_pitch, pitch[k], rows, tables[k]);
      }
    });
  }

  // One input's parameters and its table, made when the kernel is created.
  struct Made {
    float scale = 0;
    int32_t zero = 0;
    ByteTable table{};
    bool copy = false;
  };

  // The tables of a node whose scales and zero points are all constants
  // (what quantizers write): made once here, not on every run (DenseNet-121
  // has some 600 inputs to its 58 QLinearConcats, each table 256 divisions).
  // made_tables_[0] holds Y's parameters; a run whose values differ (or a
  // node with any of them computed) makes its tables as it goes.
  void build_constant_tables(const NodeInfo& node) {
    const int n = node.num_inputs;
    if (n < 5 || (n - 2) % 3 != 0) return;  // compute() names the problem
    const auto value = [&](int i, Made& m, bool scale) {
      const Tensor* t = node.const_input(i);
      if (!t || t->numel() != 1) return false;
      if (scale) {
        if (t->dtype() != DataType::kFloat32) return false;
        m.scale = t->data<float>()[0];
        return true;
      }
      if (t->dtype() != made_type_) return false;
      m.zero = made_type_ == DataType::kUInt8 ? t->data<uint8_t>()[0] : t->data<int8_t>()[0];
      return true;
    };
    const Tensor* yz = node.const_input(1);
    if (!yz || !is_q8(yz->dtype())) return;
    made_type_ = yz->dtype();
    std::vector<Made> made(static_cast<size_t>(1 + (n - 2) / 3));
    for (size_t i = 0; i < made.size(); ++i) {
      const int at = i == 0 ? 0 : 3 + 3 * static_cast<int>(i - 1);
      if (!value(at, made[i], true) || !value(at + 1, made[i], false)) return;
    }
    for (size_t i = 1; i < made.size(); ++i)
      requant_table(made_type_, made[i].scale, made[i].zero, made[0].scale, made[0].zero, made[i].table, made[i].copy);
    made_tables_ = std::move(made);
  }

  int64_t axis_ = 0;
  DataType made_type_ = DataType::kUndefined;
  std::vector<Made> made_tables_;
};

// ---------------------------------------------------------------- QLinearWhere

class QLinearWhereKernel final : public OpKernel {
 public:
  explicit QLinearWhereKernel(const NodeInfo&) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    if (ctx.num_inputs() < 8)
      fail(node, fmt::format("has {} inputs, expected 9 (condition, X, x_scale, x_zero_point, Y, y_scale, "
                             "y_zero_point, z_scale, z_zero_point)",
                             ctx.num_inputs()));
    const Tensor& C = ctx.input(0);
    const Tensor& X = ctx.input(1);
    const Tensor& Yin = ctx.input(4);
    if (C.dtype() != DataType::kBool)
      fail(node, fmt::format("input condition is {}, expected bool", C.describe()));
    require_q8_input(node, X, "X");
    require_q8_input(node, Yin, "Y");
    if (X.dtype() != Yin.dtype())
      fail(node, fmt::format("inputs X {} and Y {} differ in type, expected the same", X.describe(), Yin.describe()));
    const DataType type = X.dtype();
    const float xs = scalar_scale(ctx, 2, "x_scale"), ys = scalar_scale(ctx, 5, "y_scale"),
                zs = scalar_scale(ctx, 7, "z_scale");
    const int32_t xz = scalar_zero_point(ctx, 3, "x_zero_point", type);
    const int32_t yz = scalar_zero_point(ctx, 6, "y_zero_point", type);
    const int32_t zz = scalar_zero_point(ctx, 8, "z_zero_point", type);
    ByteTable tx{}, ty{};
    bool copy_x = false, copy_y = false;
    requant_table(type, xs, xz, zs, zz, tx, copy_x);
    requant_table(type, ys, yz, zs, zz, ty, copy_y);
    const Shape shapes[] = {C.shape(), X.shape(), Yin.shape()};
    const Shape out_shape = broadcast_shapes(node, shapes);
    size_numel(node, out_shape, "output Z");
    Tensor& Z = ctx.output(0, type, out_shape);
    const int64_t total = shape_numel(out_shape);
    if (total == 0) return;
    // Rows of the last output dim (a scalar output is one row of one).
    const Shape os = out_shape.empty() ? Shape{1} : out_shape;
    const Shape cs = broadcast_strides(C.shape(), os), xst = broadcast_strides(X.shape(), os),
                yst = broadcast_strides(Yin.shape(), os);
    const int64_t rank = static_cast<int64_t>(os.size()), inner = os.back(), rows = total / inner;
    const bool* c = C.data<bool>();
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    const auto* yv = static_cast<const uint8_t*>(Yin.raw_data());
    auto* z = static_cast<uint8_t*>(Z.raw_mutable_data());
    const int64_t grain = std::max<int64_t>(1, grain_for_cost(ops_cost(2.0)) / inner);
    parallel_for(ctx.pool(), 0, rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t co = 0, xo = 0, yo = 0, rem = r;
        for (int64_t d = rank - 2; d >= 0; --d) {
          const size_t k = static_cast<size_t>(d);
          const int64_t idx = rem % os[k];
          rem /= os[k];
          co += idx * cs[k];
          xo += idx * xst[k];
          yo += idx * yst[k];
        }
        const int64_t sc = cs.back(), sx = xst.back(), sy = yst.back();
        for (int64_t i = 0; i < inner; ++i)
          z[r * inner + i] = c[co + i * sc] ? tx[x[xo + i * sx]] : ty[yv[yo + i * sy]];
      }
    });
  }
};

// ---------------------------------------------------------------- QLinearSoftmax

// exp((i - 255 + shift) * x_scale) for i = 0..255, in double rounded to
// float32 (ONNX Runtime's table): shift = max(0, ln(FLT_MAX / D) - 5) /
// x_scale, so a row of D values, whose largest reads entry 255, sums
// below FLT_MAX.
void softmax_exp_table(float xs, int64_t D, float* table) {
  const float ratio = std::numeric_limits<float>::max() / static_cast<float>(D);
  const double shift = std::max(0.0, std::log(static_cast<double>(ratio)) - 5.0) / static_cast<double>(xs);
  for (int i = 0; i < 256; ++i)
    table[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255.0 + shift) * static_cast<double>(xs)));
}

class QLinearSoftmaxKernel final : public OpKernel {
 public:
  explicit QLinearSoftmaxKernel(const NodeInfo& node) {
    if (!node.attrs.has("opset"))
      fail(node, "attribute opset is missing, expected the (int) opset of the Softmax the node replaces");
    opset_ = node.attrs.get_int("opset");
    axis_ = node.attrs.get_int("axis", -1);
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_q8_input(node, X, "X");
    const float xs = scalar_scale(ctx, 1, "X_scale");
    scalar_zero_point(ctx, 2, "x_zero_point", X.dtype());  // checked; the row's max shift cancels it
    const float ys = scalar_scale(ctx, 3, "y_scale");
    const int32_t yz = scalar_zero_point(ctx, 4, "y_zero_point", X.dtype());
    if (X.rank() == 0) fail(node, fmt::format("input X is {}, expected a tensor of rank >= 1", X.describe()));
    const int64_t axis = normalize_axis(node, axis_, X.rank());
    Tensor& Y = ctx.output(0, X.dtype(), X.shape());
    if (X.numel() == 0) return;
    int64_t outer = 1, D = 1, inner = 1;
    for (int64_t d = 0; d < X.rank(); ++d) {
      if (d < axis) outer *= X.dim(d);
      else if (d == axis || opset_ < 13) D *= X.dim(d);
      else inner *= X.dim(d);
    }
    float table[256];
    softmax_exp_table(xs, D, table);
    const float y_scale = std::floor(1.0f / ys);
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* x = X.data<Q>();
      Q* y = Y.mutable_data<Q>();
      const int64_t grain = std::max<int64_t>(1, grain_for_cost(ops_cost(3.0 * static_cast<double>(D))));
      parallel_for(ctx.pool(), 0, outer * inner, grain, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t base = (r / inner) * D * inner + r % inner;
          softmax_row<Q>(x + base, y + base, D, inner, table, y_scale, yz);
        }
      });
    };
    if (X.dtype() == DataType::kUInt8) run(uint8_t{});
    else run(int8_t{});
  }

 private:
  // One row of D values `stride` apart: the float32 sum in order, then each
  // value's share requantized and saturated (the share is >= 0, so only
  // above: a share of 1 with y_scale 1/256 and zero point -128 gives 128,
  // stored as 127, as ONNX Runtime 1.30 stores it).
  template <class Q>
  static void softmax_row(const Q* x, Q* y, int64_t D, int64_t stride, const float* table, float y_scale,
                          int32_t yz) {
    Q m = x[0];
    for (int64_t k = 1; k < D; ++k) m = std::max(m, x[k * stride]);
    const float* t = table + 255 - static_cast<int32_t>(m);
    float sum = 0.0f;
    for (int64_t k = 0; k < D; ++k) sum += t[static_cast<int32_t>(x[k * stride])];
    for (int64_t k = 0; k < D; ++k) {
      float q = std::nearbyintf(t[static_cast<int32_t>(x[k * stride])] * y_scale / sum);
      // A share past 255 saturates either type whatever the zero point; held
      // there (NaN too) so the integer conversion below stays defined.
      if (!(q <= 255.0f)) q = 255.0f;
      if constexpr (std::is_same_v<Q, uint8_t>) {
        const uint32_t v = static_cast<uint32_t>(q) + static_cast<uint32_t>(yz);
        y[k * stride] = static_cast<uint8_t>(v > 255u ? 255u : v);
      } else {
        const int32_t v = static_cast<int32_t>(q) + yz;
        y[k * stride] = static_cast<int8_t>(std::clamp<int32_t>(v, -128, 127));
      }
    }
  }

  int64_t opset_ = 13;
  int64_t axis_ = -1;
};

// ---------------------------------------------------------------- QLinearAveragePool

// ONNX Runtime's requantization of a pooled float32 average: round(avg /
// y_scale + y_zp) converted to int32 as x86 converts (NaN and values out of
// range give INT32_MIN, so an empty window's 0 / 0 saturates low), then
// saturated.
template <class Q>
Q pool_quantize(float avg, float ys, int32_t zy) {
  const float v = std::nearbyintf(avg / ys + static_cast<float>(zy));
  const bool fits = v >= -2147483648.0f && v < 2147483648.0f;  // false for NaN
  const int32_t i = fits ? static_cast<int32_t>(v) : std::numeric_limits<int32_t>::min();
  return static_cast<Q>(std::clamp<int32_t>(i, std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()));
}

struct PoolArgs {
  Window3 w;
  int64_t N = 0, C = 0;
  bool count_include_pad = false;
  float table[256];  // dequantized value of each byte
  float ys = 1.0f;
  int32_t zy = 0;
};

// The window of output position (o0, o1, o2): clipped start and end per dim
// and the divisor, ONNX Runtime's product of the clipped extents (or the
// kernel size).
struct Span3 {
  int64_t b[3], e[3], count;
};

Span3 window_of(const PoolArgs& a, const int64_t o[3]) {
  Span3 s{};
  int64_t n = 1;
  for (int j = 0; j < 3; ++j) {
    const int64_t start = o[j] * a.w.s[j] - a.w.pb[j];
    s.e[j] = std::min(start + a.w.k[j], a.w.in[j]);
    s.b[j] = std::max<int64_t>(start, 0);
    n *= s.e[j] - s.b[j];
  }
  s.count = a.count_include_pad ? a.w.k_size() : n;
  return s;
}

// NCHW: one plane per item, its outputs in order.
template <class Q>
void pool_planes(ThreadPool* pool, const PoolArgs& a, const Q* x, Q* y) {
  const Window3& w = a.w;
  const int64_t in_size = w.in_size(), out_size = w.out_size();
  const int64_t grain = grain_for_cost(ops_cost(static_cast<double>(out_size * w.k_size())));
  parallel_for(pool, 0, a.N * a.C, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const Q* xp = x + p * in_size;
      Q* yp = y + p * out_size;
      int64_t o[3];
      for (o[0] = 0; o[0] < w.out[0]; ++o[0])
        for (o[1] = 0; o[1] < w.out[1]; ++o[1])
          for (o[2] = 0; o[2] < w.out[2]; ++o[2]) {
            const Span3 s = window_of(a, o);
            float sum = 0.0f;
            for (int64_t i0 = s.b[0]; i0 < s.e[0]; ++i0)
              for (int64_t i1 = s.b[1]; i1 < s.e[1]; ++i1)
                for (int64_t i2 = s.b[2]; i2 < s.e[2]; ++i2)
                  sum += a.table[static_cast<uint8_t>(xp[(i0 * w.in[1] + i1) * w.in[2] + i2])];
            *yp++ = pool_quantize<Q>(sum / static_cast<float>(s.count), a.ys, a.zy);
          }
    }
  });
}

// Channels last: one output pixel (all channels) per item; each channel's
// sum runs over the window in the same order as pool_planes.
template <class Q>
void pool_pixels(ThreadPool* pool, const PoolArgs& a, const Q* x, Q* y) {
  const Window3& w = a.w;
  const int64_t C = a.C, in_size = w.in_size(), out_size = w.out_size();
  const int64_t grain = grain_for_cost(ops_cost(static_cast<double>(C * w.k_size())));
  parallel_for(pool, 0, a.N * out_size, grain, [&](int64_t q0, int64_t q1) {
    std::vector<float> acc(static_cast<size_t>(C));
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t n = q / out_size, op = q % out_size;
      const int64_t o[3] = {op / (w.out[1] * w.out[2]), (op / w.out[2]) % w.out[1], op % w.out[2]};
      const Span3 s = window_of(a, o);
      std::fill(acc.begin(), acc.end(), 0.0f);
      const Q* xn = x + n * in_size * C;
      for (int64_t i0 = s.b[0]; i0 < s.e[0]; ++i0)
        for (int64_t i1 = s.b[1]; i1 < s.e[1]; ++i1)
          for (int64_t i2 = s.b[2]; i2 < s.e[2]; ++i2) {
            const Q* px = xn + ((i0 * w.in[1] + i1) * w.in[2] + i2) * C;
            for (int64_t c = 0; c < C; ++c) acc[static_cast<size_t>(c)] += a.table[static_cast<uint8_t>(px[c])];
          }
      const float count = static_cast<float>(s.count);
      Q* yq = y + q * C;
      for (int64_t c = 0; c < C; ++c) yq[c] = pool_quantize<Q>(acc[static_cast<size_t>(c)] / count, a.ys, a.zy);
    }
  });
}

// ONNX Runtime's global average pool (MLAS): per (n, c) the integer sum less
// count * x_zp, times x_scale / (y_scale * count) in float32, rounded half to
// even and saturated, plus y_zp.
template <class Q>
void pool_global(ThreadPool* pool, const PoolArgs& a, float xs, int32_t xz, bool channels_last, const Q* x, Q* y) {
  const int64_t count = a.w.in_size(), C = a.C;
  const float scale = xs / (a.ys * static_cast<float>(count));
  const int32_t bias = -xz * static_cast<int32_t>(count);
  const float lo = static_cast<float>(std::numeric_limits<Q>::min() - a.zy);
  const float hi = static_cast<float>(std::numeric_limits<Q>::max() - a.zy);
  auto store = [&](int64_t sum) {
    const float v = std::clamp(static_cast<float>(static_cast<int32_t>(sum) + bias) * scale, lo, hi);
    return static_cast<Q>(static_cast<int32_t>(std::nearbyintf(v)) + a.zy);
  };
  const int64_t grain = grain_for_cost(ops_cost(static_cast<double>(count)));
  parallel_for(pool, 0, a.N * C, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t sum = 0;
      if (channels_last) {
        const Q* xp = x + (p / C) * count * C + p % C;
        for (int64_t i = 0; i < count; ++i) sum += xp[i * C];
      } else {
        const Q* xp = x + p * count;
        for (int64_t i = 0; i < count; ++i) sum += xp[i];
      }
      y[p] = store(sum);
    }
  });
}

class QLinearAveragePoolKernel final : public OpKernel {
 public:
  explicit QLinearAveragePoolKernel(const NodeInfo& node)
      : attrs_(WindowAttrs::parse(node, false, true)),
        count_include_pad_(node.attrs.get_int("count_include_pad", 0) != 0),
        channels_last_(node.attrs.get_int("channels_last", 0) != 0) {
    // Pool output sizes (ONNX Runtime's): a window may run past the padding.
    attrs_.clipped_windows = true;
    if (attrs_.kernel_shape.empty())
      fail(node, "attribute kernel_shape is missing, expected one size per spatial dimension");
    // ONNX Runtime refuses a pad as large as the kernel (a window wholly in
    // the padding would average nothing).
    const size_t nd = attrs_.kernel_shape.size();
    if (attrs_.auto_pad == AutoPad::kNotSet && attrs_.pads.size() == 2 * nd)
      for (size_t i = 0; i < 2 * nd; ++i)
        if (attrs_.pads[i] >= attrs_.kernel_shape[i % nd])
          fail(node, fmt::format("attribute pads is [{}], expected each pad smaller than its kernel_shape [{}]",
                                 fmt::join(attrs_.pads, ", "), fmt::join(attrs_.kernel_shape, ", ")));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_q8_input(node, X, "X");
    if (X.rank() < 3)
      fail(node, fmt::format("input X is {}, expected rank >= 3 ({})", X.describe(),
                             channels_last_ ? "N x spatial... x C" : "N x C x spatial..."));
    PoolArgs a;
    const float xs = scalar_scale(ctx, 1, "x_scale");
    const int32_t xz = scalar_zero_point(ctx, 2, "x_zero_point", X.dtype());
    a.ys = scalar_scale(ctx, 3, "y_scale");
    a.zy = scalar_zero_point(ctx, 4, "y_zero_point", X.dtype());
    a.count_include_pad = count_include_pad_;
    // The window geometry on X's NCHW order.
    Shape nchw = X.shape();
    if (channels_last_) {
      nchw.insert(nchw.begin() + 1, nchw.back());
      nchw.pop_back();
    }
    a.w = forward_window(node, attrs_, nchw, attrs_.kernel_shape);
    a.N = nchw[0];
    a.C = nchw[1];
    Shape out = {a.N};
    if (!channels_last_) out.push_back(a.C);
    for (int i = 0; i < a.w.nd; ++i) out.push_back(a.w.out[3 - a.w.nd + i]);
    if (channels_last_) out.push_back(a.C);
    size_numel(node, out, "output Y");
    Tensor& Y = ctx.output(0, X.dtype(), out);
    if (Y.numel() == 0) return;
    for (int i = 0; i < 256; ++i) {
      const int32_t v = X.dtype() == DataType::kUInt8 ? i : static_cast<int8_t>(static_cast<uint8_t>(i));
      a.table[i] = xs * static_cast<float>(v - xz);
    }
    bool global = true;
    for (int j = 0; j < 3; ++j) global = global && a.w.k[j] == a.w.in[j] && a.w.pb[j] == 0 && a.w.pe[j] == 0;
    auto run = [&](auto tag) {
      using Q = decltype(tag);
      const Q* x = X.data<Q>();
      Q* y = Y.mutable_data<Q>();
      if (global) pool_global<Q>(ctx.pool(), a, xs, xz, channels_last_, x, y);
      else if (channels_last_) pool_pixels<Q>(ctx.pool(), a, x, y);
      else pool_planes<Q>(ctx.pool(), a, x, y);
    };
    if (X.dtype() == DataType::kUInt8) run(uint8_t{});
    else run(int8_t{});
  }

 private:
  WindowAttrs attrs_;
  bool count_include_pad_, channels_last_;
};

}  // namespace

void register_qoperator(KernelRegistry& r) {
  const std::string ms = "com.microsoft";
  r.add(ms, "QLinearConcat", 1, 1, factory_of<QLinearConcatKernel>());
  r.add(ms, "QLinearWhere", 1, 1, factory_of<QLinearWhereKernel>());
  r.add(ms, "QLinearSoftmax", 1, 1, factory_of<QLinearSoftmaxKernel>());
  r.add(ms, "QLinearAveragePool", 1, 1, factory_of<QLinearAveragePoolKernel>());
}

}  // namespace spindle::kernels::nn
