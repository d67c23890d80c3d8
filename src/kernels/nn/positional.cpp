// positional.cpp — RotaryEmbedding (23) and AffineGrid (20): operators that
// turn positions into values (rotations of embedding rows, sampling grids).
//
// RotaryEmbedding rotates the first rotary_embedding_dim values of every
// head's row by the angle of its token's position: pairs (x[i], x[i + half])
// or, interleaved, (x[2i], x[2i + 1]) become (c x1 - s x2, s x1 + c x2)
// with c, s from cos_cache / sin_cache (indexed by position_ids when given,
// else per batch and token). Rows are independent parallel_for items.
//
// AffineGrid maps the normalized coordinates of an output grid of `size`
// (in [-1, 1]: pixel centers, or corner pixels with align_corners) through
// each batch item's 2x3 (2-D) or 3x4 (3-D) matrix theta.
#include <cmath>

#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"

namespace spindle::kernels::nn {

namespace {

class RotaryEmbeddingKernel final : public OpKernel {
 public:
  explicit RotaryEmbeddingKernel(const NodeInfo& node)
      : interleaved_(node.attrs.get_int("interleaved", 0) != 0), num_heads_(node.attrs.get_int("num_heads", 0)),
        rotary_dim_(node.attrs.get_int("rotary_embedding_dim", 0)) {
    if (num_heads_ < 0) fail(node, fmt::format("attribute num_heads is {}, expected >= 0", num_heads_));
    if (rotary_dim_ < 0) fail(node, fmt::format("attribute rotary_embedding_dim is {}, expected >= 0", rotary_dim_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& cos_t = ctx.input(1);
    const Tensor& sin_t = ctx.input(2);
    require_float(node, X, "X");
    require_float(node, cos_t, "cos_cache");
    require_float(node, sin_t, "sin_cache");
    int64_t B, H, S, D;
    const bool four_d = X.rank() == 4;
    if (four_d) {
      B = X.dim(0), H = X.dim(1), S = X.dim(2), D = X.dim(3);
    } else if (X.rank() == 3) {
      if (num_heads_ == 0) fail(node, "input X is 3-D, which needs the num_heads attribute");
      B = X.dim(0), S = X.dim(1), H = num_heads_;
      if (X.dim(2) % H != 0)
        fail(node, fmt::format("input X has hidden size {}, which num_heads {} does not divide", X.dim(2), H));
      D = X.dim(2) / H;
    } else {
      fail(node, fmt::format("input X is {}, expected rank 4 (batch, heads, sequence, head size) or 3 (batch, "
                             "sequence, hidden)", X.describe()));
    }
    const int64_t rdim = rotary_dim_ == 0 ? D : rotary_dim_;
    if (rdim > D || rdim % 2 != 0)
      fail(node, fmt::format("rotary_embedding_dim {} must be even and at most the head size {}", rdim, D));
    const int64_t half = rdim / 2;
    const bool has_pos = ctx.has_input(3);
    std::vector<int64_t> pos;
    int64_t max_pos = 0;
    if (has_pos) {
      const Tensor& p = ctx.input(3);
      if (p.rank() != 2 || p.dim(0) != B || p.dim(1) != S)
        fail(node, fmt::format("input position_ids is {}, expected {}x{} (batch, sequence)", p.describe(), B, S));
      pos = p.to_int64_vector();
      if (cos_t.rank() != 2 || cos_t.dim(1) != half || sin_t.shape() != cos_t.shape())
        fail(node, fmt::format("cos_cache {} and sin_cache {} must both be (max position + 1) x {}", cos_t.describe(),
                               sin_t.describe(), half));
      max_pos = cos_t.dim(0);
      for (int64_t v : pos)
        if (v < 0 || v >= max_pos)
          fail(node, fmt::format("position_ids holds {}, outside the {} rows of cos_cache", v, max_pos));
    } else if (cos_t.rank() != 3 || cos_t.dim(0) != B || cos_t.dim(1) != S || cos_t.dim(2) != half ||
               sin_t.shape() != cos_t.shape()) {
      fail(node, fmt::format("cos_cache {} and sin_cache {} must both be {}x{}x{} (batch, sequence, rotary dim / 2) "
                             "without position_ids", cos_t.describe(), sin_t.describe(), B, S, half));
    }
    Tensor& Y = ctx.output(0, DataType::kFloat32, X.shape());
    if (Y.numel() == 0) return;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const float* cs = cos_t.data<float>();
    const float* sn = sin_t.data<float>();
    const int64_t rows = B * S * H;
    const bool interleaved = interleaved_;
    parallel_for(ctx.pool(), 0, rows, grain_for_work(rows, static_cast<double>(D)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t h = r % H, s = (r / H) % S, b = r / (H * S);
        const int64_t off = four_d ? ((b * H + h) * S + s) * D : ((b * S + s) * H + h) * D;
        const int64_t c_row = has_pos ? pos[static_cast<size_t>(b * S + s)] : b * S + s;
        const float* c = cs + c_row * half;
        const float* sv = sn + c_row * half;
        const float* xr = x + off;
        float* yr = y + off;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
          const float x1 = xr[i1], x2 = xr[i2];
          yr[i1] = c[i] * x1 - sv[i] * x2;
          yr[i2] = sv[i] * x1 + c[i] * x2;
        }
        for (int64_t i = rdim; i < D; ++i) yr[i] = xr[i];
      }
    });
  }

 private:
  bool interleaved_;
  int64_t num_heads_, rotary_dim_;
};

class AffineGridKernel final : public OpKernel {
 public:
  explicit AffineGridKernel(const NodeInfo& node) : align_corners_(node.attrs.get_int("align_corners", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& theta = ctx.input(0);
    require_float(node, theta, "theta");
    const std::vector<int64_t> size = ctx.input(1).to_int64_vector();
    if (size.size() != 4 && size.size() != 5)
      fail(node, fmt::format("input size has {} values, expected 4 (N, C, H, W) or 5 (N, C, D, H, W)", size.size()));
    const int64_t dims = static_cast<int64_t>(size.size()) - 2;  // 2 or 3 spatial dims
    const int64_t N = size[0];
    for (int64_t v : size)
      if (v < 0) fail(node, fmt::format("input size has the negative value {}", v));
    if (theta.rank() != 3 || theta.dim(0) != N || theta.dim(1) != dims || theta.dim(2) != dims + 1)
      fail(node, fmt::format("input theta is {}, expected {}x{}x{}", theta.describe(), N, dims, dims + 1));
    const int64_t Dd = dims == 3 ? size[2] : 1, Hh = size[dims == 3 ? 3 : 2], Ww = size[dims == 3 ? 4 : 3];
    Shape out_shape = dims == 3 ? Shape{N, Dd, Hh, Ww, 3} : Shape{N, Hh, Ww, 2};
    Tensor& G = ctx.output(0, DataType::kFloat32, out_shape);
    if (G.numel() == 0) return;
    auto base = [this](int64_t i, int64_t n) -> float {
      if (align_corners_) return n > 1 ? -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n - 1) : 0.0f;
      return (2.0f * static_cast<float>(i) + 1.0f) / static_cast<float>(n) - 1.0f;
    };
    const float* t = theta.data<float>();
    float* g = G.mutable_data<float>();
    const int64_t points = Dd * Hh * Ww;
    parallel_for(ctx.pool(), 0, N, grain_for_work(N, 6.0 * static_cast<double>(points)), [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        const float* m = t + n * dims * (dims + 1);
        float* o = g + n * points * dims;
        for (int64_t d = 0; d < Dd; ++d)
          for (int64_t h = 0; h < Hh; ++h)
            for (int64_t w = 0; w < Ww; ++w, o += dims) {
              const float xs = base(w, Ww), ys = base(h, Hh), zs = base(d, Dd);
              if (dims == 2) {
                o[0] = m[0] * xs + m[1] * ys + m[2];
                o[1] = m[3] * xs + m[4] * ys + m[5];
              } else {
                for (int64_t k = 0; k < 3; ++k) o[k] = m[4 * k] * xs + m[4 * k + 1] * ys + m[4 * k + 2] * zs + m[4 * k + 3];
              }
            }
      }
    });
  }

 private:
  bool align_corners_;
};

}  // namespace

void register_positional(KernelRegistry& r) {
  r.add("", "RotaryEmbedding", 23, kMaxOpset, factory_of<RotaryEmbeddingKernel>());
  r.add("", "AffineGrid", 20, kMaxOpset, factory_of<AffineGridKernel>());
}

}  // namespace spindle::kernels::nn
