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

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "primitives/gemm/qgemm.h"

namespace spindle::kernels::nn {

namespace {

void require_q8(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.dtype() != DataType::kUInt8 && t.dtype() != DataType::kInt8)
    fail(node, fmt::format("input {} is {}, expected uint8 or int8", name, t.describe()));
}

// Values of an int8 / uint8 tensor widened to int32.
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

// A zero point input: absent = 0; one value, or `n` values (one per row /
// column / output channel, `what` says which). Its type must be its data's.
std::vector<int32_t> zero_points(KernelContext& ctx, int index, const char* name, const Tensor& data, int64_t n,
                                 const char* what) {
  if (!ctx.has_input(index)) return std::vector<int32_t>(static_cast<size_t>(n), 0);
  const Tensor& z = ctx.input(index);
  if (z.dtype() != data.dtype())
    fail(ctx.node(), fmt::format("input {} is {}, expected {} like its data", name, z.describe(),
                                 dtype_name(data.dtype())));
  if (z.numel() != 1 && z.numel() != n)
    fail(ctx.node(), fmt::format("input {} has shape {}, expected one value or {} ({})", name,
                                 shape_to_string(z.shape()), n, what));
  const std::vector<int32_t> v = widen(z);
  return z.numel() == 1 ? std::vector<int32_t>(static_cast<size_t>(n), v[0]) : v;
}

// A float32 scale input: one value, or `n` values.
std::vector<float> scales(KernelContext& ctx, int index, const char* name, int64_t n, const char* what) {
  const Tensor& s = ctx.input(index);
  require_float(ctx.node(), s, name);
  if (s.numel() != 1 && s.numel() != n)
    fail(ctx.node(), fmt::format("input {} has shape {}, expected one value or {} ({})", name,
                                 shape_to_string(s.shape()), n, what));
  const float* p = s.data<float>();
  return s.numel() == 1 ? std::vector<float>(static_cast<size_t>(n), p[0]) : std::vector<float>(p, p + n);
}

// The y_zero_point input: one int8 / uint8 value, whose type the output takes.
int32_t output_zero_point(const NodeInfo& node, const Tensor& yzp) {
  require_q8(node, yzp, "y_zero_point");
  if (yzp.numel() != 1)
    fail(node, fmt::format("input y_zero_point has shape {}, expected one value", shape_to_string(yzp.shape())));
  return widen(yzp)[0];
}

// Writes acc * scale + zp, rounded half to even and saturated, as T.
// `scale` is computed in float32 (as the scales are); the product with the
// accumulator in double, as numpy promotes int32 * float32.
template <class T>
T requantize(int64_t acc, float scale, int32_t zp) {
  const double v = std::nearbyint(static_cast<double>(acc) * static_cast<double>(scale)) + zp;
  const double lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return static_cast<T>(std::min(hi, std::max(lo, v)));
}

// ---------------------------------------------------------------- MatMul

// One 8-bit GEMM over rows x N, split over the pool in blocks of rows and of
// columns chosen from the shape only (integer sums are exact, and each
// float of the epilogue depends on its own sum alone, so the blocks change no
// bit). `base` holds every field but the rows, columns and outputs.
void parallel_qgemm(KernelContext& ctx, const QGemmArgs& base, int64_t rows, int64_t N) {
  if (rows <= 0 || N <= 0) return;
  const int64_t panel = base.b->panel_columns;
  // Column blocks of N / 8 rounded up to a panel, at least 4 panels (the
  // micro-kernel's widest tile), and row blocks of at most 96 rows.
  const int64_t nb = std::min(round_up(N, panel), std::max<int64_t>(4 * panel, round_up(ceil_div(N, 8), panel)));
  const int64_t mb = std::min<int64_t>(rows, 96);
  const int64_t n_blocks = ceil_div(N, nb), m_blocks = ceil_div(rows, mb);
  const int64_t blocks = n_blocks * m_blocks;
  const int64_t lda = base.lda;
  parallel_for(ctx.pool(), 0, blocks, 1, gemm_cost(mb, nb, std::max<int64_t>(base.b->k / 4, 1)),
               [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t m0 = (blk / n_blocks) * mb, m1 = std::min(rows, m0 + mb);
      const int64_t n0 = (blk % n_blocks) * nb, n1 = std::min(N, n0 + nb);
      QGemmArgs args = base;
      args.a = static_cast<const uint8_t*>(base.a) + m0 * lda;
      args.m = m1 - m0;
      args.col_begin = n0;
      args.col_end = n1;
      if (base.y) args.y = base.y + m0 * base.ldy + n0;
      else args.c = base.c + m0 * base.ldc + n0;
      qgemm(args);
    }
  });
}

// A constant B of MatMulInteger / QLinearMatMul (2-D, or with batch dims of
// 1), packed for qgemm when the kernel is created.
struct PrepackedB {
  QGemmPackedB packed;
  const void* data = nullptr;  // what was packed (null: nothing)
  void pack(const NodeInfo& node, int index) {
    const Tensor* b = node.const_input(index);
    if (!node.prepack || !b || (b->dtype() != DataType::kUInt8 && b->dtype() != DataType::kInt8) || b->rank() < 2 ||
        b->numel() == 0 || b->numel() != b->dim(b->rank() - 2) * b->dim(b->rank() - 1))
      return;
    const int64_t K = b->dim(b->rank() - 2), N = b->dim(b->rank() - 1);
    packed = qgemm_pack_b(b->raw_data(), b->dtype() == DataType::kInt8, K, N, N);
    data = b->raw_data();
  }
};

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
    const std::vector<int32_t> a_zp = zero_points(ctx, a_zp_index, "a_zero_point", A, M, "one per row of A");
    const std::vector<int32_t> b_zp = zero_points(ctx, b_zp_index, "b_zero_point", B, N, "one per column of B");
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
      parallel_qgemm(ctx, args, batches * M, N);
      return;
    }
    std::vector<int32_t> a = widen(A), b = widen(B);
    for (int64_t i = 0; i < static_cast<int64_t>(a.size()); ++i) a[static_cast<size_t>(i)] -= a_zp[static_cast<size_t>((i / K) % M)];
    for (int64_t i = 0; i < static_cast<int64_t>(b.size()); ++i) b[static_cast<size_t>(i)] -= b_zp[static_cast<size_t>(i % N)];
    const Shape a_str = broadcast_strides(a_batch, batch), b_str = broadcast_strides(b_batch, batch);
    acc.assign(out_shape);
    const int64_t rows = batches * M;
    parallel_for(ctx.pool(), 0, rows, grain_for_work(rows, 2.0 * static_cast<double>(K * N)), [&](int64_t r0, int64_t r1) {
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
        y[i] = requantize<T>(mm.acc[static_cast<size_t>(i)], sa[static_cast<size_t>(m)] * sb[static_cast<size_t>(n)] / sy[0], zp);
      }
    };
    if (yzp.dtype() == DataType::kUInt8) write(Y.mutable_data<uint8_t>());
    else write(Y.mutable_data<int8_t>());
  }

 private:
  PrepackedB pre_;
};

// ---------------------------------------------------------------- dequantized products

// com.microsoft DynamicQuantizeMatMul (A float, B, b_scale, b_zero_point?,
// bias?) and MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point?,
// b_zero_point?, bias?): the int32 product of the (quantized) A and B, then
//   Y = float(acc) * (a_scale * b_scale[j])  (+ bias[j])
// one float rounding at a time: what DynamicQuantizeLinear, MatMulInteger,
// Cast, Mul(a_scale, b_scale), Mul and Add compute, which the optimizer's
// DynamicQuantizeMatMulFusion turns into DynamicQuantizeMatMul. DynamicQuantizeMatMul
// quantizes A as DynamicQuantizeLinear does (uint8, its own scale and zero
// point). B is 2-D; a constant B is packed when the kernel is created.
class DequantizedMatMulKernel final : public OpKernel {
 public:
  DequantizedMatMulKernel(const NodeInfo& node, bool quantize_a) : quantize_a_(quantize_a) { pre_.pack(node, 1); }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    const Tensor& B = ctx.input(1);
    if (quantize_a_) require_float(node, A, "A");
    else require_q8(node, A, "A");
    require_q8(node, B, "B");
    if (A.rank() < 1 || B.rank() != 2)
      fail(node, fmt::format("inputs A {} and B {}: expected A of rank >= 1 and a 2-D B", shape_to_string(A.shape()),
                             shape_to_string(B.shape())));
    const int64_t K = A.dim(A.rank() - 1), N = B.dim(1);
    if (B.dim(0) != K)
      fail(node, fmt::format("inputs A {} and B {}: inner dimensions {} and {} differ", shape_to_string(A.shape()),
                             shape_to_string(B.shape()), K, B.dim(0)));
    const int64_t rows = shape_numel(Shape(A.shape().begin(), A.shape().end() - 1));
    const int b_scale_index = quantize_a_ ? 2 : 3;
    const int b_zp_index = quantize_a_ ? 3 : 5;
    const int bias_index = quantize_a_ ? 4 : 6;
    const std::vector<float> b_scale = scales(ctx, b_scale_index, "b_scale", N, "one per column of B");
    const bool per_column_scale = ctx.input(b_scale_index).numel() != 1;
    const std::vector<int32_t> b_zp = zero_points(ctx, b_zp_index, "b_zero_point", B, N, "one per column of B");
    const float* bias = nullptr;
    if (ctx.has_input(bias_index)) {
      const Tensor& bt = ctx.input(bias_index);
      require_float(node, bt, "bias");
      if (bt.rank() != 1 || bt.dim(0) != N)
        fail(node, fmt::format("input bias has shape {}, expected [{}] (the columns of B)", shape_to_string(bt.shape()), N));
      bias = bt.data<float>();
    }
    Shape ys(A.shape().begin(), A.shape().end() - 1);
    ys.push_back(N);
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;

    QGemmArgs args;
    float a_scale = 0.0f;
    if (quantize_a_) {
      // A quantized into the calling thread's shared scratch (read by every block).
      uint8_t* qa = reinterpret_cast<uint8_t*>(scratch_floats(kSharedScratchSlot, static_cast<size_t>(ceil_div(A.numel(), 4))));
      const DynamicQuantization q = dynamic_quantize_u8(A.data<float>(), A.numel(), qa);
      a_scale = q.scale;
      args.a = qa;
      args.a_zero_point = q.zero_point;
    } else {
      const std::vector<float> sa = scales(ctx, 2, "a_scale", 1, "one value");
      a_scale = sa[0];
      args.a = A.raw_data();
      args.a_signed = A.dtype() == DataType::kInt8;
      args.a_zero_point = zero_points(ctx, 4, "a_zero_point", A, 1, "one value")[0];
    }
    std::vector<float> scale(per_column_scale ? static_cast<size_t>(N) : 1);
    for (size_t j = 0; j < scale.size(); ++j) scale[j] = a_scale * b_scale[j];
    QGemmPackedB local;
    const QGemmPackedB* packed = &pre_.packed;
    if (pre_.data == nullptr || pre_.data != B.raw_data()) {
      local = qgemm_pack_b(B.raw_data(), B.dtype() == DataType::kInt8, K, N, N);
      packed = &local;
    }
    args.lda = K;
    args.b = packed;
    args.b_zero_points = b_zp.data();
    args.per_column_b_zero_points = true;
    args.y = Y.mutable_data<float>();
    args.ldy = N;
    args.scale = scale.data();
    args.per_column_scale = per_column_scale;
    args.bias = bias;
    parallel_qgemm(ctx, args, rows, N);
  }

 private:
  bool quantize_a_;
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
    const std::vector<int32_t> x_zp = zero_points(ctx, x_zp_index, "x_zero_point", X, 1, "one value");
    const std::vector<int32_t> w_zp = zero_points(ctx, w_zp_index, "w_zero_point", W, M, "one per output channel");
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
    parallel_for(ctx.pool(), 0, planes, grain_for_work(planes, 2.0 * static_cast<double>(plane * wk)),
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

class QLinearConvKernel final : public OpKernel {
 public:
  explicit QLinearConvKernel(const NodeInfo& node)
      : attrs_(WindowAttrs::parse(node, true, false)), group_(node.attrs.get_int("group", 1)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    require_q8(node, ctx.input(0), "x");
    require_q8(node, ctx.input(3), "w");
    IntConv conv;
    conv.compute(ctx, attrs_, group_, ctx.input(0), ctx.input(3), 2, 5);
    const std::vector<float> sx = scales(ctx, 1, "x_scale", 1, "one value");
    const std::vector<float> sw = scales(ctx, 4, "w_scale", conv.M, "one per output channel");
    const std::vector<float> sy = scales(ctx, 6, "y_scale", 1, "one value");
    const Tensor& yzp = ctx.input(7);
    const int32_t zp = output_zero_point(node, yzp);
    const int32_t* bias = nullptr;
    if (ctx.has_input(8)) {
      const Tensor& b = ctx.input(8);
      if (b.dtype() != DataType::kInt32 || b.numel() != conv.M)
        fail(node, fmt::format("input B is {}, expected int32 with {} values (one per output channel)", b.describe(),
                               conv.M));
      bias = b.data<int32_t>();
    }
    Tensor& Y = ctx.output(0, yzp.dtype(), conv.out_shape);
    auto write = [&](auto* y) {
      using T = std::remove_pointer_t<decltype(y)>;
      for (int64_t p = 0; p < conv.planes; ++p) {
        const int64_t m = p % conv.M;
        const float scale = sx[0] * sw[static_cast<size_t>(m)] / sy[0];
        const int64_t b = bias ? bias[m] : 0;
        for (int64_t i = 0; i < conv.plane; ++i) {
          const int64_t at = p * conv.plane + i;
          y[at] = requantize<T>(conv.acc[static_cast<size_t>(at)] + b, scale, zp);
        }
      }
    };
    if (yzp.dtype() == DataType::kUInt8) write(Y.mutable_data<uint8_t>());
    else write(Y.mutable_data<int8_t>());
  }

 private:
  WindowAttrs attrs_;
  int64_t group_;
};

}  // namespace

void register_qlinear(KernelRegistry& r) {
  r.add("", "MatMulInteger", 10, 17, factory_of<MatMulIntegerKernel>());
  r.add("", "QLinearMatMul", 10, 17, factory_of<QLinearMatMulKernel>());
  r.add("", "ConvInteger", 10, 17, factory_of<ConvIntegerKernel>());
  r.add("", "QLinearConv", 10, 17, factory_of<QLinearConvKernel>());
  r.add("com.microsoft", "DynamicQuantizeMatMul", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<DequantizedMatMulKernel>(node, true);
  });
  r.add("com.microsoft", "MatMulIntegerToFloat", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<DequantizedMatMulKernel>(node, false);
  });
}

}  // namespace spindle::kernels::nn
