// rnn_q8.cpp — the 8-bit weights and products of com.microsoft
// DynamicQuantizeLSTM (rnn_q8.h).
#include "kernels/nn/rnn_q8.h"

#include <fmt/format.h>

#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_params.h"

namespace spindle::kernels::nn {

namespace {

// A scale (float32) or zero point (`type`) input of one value per direction
// ([dirs]) or one per gate unit ([dirs, gh]); direction d's values, gh of
// them for a zero point, 1 or gh for a scale.
struct DirParam {
  const Tensor* t = nullptr;
  bool per_unit = false;
};
DirParam dir_param(KernelContext& ctx, int index, const char* name, DataType type, int64_t dirs, int64_t gh) {
  const NodeInfo& node = ctx.node();
  if (!ctx.has_input(index))
    fail(node, fmt::format("input {} (input {}) is missing, expected {} of shape [{}] or [{}, {}]", name, index,
                           dtype_name(type), dirs, dirs, gh));
  const Tensor& t = ctx.input(index);
  const bool per_dir = t.shape() == Shape{dirs}, per_unit = t.shape() == Shape{dirs, gh};
  if (t.dtype() != type || (!per_dir && !per_unit))
    fail(node, fmt::format("input {} is {}, expected {} of shape [{}] (one per direction) or [{}, {}] (one per "
                           "gate unit)", name, t.describe(), dtype_name(type), dirs, dirs, gh));
  return {&t, per_unit};
}

std::vector<float> scales_of(const DirParam& p, int64_t d, int64_t gh) {
  const int64_t n = p.per_unit ? gh : 1;
  const float* s = p.t->data<float>() + d * n;
  return std::vector<float>(s, s + n);
}

// Empty when every one is 0 (symmetric int8 weights): qgemm then skips them.
std::vector<int32_t> zero_points_of(const DirParam& p, int64_t d, int64_t gh) {
  std::vector<int32_t> z(static_cast<size_t>(gh));
  const int64_t n = p.per_unit ? gh : 1;
  bool any = false;
  for (int64_t j = 0; j < gh; ++j) {
    const int64_t i = d * n + (p.per_unit ? j : 0);
    z[static_cast<size_t>(j)] = p.t->dtype() == DataType::kInt8 ? p.t->data<int8_t>()[i] : p.t->data<uint8_t>()[i];
    any = any || z[static_cast<size_t>(j)] != 0;
  }
  return any ? z : std::vector<int32_t>();
}

// Direction d of a [dirs, K, gh] weight for qgemm.
QGemmPackedB pack_direction(const void* data, bool is_signed, int64_t d, int64_t K, int64_t gh) {
  return qgemm_pack_b(static_cast<const uint8_t*>(data) + d * K * gh, is_signed, K, gh, gh);
}

}  // namespace

void Q8RnnWeights::prepack(const NodeInfo& node, int64_t dirs, int64_t gh) {
  if (!node.prepack) return;
  auto pack = [&](int index, int64_t k_rows, std::vector<QGemmPackedB>& out, const void*& src, Shape& shape,
                  DataType& type) {
    const Tensor* t = node.const_input(index);
    if (!t || !qparams::is_q8(t->dtype()) || t->rank() != 3 || t->numel() == 0 || t->dim(0) != dirs ||
        t->dim(2) != gh || (k_rows > 0 && t->dim(1) != k_rows))
      return;
    for (int64_t d = 0; d < dirs; ++d)
      out.push_back(pack_direction(t->raw_data(), t->dtype() == DataType::kInt8, d, t->dim(1), gh));
    src = t->raw_data();
    shape = t->shape();
    type = t->dtype();
  };
  pack(1, 0, w_, const_w_, w_shape_, w_type_);
  pack(2, gh / 4, r_, const_r_, r_shape_, r_type_);
}

size_t Q8RnnWeights::packed_bytes() const {
  size_t b = 0;
  for (const QGemmPackedB& p : w_) b += p.bytes();
  for (const QGemmPackedB& p : r_) b += p.bytes();
  return b;
}

std::vector<Q8RnnDirection> Q8RnnWeights::bind(KernelContext& ctx, int64_t dirs, int64_t I, int64_t H, int64_t gh,
                                               std::vector<QGemmPackedB>& local) const {
  const NodeInfo& node = ctx.node();
  // A weight absent from the run is the constant packed at creation, whose
  // original the plan dropped; a given one is used packed when it is that constant.
  struct Weight {
    const Tensor* t;
    const std::vector<QGemmPackedB>* pre;
    DataType type;
  };
  auto weight = [&](int index, const char* name, const std::vector<QGemmPackedB>& pre, const void* src,
                    const Shape& pre_shape, DataType pre_type, const Shape& want) {
    const Tensor* t = pre_shape.empty() || ctx.has_input(index) ? &ctx.input(index) : nullptr;
    if (t) qparams::require_q8_input(node, *t, name);
    const Shape& got = t ? t->shape() : pre_shape;
    if (got != want)
      fail(node, fmt::format("input {} has shape {}, expected {} (directions x {} x 4*hidden_size)", name,
                             shape_to_string(got), shape_to_string(want), index == 1 ? "input_size" : "hidden_size"));
    const bool use_pre = !pre_shape.empty() && (!t || t->raw_data() == src);
    return Weight{use_pre ? nullptr : t, use_pre ? &pre : nullptr, t ? t->dtype() : pre_type};
  };
  const Weight w = weight(1, "W", w_, const_w_, w_shape_, w_type_, {dirs, I, gh});
  const Weight r = weight(2, "R", r_, const_r_, r_shape_, r_type_, {dirs, H, gh});
  const DirParam ws = dir_param(ctx, 8, "W_scale", DataType::kFloat32, dirs, gh);
  const DirParam wz = dir_param(ctx, 9, "W_zero_point", w.type, dirs, gh);
  const DirParam rs = dir_param(ctx, 10, "R_scale", DataType::kFloat32, dirs, gh);
  const DirParam rz = dir_param(ctx, 11, "R_zero_point", r.type, dirs, gh);

  local.clear();
  local.reserve(static_cast<size_t>(2 * dirs));  // stable addresses for the pointers below
  std::vector<Q8RnnDirection> out(static_cast<size_t>(dirs));
  for (int64_t d = 0; d < dirs; ++d) {
    Q8RnnDirection& q = out[static_cast<size_t>(d)];
    auto packed = [&](const Weight& wt, int64_t K) -> const QGemmPackedB* {
      if (wt.pre) return &(*wt.pre)[static_cast<size_t>(d)];
      local.push_back(pack_direction(wt.t->raw_data(), wt.type == DataType::kInt8, d, K, gh));
      return &local.back();
    };
    q.w = packed(w, I);
    q.r = packed(r, H);
    q.w_scale = scales_of(ws, d, gh);
    q.r_scale = scales_of(rs, d, gh);
    q.w_zp = zero_points_of(wz, d, gh);
    q.r_zp = zero_points_of(rz, d, gh);
  }
  return out;
}

namespace {

// The dequantizing product of rows of 8-bit A (one zero point, scale
// q.scale) and B (the direction's W or R) into y [rows, gh]: the fields of
// qgemm's arguments but the rows and columns. `scale` holds q.scale * b_scale.
QGemmArgs dequantized_product(const uint8_t* a, int64_t K, DynamicQuantization q, const QGemmPackedB* b,
                              const std::vector<float>& b_scale, const std::vector<int32_t>& b_zp, int64_t gh,
                              float* y, std::vector<float>& scale) {
  scale.resize(b_scale.size());
  for (size_t j = 0; j < scale.size(); ++j) scale[j] = q.scale * b_scale[j];
  QGemmArgs args;
  args.a = a;
  args.lda = K;
  args.a_zero_point = q.zero_point;
  args.b = b;
  args.b_zero_points = b_zp.empty() ? nullptr : b_zp.data();
  args.per_column_b_zero_points = !b_zp.empty();
  args.y = y;
  args.ldy = gh;
  args.scale = scale.data();
  args.per_column_scale = scale.size() > 1;
  return args;
}

// A step's product of more multiply-adds than this (R of 512 KB and up for
// one batch entry) splits in column blocks of about this size, which the
// intra-op pool runs side by side with no cost gate: steps follow each
// other within the workers' spin window, and each thread keeps its columns
// of R in its own L2 (as the float cells' steps, rnn.cpp). Split at 128K,
// lstm_lm's 256 KB R in two halves, its steps of ~2 us lost more to the
// hand-off than they saved (docs/benchmarks.md). Blocks follow from the
// shapes alone.
constexpr int64_t kStepBlockMacs = int64_t{1} << 18;

}  // namespace

void q8_project(ThreadPool* pool, const float* x, int64_t rows, int64_t I, const Q8RnnDirection& d, int64_t gh,
                float* xw) {
  if (rows == 0 || I == 0) {
    std::fill(xw, xw + rows * gh, 0.0f);
    return;
  }
  std::vector<uint8_t> xq(static_cast<size_t>(rows * I));
  const DynamicQuantization q = dynamic_quantize_u8(x, rows * I, xq.data(), pool);
  std::vector<float> scale;
  parallel_qgemm(pool, dequantized_product(xq.data(), I, q, d.w, d.w_scale, d.w_zp, gh, xw, scale), rows, gh);
}

void q8_recurrence(ThreadPool* pool, const float* h, int64_t B, int64_t H, const Q8RnnDirection& d, int64_t gh,
                   const float* const* xg, uint8_t* hq, float* out) {
  const DynamicQuantization q = dynamic_quantize_u8(h, B * H, hq);
  thread_local std::vector<float> scale;
  const QGemmArgs base = dequantized_product(hq, H, q, d.r, d.r_scale, d.r_zp, gh, out, scale);
  // Column blocks of whole 4-panel tiles (the micro-kernel's widest).
  const int64_t tile = 4 * d.r->panel_columns;
  const int64_t blocks = std::max<int64_t>(1, std::min(ceil_div(gh, tile), B * H * gh / kStepBlockMacs));
  const int64_t cols = round_up(ceil_div(gh, blocks), tile);
  auto run = [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t j0 = k * cols, j1 = std::min(gh, j0 + cols);
      if (j0 >= j1) continue;
      QGemmArgs args = base;
      args.m = B;
      args.col_begin = j0;
      args.col_end = j1;
      args.y = out + j0;
      // One row: X_t W added by the epilogue, as its bias (the same one
      // addition); more rows: after the product.
      if (B == 1) args.bias = xg[0];
      qgemm(args);
      for (int64_t b = 0; b < B && B > 1; ++b) {
        if (!xg[b]) continue;
        float* o = out + b * gh;
        for (int64_t j = j0; j < j1; ++j) o[j] = xg[b][j] + o[j];
      }
    }
  };
  if (blocks == 1) run(0, 1);
  else parallel_for(pool, 0, blocks, 1, run);
}

}  // namespace spindle::kernels::nn
