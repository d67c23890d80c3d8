// norm.cpp — BatchNormalization (inference; opsets 1..17), InstanceNormalization
// (1..17), LayerNormalization (17, with the optional Mean / InvStdDev
// outputs), LRN (1..17), GroupNormalization (18, 21), RMSNormalization (23),
// and the RMS norms ONNX Runtime's model builder writes:
// SimplifiedLayerNormalization (X, scale -> Y, inv_std_var?) and
// com.microsoft SkipSimplifiedLayerNormalization (input, skip, gamma, bias?
// -> output, mean? (zeros: the mean is taken as 0), inv_std_var?,
// input_skip_bias_sum?), the sum input + skip (+ bias) normalized.
// BatchNormalization applies the activation the optimizer fused into it
// (attribute "activation", kernels/math/activation.h) to each plane while it
// is in cache: BN -> Relu before a Conv (DenseNet) is one pass.
// spindle.BatchNormalizationNhwc (the optimizer's NhwcTransformer) is the
// inference op on X's pixel-major form [N, H, W, C]: the same per-element
// x * a[c] + b[c] and activation, a pixel's C channels at a time, compiled
// per ISA level as the NCHW loop is (batchnorm_nhwc.isa.cpp): the same bits.
// With inputs 5 and 6 (y_scale, y_zero_point, one value each) it is followed
// by the QuantizeLinear the optimizer folded into it: Y is 8-bit, the float
// values quantized a few rows at a time by QuantizeLinear's own loop. With
// inputs 7 and 8 (x_scale, x_zero_point) it is preceded by a folded
// DequantizeLinear: X is 8-bit, dequantized a few rows at a time by
// DequantizeLinear's own loop.
//
// Statistics of one plane or row are accumulated in double by one block, so
// they do not depend on the thread count.
#include <cmath>

#include "kernels/broadcast.h"
#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"
#include "primitives/math/moments_isa.h"
#include "primitives/quant/requant.h"

// batchnorm_nhwc.isa.cpp
SPINDLE_ISA_DECLARE(void, affine_channels_activation,
                    (const spindle::kernels::Activation& act, const float* x, const float* a, const float* b, float* y,
                     int64_t pixels, int64_t C));

namespace spindle::kernels::nn {

void batchnorm_coefficients(const float* scale, const float* B, const float* mean, const float* var, float epsilon,
                            int64_t n, float* a, float* b) {
  for (int64_t i = 0; i < n; ++i) {
    a[i] = scale[i] / std::sqrt(var[i] + epsilon);
    b[i] = B[i] - mean[i] * a[i];
  }
}

namespace {

// Returns `t` (float32, broadcastable to `shape`) expanded to shape's elements.
std::vector<float> expand_to(const NodeInfo& node, const Tensor& t, const char* name, const Shape& shape) {
  require_float(node, t, name);
  const int64_t n = shape_numel(shape);
  std::vector<float> out(static_cast<size_t>(n));
  const float* p = t.data<float>();
  if (t.numel() == n) {
    std::copy(p, p + n, out.begin());
    return out;
  }
  if (t.rank() > static_cast<int64_t>(shape.size()))
    fail(node, fmt::format("input {} has shape {}, which does not broadcast to {}", name, shape_to_string(t.shape()),
                           shape_to_string(shape)));
  for (size_t i = 0; i < t.shape().size(); ++i) {
    const int64_t d = t.shape()[i], want = shape[shape.size() - t.shape().size() + i];
    if (d != 1 && d != want)
      fail(node, fmt::format("input {} has shape {}, which does not broadcast to {}", name,
                             shape_to_string(t.shape()), shape_to_string(shape)));
  }
  const Shape st = broadcast_strides(t.shape(), shape);
  const size_t r = shape.size();
  std::vector<int64_t> pos(r, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += pos[k] * st[k];
    out[static_cast<size_t>(i)] = p[off];
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < shape[k]) break;
      pos[k] = 0;
    }
  }
  return out;
}

// Mean and (biased) variance of n values, accumulated in double; with
// centered = false the mean is taken as 0 (RMSNormalization). Each sum runs
// in 8 partial sums (element i into sum i % 8, then a fixed tree), so the
// adds do not wait on each other: one running double sum was a 4-cycle
// chain per element (LayerNormalization over 128 x 384: ~106 us). The order
// depends on n alone; the loops are per ISA level (moments_isa.h: 8 double
// lanes at AVX-512), the same bits at each.
struct Moments {
  double mean, var;
};
Moments moments(const float* x, int64_t n, bool centered = true) {
  static const auto fn = SPINDLE_ISA_SELECT(row_moments);
  Moments m{};
  fn(x, n, centered, &m.mean, &m.var);
  return m;
}

// ---------------------------------------------------------------- BatchNormalization

class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(const NodeInfo& node, bool channels_last = false)
      : channels_last_(channels_last),
        epsilon_(node.attrs.get_float("epsilon", 1e-5f)),
        spatial_(node.opset < 9 ? node.attrs.get_int("spatial", 1) != 0 : true),
        training_(node.opset >= 14 && node.attrs.get_int("training_mode", 0) != 0),
        momentum_(node.attrs.get_float("momentum", 0.9f)),
        act_(activation_from_attrs(node)) {
    if (training_ && node.num_outputs > 3)
      fail(node, fmt::format("{} outputs, expected at most 3 (Y, running_mean, running_var)", node.num_outputs));
    if (!training_ && node.num_outputs > 1)
      fail_unsupported(node, fmt::format("{} outputs requested: the training outputs (running mean/var, saved "
                                         "mean/var) are not supported (inference only)",
                                         node.num_outputs));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    if (channels_last_) return compute_nhwc(ctx);  // X float32, or 8-bit with x_scale
    require_float(node, X, "X");
    if (X.rank() < 2)
      fail(node, fmt::format("input X has shape {}, expected rank >= 2 (N x C x ...)", shape_to_string(X.shape())));
    const int64_t N = X.dim(0), C = X.dim(1);
    const int64_t inner = N * C == 0 ? 0 : X.numel() / (N * C);
    // Per-channel (spatial) or per-feature (spatial=0, opset < 9) parameters.
    const int64_t per = spatial_ ? C : C * inner;
    const float* prm[4];
    read_params(ctx, per, prm);
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    const float* x = X.data<float>();
    // Training mode: normalize with this batch's per-channel mean and
    // (population) variance; the running statistics move towards them.
    std::vector<float> batch_stats;
    if (training_) {
      batch_stats = channel_mean_var(ctx.pool(), x, N, C, inner);
      for (int o = 1; o < 3 && o < ctx.num_outputs(); ++o) {
        float* run = ctx.output(o, DataType::kFloat32, {C}).mutable_data<float>();
        for (int64_t c = 0; c < C; ++c)
          run[c] = prm[o + 1][c] * momentum_ + batch_stats[static_cast<size_t>((o - 1) * C + c)] * (1 - momentum_);
      }
      prm[2] = batch_stats.data();
      prm[3] = batch_stats.data() + C;
    }
    if (Y.numel() == 0) return;
    // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a.
    std::vector<float> ab_storage(static_cast<size_t>(2 * per));
    float* ab = ab_storage.data();
    batchnorm_coefficients(prm[0], prm[1], prm[2], prm[3], epsilon_, per, ab, ab + per);
    float* y = Y.mutable_data<float>();
    const float* a = ab;
    const float* b = ab + per;
    const int64_t planes = N * C;
    static const auto affine_fn = SPINDLE_ISA_SELECT(affine_activation);
    parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(static_cast<double>(inner))), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * inner;
        float* yp = y + p * inner;
        const int64_t c = p % C;
        if (spatial_) {
          affine_fn(act_, xp, a[c], b[c], yp, inner);
        } else {
          const float* ac = a + c * inner;
          const float* bc = b + c * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * ac[i] + bc[i];
          if (!act_.is_none()) act_.apply(yp, inner);  // the plane is still in cache
        }
      }
    });
  }

  // scale, B, mean, var: float, `per` values each.
  static void read_params(KernelContext& ctx, int64_t per, const float* prm[4]) {
    const char* names[4] = {"scale", "B", "mean", "var"};
    const Tensor& X = ctx.input(0);
    for (int i = 0; i < 4; ++i) {
      const Tensor& t = ctx.input(i + 1);
      require_float(ctx.node(), t, names[i]);
      if (t.numel() != per)
        fail(ctx.node(), fmt::format("input {} has shape {}, expected {} values for input X of shape {}", names[i],
                                     shape_to_string(t.shape()), per, shape_to_string(X.shape())));
      prm[i] = t.data<float>();
    }
  }

  // X [N, H, W, C] (inference, per-channel parameters).
  void compute_nhwc(KernelContext& ctx) const {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    if (X.rank() != 4)
      fail(node, fmt::format("input X has shape {}, expected rank 4 (N x H x W x C)", shape_to_string(X.shape())));
    const int64_t C = X.dim(3);
    const float* prm[4];
    read_params(ctx, C, prm);
    // QuantizeLinear folded in (y_scale, y_zero_point: one value each): y is 8-bit.
    const bool quantized = ctx.has_input(5);
    QuantRow q;
    if (quantized) q = output_quantization(ctx);
    // DequantizeLinear folded in (x_scale, x_zero_point: one value each): X is 8-bit.
    const bool x_quantized = ctx.has_input(7);
    QuantRow dq;
    if (x_quantized) dq = input_dequantization(ctx, X);
    else require_float(node, X, "X");
    Tensor& Y = ctx.output(0, !quantized ? DataType::kFloat32 : q.sign ? DataType::kInt8 : DataType::kUInt8, X.shape());
    if (Y.numel() == 0) return;
    std::vector<float> ab(static_cast<size_t>(2 * C));
    batchnorm_coefficients(prm[0], prm[1], prm[2], prm[3], epsilon_, C, ab.data(), ab.data() + C);
    const float* a = ab.data();
    const float* b = ab.data() + C;
    const int64_t pixels = X.numel() / C;
    static const auto rows_fn = SPINDLE_ISA_SELECT(affine_channels_activation);
    if (!quantized && !x_quantized) {
      const float* x = X.data<float>();
      float* y = Y.mutable_data<float>();
      parallel_for(ctx.pool(), 0, pixels, grain_for_cost(ops_cost(static_cast<double>(C))),
                   [&](int64_t p0, int64_t p1) { rows_fn(act_, x + p0 * C, a, b, y + p0 * C, p1 - p0, C); });
      return;
    }
    // 8-bit in and out, no activation or Relu: one pass where the level has
    // it (affine_q8_rows, the same operations as the three passes below).
    static const auto affine_q8_fn = SPINDLE_ISA_SELECT(affine_q8_rows);
    if (quantized && x_quantized && !act_.affine && (act_.kind == Activation::kNone || act_.kind == Activation::kRelu)) {
      AffineQ8Rows rows;
      rows.dq = dq;
      rows.q = q;
      rows.a = a;
      rows.b = b;
      rows.C = C;
      rows.relu = act_.kind == Activation::kRelu;
      rows.pixels = 0;
      if (affine_q8_fn(rows)) {  // a level that has it (nothing done for 0 pixels)
        parallel_for(ctx.pool(), 0, pixels, grain_for_cost(ops_cost(static_cast<double>(C))), [&](int64_t p0, int64_t p1) {
          AffineQ8Rows r = rows;
          r.dq.a = static_cast<const uint8_t*>(X.raw_data()) + p0 * C;
          r.q.y = static_cast<uint8_t*>(Y.raw_mutable_data()) + p0 * C;
          r.pixels = p1 - p0;
          affine_q8_fn(r);
        });
        return;
      }
    }
    // Rows of pixels in float (in cache): X dequantized as DequantizeLinear
    // does, the affine pass, then quantized as QuantizeLinear does.
    static const auto quant_fn = SPINDLE_ISA_SELECT(quantize_row);
    static const auto dequant_fn = SPINDLE_ISA_SELECT(dequantize_row);
    const auto* x8 = static_cast<const uint8_t*>(X.raw_data());
    auto* y8 = static_cast<uint8_t*>(Y.raw_mutable_data());
    const int64_t chunk = std::max<int64_t>(1, 4096 / C);
    parallel_for(ctx.pool(), 0, pixels, grain_for_cost(ops_cost(2.0 * static_cast<double>(C))), [&](int64_t p0, int64_t p1) {
      float* tmp = quantized ? scratch_floats(0, static_cast<size_t>(chunk * C)) : nullptr;
      float* tmp_x = x_quantized ? scratch_floats(1, static_cast<size_t>(chunk * C)) : nullptr;
      for (int64_t s = p0; s < p1; s += chunk) {
        const int64_t n = std::min(chunk, p1 - s);
        const float* xs = x_quantized ? tmp_x : X.data<float>() + s * C;
        if (x_quantized) {
          QuantRow r = dq;
          r.n = n * C;
          r.a = x8 + s * C;
          r.y = tmp_x;
          dequant_fn(r);
        }
        float* out = quantized ? tmp : Y.mutable_data<float>() + s * C;
        rows_fn(act_, xs, a, b, out, n, C);
        if (!quantized) continue;
        QuantRow r = q;
        r.n = n * C;
        r.a = tmp;
        r.y = y8 + s * C;
        quant_fn(r);
      }
    });
  }

  // The folded DequantizeLinear's parameters: x_scale (input 7), x_zero_point (8, X's type).
  static QuantRow input_dequantization(KernelContext& ctx, const Tensor& X) {
    const Tensor& s = ctx.input(7);
    const Tensor* z = ctx.has_input(8) ? &ctx.input(8) : nullptr;
    if (X.dtype() != DataType::kUInt8 && X.dtype() != DataType::kInt8)
      fail(ctx.node(), fmt::format("input X is {}, expected uint8 or int8 (x_scale is given)", X.describe()));
    if (s.dtype() != DataType::kFloat32 || s.numel() != 1)
      fail(ctx.node(), fmt::format("input x_scale is {}, expected one float32 value", s.describe()));
    if (z && (z->dtype() != X.dtype() || z->numel() != 1))
      fail(ctx.node(), fmt::format("input x_zero_point is {}, expected one value of X's type ({})", z->describe(),
                                   dtype_name(X.dtype())));
    QuantRow q;
    q.sign = X.dtype() == DataType::kInt8;
    q.a_scale = s.data<float>()[0];
    q.a_zero = !z ? 0.0f : q.sign ? static_cast<float>(z->data<int8_t>()[0]) : static_cast<float>(z->data<uint8_t>()[0]);
    return q;
  }

  // The folded QuantizeLinear's parameters: y_scale (input 5), y_zero_point (6, uint8 when absent).
  static QuantRow output_quantization(KernelContext& ctx) {
    const Tensor& s = ctx.input(5);
    const Tensor* z = ctx.has_input(6) ? &ctx.input(6) : nullptr;
    if (s.dtype() != DataType::kFloat32 || s.numel() != 1)
      fail(ctx.node(), fmt::format("input y_scale is {}, expected one float32 value", s.describe()));
    if (z && ((z->dtype() != DataType::kUInt8 && z->dtype() != DataType::kInt8) || z->numel() != 1))
      fail(ctx.node(), fmt::format("input y_zero_point is {}, expected one uint8 or int8 value", z->describe()));
    QuantRow q;
    q.sign = z && z->dtype() == DataType::kInt8;
    q.y_scale = s.data<float>()[0];
    q.y_zero = !z ? 0.0f : q.sign ? static_cast<float>(z->data<int8_t>()[0]) : static_cast<float>(z->data<uint8_t>()[0]);
    q.lo = q.sign ? -128.0f : 0.0f;
    q.hi = q.sign ? 127.0f : 255.0f;
    return q;
  }

 private:
  // Per-channel mean then variance of x [N, C, inner], in double, each
  // channel summed in index order (the same for any thread count).
  static std::vector<float> channel_mean_var(ThreadPool* pool, const float* x, int64_t N, int64_t C, int64_t inner) {
    std::vector<float> out(static_cast<size_t>(2 * C));
    parallel_for(pool, 0, C, grain_for_cost(ops_cost(2.0 * static_cast<double>(N * inner))), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double sum = 0, sq = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < inner; ++i) sum += x[(n * C + c) * inner + i];
        const double count = static_cast<double>(N * inner);
        const double mean = count > 0 ? sum / count : 0.0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t i = 0; i < inner; ++i) {
            const double d = x[(n * C + c) * inner + i] - mean;
            sq += d * d;
          }
        out[static_cast<size_t>(c)] = static_cast<float>(mean);
        out[static_cast<size_t>(C + c)] = static_cast<float>(count > 0 ? sq / count : 0.0);
      }
    });
    return out;
  }

  bool channels_last_;
  float epsilon_;
  bool spatial_;
  bool training_;
  float momentum_;
  Activation act_;  // fused by the optimizer (inference only)
};

// ---------------------------------------------------------------- InstanceNormalization

class InstanceNormKernel final : public OpKernel {
 public:
  explicit InstanceNormKernel(const NodeInfo& node) : epsilon_(node.attrs.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& S = ctx.input(1);
    const Tensor& B = ctx.input(2);
    require_float(node, X, "input");
    require_float(node, S, "scale");
    require_float(node, B, "B");
    if (X.rank() < 3)
      fail(node, fmt::format("input X has shape {}, expected rank >= 3 (N x C x spatial...)", shape_to_string(X.shape())));
    const int64_t N = X.dim(0), C = X.dim(1);
    if (S.numel() != C || B.numel() != C)
      fail(node, fmt::format("inputs scale {} and B {} must hold {} values (channels of X {})", shape_to_string(S.shape()),
                             shape_to_string(B.shape()), C, shape_to_string(X.shape())));
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    if (Y.numel() == 0) return;
    const int64_t inner = X.numel() / (N * C);
    const float* x = X.data<float>();
    const float* s = S.data<float>();
    const float* b = B.data<float>();
    float* y = Y.mutable_data<float>();
    parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(3.0 * static_cast<double>(inner))), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * inner;
        float* yp = y + p * inner;
        const auto [mean, var] = moments(xp, inner);
        const int64_t c = p % C;
        const float a = static_cast<float>(s[c] / std::sqrt(var + epsilon_));
        const float bb = static_cast<float>(b[c] - mean * a);
        for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] * a + bb;
      }
    });
  }

 private:
  float epsilon_;
};

// ---------------------------------------------------------------- LayerNormalization

// LayerNormalization, and RMSNormalization (23, `rms`): Y = X /
// sqrt(mean(X^2) + epsilon) * scale, the mean taken as 0 and no bias.
// SimplifiedLayerNormalization (`simplified`) is the RMS norm whose second
// output is the inverse standard deviation.
class LayerNormKernel final : public OpKernel {
 public:
  LayerNormKernel(const NodeInfo& node, bool rms, bool simplified = false)
      : axis_(node.attrs.get_int("axis", -1)), epsilon_(node.attrs.get_float("epsilon", 1e-5f)), rms_(rms),
        simplified_(simplified) {
    const int64_t stash = node.attrs.get_int("stash_type", 1);
    if (stash != 1) fail_unsupported(node, fmt::format("stash_type {} is not supported (only 1 = float32)", stash));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    const int64_t rank = X.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      fail(node, fmt::format("attribute axis {} is out of range for input X of shape {}", axis_, shape_to_string(X.shape())));
    const Shape norm_shape(X.shape().begin() + axis, X.shape().end());
    const int64_t cols = shape_numel(norm_shape);
    const int64_t rows = cols == 0 ? 0 : X.numel() / cols;
    const std::vector<float> scale = expand_to(node, ctx.input(1), "Scale", norm_shape);
    std::vector<float> bias;
    if (ctx.has_input(2)) bias = expand_to(node, ctx.input(2), "B", norm_shape);
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    Shape stat_shape(X.shape().begin(), X.shape().begin() + axis);
    stat_shape.resize(static_cast<size_t>(rank), 1);
    const int inv_index = simplified_ ? 1 : 2;
    float* mean_out = !simplified_ && ctx.wants_output(1) ? ctx.output(1, DataType::kFloat32, stat_shape).mutable_data<float>() : nullptr;
    float* inv_out = ctx.wants_output(inv_index) ? ctx.output(inv_index, DataType::kFloat32, stat_shape).mutable_data<float>() : nullptr;
    if (Y.numel() == 0) return;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const float* sc = scale.data();
    const float* bi = bias.empty() ? nullptr : bias.data();
    static const auto normalize = SPINDLE_ISA_SELECT(normalize_row);
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(3.0 * static_cast<double>(cols))), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        const auto [mean, var] = moments(xr, cols, !rms_);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
        const float m = static_cast<float>(mean);
        normalize(xr, yr, cols, m, inv, sc, bi);
        if (mean_out) mean_out[r] = m;
        if (inv_out) inv_out[r] = inv;
      }
    });
  }

 private:
  int64_t axis_;
  float epsilon_;
  bool rms_, simplified_;
};

// com.microsoft SkipSimplifiedLayerNormalization: s = input + skip (+ bias)
// over the last axis of size H (skip the input's shape, or its last two or
// one axes), y = s / sqrt(mean(s^2) + epsilon) * gamma. Rows are parallel_for
// items; a row's statistics are summed as in LayerNormalization.
class SkipSimplifiedLayerNormKernel final : public OpKernel {
 public:
  explicit SkipSimplifiedLayerNormKernel(const NodeInfo& node) : epsilon_(node.attrs.get_float("epsilon", 1e-5f)) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    for (auto [i, name] : {std::pair{0, "input"}, std::pair{1, "skip"}, std::pair{2, "gamma"}})
      require_float(node, ctx.input(i), name);
    const Tensor& X = ctx.input(0);
    const Tensor& skip = ctx.input(1);
    const Tensor& gamma = ctx.input(2);
    if (X.rank() < 1 || X.dim(static_cast<int>(X.rank() - 1)) == 0)
      fail(node, fmt::format("input is {}, expected a non-empty last axis (hidden size)", X.describe()));
    const int64_t H = X.dim(static_cast<int>(X.rank() - 1));
    const int64_t n = X.numel();
    // skip: X's shape, or a suffix of it (its rows repeat over the leading axes).
    bool suffix = skip.rank() >= 1 && skip.rank() <= X.rank();
    for (int64_t i = 0; suffix && i < skip.rank(); ++i)
      suffix = skip.dim(static_cast<int>(skip.rank() - 1 - i)) == X.dim(static_cast<int>(X.rank() - 1 - i));
    if (!suffix)
      fail(node, fmt::format("input skip is {}, expected input's shape {} or its trailing axes", skip.describe(),
                             shape_to_string(X.shape())));
    if (gamma.numel() != H || gamma.rank() != 1)
      fail(node, fmt::format("input gamma is {}, expected {} values (the hidden size)", gamma.describe(), H));
    const float* bias = nullptr;
    if (ctx.has_input(3)) {
      const Tensor& b = ctx.input(3);
      require_float(node, b, "bias");
      if (b.numel() != H || b.rank() != 1)
        fail(node, fmt::format("input bias is {}, expected {} values (the hidden size)", b.describe(), H));
      bias = b.data<float>();
    }
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    Shape stat_shape = X.shape();
    stat_shape.back() = 1;
    float* mean_out = ctx.wants_output(1) ? ctx.output(1, DataType::kFloat32, stat_shape).mutable_data<float>() : nullptr;
    float* inv_out = ctx.wants_output(2) ? ctx.output(2, DataType::kFloat32, stat_shape).mutable_data<float>() : nullptr;
    float* sum_out = ctx.wants_output(3) ? ctx.output(3, DataType::kFloat32, X.shape()).mutable_data<float>() : nullptr;
    if (n == 0) return;
    const float* x = X.data<float>();
    const float* sk = skip.data<float>();
    const int64_t skip_n = skip.numel();
    const float* g = gamma.data<float>();
    float* y = Y.mutable_data<float>();
    const int64_t rows = n / H;
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(4.0 * static_cast<double>(H))), [&](int64_t r0, int64_t r1) {
      std::vector<float> local(sum_out ? 0 : static_cast<size_t>(H));
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = x + r * H;
        const float* sr = sk + (r * H) % skip_n;
        float* s = sum_out ? sum_out + r * H : local.data();
        for (int64_t i = 0; i < H; ++i) s[i] = bias ? xr[i] + sr[i] + bias[i] : xr[i] + sr[i];
        const Moments m = moments(s, H, false);
        const float inv = static_cast<float>(1.0 / std::sqrt(m.var + epsilon_));
        float* yr = y + r * H;
        for (int64_t i = 0; i < H; ++i) yr[i] = s[i] * inv * g[i];
        if (mean_out) mean_out[r] = 0.0f;
        if (inv_out) inv_out[r] = inv;
      }
    });
  }

 private:
  float epsilon_;
};

// ---------------------------------------------------------------- GroupNormalization

// GroupNormalization: X is N x C x spatial..., its C channels split into
// num_groups groups normalized over (channels of the group x spatial);
// scale and bias hold one value per group at opset 18, per channel from 21.
class GroupNormKernel final : public OpKernel {
 public:
  explicit GroupNormKernel(const NodeInfo& node)
      : groups_(node.attrs.get_int("num_groups")), epsilon_(node.attrs.get_float("epsilon", 1e-5f)),
        per_channel_(node.opset >= 21) {
    if (groups_ < 1) fail(node, fmt::format("attribute num_groups is {}, expected >= 1", groups_));
    const int64_t stash = node.attrs.get_int("stash_type", 1);
    if (stash != 1) fail_unsupported(node, fmt::format("stash_type {} is not supported (only 1 = float32)", stash));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    if (X.rank() < 2)
      fail(node, fmt::format("input X has shape {}, expected rank >= 2 (N x C x ...)", shape_to_string(X.shape())));
    const int64_t N = X.dim(0), C = X.dim(1);
    if (C % groups_ != 0)
      fail(node, fmt::format("input X has {} channels, which num_groups {} does not divide", C, groups_));
    const int64_t per = per_channel_ ? C : groups_;
    const Tensor& scale = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    require_float(node, scale, "scale");
    require_float(node, bias, "bias");
    if (scale.numel() != per || bias.numel() != per)
      fail(node, fmt::format("inputs scale ({}) and bias ({}) must have {} values (one per {})", scale.describe(),
                             bias.describe(), per, per_channel_ ? "channel" : "group"));
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    if (Y.numel() == 0) return;
    const int64_t spatial = X.numel() / (N * C), cpg = C / groups_, len = cpg * spatial;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const float* sc = scale.data<float>();
    const float* bi = bias.data<float>();
    const int64_t planes = N * groups_;
    parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(3.0 * static_cast<double>(len))), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* xp = x + p * len;
        float* yp = y + p * len;
        const auto [mean, var] = moments(xp, len);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
        const float m = static_cast<float>(mean);
        const int64_t g = p % groups_;
        for (int64_t c = 0; c < cpg; ++c) {
          const int64_t k = per_channel_ ? g * cpg + c : g;
          const float a = inv * sc[k], b = bi[k];
          const float* xc = xp + c * spatial;
          float* yc = yp + c * spatial;
          for (int64_t i = 0; i < spatial; ++i) yc[i] = (xc[i] - m) * a + b;
        }
      }
    });
  }

 private:
  int64_t groups_;
  float epsilon_;
  bool per_channel_;
};

// ---------------------------------------------------------------- LRN

class LrnKernel final : public OpKernel {
 public:
  explicit LrnKernel(const NodeInfo& node)
      : alpha_(node.attrs.get_float("alpha", 1e-4f)),
        beta_(node.attrs.get_float("beta", 0.75f)),
        bias_(node.attrs.get_float("bias", 1.0f)),
        size_(node.attrs.get_int("size")) {
    if (size_ <= 0) fail(node, fmt::format("attribute size is {}, expected >= 1", size_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    if (X.rank() < 3)
      fail(node, fmt::format("input X has shape {}, expected rank >= 3 (N x C x spatial...)", shape_to_string(X.shape())));
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    if (Y.numel() == 0) return;
    const int64_t N = X.dim(0), C = X.dim(1), inner = X.numel() / (N * C);
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const float k = alpha_ / static_cast<float>(size_);
    // size comes from the model: multiplied in double (2^62 overflowed int64, fuzz_graph).
    const double work = static_cast<double>(inner) * static_cast<double>(size_);
    parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(work)), [&](int64_t p0, int64_t p1) {
      float* sq = scratch_floats(2, static_cast<size_t>(inner));
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n = p / C, c = p % C;
        const int64_t c0 = std::max<int64_t>(0, c - before), c1 = std::min(C - 1, c + after);
        std::fill(sq, sq + inner, 0.0f);
        for (int64_t cc = c0; cc <= c1; ++cc) {
          const float* xc = x + (n * C + cc) * inner;
          for (int64_t i = 0; i < inner; ++i) sq[i] += xc[i] * xc[i];
        }
        const float* xp = x + p * inner;
        float* yp = y + p * inner;
        for (int64_t i = 0; i < inner; ++i) yp[i] = xp[i] / std::pow(bias_ + k * sq[i], beta_);
      }
    });
  }

 private:
  float alpha_, beta_, bias_;
  int64_t size_;
};

}  // namespace

void register_norm(KernelRegistry& r) {
  // BatchNormalization: 1 (consumed_inputs, is_test, spatial), 6, 7, 9 (no
  // spatial), 14 (training_mode: batch statistics and running mean / var
  // outputs), 15; the training outputs of opsets before 14 are refused.
  r.add("", "BatchNormalization", 1, 17, factory_of<BatchNormKernel>());
  r.add("spindle", "BatchNormalizationNhwc", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<BatchNormKernel>(node, true);
  });
  r.add("", "InstanceNormalization", 1, 17, factory_of<InstanceNormKernel>());
  r.add("", "LayerNormalization", 17, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<LayerNormKernel>(node, false);
  });
  r.add("", "LRN", 1, 17, factory_of<LrnKernel>());
  r.add("", "GroupNormalization", 18, kMaxOpset, factory_of<GroupNormKernel>());  // 21: per-channel scale / bias
  r.add("", "RMSNormalization", 23, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<LayerNormKernel>(node, true);
  });
  // ONNX Runtime's RMS norms: SimplifiedLayerNormalization in the default
  // domain (as ONNX Runtime registers it) and com.microsoft.
  auto simplified = [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<LayerNormKernel>(node, true, true);
  };
  r.add("", "SimplifiedLayerNormalization", 1, kMaxOpset, simplified);
  r.add("com.microsoft", "SimplifiedLayerNormalization", 1, 1, simplified);
  r.add("com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1, factory_of<SkipSimplifiedLayerNormKernel>());
}

}  // namespace spindle::kernels::nn
