// attention.cpp — spindle.FusedAttention: the scaled dot-product attention
// that exporters write as separate nodes, made one node by the optimizer
// (graph/passes/attention_fusion.cpp):
//
//   q = Transpose?(Q) [Mul|Div c]?     k = Transpose?(K) [Mul|Div c]?
//   v = Transpose?(V)
//   s = MatMul(q, k) [Mul|Div c]? [Add mask | Where(mask, s, fill) | Where(mask, fill, s)]?
//   y = Transpose?(MatMul(Softmax(s, axis), v))
//
// Attributes say which of the optional steps the chain had: q_perm, k_perm,
// v_perm, out_perm (the absorbed Transposes' perm), q_scale_op, k_scale_op,
// s_scale_op (1 = Mul, 2 = Div by the float q_scale / k_scale / s_scale),
// softmax_axis and softmax_opset; mask_where (1: Where(mask, s, fill), 2:
// Where(mask, fill, s), absent: Add) and mask_fill. Inputs: Q, K, V, and
// the mask (float for the Add, Where's bool condition) when the chain had
// one. When K and / or V reached the chain through
// Unsqueeze(axis) -> Expand(e) -> Reshape(r) (grouped-query attention's
// repeated KV heads), k_repeat_axis / v_repeat_axis hold the axis and
// inputs 4, 5 (K) and 6, 7 (V) the e and r shapes (input 3, the mask, may
// then be absent). When e broadcasts only the new axis (to n) and r merges
// it with the axis before, the fast path reads the stored heads in place
// (head h of the repeated axis is stored head h / n) and packs each stored
// head once for all the heads sharing it; else the fallback runs the three
// nodes.
//
// The fast path (float32, ranks >= 2, Softmax over the last axis, a mask
// that does not widen the scores) reads Q, K and V in place through the
// absorbed Transposes' strides and works one (batch position, block of
// query rows) at a time: the block's scores, its mask and its softmax stay
// in a per-thread buffer while the block's output rows are computed, and
// the output is written through the output Transpose's strides. The blocks
// come from the shapes alone, and each step does the operations of the
// node it replaces in the same order (the same SGEMM per element, the same
// scalar op, the same Add, the same softmax row), so the result has the
// bits of the unfused chain at any thread count. With a Where mask whose
// fill is the lowest float (GPT-2's causal mask), or with an Add mask whose
// masked entries are at most -1e6 (LLaMA-style exports), a block stops at
// the last key its rows see (skips_masked_columns: the skipped
// probabilities are exact zeros; the cases where they would not, read every
// key). Any other case (a rank-1 operand, another Softmax axis, a broadcast
// that widens, other types) runs the replaced nodes one after another, with
// their checks and messages.
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kernels/broadcast.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/transformer.h"
#include "primitives/gemm/sgemm.h"
#include "primitives/softmax/softmax_isa.h"

SPINDLE_ISA_DECLARE(void, attention_row_scores,
                    (const float* q, const float* k, int64_t k_rs, int64_t D, int64_t Skv, float* s));
SPINDLE_ISA_DECLARE(void, attention_row_values,
                    (const float* p, const float* v, int64_t v_rs, int64_t Skv, int64_t Dv, float* y));
SPINDLE_ISA_DECLARE(uint32_t, attention_max_abs_bits, (const float* x, int64_t n, int64_t len, int64_t rs));
SPINDLE_ISA_DECLARE(int64_t, attention_last_above, (const float* x, int64_t lo, int64_t hi, float thr));

namespace spindle::kernels::nn {

namespace {

enum ScaleOp : int64_t { kNoScale = 0, kMulScale = 1, kDivScale = 2 };

struct Scale {
  int64_t op = kNoScale;
  float c = 1.0f;
  float apply(float x) const { return op == kMulScale ? x * c : x / c; }
  // |apply(x)| <= factor() * |x| (within a rounding).
  double factor() const { return op == kMulScale ? std::fabs(c) : op == kDivScale ? 1.0 / std::fabs(c) : 1.0; }
};

// The logical operand (after its Transpose) of a rank >= 2 tensor: shape,
// element strides, and per axis the divisor of the index before its stride
// applies (n on a head axis repeated n times, else 1).
struct View {
  Shape shape, strides, div;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t rows() const { return shape[shape.size() - 2]; }
  int64_t cols() const { return shape[shape.size() - 1]; }
  int64_t row_stride() const { return strides[strides.size() - 2]; }
  int64_t col_stride() const { return strides[strides.size() - 1]; }
};

// Whether perm is a permutation of 0 .. rank-1.
bool is_permutation(const std::vector<int64_t>& perm, int64_t rank) {
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = true;
  }
  return true;
}

// A tensor of `shape` with element strides `st` and index divisors `div`
// read through Transpose(perm) (no perm: as it is). False when perm is not a
// permutation of its axes (the fallback's Transpose then says so).
bool make_view(const Shape& shape, const Shape& st, const Shape& div, const std::vector<int64_t>& perm, View& v) {
  if (perm.empty()) {
    v.shape = shape, v.strides = st, v.div = div;
    return true;
  }
  if (!is_permutation(perm, static_cast<int64_t>(shape.size()))) return false;
  v.shape.clear(), v.strides.clear(), v.div.clear();
  for (int64_t p : perm) {
    v.shape.push_back(shape[static_cast<size_t>(p)]);
    v.strides.push_back(st[static_cast<size_t>(p)]);
    v.div.push_back(div[static_cast<size_t>(p)]);
  }
  return true;
}

// The shape of Reshape(Expand(Unsqueeze(x, axis), e), r) when the Expand
// broadcasts only the new axis (to n) and the Reshape merges it with the
// axis before: x's shape with that axis (h) n times larger. False for any
// other Expand or Reshape (then the nodes themselves run).
bool repeated_shape(const Shape& x, int64_t axis, const Tensor& e, const Tensor& r, Shape& out, int64_t& h,
                    int64_t& n) {
  const int64_t xr = static_cast<int64_t>(x.size());
  const int64_t a = axis < 0 ? axis + xr + 1 : axis;
  if (a < 1 || a > xr || e.dtype() != DataType::kInt64 || r.dtype() != DataType::kInt64 || e.rank() != 1 ||
      r.rank() != 1 || e.numel() != xr + 1 || r.numel() != xr)
    return false;
  const int64_t* ep = e.data<int64_t>();
  const int64_t* rp = r.data<int64_t>();
  Shape expanded = x;
  expanded.insert(expanded.begin() + a, ep[a]);
  for (int64_t i = 0; i <= xr; ++i)
    if (i != a && ep[i] != 1 && ep[i] != expanded[static_cast<size_t>(i)]) return false;
  n = ep[a], h = a - 1;
  // n within what a tensor of x's elements repeated n times can count.
  if (n < 1 || n > std::numeric_limits<int64_t>::max() / std::max<int64_t>(shape_numel(x), 1)) return false;
  out = x;
  out[static_cast<size_t>(h)] *= n;
  int inferred = 0;
  for (int64_t i = 0; i < xr; ++i) {
    const int64_t want = out[static_cast<size_t>(i)];
    if (rp[i] == -1)
      ++inferred;
    else if (rp[i] != want && !(rp[i] == 0 && expanded[static_cast<size_t>(i)] == want))
      return false;
  }
  return inferred == 0 || (inferred == 1 && shape_numel(out) > 0);
}

// A matrix operand for sgemm: op(M) with M at `p`, leading dimension ld.
struct MatArg {
  const float* p = nullptr;
  bool trans = false;
  int64_t ld = 1;
};

// rows x cols at `p` with the given element strides as an sgemm operand,
// when one of the two strides is unit (a size-1 axis counts as unit).
bool as_matrix(const float* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, MatArg& m) {
  if (cs == 1 || cols == 1) {
    m = {p, false, rows == 1 ? std::max<int64_t>(cols, 1) : std::max<int64_t>(rs, 1)};
    return rows == 1 || rs >= cols;
  }
  if (rs == 1 || rows == 1) {
    m = {p, true, cols == 1 ? std::max<int64_t>(rows, 1) : std::max<int64_t>(cs, 1)};
    return cols == 1 || cs >= rows;
  }
  return false;
}

class FusedAttentionKernel final : public OpKernel {
 public:
  explicit FusedAttentionKernel(const NodeInfo& node)
      : q_perm_(node.attrs.get_ints("q_perm", {})), k_perm_(node.attrs.get_ints("k_perm", {})),
        v_perm_(node.attrs.get_ints("v_perm", {})), out_perm_(node.attrs.get_ints("out_perm", {})),
        q_scale_{node.attrs.get_int("q_scale_op", kNoScale), node.attrs.get_float("q_scale", 1.0f)},
        k_scale_{node.attrs.get_int("k_scale_op", kNoScale), node.attrs.get_float("k_scale", 1.0f)},
        s_scale_{node.attrs.get_int("s_scale_op", kNoScale), node.attrs.get_float("s_scale", 1.0f)},
        softmax_axis_(node.attrs.get_int("softmax_axis", -1)),
        k_rep_(node.attrs.has("k_repeat_axis")), v_rep_(node.attrs.has("v_repeat_axis")),
        k_rep_axis_(node.attrs.get_int("k_repeat_axis", 0)), v_rep_axis_(node.attrs.get_int("v_repeat_axis", 0)),
        softmax_opset_(static_cast<int>(node.attrs.get_int("softmax_opset", 13))),
        mask_where_(node.attrs.get_int("mask_where", 0)), mask_fill_(node.attrs.get_float("mask_fill", 0.0f)) {
    if (mask_where_ < 0 || mask_where_ > 2)
      fail(node, fmt::format("attribute mask_where is {}, expected 1 (Where(mask, s, fill)) or 2 (Where(mask, fill, s))",
                             mask_where_));
    for (const Scale* s : {&q_scale_, &k_scale_, &s_scale_})
      if (s->op < kNoScale || s->op > kDivScale)
        fail(node, fmt::format("attribute *_scale_op is {}, expected 0 (none), 1 (Mul) or 2 (Div)", s->op));
  }

  void compute(KernelContext& ctx) const override {
    if (!fast(ctx)) fallback(ctx);
  }

 private:
  // Everything the fast path reads off the operands' shapes: the views of
  // Q, K and V through their transposes, the sizes, the lead (batch) dims,
  // the output's shape and its strides in logical axis order, and each
  // operand's strides over the lead dims (0 where broadcast).
  struct Geometry {
    View q, k, v;
    int64_t Sq = 0, D = 0, Skv = 0, Dv = 0, rank = 0;
    Shape lead, y_shape, yl_st, qs, ks, vs, ms, kd, vd;
    const float* mask = nullptr;  // the Add's mask
    const bool* cond = nullptr;    // Where's condition
    bool has_mask() const { return mask || cond; }
  };

  // Score x at mask offset o, masked as the chain's Add or Where does.
  float masked(const Geometry& g, int64_t o, float x) const {
    if (g.mask) return x + g.mask[o];
    return g.cond[o] == (mask_where_ == 1) ? x : mask_fill_;
  }

  // The fast path; false (nothing written) when the case is not one it takes.
  bool fast(KernelContext& ctx) const {
    Geometry g;
    if (!plan(ctx, g)) return false;
    Tensor& Y = ctx.output(0, DataType::kFloat32, g.y_shape);
    // One query row (a decode step) over K rows and V rows stored with unit
    // element stride: no packing, dot products straight over the K rows.
    if (g.Sq == 1 && k_scale_.op == kNoScale && (g.k.row_stride() == 1 || g.D == 1) &&
        (g.v.col_stride() == 1 || g.Dv == 1))
      run_one_row(ctx, g, Y);
    else
      run_blocks(ctx, g, Y);
    return true;
  }

  // Sq == 1: per batch position, scores s_j = (q . K row j) [scale] [+ mask]
  // (attention_row.isa.cpp: the dot product in 8 partial sums added in a
  // fixed order), the softmax row, then y = sum_j p_j V row j in key order
  // (D == 1 / Dv == 1 read through the gathered row). Each batch
  // position is one thread's, so the bits do not depend on the thread count.
  void run_one_row(KernelContext& ctx, const Geometry& g, Tensor& Y) const {
    const int64_t D = g.D, Skv = g.Skv, Dv = g.Dv, rank = g.rank;
    const Shape &lead = g.lead, &yl_st = g.yl_st;
    const size_t L = lead.size();
    const float* qp = ctx.input(0).data<float>();
    const float* kp = ctx.input(1).data<float>();
    const float* vp = ctx.input(2).data<float>();
    float* yp = Y.mutable_data<float>();
    const int64_t q_cs = g.q.col_stride(), k_rs = g.k.col_stride(), v_rs = g.v.row_stride();
    const int64_t y_cs = yl_st[static_cast<size_t>(rank - 1)];
    const double work = static_cast<double>(Skv) * static_cast<double>(D + Dv + 8);
    parallel_for(ctx.pool(), 0, shape_numel(lead), grain_for_cost(ops_cost(work)), ops_cost(work),
                 [&](int64_t i0, int64_t i1) {
      float* S = scratch_floats(0, static_cast<size_t>(2 * Skv + D + Dv));
      float* P = S + Skv;
      float* qv = P + Skv;
      float* acc = qv + D;
      static const auto softmax_row = SPINDLE_ISA_SELECT(softmax_row_float);
      static const auto row_scores = SPINDLE_ISA_SELECT(attention_row_scores);
      static const auto row_values = SPINDLE_ISA_SELECT(attention_row_values);
      for (int64_t it = i0; it < i1; ++it) {
        int64_t qo = 0, ko = 0, vo = 0, yo = 0, mo = 0, rem = it;
        for (size_t a = L; a-- > 0;) {
          const int64_t idx = rem % lead[a];
          rem /= lead[a];
          qo += idx * g.qs[a], ko += idx / g.kd[a] * g.ks[a], vo += idx / g.vd[a] * g.vs[a], yo += idx * yl_st[a];
          if (g.has_mask()) mo += idx * g.ms[a];
        }
        for (int64_t d = 0; d < D; ++d) {
          const float x = qp[qo + d * q_cs];
          qv[d] = q_scale_.op == kNoScale ? x : q_scale_.apply(x);
        }
        row_scores(qv, kp + ko, k_rs, D, Skv, S);
        for (int64_t j = 0; j < Skv; ++j) {
          float x = S[j];
          if (s_scale_.op != kNoScale) x = s_scale_.apply(x);
          if (g.has_mask()) x = masked(g, mo + j * g.ms[L + 1], x);
          S[j] = x;
        }
        softmax_row(reduce::SoftmaxKind::kSoftmax, S, P, Skv);
        row_values(P, vp + vo, v_rs, Skv, Dv, acc);
        for (int64_t d = 0; d < Dv; ++d) yp[yo + d * y_cs] = acc[d];
      }
    });
  }

  // Input i (Q 0, K 1, V 2) as the chain reads it: through the repeated
  // heads' Unsqueeze / Expand / Reshape when absorbed (their shapes are
  // inputs 4, 5 for K and 6, 7 for V), then its Transpose. The repeated
  // axis is read in place (head h of the n-fold axis is stored head h / n)
  // and must end up a batch axis.
  bool operand_view(KernelContext& ctx, int i, bool rep, int64_t rep_axis, const std::vector<int64_t>& perm,
                    View& v) const {
    const Tensor& t = ctx.input(i);
    const Shape st = contiguous_strides(t.shape());
    Shape div(t.shape().size(), 1);
    if (!rep) return make_view(t.shape(), st, div, perm, v);
    const int e = i == 1 ? 4 : 6;
    Shape shape;
    int64_t h = 0, n = 1;
    if (!ctx.has_input(e) || !ctx.has_input(e + 1) ||
        !repeated_shape(t.shape(), rep_axis, ctx.input(e), ctx.input(e + 1), shape, h, n))
      return false;
    div[static_cast<size_t>(h)] = n;
    if (!make_view(shape, st, div, perm, v)) return false;
    return v.div[v.div.size() - 1] == 1 && v.div[v.div.size() - 2] == 1;
  }

  bool plan(KernelContext& ctx, Geometry& g) const {
    const Tensor& Q = ctx.input(0);
    const Tensor& K = ctx.input(1);
    const Tensor& V = ctx.input(2);
    const bool has_mask = ctx.has_input(3);
    for (const Tensor* t : {&Q, &K, &V})
      if (t->dtype() != DataType::kFloat32 || t->rank() < 2) return false;
    if (has_mask && ctx.input(3).dtype() != (mask_where_ != 0 ? DataType::kBool : DataType::kFloat32)) return false;
    View &q = g.q, &k = g.k, &v = g.v;
    if (!operand_view(ctx, 0, false, 0, q_perm_, q) || !operand_view(ctx, 1, k_rep_, k_rep_axis_, k_perm_, k) ||
        !operand_view(ctx, 2, v_rep_, v_rep_axis_, v_perm_, v))
      return false;
    const int64_t Sq = g.Sq = q.rows(), D = g.D = q.cols(), Skv = g.Skv = k.cols(), Dv = g.Dv = v.cols();
    if (k.rows() != D || v.rows() != Skv) return false;
    // Batch (leading) dims: scores = broadcast(q, k); output = broadcast(scores, v).
    const Shape q_lead(q.shape.begin(), q.shape.end() - 2), k_lead(k.shape.begin(), k.shape.end() - 2),
        v_lead(v.shape.begin(), v.shape.end() - 2);
    Shape s_lead;
    Shape& lead = g.lead;
    const Shape qk[] = {q_lead, k_lead};
    if (!try_broadcast_shapes(qk, s_lead)) return false;
    const Shape sv[] = {s_lead, v_lead};
    if (!try_broadcast_shapes(sv, lead)) return false;
    Shape s_shape = s_lead;
    s_shape.push_back(Sq);
    s_shape.push_back(Skv);
    const int64_t s_rank = static_cast<int64_t>(s_shape.size());
    const int64_t axis = softmax_axis_ < 0 ? softmax_axis_ + s_rank : softmax_axis_;
    if (axis != s_rank - 1) return false;
    if (has_mask) {
      const Tensor& M = ctx.input(3);
      const Shape sm[] = {s_shape, M.shape()};
      Shape widened;
      if (!try_broadcast_shapes(sm, widened) || widened != s_shape) return false;
    }
    Shape y_logical = lead;
    y_logical.push_back(Sq);
    y_logical.push_back(Dv);
    const int64_t rank = g.rank = static_cast<int64_t>(y_logical.size());
    Shape& y_shape = g.y_shape;
    y_shape = y_logical;
    if (!out_perm_.empty()) {
      if (!is_permutation(out_perm_, rank)) return false;
      for (size_t i = 0; i < out_perm_.size(); ++i) y_shape[i] = y_logical[static_cast<size_t>(out_perm_[i])];
    }
    if (shape_numel(y_shape) == 0 || Skv == 0 || D == 0) return false;  // empty: the plain nodes say what they make

    // The output's strides seen in logical (untransposed) axis order.
    const Shape y_st = contiguous_strides(y_shape);
    Shape& yl_st = g.yl_st;
    yl_st.assign(static_cast<size_t>(rank), 0);
    for (int64_t i = 0; i < rank; ++i)
      yl_st[static_cast<size_t>(out_perm_.empty() ? i : out_perm_[static_cast<size_t>(i)])] = y_st[static_cast<size_t>(i)];

    // Per-operand strides over the output's lead dims (0 where broadcast).
    const size_t L = lead.size();
    auto lead_strides = [&](const View& w, Shape* div) {
      Shape s(L, 0);
      if (div) div->assign(L, 1);
      const size_t wl = w.shape.size() - 2, off = L - wl;
      for (size_t i = 0; i < wl; ++i) {
        s[off + i] = w.shape[i] == 1 ? 0 : w.strides[i];
        if (div) (*div)[off + i] = w.div[i];
      }
      return s;
    };
    g.qs = lead_strides(q, nullptr), g.ks = lead_strides(k, &g.kd), g.vs = lead_strides(v, &g.vd);
    if (has_mask) {
      const Tensor& M = ctx.input(3);
      Shape full = lead;
      full.push_back(Sq);
      full.push_back(Skv);
      g.ms = broadcast_strides(M.shape(), full);
      if (mask_where_ != 0)
        g.cond = M.data<bool>();
      else
        g.mask = M.data<float>();
    }
    return true;
  }

  // K and V of one batch position as sgemm's packed B operands, gathered
  // (and K scaled) first when they cannot be read in place.
  void pack_k(const Geometry& g, const float* kg, const MatArg& km, bool k_copy, float* gather, float* kpack) const {
    const int64_t D = g.D, Skv = g.Skv;
    if (k_copy) {
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < Skv; ++j) {
          const float x = kg[d * g.k.row_stride() + j * g.k.col_stride()];
          gather[d * Skv + j] = k_scale_.op == kNoScale ? x : k_scale_.apply(x);
        }
      sgemm_pack_b(false, Skv, D, gather, Skv, kpack);
    } else {
      sgemm_pack_b(km.trans, Skv, D, kg, km.ld, kpack);
    }
  }

  void pack_v(const Geometry& g, const float* vg, const MatArg& vm, bool v_copy, float* gather, float* vpack) const {
    const int64_t Skv = g.Skv, Dv = g.Dv;
    if (v_copy) {
      for (int64_t j = 0; j < Skv; ++j)
        for (int64_t d = 0; d < Dv; ++d) gather[j * Dv + d] = vg[j * g.v.row_stride() + d * g.v.col_stride()];
      sgemm_pack_b(false, Dv, Skv, gather, Dv, vpack);
    } else {
      sgemm_pack_b(vm.trans, Dv, Skv, vg, vm.ld, vpack);
    }
  }

  // A Where-masked chain whose fill is the lowest float or -inf gives a
  // masked score the probability exp(fill - max) = 0 exactly, as long as
  // the row's max is above kSkipMaxAbove; a query block then stops its
  // scores, softmax and product at the last key column any of its rows
  // attends to (a causal mask's upper triangle is skipped), and at least
  // after the last V row holding a NaN or an infinity (whose 0 x NaN the
  // whole product keeps): the dropped terms are exact zeros, the bits those
  // of the whole block.
  static constexpr float kSkipMaxAbove = -1e30f;
  // An Add mask (LLaMA-style exports add 0 or a large negative constant)
  // skips the trailing columns of a row whose mask value is at most
  // kMaskedAt. Their scores are at most D x max|q| x max|k| (over the whole
  // inputs Q and K, times the scales, with a margin for rounding): when
  // every row's max over the columns kept is above kMaskedAt + that bound +
  // kExpZeroBelow, each skipped term exp(s + mask - max) is an exact 0 (the
  // softmax gives 0 below -87.3) and the max is the same; else the block
  // reads every key (mask_rows).
  static constexpr float kMaskedAt = -1e6f;
  static constexpr double kExpZeroBelow = 129.0;
  bool skips_masked_columns(const Geometry& g) const {
    if (g.cond) return !(mask_fill_ > std::numeric_limits<float>::lowest());
    // An Add mask: when the first row's last key is masked (a causal mask's
    // shape; any mask is exact, this only avoids the smaller blocks when no
    // column would be skipped).
    return g.mask && g.mask[(g.Skv - 1) * g.ms[g.lead.size() + 1]] <= kMaskedAt;
  }

  // The largest |x| of a tensor's elements times the scale's factor;
  // infinite or NaN when an element is. In blocks over the pool's threads.
  static double max_abs(ThreadPool* pool, const Tensor& t, const Scale& scale) {
    static const auto rows = SPINDLE_ISA_SELECT(attention_max_abs_bits);
    const float* x = t.data<float>();
    auto part = [&](int64_t lo, int64_t hi, uint32_t) { return rows(x + lo, 1, hi - lo, 0); };
    auto larger = [](uint32_t a, uint32_t b) { return std::max(a, b); };
    const uint32_t top = pool ? pool->parallel_reduce<uint32_t>(0, t.numel(), 32768, 0u, part, larger)
                              : part(0, t.numel(), 0u);
    return static_cast<double>(std::bit_cast<float>(top)) * scale.factor();
  }

  // The floor every row's kept max must clear for an Add mask's skipped
  // columns to be exact zeros (kMaskedAt), from the operands' max_abs.
  double additive_floor(double q_abs, double k_abs, int64_t D) const {
    const double bound = static_cast<double>(D) * q_abs * k_abs * s_scale_.factor() * 1.01;
    return static_cast<double>(kMaskedAt) + bound + kExpZeroBelow;
  }

  // 1 + the last key column some row of [r0, r0 + m) attends to; Skv when
  // a row attends to none (its softmax spreads over all).
  int64_t attended_end(const Geometry& g, int64_t mo, int64_t r0, int64_t m) const {
    const size_t L = g.lead.size();
    const int64_t rs = g.ms[L], cs = g.ms[L + 1];
    const bool keep = mask_where_ == 1;  // the condition value that keeps the score
    int64_t end = 0;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t o = mo + (r0 + i) * rs;
      int64_t j = g.Skv;
      if (g.mask && cs == 1) {
        // Past the end so far first; below it, only whether the row sees a key.
        static const auto last_above = SPINDLE_ISA_SELECT(attention_last_above);
        j = last_above(g.mask + o, end, g.Skv, kMaskedAt);
        if (j == end) j = last_above(g.mask + o, 0, end, kMaskedAt) > 0 ? end : 0;
      } else if (g.mask) {
        while (j > 0 && g.mask[o + (j - 1) * cs] <= kMaskedAt) --j;
      } else {
        while (j > 0 && g.cond[o + (j - 1) * cs] != keep) --j;
      }
      if (j == 0) return g.Skv;
      end = std::max(end, j);
    }
    return end;
  }

  // 1 + the last of V's Skv rows (row stride rs, column stride cs) holding a
  // NaN or an infinity; 0 when none.
  static int64_t nonfinite_end(const float* v, int64_t Skv, int64_t Dv, int64_t rs, int64_t cs) {
    static const auto max_abs_bits = SPINDLE_ISA_SELECT(attention_max_abs_bits);
    if (cs == 1 && max_abs_bits(v, Skv, Dv, rs) < 0x7F800000u) return 0;  // every |x| below infinity
    for (int64_t j = Skv; j-- > 0;)
      for (int64_t d = 0; d < Dv; ++d)
        if (!std::isfinite(v[j * rs + d * cs])) return j + 1;
    return 0;
  }

  // The block's m score rows (row stride Skv), their first `end` columns
  // scaled and masked as masked() does, in loops the compiler vectorizes
  // (unit mask stride); false when some row's max is not above `floor`
  // (then only the whole rows give the right probabilities).
  bool mask_rows(const Geometry& g, float* S, int64_t m, int64_t end, int64_t mo, int64_t r0, double floor) const {
    const size_t L = g.lead.size();
    const int64_t rs = g.has_mask() ? g.ms[L] : 0, cs = g.has_mask() ? g.ms[L + 1] : 0;
    const bool keep = mask_where_ == 1;
    const float fill = mask_fill_, c = s_scale_.c;
    bool high = true;
    for (int64_t i = 0; i < m; ++i) {
      float* s = S + i * g.Skv;
      if (s_scale_.op == kMulScale)
        for (int64_t j = 0; j < end; ++j) s[j] *= c;
      else if (s_scale_.op == kDivScale)
        for (int64_t j = 0; j < end; ++j) s[j] /= c;
      const int64_t o = mo + (r0 + i) * rs;
      if (g.mask && cs == 1)
        for (int64_t j = 0; j < end; ++j) s[j] += g.mask[o + j];
      else if (g.mask)
        for (int64_t j = 0; j < end; ++j) s[j] += g.mask[o + j * cs];
      else if (g.cond && cs == 1)
        for (int64_t j = 0; j < end; ++j) s[j] = g.cond[o + j] == keep ? s[j] : fill;
      else if (g.cond)
        for (int64_t j = 0; j < end; ++j) s[j] = g.cond[o + j * cs] == keep ? s[j] : fill;
      if (end < g.Skv && high) {  // (the row's max is above floor: some value is)
        int64_t j = 0;
        while (j < end && !(static_cast<double>(s[j]) > floor)) ++j;
        high = j < end;
      }
    }
    return high;
  }

  // The block's m masked score rows over the key columns [0, end) into S
  // (row stride Skv), or over all Skv when the skipped probabilities would
  // not be exact zeros (an Add mask's floor unbounded, or mask_rows says
  // so); the columns it read.
  int64_t block_scores(const Geometry& g, const MatArg& qa, int64_t m, int64_t end, int64_t mo, int64_t r0,
                       double bound_floor, const SgemmExtras& kx, float* S) const {
    const int64_t Skv = g.Skv;
    double floor = kSkipMaxAbove;
    if (g.mask && end < Skv) {
      floor = bound_floor;
      if (!(floor < static_cast<double>(std::numeric_limits<float>::max()))) end = Skv;  // no bound
    }
    sgemm(qa.trans, false, m, end, g.D, 1.0f, qa.p, qa.ld, nullptr, Skv, 0.0f, S, Skv, kx);
    if (mask_rows(g, S, m, end, mo, r0, floor)) return end;
    sgemm(qa.trans, false, m, Skv, g.D, 1.0f, qa.p, qa.ld, nullptr, Skv, 0.0f, S, Skv, kx);
    mask_rows(g, S, m, Skv, mo, r0, floor);
    return Skv;
  }

  void run_blocks(KernelContext& ctx, const Geometry& g, Tensor& Y) const {
    const View &q = g.q, &k = g.k, &v = g.v;
    const int64_t Sq = g.Sq, D = g.D, Skv = g.Skv, Dv = g.Dv, rank = g.rank;
    const Shape &lead = g.lead, &yl_st = g.yl_st, &qs = g.qs, &ks = g.ks, &vs = g.vs, &ms = g.ms, &kd = g.kd,
                &vd = g.vd;
    const size_t L = lead.size();
    const float* qp = ctx.input(0).data<float>();
    const float* kp = ctx.input(1).data<float>();
    const float* vp = ctx.input(2).data<float>();
    float* yp = Y.mutable_data<float>();
    const int64_t G = shape_numel(lead);
    const int64_t MR = sgemm_mr();
    // Query rows per block: at most ~64 KB of scores (and as much of
    // probabilities), blocks of even size; from the shapes alone.
    // A chain that skips masked columns takes at least four blocks (a causal
    // prompt's blocks then read 1/4, 2/4, ... of the keys).
    const bool skip = skips_masked_columns(g);
    // An Add mask's skip: the floor from the largest |q| and |k| of the
    // whole inputs.
    const double bound_floor =
        skip && g.mask
            ? additive_floor(max_abs(ctx.pool(), ctx.input(0), q_scale_), max_abs(ctx.pool(), ctx.input(1), k_scale_), D)
            : 0.0;
    int64_t rows_max = std::clamp<int64_t>(16384 / std::max<int64_t>(Skv, 1), MR, 128);
    if (skip && Sq > 2 * MR) rows_max = std::min(rows_max, std::max(MR, ceil_div(Sq, 4)));
    const int64_t mq = std::min(Sq, round_up(ceil_div(Sq, ceil_div(Sq, rows_max)), MR));
    const int64_t q_blocks = ceil_div(Sq, mq);
    const int64_t items = G * q_blocks;
    const double work = static_cast<double>(mq) * static_cast<double>(Skv) * static_cast<double>(D + Dv + 8);

    // Q, K and V as sgemm operands in place when one of their strides is
    // unit and no scale applies; else copied per block (Q) or per batch
    // position (K, V), with the scale.
    MatArg qm, km, vm;
    const bool q_copy = q_scale_.op != kNoScale || !as_matrix(nullptr, Sq, D, q.row_stride(), q.col_stride(), qm);
    const bool k_copy = k_scale_.op != kNoScale || !as_matrix(nullptr, D, Skv, k.row_stride(), k.col_stride(), km);
    const bool v_copy = !as_matrix(nullptr, Skv, Dv, v.row_stride(), v.col_stride(), vm);
    const int64_t y_rs = yl_st[static_cast<size_t>(rank - 2)], y_cs = yl_st[static_cast<size_t>(rank - 1)];
    MatArg ym;
    const bool y_copy = !as_matrix(nullptr, Sq, Dv, y_rs, y_cs, ym) || ym.trans;

    const int64_t NR = sgemm_nr();
    // With enough batch positions to share, a thread takes all the query
    // blocks of its positions (each packs K and V once, not every thread).
    int64_t grain = grain_for_cost(ops_cost(work));
    if (ctx.pool() && G >= 2 * ctx.pool()->dop()) grain = std::max(grain, q_blocks);
    parallel_for(ctx.pool(), 0, items, grain, gemm_cost(mq, Skv + Dv, D),
                 [&](int64_t i0, int64_t i1) {
      // Per thread: the block's scores, probabilities, scaled Q rows and
      // (when written through a transpose) output rows; a gathered K or V
      // (neither stride unit, or a scaled K); the batch position's K and V
      // in panels, packed once for all its query blocks.
      const int64_t sz_s = mq * Skv, sz_gather = k_copy || v_copy ? std::max(D * Skv, Skv * Dv) : 0;
      float* S = scratch_floats(0, static_cast<size_t>(2 * sz_s + mq * D + mq * Dv + sz_gather));
      float* P = S + sz_s;
      float* qbuf = P + sz_s;
      float* ybuf = qbuf + mq * D;
      float* gather = ybuf + mq * Dv;
      float* kpack = scratch_floats(1, static_cast<size_t>(round_up(Skv, NR) * D));
      float* vpack = scratch_floats(2, static_cast<size_t>(round_up(Dv, NR) * Skv));
      int64_t last_g = -1, last_ko = -1, last_vo = -1;
      int64_t qo = 0, mo = 0, yo = 0, v_end = Skv;
      // The mask's end per query block, kept while the mask offset stays
      // (a mask broadcast over the heads is scanned once).
      thread_local std::vector<int64_t> mask_ends;
      int64_t ends_mo = -1;
      SgemmExtras kx, vx;
      kx.packed_b = kpack;
      vx.packed_b = vpack;
      vx.packed_b_k = Skv;  // (a block may read only the first rows)
      for (int64_t it = i0; it < i1; ++it) {
        const int64_t bg = it / q_blocks, r0 = (it % q_blocks) * mq, m = std::min(mq, Sq - r0);
        if (bg != last_g) {
          int64_t ko = 0, vo = 0, rem = bg;
          qo = mo = yo = 0;
          for (size_t a = L; a-- > 0;) {
            const int64_t idx = rem % lead[a];
            rem /= lead[a];
            qo += idx * qs[a], ko += idx / kd[a] * ks[a], vo += idx / vd[a] * vs[a], yo += idx * yl_st[a];
            if (g.has_mask()) mo += idx * ms[a];
          }
          // Batch positions sharing K / V (repeated heads) pack them once.
          if (ko != last_ko) pack_k(g, kp + ko, km, k_copy, gather, kpack);
          if (vo != last_vo) {
            pack_v(g, vp + vo, vm, v_copy, gather, vpack);
            if (skip) v_end = nonfinite_end(vp + vo, Skv, Dv, v.row_stride(), v.col_stride());
          }
          last_g = bg, last_ko = ko, last_vo = vo;
        }
        // This block's query rows.
        MatArg qa{qp + qo + r0 * q.row_stride(), qm.trans, qm.ld};
        if (q_copy) {
          for (int64_t i = 0; i < m; ++i)
            for (int64_t d = 0; d < D; ++d) {
              const float x = qa.p[i * q.row_stride() + d * q.col_stride()];
              qbuf[i * D + d] = q_scale_.op == kNoScale ? x : q_scale_.apply(x);
            }
          qa = {qbuf, false, D};
        }
        // The key columns [0, end) the block reads (skips_masked_columns).
        int64_t end = Skv;
        if (skip) {
          if (mo != ends_mo) mask_ends.assign(static_cast<size_t>(q_blocks), -1), ends_mo = mo;
          int64_t& e = mask_ends[static_cast<size_t>(r0 / mq)];
          if (e < 0) e = attended_end(g, mo, r0, m);
          end = std::max(e, v_end);
        }
        end = block_scores(g, qa, m, end, mo, r0, bound_floor, kx, S);
        static const auto softmax_row = SPINDLE_ISA_SELECT(softmax_row_float);
        for (int64_t i = 0; i < m; ++i) softmax_row(reduce::SoftmaxKind::kSoftmax, S + i * Skv, P + i * Skv, end);
        float* yb = yp + yo + r0 * y_rs;
        sgemm(false, false, m, Dv, end, 1.0f, P, Skv, nullptr, Dv, 0.0f, y_copy ? ybuf : yb, y_copy ? Dv : ym.ld, vx);
        if (y_copy)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t d = 0; d < Dv; ++d) yb[i * y_rs + d * y_cs] = ybuf[i * Dv + d];
      }
    });
  }

  // The replaced nodes, one after another.
  void fallback(KernelContext& ctx) const {
    auto one = [&](const char* op, int opset, Attributes attrs, std::vector<Tensor> in) {
      return run_replaced(ctx.node(), ctx.pool(), op, opset, std::move(attrs), std::move(in));
    };
    auto transpose = [&](Tensor t, const std::vector<int64_t>& perm) {
      if (perm.empty()) return t;
      Attributes a;
      a.set("perm", perm);
      return one("Transpose", 13, std::move(a), {std::move(t)});
    };
    auto scale = [&](Tensor t, const Scale& s) {
      if (s.op == kNoScale) return t;
      return one(s.op == kMulScale ? "Mul" : "Div", 14, {}, {std::move(t), Tensor::scalar<float>(s.c)});
    };
    auto repeat = [&](int i, bool rep, int64_t axis) {
      if (!rep) return ctx.input(i);
      const int e = i == 1 ? 4 : 6;
      if (!ctx.has_input(e) || !ctx.has_input(e + 1))
        fail(ctx.node(), fmt::format("inputs {} and {} (the repeated heads' Expand and Reshape shapes) are required", e, e + 1));
      Tensor t = one("Unsqueeze", 13, {}, {ctx.input(i), Tensor::from_vector<int64_t>({1}, {axis})});
      t = one("Expand", 13, {}, {std::move(t), ctx.input(e)});
      return one("Reshape", 14, {}, {std::move(t), ctx.input(e + 1)});
    };
    Tensor q = scale(transpose(ctx.input(0), q_perm_), q_scale_);
    Tensor k = scale(transpose(repeat(1, k_rep_, k_rep_axis_), k_perm_), k_scale_);
    Tensor v = transpose(repeat(2, v_rep_, v_rep_axis_), v_perm_);
    Tensor s = scale(one("MatMul", 13, {}, {std::move(q), std::move(k)}), s_scale_);
    if (ctx.has_input(3) && mask_where_ == 0) s = one("Add", 14, {}, {std::move(s), ctx.input(3)});
    if (ctx.has_input(3) && mask_where_ != 0) {
      Tensor fill = Tensor::scalar<float>(mask_fill_);
      s = mask_where_ == 1 ? one("Where", 16, {}, {ctx.input(3), std::move(s), std::move(fill)})
                           : one("Where", 16, {}, {ctx.input(3), std::move(fill), std::move(s)});
    }
    Attributes sa;
    sa.set("axis", softmax_axis_);
    s = one("Softmax", softmax_opset_, std::move(sa), {std::move(s)});
    ctx.set_output(0, transpose(one("MatMul", 13, {}, {std::move(s), std::move(v)}), out_perm_));
  }

  std::vector<int64_t> q_perm_, k_perm_, v_perm_, out_perm_;
  Scale q_scale_, k_scale_, s_scale_;
  int64_t softmax_axis_;
  bool k_rep_, v_rep_;
  int64_t k_rep_axis_, v_rep_axis_;
  int softmax_opset_;
  int64_t mask_where_;
  float mask_fill_;
};

}  // namespace

void register_attention(KernelRegistry& r) {
  r.add("spindle", "FusedAttention", 1, 1, factory_of<FusedAttentionKernel>());
}

}  // namespace spindle::kernels::nn
