// transformer.cpp — operators of transformers: Attention (23),
// RotaryEmbedding (23), and AffineGrid (20, of spatial transformer networks).
//
// Attention computes softmax(scale Q K^T (softcapped) + mask) V per batch
// item and query head; K / V heads are shared by q_num_heads / kv_num_heads
// query heads (grouped-query attention); past_key / past_value are prepended
// to K / V (present_key / present_value outputs); is_causal lets query i see
// keys j <= i + past length; a boolean mask keeps True positions, a float
// mask is added. A fully masked row gives zeros. One (batch, head, query row)
// is one parallel_for item; scores accumulate in float per row.
//
// RotaryEmbedding (23, and com.microsoft's) rotates the first rotary_embedding_dim values of every
// head's row by the angle of its token's position: pairs (x[i], x[i + half])
// or, interleaved, (x[2i], x[2i + 1]) become (c x1 - s x2, s x1 + c x2)
// with c, s from cos_cache / sin_cache (indexed by position_ids when given,
// else per batch and token). Rows are independent parallel_for items.
//
// AffineGrid maps the normalized coordinates of an output grid of `size`
// (in [-1, 1]: pixel centers, or corner pixels with align_corners) through
// each batch item's 2x3 (2-D) or 3x4 (3-D) matrix theta.
#include <cmath>
#include <limits>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/transformer.h"
#include "kernels/op_schema.h"

namespace spindle::kernels::nn {

namespace {

// RotaryEmbedding of the default domain (23: X, cos_cache, sin_cache,
// position_ids?) or of com.microsoft (`ms`: input, position_ids, cos_cache,
// sin_cache; position_ids (batch, sequence) or one start position; a 3-D
// input without num_heads takes the head size from the caches).
class RotaryEmbeddingKernel final : public OpKernel {
 public:
  RotaryEmbeddingKernel(const NodeInfo& node, bool ms)
      : ms_(ms), interleaved_(node.attrs.get_int("interleaved", 0) != 0), num_heads_(node.attrs.get_int("num_heads", 0)),
        rotary_dim_(node.attrs.get_int("rotary_embedding_dim", 0)) {
    if (num_heads_ < 0) fail(node, fmt::format("attribute num_heads is {}, expected >= 0", num_heads_));
    if (rotary_dim_ < 0) fail(node, fmt::format("attribute rotary_embedding_dim is {}, expected >= 0", rotary_dim_));
    if (ms && node.attrs.get_int("is_packed_batching", 0) != 0)
      fail_unsupported(node, "attribute is_packed_batching = 1 is not supported");
    if (ms && node.attrs.get_float("scale", 1.0f) != 1.0f)
      fail_unsupported(node, fmt::format("attribute scale {} is not supported (only 1)", node.attrs.get_float("scale", 1.0f)));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& cos_t = ctx.input(ms_ ? 2 : 1);
    const Tensor& sin_t = ctx.input(ms_ ? 3 : 2);
    const int pos_index = ms_ ? 1 : 3;
    require_float(node, X, "X");
    require_float(node, cos_t, "cos_cache");
    require_float(node, sin_t, "sin_cache");
    int64_t B, H, S, D;
    const bool four_d = X.rank() == 4;
    if (four_d) {
      B = X.dim(0), H = X.dim(1), S = X.dim(2), D = X.dim(3);
    } else if (X.rank() == 3) {
      H = num_heads_;
      if (H == 0 && ms_ && rotary_dim_ == 0 && cos_t.rank() == 2 && cos_t.dim(1) > 0 && X.dim(2) % (2 * cos_t.dim(1)) == 0)
        H = X.dim(2) / (2 * cos_t.dim(1));
      if (H == 0) fail(node, "input X is 3-D, which needs the num_heads attribute");
      B = X.dim(0), S = X.dim(1);
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
    const bool has_pos = ctx.has_input(pos_index);
    if (ms_ && !has_pos) fail(node, "input position_ids is missing");
    std::vector<int64_t> pos;
    if (has_pos) {
      const Tensor& p = ctx.input(pos_index);
      const bool start_only = ms_ && p.numel() == 1;
      if (!start_only && (p.rank() != 2 || p.dim(0) != B || p.dim(1) != S))
        fail(node, fmt::format("input position_ids is {}, expected {}x{} (batch, sequence){}", p.describe(), B, S,
                               ms_ ? " or one start position" : ""));
      pos = p.to_int64_vector();
      if (start_only) {
        const int64_t start = pos[0];
        pos.resize(static_cast<size_t>(B * S));
        for (int64_t i = 0; i < B * S; ++i) pos[static_cast<size_t>(i)] = start + i % S;
      }
      if (cos_t.rank() != 2 || cos_t.dim(1) != half || sin_t.shape() != cos_t.shape())
        fail(node, fmt::format("cos_cache {} and sin_cache {} must both be (max position + 1) x {}", cos_t.describe(),
                               sin_t.describe(), half));
      const int64_t max_pos = cos_t.dim(0);
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
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(static_cast<double>(D))), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t h = r % H, s = (r / H) % S, b = r / (H * S);
        const int64_t off = four_d ? ((b * H + h) * S + s) * D : ((b * S + s) * H + h) * D;
        const int64_t c_row = has_pos ? pos[static_cast<size_t>(b * S + s)] : b * S + s;
        rotate_row(x + off, y + off, cs + c_row * half, sn + c_row * half, half, D, interleaved_);
      }
    });
  }

 private:
  bool ms_, interleaved_;
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
    parallel_for(ctx.pool(), 0, N, grain_for_cost(ops_cost(6.0 * static_cast<double>(points))), [&](int64_t n0, int64_t n1) {
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

class AttentionKernel final : public OpKernel {
 public:
  explicit AttentionKernel(const NodeInfo& node)
      : causal_(node.attrs.get_int("is_causal", 0) != 0), q_heads_(node.attrs.get_int("q_num_heads", 0)),
        kv_heads_(node.attrs.get_int("kv_num_heads", 0)), mode_(node.attrs.get_int("qk_matmul_output_mode", 0)),
        has_scale_(node.attrs.has("scale")), scale_(node.attrs.get_float("scale", 0.0f)),
        softcap_(node.attrs.get_float("softcap", 0.0f)) {
    if (mode_ < 0 || mode_ > 3) fail(node, fmt::format("qk_matmul_output_mode is {}, expected 0 to 3", mode_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& Q = ctx.input(0);
    const Tensor& K = ctx.input(1);
    const Tensor& V = ctx.input(2);
    for (auto [t, name] : {std::pair{&Q, "Q"}, std::pair{&K, "K"}, std::pair{&V, "V"}}) require_float(node, *t, name);
    const bool three_d = Q.rank() == 3;
    if ((Q.rank() != 3 && Q.rank() != 4) || K.rank() != Q.rank() || V.rank() != Q.rank())
      fail(node, fmt::format("Q {}, K {} and V {} must all be 4-D (batch, heads, sequence, head size) or all 3-D",
                             Q.describe(), K.describe(), V.describe()));
    int64_t B = Q.dim(0), Hq, Sq, D, Hkv, Skv, Dv;
    if (three_d) {
      if (q_heads_ < 1 || kv_heads_ < 1) fail(node, "3-D inputs need the q_num_heads and kv_num_heads attributes");
      Hq = q_heads_, Hkv = kv_heads_, Sq = Q.dim(1), Skv = K.dim(1);
      if (Q.dim(2) % Hq != 0 || K.dim(2) % Hkv != 0 || V.dim(2) % Hkv != 0)
        fail(node, fmt::format("hidden sizes of Q {}, K {}, V {} must divide by q_num_heads {} / kv_num_heads {}",
                               Q.describe(), K.describe(), V.describe(), Hq, Hkv));
      D = Q.dim(2) / Hq, Dv = V.dim(2) / Hkv;
      if (K.dim(2) / Hkv != D) fail(node, fmt::format("K {} has head size {}, expected Q's {}", K.describe(), K.dim(2) / Hkv, D));
    } else {
      Hq = Q.dim(1), Sq = Q.dim(2), D = Q.dim(3), Hkv = K.dim(1), Skv = K.dim(2), Dv = V.dim(3);
      if (K.dim(3) != D) fail(node, fmt::format("K {} has head size {}, expected Q's {}", K.describe(), K.dim(3), D));
    }
    if (K.dim(0) != B || V.dim(0) != B || (three_d ? V.dim(1) : V.dim(2)) != Skv || (!three_d && V.dim(1) != Hkv))
      fail(node, fmt::format("Q {}, K {} and V {} disagree on batch, heads or sequence", Q.describe(), K.describe(),
                             V.describe()));
    if (Hkv < 1 || Hq % Hkv != 0)
      fail(node, fmt::format("{} query heads cannot share {} key / value heads", Hq, Hkv));
    // past_key / past_value (4-D) go before K / V.
    const bool has_past = ctx.has_input(4) || ctx.has_input(5);
    int64_t P = 0;
    if (has_past) {
      if (!ctx.has_input(4) || !ctx.has_input(5)) fail(node, "past_key and past_value must be given together");
      const Tensor& pk = ctx.input(4);
      const Tensor& pv = ctx.input(5);
      P = pk.rank() == 4 ? pk.dim(2) : -1;
      if (pk.shape() != Shape{B, Hkv, P, D} || pv.shape() != Shape{B, Hkv, P, Dv})
        fail(node, fmt::format("past_key {} and past_value {} must be {}x{}x(past)x{} and x{}", pk.describe(),
                               pv.describe(), B, Hkv, D, Dv));
    }
    const int64_t T = P + Skv;
    // Keys and values as (B, Hkv, T, D / Dv), past first.
    Tensor keys(DataType::kFloat32, {B, Hkv, T, D}), values(DataType::kFloat32, {B, Hkv, T, Dv});
    concat_past(keys, K, has_past ? &ctx.input(4) : nullptr, three_d, Hkv, P, Skv);
    concat_past(values, V, has_past ? &ctx.input(5) : nullptr, three_d, Hkv, P, Skv);
    // The mask, broadcast to (B, Hq, Sq, T): additive floats (-inf where a
    // boolean mask is False).
    const Shape full{B, Hq, Sq, T};
    const Tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const Shape mask_strides = mask ? checked_mask_strides(node, *mask, full) : Shape{};
    Tensor& Y = three_d ? ctx.output(0, DataType::kFloat32, {B, Sq, Hq * Dv}) : ctx.output(0, DataType::kFloat32, {B, Hq, Sq, Dv});
    if (ctx.wants_output(1)) ctx.set_output(1, keys);
    if (ctx.wants_output(2)) ctx.set_output(2, values);
    float* qk_out = ctx.wants_output(3) ? ctx.output(3, DataType::kFloat32, full).mutable_data<float>() : nullptr;
    const float scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(D));
    const float* q = Q.data<float>();
    const float* kd = keys.data<float>();
    const float* vd = values.data<float>();
    float* y = Y.mutable_data<float>();
    const int64_t group = Hq / Hkv, rows = B * Hq * Sq;
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(static_cast<double>(T * (D + Dv)))), [&](int64_t r0, int64_t r1) {
      std::vector<float> score(static_cast<size_t>(T));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t i = r % Sq, h = (r / Sq) % Hq, b = r / (Sq * Hq), hk = h / group;
        const float* qr = three_d ? q + ((b * Sq + i) * Hq + h) * D : q + ((b * Hq + h) * Sq + i) * D;
        float* qk_row = qk_out ? qk_out + r * T : nullptr;
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t t = 0; t < T; ++t) {
          const float* kr = kd + ((b * Hkv + hk) * T + t) * D;
          float dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          float s = dot * scale;
          if (qk_row && mode_ == 0) qk_row[t] = s;
          if (softcap_ > 0) s = softcap_ * std::tanh(s / softcap_);
          if (qk_row && mode_ == 1) qk_row[t] = s;
          if (mask) {
            const int64_t off = b * mask_strides[0] + h * mask_strides[1] + i * mask_strides[2] + t * mask_strides[3];
            if (mask->dtype() == DataType::kBool) {
              if (!mask->data<bool>()[off]) s = -std::numeric_limits<float>::infinity();
            } else {
              s += mask->data<float>()[off];
            }
          }
          if (causal_ && t > i + P) s = -std::numeric_limits<float>::infinity();
          if (qk_row && mode_ == 2) qk_row[t] = s;
          score[static_cast<size_t>(t)] = s;
          best = std::max(best, s);
        }
        float* yr = three_d ? y + ((b * Sq + i) * Hq + h) * Dv : y + ((b * Hq + h) * Sq + i) * Dv;
        std::fill(yr, yr + Dv, 0.0f);
        if (best == -std::numeric_limits<float>::infinity()) {  // every key masked: a zero row
          if (qk_row && mode_ == 3) std::fill(qk_row, qk_row + T, 0.0f);
          continue;
        }
        double sum = 0;
        for (float& s : score) {
          s = std::exp(s - best);
          sum += s;
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t t = 0; t < T; ++t) {
          const float w = score[static_cast<size_t>(t)] * inv;
          if (qk_row && mode_ == 3) qk_row[t] = w;
          const float* vr = vd + ((b * Hkv + hk) * T + t) * Dv;
          for (int64_t d = 0; d < Dv; ++d) yr[d] += w * vr[d];
        }
      }
    });
  }

 private:
  // dst (B, Hkv, P + S, d) = past (B, Hkv, P, d) then cur: (B, Hkv, S, d),
  // or (B, S, Hkv x d) for 3-D inputs.
  static void concat_past(Tensor& dst, const Tensor& cur, const Tensor* past, bool three_d, int64_t Hkv, int64_t P,
                          int64_t S) {
    const int64_t B = dst.dim(0), T = dst.dim(2), d = dst.dim(3);
    float* o = dst.mutable_data<float>();
    const float* c = cur.data<float>();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t t = 0; t < T; ++t) {
          float* row = o + ((b * Hkv + h) * T + t) * d;
          const float* src = t < P ? past->data<float>() + ((b * Hkv + h) * P + t) * d
                             : three_d ? c + ((b * S + (t - P)) * Hkv + h) * d
                                       : c + ((b * Hkv + h) * S + (t - P)) * d;
          std::copy(src, src + d, row);
        }
  }

  // attn_mask's strides broadcast to `full` (B, Hq, Sq, T), after checking
  // its type and that it broadcasts.
  static Shape checked_mask_strides(const NodeInfo& node, const Tensor& mask, const Shape& full) {
    if (mask.dtype() != DataType::kBool && mask.dtype() != DataType::kFloat32)
      fail_unsupported(node, fmt::format("attn_mask is {}; spindle takes bool or float32 masks", mask.describe()));
    if (mask.rank() > 4) fail(node, fmt::format("attn_mask {} has rank > 4", mask.describe()));
    for (int64_t i = 0; i < mask.rank(); ++i) {
      const int64_t d = mask.dim(static_cast<int>(i)), want = full[static_cast<size_t>(4 - mask.rank() + i)];
      if (d != 1 && d != want)
        fail(node, fmt::format("attn_mask {} does not broadcast to {}", mask.describe(), shape_to_string(full)));
    }
    return broadcast_strides(mask.shape(), full);
  }

  bool causal_;
  int64_t q_heads_, kv_heads_, mode_;
  bool has_scale_;
  float scale_, softcap_;
};

}  // namespace

void register_transformer(KernelRegistry& r) {
  r.add("", "Attention", 23, kMaxOpset, factory_of<AttentionKernel>());
  r.add("", "RotaryEmbedding", 23, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<RotaryEmbeddingKernel>(node, false);
  });
  r.add("com.microsoft", "RotaryEmbedding", 1, 1, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<RotaryEmbeddingKernel>(node, true);
  });
  register_group_query_attention(r);
  register_rotary_half(r);
  r.add("", "AffineGrid", 20, kMaxOpset, factory_of<AffineGridKernel>());
}

}  // namespace spindle::kernels::nn
