// qlinear.cpp — integer and quantized linear ops on int8 / uint8 data:
// MatMulInteger and ConvInteger (int32 accumulators, opset 10) and
// QLinearMatMul and QLinearConv (requantized to the output zero point's type,
// opset 10).
//
// Zero points are subtracted before multiplying; accumulation is exact in
// int32. MatMul products whose B has no batch dims and whose A has one zero
// point run on the 8-bit GEMM (primitives/gemm/qgemm.h), a constant B packed
// once when the kernel is created; the rest (per-row A zero points, batched
// B) on the plain loops. Requantization is y = saturate(round_half_even(acc * scale) + zp)
// with scale = a_scale * b_scale / y_scale (per output row or column when the
// scales are), as the ONNX reference computes it. Blocks of output rows
// (MatMul) or of (image, output channel) planes (Conv) split across the pool.
#include <cmath>
#include <limits>
#include <type_traits>

#include <cstring>

#include "kernels/broadcast.h"
#include "kernels/nn/activation.h"
#include "kernels/nn/nhwc.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_depthwise.h"
#include "kernels/nn/qlinear_grouped.h"
#include "kernels/nn/qlinear_operands.h"
#include "kernels/nn/qlinear_residual.h"
#include "primitives/gemm/qgemm.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

// Blocks of parallel_qgemm (nn_util.h): column blocks of N / 8 rounded up
// to a panel (with 8 rows or more, to 4 panels: the micro-kernel's widest
// tile, none left narrower), at least 4 panels, and row blocks of at most
// 96 rows, of even sizes in tiles of 6; chosen from the shape only.
QGemmBlocks qgemm_blocks(const QGemmArgs& base, int64_t rows, int64_t N) {
  const int64_t panel = base.b->panel_columns;
  const int64_t wide = 4 * panel;
  QGemmBlocks g;
  g.nb = std::min(round_up(N, panel), std::max<int64_t>(wide, round_up(ceil_div(N, 8), rows >= 8 ? wide : panel)));
  g.mb = std::min(rows, round_up(ceil_div(rows, ceil_div(rows, 96)), 6));
  g.n_blocks = ceil_div(N, g.nb);
  g.m_blocks = ceil_div(rows, g.mb);
  return g;
}

void run_qgemm_block(const QGemmArgs& base, const QGemmBlocks& g, int64_t rows, int64_t N, int64_t blk,
                     const Activation* act) {
  const int64_t m0 = (blk / g.n_blocks) * g.mb, m1 = std::min(rows, m0 + g.mb);
  const int64_t n0 = (blk % g.n_blocks) * g.nb, n1 = std::min(N, n0 + g.nb);
  QGemmArgs args = base;
  args.a = static_cast<const uint8_t*>(base.a) + m0 * base.lda;
  args.m = m1 - m0;
  args.col_begin = n0;
  args.col_end = n1;
  if (base.y) args.y = base.y + m0 * base.ldy + n0;
  else args.c = base.c + m0 * base.ldc + n0;
  qgemm(args);
  if (act && !act->is_none() && base.y)
    for (int64_t i = 0; i < m1 - m0; ++i) act->apply(args.y + i * base.ldy, n1 - n0);
}

void parallel_qgemm(ThreadPool* pool, const QGemmArgs& base, int64_t rows, int64_t N, const Activation* act) {
  if (rows <= 0 || N <= 0) return;
  const QGemmBlocks g = qgemm_blocks(base, rows, N);
  parallel_for(pool, 0, g.blocks(), 1, gemm_cost(g.mb, g.nb, std::max<int64_t>(base.b->k / 4, 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t blk = b0; blk < b1; ++blk) run_qgemm_block(base, g, rows, N, blk, act);
               });
}

// ---------------------------------------------------------------- operands (qlinear_operands.h)

namespace qoperands {

void require_q8(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.dtype() != DataType::kUInt8 && t.dtype() != DataType::kInt8)
    fail(node, fmt::format("input {} is {}, expected uint8 or int8", name, t.describe()));
}

std::vector<int32_t> widen(const Tensor& t) {
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DataType::kUInt8) {
    const uint8_t* p = t.data<uint8_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  } else {
    const int8_t* p = t.data<int8_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  }
  return v;
}

std::vector<int32_t> zero_points(KernelContext& ctx, int index, const char* name, DataType data, int64_t n,
                                 const char* what) {
  if (!ctx.has_input(index)) return std::vector<int32_t>(static_cast<size_t>(n), 0);
  const Tensor& z = ctx.input(index);
  if (z.dtype() != data)
    fail(ctx.node(), fmt::format("input {} is {}, expected {} like its data", name, z.describe(), dtype_name(data)));
  if (z.numel() != 1 && z.numel() != n)
    fail(ctx.node(), fmt::format("input {} has shape {}, expected one value or {} ({})", name,
                                 shape_to_string(z.shape()), n, what));
  const std::vector<int32_t> v = widen(z);
  return z.numel() == 1 ? std::vector<int32_t>(static_cast<size_t>(n), v[0]) : v;
}

std::vector<float> scales(KernelContext& ctx, int index, const char* name, int64_t n, const char* what) {
  const Tensor& s = ctx.input(index);
  require_float(ctx.node(), s, name);
  if (s.numel() != 1 && s.numel() != n)
    fail(ctx.node(), fmt::format("input {} has shape {}, expected one value or {} ({})", name,
                                 shape_to_string(s.shape()), n, what));
  const float* p = s.data<float>();
  return s.numel() == 1 ? std::vector<float>(static_cast<size_t>(n), p[0]) : std::vector<float>(p, p + n);
}

void PrepackedB::pack(const NodeInfo& node, int index) {
  const Tensor* b = node.const_input(index);
  if (!node.prepack || !b || (b->dtype() != DataType::kUInt8 && b->dtype() != DataType::kInt8) || b->rank() < 2 ||
      b->numel() == 0 || b->numel() != b->dim(b->rank() - 2) * b->dim(b->rank() - 1))
    return;
  const int64_t K = b->dim(b->rank() - 2), N = b->dim(b->rank() - 1);
  packed = qgemm_pack_b(b->raw_data(), b->dtype() == DataType::kInt8, K, N, N);
  data = b->raw_data();
}

}  // namespace qoperands

namespace {

using namespace qoperands;

// The y_zero_point input: one int8 / uint8 value, whose type the output takes.
int32_t output_zero_point(const NodeInfo& node, const Tensor& yzp) {
  require_q8(node, yzp, "y_zero_point");
  if (yzp.numel() != 1)
    fail(node, fmt::format("input y_zero_point has shape {}, expected one value", shape_to_string(yzp.shape())));
  return widen(yzp)[0];
}

// Writes acc + bias requantized as requant_row does (primitives/quant/
// requant.h, ONNX Runtime's arithmetic): the int32 sum (wrapping) to float,
// times the float32 scale, clamped to T's range less zp (a NaN product to its
// low end), rounded half to even, plus zp.
template <class T>
T requantize(int32_t acc, int32_t bias, float scale, int32_t zp) {
  const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias));
  const float lo_z = static_cast<float>(std::numeric_limits<T>::min() - zp);
  const float hi_z = static_cast<float>(std::numeric_limits<T>::max() - zp);
  float v = static_cast<float>(sum) * scale;
  v = v > lo_z ? v : lo_z;
  v = v < hi_z ? v : hi_z;
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)) + zp);
}

// ---------------------------------------------------------------- MatMul

// The int32 accumulators of an integer product, shaped as the output: a
// tensor, so that the run's memory limits apply to it (a vector sized by a
// mutated model's shapes asked for 32 GB: fuzz_graph).
struct Accumulators {
  Tensor t;
  // Zeros of `shape` (its size checked as every tensor's).
  void assign(const Shape& shape) {
    t = Tensor(DataType::kInt32, shape);
    std::fill(data(), data() + size(), 0);
  }
  int32_t* data() { return t.mutable_data<int32_t>(); }
  const int32_t* begin() const { return t.data<int32_t>(); }
  const int32_t* end() const { return begin() + size(); }
  size_t size() const { return static_cast<size_t>(t.numel()); }
  int32_t operator[](size_t i) const { return begin()[i]; }
};

// (A - a_zp) x (B - b_zp) with numpy matmul broadcasting, in int32; calls
// emit(row block) with the accumulators of rows [r0, r1) of the flattened
// [batch * M, N] output.
struct IntMatMul {
  Shape out_shape;
  int64_t batches = 1, M = 1, K = 1, N = 1;
  Accumulators acc;  // [batches * M, N]

  // `pre`: B packed when the kernel was created (used when B is its data).
  void compute(KernelContext& ctx, const Tensor& A, const Tensor& B, int a_zp_index, int b_zp_index,
               const PrepackedB* pre = nullptr) {
    const NodeInfo& node = ctx.node();
    if (A.rank() == 0 || B.rank() == 0)
      fail(node, fmt::format("inputs A {} and B {} must have rank >= 1", shape_to_string(A.shape()),
                             shape_to_string(B.shape())));
    Shape as = A.shape(), bs = B.shape();
    const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
    if (a_vec) as.insert(as.begin(), 1);
    if (b_vec) bs.push_back(1);
    M = as[as.size() - 2];
    K = as.back();
    N = bs.back();
    if (bs[bs.size() - 2] != K)
      fail(node, fmt::format("inputs A {} and B {}: inner dimensions {} and {} differ", shape_to_string(A.shape()),
                             shape_to_string(B.shape()), K, bs[bs.size() - 2]));
    const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    const Shape shapes[] = {a_batch, b_batch};
    const Shape batch = broadcast_shapes(node, shapes);
    batches = shape_numel(batch);
    out_shape = batch;
    if (!a_vec) out_shape.push_back(M);
    if (!b_vec) out_shape.push_back(N);
    const std::vector<int32_t> a_zp = zero_points(ctx, a_zp_index, "a_zero_point", A.dtype(), M, "one per row of A");
    const std::vector<int32_t> b_zp = zero_points(ctx, b_zp_index, "b_zero_point", B.dtype(), N, "one per column of B");
    const bool one_a_zp = !ctx.has_input(a_zp_index) || ctx.input(a_zp_index).numel() == 1 || M == 1;
    if (shape_numel(b_batch) == 1 && one_a_zp) {
      // B shared by every batch: one 8-bit GEMM over batches * M rows.
      acc.t = Tensor(DataType::kInt32, out_shape);
      QGemmPackedB local;
      const QGemmPackedB* packed = nullptr;
      if (pre && pre->data != nullptr && pre->data == B.raw_data()) {
        packed = &pre->packed;
      } else {
        local = qgemm_pack_b(B.raw_data(), B.dtype() == DataType::kInt8, K, N, N);
        packed = &local;
      }
      QGemmArgs args;
      args.a = A.raw_data();
      args.a_signed = A.dtype() == DataType::kInt8;
      args.lda = K;
      args.a_zero_point = a_zp.empty() ? 0 : a_zp[0];
      args.b = packed;
      args.b_zero_points = b_zp.data();
      args.per_column_b_zero_points = true;
      args.c = acc.data();
      args.ldc = N;
      parallel_qgemm(ctx.pool(), args, batches * M, N);
      return;
    }
    std::vector<int32_t> a = widen(A), b = widen(B);
    for (int64_t i = 0; i < static_cast<int64_t>(a.size()); ++i) a[static_cast<size_t>(i)] -= a_zp[static_cast<size_t>((i / K) % M)];
    for (int64_t i = 0; i < static_cast<int64_t>(b.size()); ++i) b[static_cast<size_t>(i)] -= b_zp[static_cast<size_t>(i % N)];
    const Shape a_str = broadcast_strides(a_batch, batch), b_str = broadcast_strides(b_batch, batch);
    acc.assign(out_shape);
    const int64_t rows = batches * M;
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(2.0 * static_cast<double>(K * N))), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bi = r / M, m = r % M;
        int64_t a_off = 0, b_off = 0, rem = bi;
        for (size_t k = batch.size(); k-- > 0;) {
          const int64_t idx = rem % batch[k];
          rem /= batch[k];
          a_off += idx * a_str[k];
          b_off += idx * b_str[k];
        }
        const int32_t* ar = a.data() + (a_off * M + m) * K;
        const int32_t* bm = b.data() + b_off * K * N;
        int32_t* out = acc.data() + r * N;
        for (int64_t k = 0; k < K; ++k) {
          const int32_t av = ar[k];
          const int32_t* br = bm + k * N;
          for (int64_t n = 0; n < N; ++n) out[n] += av * br[n];
        }
      }
    });
  }
};

class MatMulIntegerKernel final : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const NodeInfo& node) { pre_.pack(node, 1); }
  void compute(KernelContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    require_q8(ctx.node(), A, "A");
    require_q8(ctx.node(), B, "B");
    IntMatMul mm;
    mm.compute(ctx, A, B, 2, 3, &pre_);
    Tensor& Y = ctx.output(0, DataType::kInt32, mm.out_shape);
    std::copy(mm.acc.begin(), mm.acc.end(), Y.mutable_data<int32_t>());
  }

 private:
  PrepackedB pre_;
};

class QLinearMatMulKernel final : public OpKernel {
 public:
  explicit QLinearMatMulKernel(const NodeInfo& node) { pre_.pack(node, 3); }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(3);
    require_q8(node, A, "a");
    require_q8(node, B, "b");
    IntMatMul mm;
    mm.compute(ctx, A, B, 2, 5, &pre_);
    const std::vector<float> sa = scales(ctx, 1, "a_scale", mm.M, "one per row of a");
    const std::vector<float> sb = scales(ctx, 4, "b_scale", mm.N, "one per column of b");
    const std::vector<float> sy = scales(ctx, 6, "y_scale", 1, "one value");
    const Tensor& yzp = ctx.input(7);
    const int32_t zp = output_zero_point(node, yzp);
    Tensor& Y = ctx.output(0, yzp.dtype(), mm.out_shape);
    const int64_t M = mm.M, N = mm.N;
    auto write = [&](auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      for (int64_t i = 0; i < static_cast<int64_t>(mm.acc.size()); ++i) {
        const int64_t m = (i / N) % M, n = i % N;
        y[i] = requantize<T>(mm.acc[static_cast<size_t>(i)], 0, sa[static_cast<size_t>(m)] * sb[static_cast<size_t>(n)] / sy[0],
                             zp);
      }
    };
    if (yzp.dtype() == DataType::kUInt8) write(Y.mutable_data<uint8_t>());
    else write(Y.mutable_data<int8_t>());
  }

 private:
  PrepackedB pre_;
};

// ---------------------------------------------------------------- Conv

// Integer convolution: acc[n, m, out...] = sum (x - x_zp) * (w - w_zp[m]).
struct IntConv {
  Shape out_shape;
  int64_t N = 0, M = 0, planes = 0, plane = 0;
  Accumulators acc;

  void compute(KernelContext& ctx, const WindowAttrs& attrs, int64_t group, const Tensor& X, const Tensor& W,
               int x_zp_index, int w_zp_index) {
    const NodeInfo& node = ctx.node();
    if (X.rank() < 3 || X.rank() > 5 || W.rank() != X.rank())
      fail(node, fmt::format("inputs X {} and W {}: expected N x C x D1.. and M x C/group x k1.. with 1 to 3 "
                             "spatial dims", shape_to_string(X.shape()), shape_to_string(W.shape())));
    N = X.dim(0);
    const int64_t C = X.dim(1);
    M = W.dim(0);
    if (group <= 0 || C % group != 0 || M % group != 0 || W.dim(1) != C / group)
      fail(node, fmt::format("inputs X {} and W {} do not match group {} (W must be M x C/group x ...)",
                             shape_to_string(X.shape()), shape_to_string(W.shape()), group));
    const std::vector<int64_t> kernel(W.shape().begin() + 2, W.shape().end());
    const Window3 g = forward_window(node, attrs, X.shape(), kernel);
    out_shape = {N, M};
    for (int i = 0; i < g.nd; ++i) out_shape.push_back(g.out[3 - g.nd + i]);
    const std::vector<int32_t> x_zp = zero_points(ctx, x_zp_index, "x_zero_point", X.dtype(), 1, "one value");
    const std::vector<int32_t> w_zp = zero_points(ctx, w_zp_index, "w_zero_point", W.dtype(), M, "one per output channel");
    std::vector<int32_t> x = widen(X), w = widen(W);
    for (int32_t& v : x) v -= x_zp[0];
    const int64_t cg = C / group, mg = M / group, wk = cg * g.k_size();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < wk; ++i) w[static_cast<size_t>(m * wk + i)] -= w_zp[static_cast<size_t>(m)];
    // Output sizes come from the model's shapes and attributes: checked
    // before they are multiplied (a product past int64 was found by fuzz_graph).
    const int64_t total = size_numel(node, out_shape, "output Y");
    planes = N * M;
    plane = planes > 0 ? total / planes : 0;
    acc.assign(out_shape);
    parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(2.0 * static_cast<double>(plane * wk))),
                 [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / M, m = p % M, c0 = (m / mg) * cg;
        int32_t* out = acc.data() + p * plane;
        const int32_t* wm = w.data() + m * wk;
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              int32_t sum = 0;
              for (int64_t c = 0; c < cg; ++c) {
                const int32_t* xc = x.data() + (n * C + c0 + c) * g.in_size();
                const int32_t* wc = wm + c * g.k_size();
                for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                  const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                  if (i0 < 0 || i0 >= g.in[0]) continue;
                  for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                    const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                    if (i1 < 0 || i1 >= g.in[1]) continue;
                    for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                      const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                      if (i2 < 0 || i2 >= g.in[2]) continue;
                      sum += xc[(i0 * g.in[1] + i1) * g.in[2] + i2] * wc[(k0 * g.k[1] + k1) * g.k[2] + k2];
                    }
                  }
                }
              }
              out[(o0 * g.out[1] + o1) * g.out[2] + o2] = sum;
            }
      }
    });
  }
};

class ConvIntegerKernel final : public OpKernel {
 public:
  explicit ConvIntegerKernel(const NodeInfo& node)
      : attrs_(WindowAttrs::parse(node, true, false)), group_(node.attrs.get_int("group", 1)) {}
  void compute(KernelContext& ctx) const override {
    require_q8(ctx.node(), ctx.input(0), "x");
    require_q8(ctx.node(), ctx.input(1), "w");
    IntConv conv;
    conv.compute(ctx, attrs_, group_, ctx.input(0), ctx.input(1), 2, 3);
    Tensor& Y = ctx.output(0, DataType::kInt32, conv.out_shape);
    std::copy(conv.acc.begin(), conv.acc.end(), Y.mutable_data<int32_t>());
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

// ---------------------------------------------------------------- QLinearConv on qgemm

// The per-output-channel terms of a QLinearConv: scale x_scale * w_scale[m] /
// y_scale (float32, in that order, as ONNX Runtime computes it), bias, clamp
// bounds.
struct ConvRequant {
  std::vector<float> scale;
  std::vector<int32_t> bias;
  float zp = 0, lo = 0, hi = 0;
  bool finite = true;  // every scale is finite (else the reference path runs)
};

// QLinearConv with the weights packed once (at kernel creation) for qgemm:
// per group, y (output pixels x M/g) = im2col(x) (pixels x K, the input in
// pixel-major order, taps then channels, padding = x_zero_point) times W^T
// (K x M/g, K = kernel taps x C/g). Pointwise stride-1 convolutions read the
// pixel-major input directly; depthwise ones (one input and one output
// channel per group) run a direct integer loop instead. The int32
// accumulators are requantized as the reference does, so the results are
// the reference's bit for bit (integer arithmetic is exact; the epilogue is
// the same float arithmetic, ONNX Runtime's).
class QLinearConvKernel final : public OpKernel {
 public:
  QLinearConvKernel(const NodeInfo& node, bool nhwc)
      : attrs_(WindowAttrs::parse(node, true, false)), group_(node.attrs.get_int("group", 1)), nhwc_(nhwc) {
    if (nhwc_) add_ = QResidualAdd::of(node);
    const std::string act = node.attrs.get_string("activation", "");
    if (!act.empty() && act != "Relu")
      fail_unsupported(node, fmt::format("attribute activation is '{}', expected Relu or none", act));
    relu_ = act == "Relu";
    const Tensor* w = node.const_input(3);
    if (!node.prepack || !w || (w->dtype() != DataType::kInt8 && w->dtype() != DataType::kUInt8)) return;
    if (w->rank() < 3 || w->rank() > 5 || group_ <= 0 || w->dim(0) % group_ != 0) return;
    for (int d = 0; d < w->rank(); ++d)
      if (w->dim(d) <= 0) return;
    const int64_t m = w->dim(0), cg = w->dim(1), mg = m / group_;
    int64_t taps = 1;
    for (int d = 2; d < w->rank(); ++d) taps *= w->dim(d);
    w_signed_ = w->dtype() == DataType::kInt8;
    w_shape_ = w->shape();
    if (cg == 1 && mg == 1) {  // depthwise
      depthwise_ = true;
      dw_ = QDepthwise(*w, node.const_input(5), !attrs_.strides.empty() && attrs_.strides.back() > 1);
      packed_ok_ = true;
      own_w_when_scales_fixed(node);
      return;
    }
    // Narrow square groups with int8 weights quantized symmetrically (a
    // constant zero point 0): the grouped row loop (qgrouped.h) instead of
    // a GEMM per group, its packing the only copy of W.
    const Tensor* wzp = node.const_input(5);
    if (nhwc_ && w_signed_ && w->rank() == 4 && qgrouped_fits(m, cg, group_) && wzp &&
        wzp->dtype() == DataType::kInt8 && (wzp->numel() == 1 || wzp->numel() == m) &&
        std::all_of(wzp->data<int8_t>(), wzp->data<int8_t>() + wzp->numel(), [](int8_t z) { return z == 0; })) {
      grouped_ = qgrouped_pack(static_cast<const int8_t*>(w->raw_data()), m, cg, taps);
      packed_ok_ = true;
      own_w_when_scales_fixed(node);
      return;
    }
    const int64_t k = cg * taps;
    // Per group: W[g*mg + j][c][t] -> row j of an mg x K matrix in (tap, channel) order.
    std::vector<uint8_t> tmp(static_cast<size_t>(mg * k));
    const uint8_t* src = static_cast<const uint8_t*>(w->raw_data());
    packed_.reserve(static_cast<size_t>(group_));
    for (int64_t g = 0; g < group_; ++g) {
      for (int64_t j = 0; j < mg; ++j)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < taps; ++t)
            tmp[static_cast<size_t>(j * k + t * cg + c)] = src[((g * mg + j) * cg + c) * taps + t];
      packed_.push_back(qgemm_pack_b(tmp.data(), w_signed_, k, mg, k, true));
    }
    packed_ok_ = true;
    own_w_when_scales_fixed(node);
  }

  bool owns_constant_input(int i) const override { return i == 3 && owns_w_; }
  size_t packed_bytes() const override {
    size_t b = dw_.bytes();
    for (const QGemmPackedB& p : packed_) b += p.bytes();
    b += grouped_.bytes();
    return b;
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    require_q8(node, ctx.input(0), "x");
    const Tensor& X = ctx.input(0);
    // W packed when the kernel was created, the input dropped; a W absent
    // from the graph is input(3)'s clear error.
    const bool owned = owns_w_ && !ctx.has_input(3);
    if (!owned) require_q8(node, ctx.input(3), "w");
    const Shape ws = owned ? w_shape_ : ctx.input(3).shape();
    if (nhwc_ && (X.rank() != 4 || ws.size() != 4))
      fail(node, fmt::format("inputs X {} and W {}: a QLinearConvNhwc takes a 2-D convolution (rank-4 X and W)",
                             X.describe(), shape_to_string(ws)));
    if (owned || (packed_ok_ && ws == w_shape_ && (ctx.input(3).dtype() == DataType::kInt8) == w_signed_ &&
                  X.rank() == static_cast<int>(ws.size()) && X.dim(nhwc_ ? 3 : 1) == w_shape_[1] * group_)) {
      fast(ctx);
      return;
    }
    reference_any(ctx);
  }

 private:
  // The packed weights replace W when the scales are constants whose
  // requantization factors are finite: fast() then always runs (the plain
  // loops, which read W, are only for non-finite factors).
  void own_w_when_scales_fixed(const NodeInfo& node) {
    const Tensor* sx = node.const_input(1);
    const Tensor* sw = node.const_input(4);
    const Tensor* sy = node.const_input(6);
    const int64_t m = w_shape_[0];
    if (!sx || !sw || !sy || sx->dtype() != DataType::kFloat32 || sw->dtype() != DataType::kFloat32 ||
        sy->dtype() != DataType::kFloat32 || sx->numel() != 1 || sy->numel() != 1 || (sw->numel() != 1 && sw->numel() != m))
      return;
    for (int64_t i = 0; i < m; ++i) {
      const float f = sx->data<float>()[0] * sw->data<float>()[sw->numel() == 1 ? 0 : i] / sy->data<float>()[0];
      if (!std::isfinite(f)) return;
    }
    owns_w_ = true;
  }

  // The plain loops; in NHWC on the NCHW transpose of X, the output transposed back.
  void reference_any(KernelContext& ctx) const {
    const Tensor& X = ctx.input(0);
    if (!nhwc_) {
      reference(ctx, X, nullptr);
      return;
    }
    const int64_t N = X.dim(0), P = X.dim(1) * X.dim(2), C = X.dim(3);
    Tensor xc(X.dtype(), Shape{N, C, X.dim(1), X.dim(2)});
    transpose_bytes(ctx.pool(), static_cast<const uint8_t*>(X.raw_data()), static_cast<uint8_t*>(xc.raw_mutable_data()),
                    N, P, C);
    Tensor yc;
    reference(ctx, xc, &yc);
    const Shape y_shape{N, yc.dim(2), yc.dim(3), yc.dim(1)};
    Tensor conv_out = add_ ? Tensor(yc.dtype(), y_shape) : Tensor();
    Tensor& Y = add_ ? conv_out : ctx.output(0, yc.dtype(), y_shape);
    transpose_bytes(ctx.pool(), static_cast<const uint8_t*>(yc.raw_data()), static_cast<uint8_t*>(Y.raw_mutable_data()),
                    N, yc.dim(1), yc.dim(2) * yc.dim(3));
    if (add_) ctx.set_output(0, add_->unfused(ctx, conv_out));
  }

  ConvRequant requant_terms(KernelContext& ctx, int64_t M, const Tensor& yzp) const {
    const NodeInfo& node = ctx.node();
    const std::vector<float> sx = scales(ctx, 1, "x_scale", 1, "one value");
    const std::vector<float> sw = scales(ctx, 4, "w_scale", M, "one per output channel");
    const std::vector<float> sy = scales(ctx, 6, "y_scale", 1, "one value");
    ConvRequant r;
    const int32_t zp = output_zero_point(node, yzp);
    r.zp = static_cast<float>(zp);
    r.lo = yzp.dtype() == DataType::kUInt8 ? 0.0f : -128.0f;
    r.hi = yzp.dtype() == DataType::kUInt8 ? 255.0f : 127.0f;
    if (relu_) r.lo = std::max(r.lo, static_cast<float>(zp));
    r.scale.resize(static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) {
      const float s = sx[0] * sw[static_cast<size_t>(m)] / sy[0];
      r.finite = r.finite && std::isfinite(s);
      r.scale[static_cast<size_t>(m)] = s;
    }
    r.bias.assign(static_cast<size_t>(M), 0);
    if (ctx.has_input(8)) {
      const Tensor& b = ctx.input(8);
      if (b.dtype() != DataType::kInt32 || b.numel() != M)
        fail(node, fmt::format("input B is {}, expected int32 with {} values (one per output channel)", b.describe(), M));
      std::copy(b.data<int32_t>(), b.data<int32_t>() + M, r.bias.begin());
    }
    return r;
  }

  // The plain loops on NCHW X; into `out` when given, else the node's output.
  void reference(KernelContext& ctx, const Tensor& X, Tensor* out) const {
    IntConv conv;
    conv.compute(ctx, attrs_, group_, X, ctx.input(3), 2, 5);
    const Tensor& yzp = ctx.input(7);
    const ConvRequant r = requant_terms(ctx, conv.M, yzp);
    if (out) *out = Tensor(yzp.dtype(), conv.out_shape);
    Tensor& Y = out ? *out : ctx.output(0, yzp.dtype(), conv.out_shape);
    auto write = [&](auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      for (int64_t p = 0; p < conv.planes; ++p) {
        const int64_t m = p % conv.M;
        const float scale = r.scale[static_cast<size_t>(m)];
        const int32_t b = r.bias[static_cast<size_t>(m)];
        for (int64_t i = 0; i < conv.plane; ++i) {
          const int64_t at = p * conv.plane + i;
          T v = requantize<T>(conv.acc[static_cast<size_t>(at)], b, scale, static_cast<int32_t>(r.zp));
          if (relu_ && v < static_cast<T>(r.zp)) v = static_cast<T>(r.zp);
          y[at] = v;
        }
      }
    };
    if (yzp.dtype() == DataType::kUInt8) write(Y.mutable_data<uint8_t>());
    else write(Y.mutable_data<int8_t>());
  }

  void fast(KernelContext& ctx) const {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    // W: its shape and type as packed (fast() runs on the packed weights
    // alone; when the kernel owns W, the input is absent).
    const int64_t N = X.dim(0), C = X.dim(nhwc_ ? 3 : 1), M = w_shape_[0];
    if (C % group_ != 0 || M % group_ != 0 || w_shape_[1] != C / group_ || X.rank() != static_cast<int>(w_shape_.size()))
      fail(node, fmt::format("inputs X {} and W {} do not match group {} (W must be M x C/group x ..., of X's rank)",
                             shape_to_string(X.shape()), shape_to_string(w_shape_), group_));
    const std::vector<int64_t> kernel(w_shape_.begin() + 2, w_shape_.end());
    const Window3 g =
        forward_window(node, attrs_, nhwc_ ? Shape{N, C, X.dim(1), X.dim(2)} : X.shape(), kernel);
    Shape out_shape = {N, M};
    for (int i = 0; i < g.nd; ++i) out_shape.push_back(g.out[3 - g.nd + i]);
    if (nhwc_) out_shape = {N, g.out[1], g.out[2], M};
    size_numel(node, out_shape, "output Y");
    const int32_t x_zp = zero_points(ctx, 2, "x_zero_point", X.dtype(), 1, "one value")[0];
    const std::vector<int32_t> w_zp =
        zero_points(ctx, 5, "w_zero_point", w_signed_ ? DataType::kInt8 : DataType::kUInt8, M, "one per output channel");
    const Tensor& yzp = ctx.input(7);
    const ConvRequant r = requant_terms(ctx, M, yzp);
    if (!r.finite && !ctx.has_input(3))
      fail(node, "requantization scales x_scale * w_scale / y_scale are not finite");  // owned W: scales were checked
    if (!r.finite) {
      reference_any(ctx);
      return;
    }
    const bool x_signed = X.dtype() == DataType::kInt8;
    const bool gemm = !depthwise_ && grouped_.packed.empty();
    // A folded QLinearAdd: the GEMM path adds each block as it is made; else
    // the convolution's output, then the Add.
    const std::optional<QuantRow> add = add_ && gemm ? add_->row(ctx, out_shape, yzp.dtype()) : std::nullopt;
    Tensor conv_out = add_ && !add ? Tensor(yzp.dtype(), out_shape) : Tensor();
    Tensor& Y = conv_out.defined() ? conv_out : ctx.output(0, yzp.dtype(), out_shape);
    auto run = [&](auto* y) {
      if (depthwise_ && nhwc_) dw_.run(ctx, X, g, x_zp, w_zp, ChannelRequant{r.bias.data(), r.scale.data(), r.zp, r.lo, r.hi}, y);
      else if (depthwise_) depthwise(ctx, X, g, x_zp, w_zp, r, y);
      else if (!gemm) grouped(ctx, X, g, x_zp, w_zp, r, y);
      else gemm_path(ctx, X, g, x_signed, x_zp, w_zp, r, y, add ? &*add : nullptr);
    };
    if (yzp.dtype() == DataType::kUInt8) run(Y.mutable_data<uint8_t>());
    else run(Y.mutable_data<int8_t>());
    if (conv_out.defined()) ctx.set_output(0, add_->unfused(ctx, conv_out));
  }

  // Depthwise weight i, widened.
  int32_t dw_weight(int64_t i) const {
    const Tensor& w = dw_.weights();
    return w_signed_ ? int32_t{static_cast<const int8_t*>(w.raw_data())[i]}
                     : int32_t{static_cast<const uint8_t*>(w.raw_data())[i]};
  }

  template <class T>
  void grouped(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const std::vector<int32_t>& w_zp,
               const ConvRequant& r, T* y) const {
    if (!std::all_of(w_zp.begin(), w_zp.end(), [](int32_t z) { return z == 0; }))  // packed for a constant 0
      fail(ctx.node(), "input w_zero_point is not 0, expected the constant 0 the weights were packed with");
    qgrouped_conv(ctx, grouped_, X, g, x_zp, ChannelRequant{r.bias.data(), r.scale.data(), r.zp, r.lo, r.hi}, y);
  }

  template <class T>
  void depthwise(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const std::vector<int32_t>& w_zp,
                 const ConvRequant& r, T* y) const {
    static const auto requant_fn = SPINDLE_ISA_SELECT(requant_row);
    const int64_t N = X.dim(0), C = X.dim(1);
    const int64_t taps = g.k_size(), P = g.out_size(), in_size = g.in_size();
    const bool x_signed = X.dtype() == DataType::kInt8;
    const void* xdata = X.raw_data();
    parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(static_cast<double>(P * taps))), [&](int64_t p0, int64_t p1) {
      std::vector<int32_t> xs(static_cast<size_t>(in_size)), acc(static_cast<size_t>(P)), wc(static_cast<size_t>(taps));
      for (int64_t plane = p0; plane < p1; ++plane) {
        const int64_t c = plane % C;
        const int64_t base = plane * in_size;
        if (x_signed) {
          const int8_t* s = static_cast<const int8_t*>(xdata) + base;
          for (int64_t i = 0; i < in_size; ++i) xs[static_cast<size_t>(i)] = s[i] - x_zp;
        } else {
          const uint8_t* s = static_cast<const uint8_t*>(xdata) + base;
          for (int64_t i = 0; i < in_size; ++i) xs[static_cast<size_t>(i)] = s[i] - x_zp;
        }
        for (int64_t t = 0; t < taps; ++t) wc[static_cast<size_t>(t)] = dw_weight(c * taps + t) - w_zp[static_cast<size_t>(c)];
        std::fill(acc.begin(), acc.end(), 0);
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
          for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
            const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
            if (i0 < 0 || i0 >= g.in[0]) continue;
            for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
              for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                if (i1 < 0 || i1 >= g.in[1]) continue;
                const int32_t* xrow = xs.data() + (i0 * g.in[1] + i1) * g.in[2];
                int32_t* arow = acc.data() + (o0 * g.out[1] + o1) * g.out[2];
                for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                  const int32_t wv = wc[static_cast<size_t>((k0 * g.k[1] + k1) * g.k[2] + k2)];
                  // Output columns whose tap lands inside the row: o2 in [lo, hi).
                  const int64_t off = k2 * g.d[2] - g.pb[2], s2 = g.s[2];
                  const int64_t lo = off >= 0 ? 0 : ceil_div(-off, s2);
                  const int64_t hi = std::min(g.out[2], g.in[2] - off <= 0 ? 0 : ceil_div(g.in[2] - off, s2));
                  if (s2 == 1) {
                    const int32_t* xr = xrow + off;
                    for (int64_t o2 = lo; o2 < hi; ++o2) arow[o2] += wv * xr[o2];
                  } else {
                    for (int64_t o2 = lo; o2 < hi; ++o2) arow[o2] += wv * xrow[o2 * s2 + off];
                  }
                }
              }
          }
        RequantRow rq;
        rq.acc = acc.data();
        rq.n = P;
        rq.bias = r.bias.data() + c;
        rq.scale = r.scale.data() + c;
        rq.per_value = false;
        rq.zp = r.zp;
        rq.lo = r.lo;
        rq.hi = r.hi;
        rq.y = y + plane * P;
        rq.y_signed = std::is_same_v<T, int8_t>;
        requant_fn(rq);
      }
    });
  }

  // The requantization of a group's output channels from channel m0 (qgemm
  // indexes the terms by the group's column).
  static RequantRow group_requant(const ConvRequant& r, int64_t m0, bool y_signed) {
    RequantRow rq;
    rq.bias = r.bias.data() + m0;
    rq.scale = r.scale.data() + m0;
    rq.zp = r.zp;
    rq.lo = r.lo;
    rq.hi = r.hi;
    rq.y_signed = y_signed;
    return rq;
  }

  template <class T>
  void gemm_path(KernelContext& ctx, const Tensor& X, const Window3& g, bool x_signed, int32_t x_zp,
                 const std::vector<int32_t>& w_zp, const ConvRequant& r, T* y, const QuantRow* add) const {
    const int64_t N = X.dim(0), C = X.dim(nhwc_ ? 3 : 1), M = w_shape_[0];
    const int64_t G = group_, cg = C / G, mg = M / G;
    const int64_t taps = g.k_size(), K = cg * taps, P = g.out_size(), in_size = g.in_size();
    const bool pointwise = taps == 1 && g.s[0] == 1 && g.s[1] == 1 && g.s[2] == 1 && g.pb[0] == 0 && g.pb[1] == 0 &&
                           g.pb[2] == 0 && P == in_size;
    // The input in pixel-major order (one image at a time): [pixel][channel].
    const size_t nhwc_bytes = static_cast<size_t>(in_size * C);
    uint8_t* nhwc =
        nhwc_ ? nullptr : reinterpret_cast<uint8_t*>(scratch_floats(kSharedInputSlot, (nhwc_bytes + 3) / 4));
    const int64_t panel = std::max<int64_t>(packed_[0].panel_columns, 1);
    // The im2col of a chunk of output pixels (every group; at most ~4 MB) is
    // built once, in parallel, before the GEMM blocks that read it: blocks
    // splitting the output channels of the same pixels share it.
    const int64_t chunk = pointwise ? P : std::min(P, std::max<int64_t>(64, (int64_t{4} << 20) / (G * K)));
    // Blocks: rows first (pixels), at most ~256 KB of im2col rows and at
    // least 24 unless the image is smaller, a multiple of the 6-row tile;
    // output channels are split only when that leaves half the blocks, in
    // whole 4-panel tiles when there are enough channels (narrower tiles
    // load a B vector for fewer products).
    const int64_t want = blocks_for_cost(chunk, fma_cost(static_cast<double>(M * K)));
    const int64_t pb_max = std::clamp<int64_t>((262144 / std::max<int64_t>(K, 1)) / 6 * 6, 24, 192);
    const int64_t pb = std::min(chunk, std::min(pb_max, std::max<int64_t>(24, ceil_div(chunk * G, want) / 6 * 6)));
    const int64_t row_blocks = ceil_div(chunk, pb);
    const int64_t col_unit = mg >= 8 * panel ? 4 * panel : panel;
    int64_t nb = mg;
    if (2 * G * row_blocks <= want && mg > col_unit) {
      const int64_t splits = std::min(ceil_div(want, G * row_blocks), ceil_div(mg, col_unit));
      nb = std::min(mg, round_up(ceil_div(mg, splits), col_unit));
    }
    const int64_t col_blocks = ceil_div(mg, nb);
    // im2col rows as pointers to the input's channel runs (qgemm's indirect A) when the kernel reads them in
    // place (runs of whole k groups, weight zero points 0), else copied; one column block builds its rows
    // itself (slot 1), in cache for its GEMM.
    const int32_t zb0 = w_signed_ ? 0 : 128;  // the zero point qgemm's kernels take as 0
    const bool own_col = !pointwise && col_blocks == 1,
               indirect = !pointwise && cg % 4 == 0 && qgemm_reads_indirect_a() &&
                          std::all_of(w_zp.begin(), w_zp.end(), [&](int32_t z) { return z == zb0; });
    const std::vector<uint8_t> pad_run(static_cast<size_t>(cg), static_cast<uint8_t>(x_zp));
    const size_t shared =
        pointwise || own_col ? 0 : static_cast<size_t>(indirect ? G * chunk * taps * 2 : (G * chunk * K + 3) / 4);
    float* shared_rows = shared ? scratch_floats(kSharedScratchSlot, shared) : nullptr;
    uint8_t* col = indirect ? nullptr : reinterpret_cast<uint8_t*>(shared_rows);
    const uint8_t** tab = indirect ? reinterpret_cast<const uint8_t**>(shared_rows) : nullptr;
    const uint8_t* xdata = static_cast<const uint8_t*>(X.raw_data());
    const uint8_t pad_byte = static_cast<uint8_t>(x_zp);
    const T* r_data = add ? ctx.input(9).data<T>() : nullptr;
    for (int64_t n = 0; n < N; ++n) {
      const uint8_t* xn = xdata + n * C * in_size;
      // NCHW: X transposed [C][pixels] -> [pixels][C]; NHWC: X as it is.
      if (nhwc_) nhwc = const_cast<uint8_t*>(xn);
      else transpose_bytes(ctx.pool(), xn, nhwc, 1, C, in_size);
      T* yn = y + n * M * P;
      for (int64_t q0 = 0; q0 < P; q0 += chunk) {
        const int64_t chunk_rows = std::min(chunk, P - q0);
        if (shared_rows) im2col_chunk_u8(ctx.pool(), nhwc, C, G, g, q0, chunk_rows, pad_run.data(), tab, col);
        const int64_t blocks = ceil_div(chunk_rows, pb);
        const int64_t items = G * blocks * col_blocks;
        // Column blocks outermost when B outweighs the rows: each column block of B read once.
        const bool cols_outer = col_blocks > 1 && mg > chunk_rows;
        parallel_for(ctx.pool(), 0, items, 1, [&](int64_t i0, int64_t i1) {
          for (int64_t item = i0; item < i1; ++item) {
            const int64_t grp = item / (blocks * col_blocks);
            const int64_t rb = cols_outer ? item % blocks : (item / col_blocks) % blocks;
            const int64_t cb = cols_outer ? (item / blocks) % col_blocks : item % col_blocks;
            const int64_t p0 = q0 + rb * pb, rows = std::min(pb, q0 + chunk_rows - p0);
            const int64_t c0 = cb * nb, c1 = std::min(mg, c0 + nb);
            const uint8_t* a = nullptr;
            int64_t lda = K;
            const uint8_t** ptrs = nullptr;
            if (pointwise) {
              a = nhwc + p0 * C + grp * cg;
              lda = C;
            } else if (indirect && !own_col) {
              ptrs = tab + (grp * chunk_rows + (p0 - q0)) * taps;
            } else if (indirect) {
              ptrs = reinterpret_cast<const uint8_t**>(scratch_floats(1, static_cast<size_t>(rows * taps * 2)));
              im2col_rows_u8(nhwc, C, cg, grp, g, p0, rows, pad_run.data(), ptrs);
            } else if (own_col) {
              uint8_t* own = reinterpret_cast<uint8_t*>(scratch_floats(1, static_cast<size_t>((rows * K + 3) / 4)));
              im2col_u8(nhwc, C, cg, grp, g, p0, rows, pad_byte, own);
              a = own;
            } else {
              a = col + (grp * chunk_rows + (p0 - q0)) * K;
            }
            const int64_t cols = c1 - c0, m0 = grp * mg + c0;
            // Requantized in qgemm's epilogue: straight into the NHWC output
            // pixels, or into scratch transposed into the NCHW planes (or
            // added to R's block into the output, with a folded Add).
            T* q = nhwc_ && !add ? yn + p0 * M + m0
                                 : reinterpret_cast<T*>(scratch_floats(2, static_cast<size_t>((rows * cols + 3) / 4)));
            const RequantRow rq = group_requant(r, grp * mg, std::is_same_v<T, int8_t>);
            QGemmArgs args;
            args.a = a;
            args.a_rows = ptrs;
            args.a_taps = taps;
            args.a_signed = x_signed;
            args.lda = lda;
            args.a_zero_point = x_zp;
            args.m = rows;
            args.b = &packed_[static_cast<size_t>(grp)];
            args.b_zero_points = w_zp.data() + grp * mg;
            args.per_column_b_zero_points = true;
            args.col_begin = c0;
            args.col_end = c1;
            args.requant = &rq;
            args.yq = q;
            args.ldyq = nhwc_ && !add ? M : cols;
            qgemm(args);
            if (add) add_->add_rows(*add, q, cols, r_data + n * M * P + p0 * M + m0, yn + p0 * M + m0, M, rows, cols);
            else if (!nhwc_) store_planes(q, rows, cols, m0, p0, P, yn);
          }
        });
      }
    }
  }

  WindowAttrs attrs_;
  int64_t group_;
  bool nhwc_ = false;  // spindle.QLinearConvNhwc: X and Y [N, H, W, C]
  bool owns_w_ = false;  // W's storage dropped: the packed weights replace it
  bool relu_ = false;
  bool packed_ok_ = false, depthwise_ = false, w_signed_ = true;
  Shape w_shape_;
  std::vector<QGemmPackedB> packed_;  // one per group
  // Depthwise W as loaded (int8 / uint8, [C][taps]; the kernel holds it
  // once the plan dropped the input) and its packing.
  QDepthwise dw_;
  QGroupedWeights grouped_;  // narrow square groups (empty: not used)
  std::optional<QResidualAdd> add_;  // a folded QLinearAdd (NHWC only)
};

}  // namespace

void register_qlinear(KernelRegistry& r) {
  r.add("", "MatMulInteger", 10, 17, factory_of<MatMulIntegerKernel>());
  r.add("", "QLinearMatMul", 10, 17, factory_of<QLinearMatMulKernel>());
  r.add("", "ConvInteger", 10, 17, factory_of<ConvIntegerKernel>());
  r.add("", "QLinearConv", 10, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearConvKernel>(node, false);
  });
  r.add("spindle", "QLinearConvNhwc", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QLinearConvKernel>(node, true);
  });
  register_nhwc(r);
}

}  // namespace spindle::kernels::nn
