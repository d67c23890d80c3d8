// group_query_attention.cpp — com.microsoft GroupQueryAttention (since 1),
// the attention ONNX Runtime GenAI's model builder writes for decoders with a
// key / value cache.
//
// Inputs: query (batch, sequence, num_heads x head size), or the packed
// query / key / value ((num_heads + 2 kv_num_heads) x head size) when key and
// value are absent; key, value (batch, sequence, kv_num_heads x head size);
// past_key, past_value (batch, kv_num_heads, past, head size); seqlens_k
// (int32, one per batch item: its total length - 1); total_sequence_length
// (int32 scalar); cos_cache, sin_cache ((max position + 1) x rotary dim / 2,
// with do_rotary). Outputs: output (batch, sequence, num_heads x head size),
// present_key / present_value (batch, kv_num_heads, max(past,
// total_sequence_length), head size).
//
// A first prompt (sequence == total_sequence_length) has no past; otherwise
// batch item b holds past_b = seqlens_k[b] + 1 - sequence tokens of
// past_key / past_value, and its new tokens go after them in present. Query
// token i sees keys 0 .. past_b + i (causal), only the last
// local_window_size of them with local_window_size > 0. With do_rotary
// the query and the new keys are rotated at positions past_b + i first
// (rotary_interleaved: pairs (2j, 2j + 1)). Scores are q.k x scale (default
// 1 / sqrt(head size)), softcapped (softcap x tanh(s / softcap)) when
// softcap > 0, then normalized by the vectorized softmax row of
// primitives/softmax.
//
// Query heads read the key / value head they share (head / (num_heads /
// kv_num_heads)) in present: the repeated heads are never materialized.
// Work is split by (batch item, head): the present rows of each key / value
// head, then the attention of each query head; every row's sums run in a
// fixed order, so the bits do not depend on the thread count.
// smooth_softmax, qk_output and the position_ids / attention_bias /
// head_sink inputs are refused.
#include <cmath>

#include "kernels/nn/nn_util.h"
#include "kernels/nn/transformer.h"
#include "primitives/softmax/softmax_isa.h"

namespace spindle::kernels::nn {

namespace {

// q.k over n values in 8 partial sums combined in a fixed tree.
float dot8(const float* a, const float* b, int64_t n) {
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[i + l] * b[i + l];
  for (int l = 0; i < n; ++i, ++l) s[l] += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// Whether inputs i and j (named a and b) are given; both must be float32, and
// one without the other is an error.
bool float_pair(const NodeInfo& node, KernelContext& ctx, int i, int j, const char* a, const char* b) {
  if (!ctx.has_input(i) && !ctx.has_input(j)) return false;
  if (!ctx.has_input(i) || !ctx.has_input(j)) fail(node, fmt::format("{} and {} must be given together", a, b));
  require_float(node, ctx.input(i), a);
  require_float(node, ctx.input(j), b);
  return true;
}

class GroupQueryAttentionKernel final : public OpKernel {
 public:
  explicit GroupQueryAttentionKernel(const NodeInfo& node)
      : heads_(node.attrs.get_int("num_heads", 0)), kv_heads_(node.attrs.get_int("kv_num_heads", 0)),
        window_(node.attrs.get_int("local_window_size", -1)), scale_(node.attrs.get_float("scale", 0.0f)),
        softcap_(node.attrs.get_float("softcap", 0.0f)), rotary_(node.attrs.get_int("do_rotary", 0) != 0),
        interleaved_(node.attrs.get_int("rotary_interleaved", 0) != 0) {
    if (heads_ < 1 || kv_heads_ < 1 || heads_ % kv_heads_ != 0)
      fail(node, fmt::format("num_heads {} and kv_num_heads {} must be >= 1, kv_num_heads dividing num_heads", heads_,
                             kv_heads_));
    if (scale_ < 0) fail(node, fmt::format("attribute scale is {}, expected >= 0 (0: 1 / sqrt(head size))", scale_));
    if (softcap_ < 0) fail(node, fmt::format("attribute softcap is {}, expected >= 0", softcap_));
    for (const char* a : {"smooth_softmax", "qk_output"})
      if (node.attrs.get_int(a, 0) != 0)
        fail_unsupported(node, fmt::format("attribute {} = {} is not supported (only 0)", a, node.attrs.get_int(a, 0)));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    static const char* const kRefused[] = {"position_ids", "attention_bias", "head_sink"};
    for (int i = 9; i < 12; ++i)
      if (ctx.has_input(i)) fail_unsupported(node, fmt::format("input {} is not supported", kRefused[i - 9]));
    const Dims g = check_inputs(ctx);
    const int64_t B = g.B, S = g.S, D = g.D, L = g.L, Hq = heads_, Hkv = kv_heads_;
    Tensor& Y = ctx.output(0, DataType::kFloat32, {B, S, Hq * D});
    const Shape present_shape{B, Hkv, L, D};
    Tensor scratch_k, scratch_v;
    auto present = [&](int i, Tensor& scratch) -> Tensor& {
      if (ctx.wants_output(i)) return ctx.output(i, DataType::kFloat32, present_shape);
      scratch = Tensor(DataType::kFloat32, present_shape);
      return scratch;
    };
    float* pk = present(1, scratch_k).mutable_data<float>();
    float* pv = present(2, scratch_v).mutable_data<float>();
    if (Y.numel() == 0 && B * Hkv * L * D == 0) return;
    write_present(ctx, g, pk, pv);
    attend(ctx, g, pk, pv, Y.mutable_data<float>());
  }

 private:
  // The sizes of one call, checked: batch, sequence, head size, past and
  // present lengths, total_sequence_length, each item's past, the rotary caches.
  struct Dims {
    int64_t B, S, D, P, T, L;
    bool packed, has_past;
    std::vector<int64_t> past;
    const float *cs = nullptr, *sn = nullptr;
    int64_t half = 0;
  };

  Dims check_inputs(KernelContext& ctx) const {
    const NodeInfo& node = ctx.node();
    const int64_t Hq = heads_, Hkv = kv_heads_;
    const Tensor& Q = ctx.input(0);
    require_float(node, Q, "query");
    if (Q.rank() != 3) fail(node, fmt::format("input query is {}, expected 3-D (batch, sequence, hidden)", Q.describe()));
    const int64_t B = Q.dim(0), S = Q.dim(1);
    const bool packed = !ctx.has_input(1);
    int64_t D;
    if (packed) {
      if (ctx.has_input(2)) fail(node, "input value is given without key");
      if (Q.dim(2) % (Hq + 2 * Hkv) != 0)
        fail(node, fmt::format("packed query {} has a hidden size that {} heads do not divide", Q.describe(), Hq + 2 * Hkv));
      D = Q.dim(2) / (Hq + 2 * Hkv);
    } else {
      if (!ctx.has_input(2)) fail(node, "input key is given without value");
      if (Q.dim(2) % Hq != 0)
        fail(node, fmt::format("input query {} has a hidden size that num_heads {} does not divide", Q.describe(), Hq));
      D = Q.dim(2) / Hq;
      for (int i : {1, 2}) {
        const Tensor& t = ctx.input(i);
        require_float(node, t, i == 1 ? "key" : "value");
        if (t.shape() != Shape{B, S, Hkv * D})
          fail(node, fmt::format("input {} is {}, expected {}x{}x{} (kv_num_heads x head size {})", i == 1 ? "key" : "value",
                                 t.describe(), B, S, Hkv * D, D));
      }
    }
    if (D < 1) fail(node, fmt::format("input query {} gives a head size of {}", Q.describe(), D));
    const bool has_past = float_pair(node, ctx, 3, 4, "past_key", "past_value");
    int64_t P = 0;
    if (has_past) {
      const Tensor& pk = ctx.input(3);
      const Tensor& pv = ctx.input(4);
      P = pk.rank() == 4 ? pk.dim(2) : -1;
      if (pk.shape() != Shape{B, Hkv, P, D} || pv.shape() != pk.shape())
        fail(node, fmt::format("past_key {} and past_value {} must both be {}x{}x(past)x{}", pk.describe(), pv.describe(),
                               B, Hkv, D));
    }
    if (!ctx.has_input(5) || !ctx.has_input(6)) fail(node, "inputs seqlens_k and total_sequence_length are required");
    const Tensor& seqlens = ctx.input(5);
    const Tensor& total_t = ctx.input(6);
    if (seqlens.dtype() != DataType::kInt32 || seqlens.numel() != B)
      fail(node, fmt::format("input seqlens_k is {}, expected {} int32 values (one per batch item)", seqlens.describe(), B));
    if (total_t.dtype() != DataType::kInt32 || total_t.numel() != 1)
      fail(node, fmt::format("input total_sequence_length is {}, expected one int32", total_t.describe()));
    const int64_t T = total_t.data<int32_t>()[0];
    if (T < S) fail(node, fmt::format("total_sequence_length {} is less than the sequence length {}", T, S));
    const bool first_prompt = T == S;
    const int64_t L = std::max(T, P);  // present length
    std::vector<int64_t> past(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      const int64_t total = static_cast<int64_t>(seqlens.data<int32_t>()[b]) + 1;
      const int64_t pb = first_prompt ? 0 : total - S;
      if (total < 1 || total > L || pb < 0 || pb > P)
        fail(node, fmt::format("seqlens_k[{}] is {}: batch item {} would hold {} past tokens, expected 0 to {} (past) "
                               "with total_sequence_length {} and sequence {}",
                               b, total - 1, b, pb, P, T, S));
      past[static_cast<size_t>(b)] = pb;
    }
    const float *cs = nullptr, *sn = nullptr;
    int64_t half = 0;
    if (rotary_) {
      if (!float_pair(node, ctx, 7, 8, "cos_cache", "sin_cache"))
        fail(node, "do_rotary = 1 needs the inputs cos_cache and sin_cache");
      const Tensor& c = ctx.input(7);
      const Tensor& s = ctx.input(8);
      if (c.rank() != 2 || c.shape() != s.shape() || 2 * c.dim(1) > D || c.dim(1) < 1)
        fail(node, fmt::format("cos_cache {} and sin_cache {} must both be (max position + 1) x (rotary dim / 2), "
                               "the rotary dim at most the head size {}",
                               c.describe(), s.describe(), D));
      half = c.dim(1);
      for (int64_t b = 0; b < B; ++b)
        if (past[static_cast<size_t>(b)] + S > c.dim(0))
          fail(node, fmt::format("batch item {} reaches position {}, past the {} rows of cos_cache", b,
                                 past[static_cast<size_t>(b)] + S - 1, c.dim(0)));
      cs = c.data<float>(), sn = s.data<float>();
    }

    return Dims{B, S, D, P, T, L, packed, has_past, std::move(past), cs, sn, half};
  }

  // The token rows of query, key and value (possibly packed in query).
  struct Rows {
    const float *q, *k, *v;
    int64_t q_row, kv_row;
  };
  Rows rows(KernelContext& ctx, const Dims& g) const {
    const int64_t Hq = heads_, Hkv = kv_heads_, D = g.D;
    const float* q = ctx.input(0).data<float>();
    const int64_t q_row = g.packed ? (Hq + 2 * Hkv) * D : Hq * D;  // one token's values in query
    return {q, g.packed ? q + Hq * D : ctx.input(1).data<float>(),
            g.packed ? q + (Hq + Hkv) * D : ctx.input(2).data<float>(), q_row, g.packed ? q_row : Hkv * D};
  }

  void write_present(KernelContext& ctx, const Dims& g, float* pk, float* pv) const {
    const int64_t B = g.B, S = g.S, D = g.D, P = g.P, L = g.L, Hkv = kv_heads_, half = g.half;
    const std::vector<int64_t>& past = g.past;
    const float *cs = g.cs, *sn = g.sn;
    const Rows r = rows(ctx, g);
    const float *kin = r.k, *vin = r.v;
    const int64_t kv_row = r.kv_row;
    const float* past_k = g.has_past ? ctx.input(3).data<float>() : nullptr;
    const float* past_v = g.has_past ? ctx.input(4).data<float>() : nullptr;
    // Present: past rows, then the new (rotated) keys and values, zeros after.
    parallel_for(ctx.pool(), 0, B * Hkv, grain_for_cost(ops_cost(static_cast<double>(L * D))), [&](int64_t i0, int64_t i1) {
      for (int64_t item = i0; item < i1; ++item) {
        const int64_t b = item / Hkv, h = item % Hkv, pb = past[static_cast<size_t>(b)];
        float* kd = pk + item * L * D;
        float* vd = pv + item * L * D;
        if (pb > 0) {
          std::copy(past_k + item * P * D, past_k + (item * P + pb) * D, kd);
          std::copy(past_v + item * P * D, past_v + (item * P + pb) * D, vd);
        }
        for (int64_t i = 0; i < S; ++i) {
          const float* kr = kin + (b * S + i) * kv_row + h * D;
          const float* vr = vin + (b * S + i) * kv_row + h * D;
          float* kout = kd + (pb + i) * D;
          if (rotary_)
            rotate_row(kr, kout, cs + (pb + i) * half, sn + (pb + i) * half, half, D, interleaved_);
          else
            std::copy(kr, kr + D, kout);
          std::copy(vr, vr + D, vd + (pb + i) * D);
        }
        std::fill(kd + (pb + S) * D, kd + L * D, 0.0f);
        std::fill(vd + (pb + S) * D, vd + L * D, 0.0f);
      }
    });

  }

  void attend(KernelContext& ctx, const Dims& g, const float* pk, const float* pv, float* y) const {
    const int64_t B = g.B, S = g.S, D = g.D, P = g.P, L = g.L, Hq = heads_, Hkv = kv_heads_, half = g.half;
    const std::vector<int64_t>& past = g.past;
    const float *cs = g.cs, *sn = g.sn;
    const Rows r = rows(ctx, g);
    const float* q = r.q;
    const int64_t q_row = r.q_row;
    const float scale = scale_ > 0 ? scale_ : 1.0f / std::sqrt(static_cast<float>(D));
    const int64_t group = Hq / Hkv;
    static const auto softmax_row = SPINDLE_ISA_SELECT(softmax_row_float);
    const double per_item = static_cast<double>(S) * static_cast<double>(std::min<int64_t>(L, P + S)) * 2.0 * D;
    parallel_for(ctx.pool(), 0, B * Hq, grain_for_cost(ops_cost(per_item)), [&](int64_t i0, int64_t i1) {
      std::vector<float> score(static_cast<size_t>(L)), prob(static_cast<size_t>(L)), qbuf(static_cast<size_t>(D));
      for (int64_t item = i0; item < i1; ++item) {
        const int64_t b = item / Hq, h = item % Hq, pb = past[static_cast<size_t>(b)];
        const float* kd = pk + (b * Hkv + h / group) * L * D;
        const float* vd = pv + (b * Hkv + h / group) * L * D;
        for (int64_t i = 0; i < S; ++i) {
          const float* qr = q + (b * S + i) * q_row + h * D;
          if (rotary_) {
            rotate_row(qr, qbuf.data(), cs + (pb + i) * half, sn + (pb + i) * half, half, D, interleaved_);
            qr = qbuf.data();
          }
          const int64_t end = pb + i + 1;
          const int64_t start = window_ > 0 && end > window_ ? end - window_ : 0;
          for (int64_t t = start; t < end; ++t) {
            float sc = dot8(qr, kd + t * D, D) * scale;
            if (softcap_ > 0) sc = softcap_ * std::tanh(sc / softcap_);
            score[static_cast<size_t>(t)] = sc;
          }
          softmax_row(reduce::SoftmaxKind::kSoftmax, score.data() + start, prob.data() + start, end - start);
          float* yr = y + (b * S + i) * Hq * D + h * D;
          std::fill(yr, yr + D, 0.0f);
          for (int64_t t = start; t < end; ++t) {
            const float w = prob[static_cast<size_t>(t)];
            const float* vr = vd + t * D;
            for (int64_t d = 0; d < D; ++d) yr[d] += w * vr[d];
          }
        }
      }
    });
  }

  int64_t heads_, kv_heads_, window_;
  float scale_, softcap_;
  bool rotary_, interleaved_;
};

}  // namespace

void register_group_query_attention(KernelRegistry& r) {
  r.add("com.microsoft", "GroupQueryAttention", 1, 1, factory_of<GroupQueryAttentionKernel>());
}

}  // namespace spindle::kernels::nn
