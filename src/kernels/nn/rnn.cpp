// rnn.cpp — the recurrent family: RNN, GRU and LSTM (opsets 7..17, layout
// attribute from 14), forward, reverse and bidirectional, with sequence_lens,
// initial states, LSTM peepholes and input_forget, GRU linear_before_reset,
// clip, and any of the ONNX activation functions; and com.microsoft
// DynamicQuantizeLSTM, the same LSTM over 8-bit W and R whose two products
// run on the 8-bit GEMM (rnn_q8.h describes them).
//
// The input projection of every time step is one GEMM over the whole
// sequence (X [T*B, I] x W^T, spindle's sgemm, split in row blocks across the
// pool), with the input bias and the recurrence bias folded in (except GRU's
// hidden-gate recurrence bias, which the reset gate scales). Constant W and R
// are packed when the kernel is created (per direction): W^T as sgemm's B
// operand, R in the k-major panels of rnn_step.isa.cpp; an R given at run
// time is packed once per call, never per step. The recurrence is, for
// batches up to kMatvecBatch, the packed matrix-vector product of
// rnn_step.isa.cpp per batch entry (split in row blocks across the pool when
// R is large, kStepBlockFma), else one small GEMM per step (H [B, Hs] x R^T,
// R^T packed for sgemm once per call).
// Every cell with its default activations takes a fused step (gates and
// state update in one pass, rnn_step.isa.cpp; GRU without
// linear_before_reset in two, around its second product); other
// activations run their gate non-linearities over whole gate
// vectors with the vectorizable functions of vec_math.h. All buffers are
// allocated once per call, and the two directions of a bidirectional layer
// run side by side on the pool.
// Steps past a batch entry's sequence length leave Y at 0 and its state as
// it was, as the ONNX reference does.
#include <algorithm>
#include <cmath>
#include <memory>
#include <span>

#include "kernels/nn/nn_util.h"
#include "kernels/nn/rnn_q8.h"
#include "primitives/cache_line.h"
#include "primitives/gemm/sgemm.h"
#include "primitives/isa/dispatch.h"
#include "primitives/math/vec_math.h"
#include "primitives/rnn/rnn_step.h"

namespace spindle::kernels::nn {

namespace {

enum class Cell { kRnn, kGru, kLstm };

int gates_of(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
const char* name_of(Cell c) { return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM"; }

// One activation function of the `activations` attribute, with its
// alpha/beta from activation_alpha / activation_beta (or ONNX's defaults).
struct Act {
  enum Kind { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid, kElu,
              kSoftsign, kSoftplus };
  Kind kind = kTanh;
  float alpha = 0, beta = 0;

  float operator()(float x) const {
    switch (kind) {
      case kRelu: return x < 0 ? 0.0f : x;  // NaN stays NaN
      case kTanh: return vm::fast_tanh(x);
      case kSigmoid: return vm::fast_sigmoid(x);
      case kAffine: return alpha * x + beta;
      case kLeakyRelu: return x >= 0 ? x : alpha * x;
      case kThresholdedRelu: return x > alpha ? x : 0.0f;
      case kScaledTanh: return alpha * std::tanh(beta * x);
      case kHardSigmoid: return std::min(1.0f, std::max(0.0f, alpha * x + beta));
      case kElu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0f);
      case kSoftsign: return x / (1.0f + std::fabs(x));
      case kSoftplus: return std::log1p(std::exp(x));
    }
    return x;
  }
  // v[i] = f(v[i]) for i < n; sigmoid and tanh at the ISA level's width.
  void apply(float* v, int64_t n) const {
    static const auto sigmoid_fn = SPINDLE_ISA_SELECT(sigmoid_inplace);
    static const auto tanh_fn = SPINDLE_ISA_SELECT(tanh_inplace);
    switch (kind) {
      case kTanh:
        tanh_fn(v, n);
        return;
      case kSigmoid:
        sigmoid_fn(v, n);
        return;
      case kRelu:
        for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0 ? 0.0f : v[i];  // NaN stays NaN
        return;
      default:
        for (int64_t i = 0; i < n; ++i) v[i] = (*this)(v[i]);
    }
  }
};

// Batches up to this size take the per-row dot products of rnn_step.isa.cpp
// for the recurrence; larger ones one BLAS GEMM per step, which then packs R
// for enough rows of H to pay for it.
constexpr int64_t kMatvecBatch = 4;

// A step's recurrent product of more multiply-adds than this (R of 512 KB
// and up for one batch entry) is split in row blocks of about this size,
// which the intra-op pool runs side by side: each thread then streams its
// part of R, which fits its own cache where the whole of R does not. Blocks
// follow from the shapes alone; every output row is one dot product, so the
// split never changes a bit.
constexpr int64_t kStepBlockFma = int64_t{1} << 17;

struct ActSpec {
  const char* name;
  Act::Kind kind;
  int params;  // how many of alpha, beta it takes
  float alpha, beta;
};
constexpr ActSpec kActs[] = {
    {"Relu", Act::kRelu, 0, 0, 0},           {"Tanh", Act::kTanh, 0, 0, 0},
    {"Sigmoid", Act::kSigmoid, 0, 0, 0},     {"Affine", Act::kAffine, 2, 1.0f, 0.0f},
    {"LeakyRelu", Act::kLeakyRelu, 1, 0.01f, 0}, {"ThresholdedRelu", Act::kThresholdedRelu, 1, 1.0f, 0},
    {"ScaledTanh", Act::kScaledTanh, 2, 1.0f, 1.0f}, {"HardSigmoid", Act::kHardSigmoid, 2, 0.2f, 0.5f},
    {"Elu", Act::kElu, 1, 1.0f, 0},          {"Softsign", Act::kSoftsign, 0, 0, 0},
    {"Softplus", Act::kSoftplus, 0, 0, 0},
};

class RecurrentKernel final : public OpKernel {
 public:
  // quantized: com.microsoft DynamicQuantizeLSTM (rnn_q8.h), an LSTM of
  // 8-bit W and R with their scales and zero points as inputs 8-11.
  RecurrentKernel(const NodeInfo& node, Cell cell, bool quantized = false) : cell_(cell), quantized_(quantized) {
    hidden_ = node.attrs.get_int("hidden_size", 0);
    if (hidden_ <= 0) fail(node, fmt::format("attribute hidden_size is {}, expected a positive size", hidden_));
    const std::string dir = node.attrs.get_string("direction", "forward");
    if (dir == "forward") dirs_ = 1;
    else if (dir == "reverse") dirs_ = 1, reverse_only_ = true;
    else if (dir == "bidirectional") dirs_ = 2;
    else fail(node, fmt::format("attribute direction is '{}', expected 'forward', 'reverse' or 'bidirectional'", dir));
    layout_ = node.attrs.get_int("layout", 0);
    if (layout_ != 0 && layout_ != 1) fail(node, fmt::format("attribute layout is {}, expected 0 or 1", layout_));
    clip_ = node.attrs.get_float("clip", 0.0f);
    if (node.attrs.has("clip") && !(clip_ > 0)) fail(node, fmt::format("attribute clip is {}, expected > 0", clip_));
    linear_before_reset_ = cell == Cell::kGru && node.attrs.get_int("linear_before_reset", 0) != 0;
    input_forget_ = cell == Cell::kLstm && node.attrs.get_int("input_forget", 0) != 0;
    parse_activations(node);
    if (quantized) q8_.prepack(node, dirs_, gates_of(cell) * hidden_);
    else prepack(node);
  }

  // The packed forms replace constant W and R: the plan frees the
  // originals, and compute() takes their shapes from w_shape_ / r_shape_.
  bool owns_constant_input(int i) const override {
    return quantized_ ? q8_.packed(i) : (i == 1 && !w_shape_.empty()) || (i == 2 && !r_shape_.empty());
  }
  size_t packed_bytes() const override {
    size_t b = q8_.packed_bytes();
    for (const PackedDir& p : packed_) b += p.w.bytes() + (p.r.size() + p.r_h.size()) * sizeof(float);
    return b;
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    if (X.rank() != 3)
      fail(node, fmt::format("input X has shape {}, expected rank 3 ({})", shape_to_string(X.shape()),
                             layout_ == 0 ? "seq_length x batch_size x input_size"
                                          : "batch_size x seq_length x input_size"));
    const int64_t T = layout_ == 0 ? X.dim(0) : X.dim(1), B = layout_ == 0 ? X.dim(1) : X.dim(0), I = X.dim(2);
    const int64_t H = hidden_, G = gates_of(cell_), D = dirs_;
    // hidden_size comes from the model: size every weight and workspace
    // with checked products before comparing shapes or allocating.
    const int64_t GH = size_mul(node, G, H, "gates x hidden_size");
    const int64_t TB = size_mul(node, T, B, "seq_length x batch_size");
    size_mul(node, TB, GH, "the input projection workspace (seq_length x batch_size x gates x hidden_size)");
    size_mul(node, B, GH, "the recurrent workspace (batch_size x gates x hidden_size)");
    size_mul(node, size_mul(node, TB, D, "seq_length x batch_size x directions"), H, "the output Y");
    // W and R: float32 (packed at creation or read as given), or 8-bit (rnn_q8.h).
    FloatWeights fw;
    std::vector<QGemmPackedB> q8_local;
    std::vector<Q8RnnDirection> q8;
    if (quantized_) q8 = q8_.bind(ctx, D, I, H, GH, q8_local);
    else fw = float_weights(ctx, D, GH, I);
    const float* bias = nullptr;
    if (ctx.has_input(3)) {
      require_float(node, ctx.input(3), "B");
      check_shape(node, ctx.input(3), "B", {D, size_mul(node, 2, GH, "the bias size")});
      bias = ctx.input(3).data<float>();
    }
    const std::vector<int64_t> lens = sequence_lens(ctx, B, T);
    const Shape state_shape = layout_ == 0 ? Shape{D, B, H} : Shape{B, D, H};
    RunIo io{.lens = &lens};
    io.h0 = optional_state(ctx, 5, "initial_h", state_shape);
    io.c0 = cell_ == Cell::kLstm ? optional_state(ctx, 6, "initial_c", state_shape) : nullptr;
    const float* peep = nullptr;
    if (cell_ == Cell::kLstm && ctx.has_input(7)) {
      require_float(node, ctx.input(7), "P");
      check_shape(node, ctx.input(7), "P", {D, size_mul(node, 3, H, "the peephole size")});
      peep = ctx.input(7).data<float>();
    }

    // Outputs (zero where a sequence has ended).
    if (ctx.wants_output(0)) {
      Tensor& Y = ctx.output(0, DataType::kFloat32, layout_ == 0 ? Shape{T, D, B, H} : Shape{B, T, D, H});
      io.y = Y.mutable_data<float>();
      // Every step of a full-length sequence writes its Y; only shorter ones leave zeros.
      if (std::any_of(lens.begin(), lens.end(), [T](int64_t n) { return n < T; }))
        std::fill(io.y, io.y + Y.numel(), 0.0f);
    }
    io.yh = ctx.wants_output(1) ? ctx.output(1, DataType::kFloat32, state_shape).mutable_data<float>() : nullptr;
    io.yc = cell_ == Cell::kLstm && ctx.wants_output(2)
                ? ctx.output(2, DataType::kFloat32, state_shape).mutable_data<float>()
                : nullptr;

    std::vector<float> xt;
    io.x = time_major(X, T, B, I, xt);

    auto direction = [&](int64_t d, ThreadPool* pool) {
      Direction dir{T, B, I, H, G};
      dir.reverse = reverse_only_ || d == 1;
      dir.wb = bias ? bias + d * 2 * G * H : nullptr;
      dir.rb = bias ? bias + d * 2 * G * H + G * H : nullptr;
      dir.peep = peep ? peep + d * 3 * H : nullptr;
      if (quantized_) {
        dir.q8 = &q8[static_cast<size_t>(d)];
        run_direction(pool, dir, io, d);
      } else {
        run_float_direction(pool, dir, fw, io, d);
      }
    };
    if (D == 1) {
      direction(0, ctx.pool());  // the projection GEMM splits across the pool
    } else {
      // A direction is its projection and its steps: T * B * G * H * (I + H)
      // multiply-adds; small ones run both on one thread.
      const Cost dir_cost = fma_cost(static_cast<double>(T * B * G * H) * static_cast<double>(I + H));
      parallel_for(ctx.pool(), 0, D, grain_for_cost(dir_cost), [&](int64_t d0, int64_t d1) {
        for (int64_t d = d0; d < d1; ++d) direction(d, ctx.pool());
      });
    }
  }

 private:
  // sequence_lens (optional input 4), each checked to be within 0..T.
  static std::vector<int64_t> sequence_lens(KernelContext& ctx, int64_t B, int64_t T) {
    std::vector<int64_t> lens(static_cast<size_t>(B), T);
    if (!ctx.has_input(4)) return lens;
    const NodeInfo& node = ctx.node();
    const Tensor& sl = ctx.input(4);
    if (sl.dtype() != DataType::kInt32) fail(node, fmt::format("input sequence_lens is {}, expected int32", sl.describe()));
    check_shape(node, sl, "sequence_lens", {B});
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = sl.data<int32_t>()[b];
      if (v < 0 || v > T)
        fail(node, fmt::format("sequence_lens[{}] is {}, expected 0..{} (the sequence length)", b, v, T));
      lens[static_cast<size_t>(b)] = v;
    }
    return lens;
  }

  // X in [T, B, I] order: X itself at layout 0, else transposed into `xt`.
  const float* time_major(const Tensor& X, int64_t T, int64_t B, int64_t I, std::vector<float>& xt) const {
    const float* x = X.data<float>();
    if (layout_ == 0) return x;
    xt.resize(static_cast<size_t>(T * B * I));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        std::copy(x + (b * T + t) * I, x + (b * T + t + 1) * I, xt.begin() + (t * B + b) * I);
    return xt.data();
  }

  struct Direction {
    int64_t T, B, I, H, G;
    bool reverse = false;
    const float* w = nullptr;   // [G*H, I]
    const float* r = nullptr;   // [G*H, H]
    const float* wb = nullptr;  // [G*H] or null
    const float* rb = nullptr;  // [G*H] or null
    const float* peep = nullptr;  // [3*H] (i, o, f) or null
    const PackedMatrix* w_packed = nullptr;  // W^T pre-packed for sgemm, or null
    const float* r_packed = nullptr;   // rows [0, recurrence_rows()) of R in rnn_pack panels (batch <= kMatvecBatch)
    const float* rh_packed = nullptr;  // GRU without linear_before_reset: R_h in rnn_pack panels
    const PackedMatrix* r_gemm = nullptr;   // batch > kMatvecBatch: the same rows of R packed for sgemm
    const PackedMatrix* rh_gemm = nullptr;  // and R_h
    const Q8RnnDirection* q8 = nullptr;  // DynamicQuantizeLSTM: the 8-bit W and R (w, r, the packed forms unused)
  };

  // One direction's constant weights in compute layout.
  struct PackedDir {
    PackedMatrix w;          // W^T as sgemm's B operand
    CacheLineVector<float> r;    // rows [0, recurrence_rows()) of R in rnn_pack panels
    CacheLineVector<float> r_h;  // GRU without linear_before_reset: rows [2H, 3H) of R
  };

  // A run's float32 W and R: as given, or (null) the constants packed at
  // creation, whose originals the plan dropped; the packed forms apply when
  // this run's W / R is the constant they were packed from.
  struct FloatWeights {
    const Tensor* W = nullptr;
    const Tensor* R = nullptr;
    bool w_pre = false, r_pre = false;
  };
  FloatWeights float_weights(KernelContext& ctx, int64_t D, int64_t GH, int64_t I) const {
    const NodeInfo& node = ctx.node();
    FloatWeights f;
    f.W = w_shape_.empty() || ctx.has_input(1) ? &ctx.input(1) : nullptr;
    f.R = r_shape_.empty() || ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (f.W) require_float(node, *f.W, "W");
    if (f.R) require_float(node, *f.R, "R");
    f.w_pre = !w_shape_.empty() && (!f.W || f.W->data<float>() == const_w_);
    f.r_pre = !r_shape_.empty() && (!f.R || f.R->data<float>() == const_r_);
    check_shape(node, f.W ? f.W->shape() : w_shape_, "W", {D, GH, I});
    check_shape(node, f.R ? f.R->shape() : r_shape_, "R", {D, GH, hidden_});
    return f;
  }

  // What the directions of a run read and write: X in [T, B, I] order, the
  // sequence lengths, the initial states (or null) and the outputs (null
  // when not wanted).
  struct RunIo {
    const float* x = nullptr;
    const std::vector<int64_t>* lens = nullptr;
    const float* h0 = nullptr;
    const float* c0 = nullptr;
    float* y = nullptr;
    float* yh = nullptr;
    float* yc = nullptr;
  };

  // Direction d of a float32 cell: its W and R bound into `dir`, the packed
  // forms of R its batch size calls for made for this call when not
  // pre-packed, then run_direction.
  void run_float_direction(ThreadPool* pool, Direction dir, const FloatWeights& fw, const RunIo& io, int64_t d) const {
    const int64_t B = dir.B, H = dir.H, G = dir.G, I = dir.I;
    dir.w = fw.W ? fw.W->data<float>() + d * G * H * I : nullptr;  // null: packed_[d].w
    // R of this direction in its own layout, for the GEMM packing of
    // larger batches: from the rnn_pack panels when only those are kept.
    std::vector<float> r_unpacked;
    if (fw.R) {
      dir.r = fw.R->data<float>() + d * G * H * H;
    } else if (B > kMatvecBatch) {
      r_unpacked = unpack_r(packed_[static_cast<size_t>(d)]);
      dir.r = r_unpacked.data();
    }
    // R in rnn_pack panels: pre-packed, or packed once for this call.
    PackedDir local;
    const PackedDir* pd = fw.r_pre ? &packed_[static_cast<size_t>(d)] : &local;
    if (!fw.r_pre && B <= kMatvecBatch) pack_r(dir.r, local);
    // Larger batches: R^T as sgemm's B operand, packed once for all steps.
    PackedMatrix r_gemm, rh_gemm;
    if (B > kMatvecBatch) {
      r_gemm = PackedMatrix::pack_b(true, recurrence_rows(), H, dir.r, H);
      if (gru_split()) rh_gemm = PackedMatrix::pack_b(true, H, H, dir.r + 2 * H * H, H);
      dir.r_gemm = &r_gemm;
      dir.rh_gemm = &rh_gemm;
    }
    dir.w_packed = fw.w_pre ? &packed_[static_cast<size_t>(d)].w : nullptr;
    dir.r_packed = pd->r.data();
    dir.rh_packed = pd->r_h.data();
    run_direction(pool, dir, io, d);
  }

  // GRU without linear_before_reset multiplies H_{t-1} by the z and r rows of
  // R only; its hidden gate multiplies (r . H_{t-1}) by R_h afterwards.
  bool gru_split() const { return cell_ == Cell::kGru && !linear_before_reset_; }
  int64_t recurrence_rows() const { return gru_split() ? 2 * hidden_ : gates_of(cell_) * hidden_; }

  static CacheLineVector<float> pack_rows(const float* r, int64_t rows, int64_t len) {
    static const auto size_fn = SPINDLE_ISA_SELECT(rnn_packed_size);
    static const auto pack_fn = SPINDLE_ISA_SELECT(rnn_pack);
    CacheLineVector<float> out(static_cast<size_t>(size_fn(rows, len)));
    pack_fn(r, rows, len, out.data());
    return out;
  }
  // One direction's R [G*H, H] into p.r (and p.r_h).
  void pack_r(const float* r, PackedDir& p) const {
    const int64_t H = hidden_;
    p.r = pack_rows(r, recurrence_rows(), H);
    if (gru_split()) p.r_h = pack_rows(r + 2 * H * H, H, H);
  }
  // rows x len of R back from rnn_pack panels (every panel but the last
  // rnn_panel_rows() wide, panel j0 at j0 * len, stored k-major).
  static void unpack_rows(const float* packed, int64_t rows, int64_t len, float* r) {
    static const auto size_fn = SPINDLE_ISA_SELECT(rnn_packed_size);
    static const int64_t panel = SPINDLE_ISA_SELECT(rnn_panel_rows)();
    const int64_t total = size_fn(rows, len);
    for (int64_t j0 = 0; j0 < rows; j0 += panel) {
      const int64_t w = j0 + panel <= rows ? panel : total / len - j0;
      const float* p = packed + j0 * len;
      for (int64_t j = j0; j < std::min(rows, j0 + panel); ++j)
        for (int64_t k = 0; k < len; ++k) r[j * len + k] = p[k * w + (j - j0)];
    }
  }
  // One direction's R [G*H, H] from its packed rows.
  std::vector<float> unpack_r(const PackedDir& p) const {
    const int64_t H = hidden_;
    std::vector<float> r(static_cast<size_t>(gates_of(cell_) * H * H));
    unpack_rows(p.r.data(), recurrence_rows(), H, r.data());
    if (gru_split()) unpack_rows(p.r_h.data(), H, H, r.data() + 2 * H * H);
    return r;
  }

  // Packs constant W and R at kernel creation (per direction), so runs
  // neither pack W for the input projection nor R for the recurrence.
  void prepack(const NodeInfo& node) {
    if (!node.prepack) return;
    const Tensor* w = node.const_input(1);
    const Tensor* r = node.const_input(2);
    // Shapes are checked against hidden_size before any product is formed;
    // tensors that do not match are left to compute() to report.
    auto fits = [&](const Tensor* t, bool square) {
      return t && t->dtype() == DataType::kFloat32 && t->rank() == 3 && t->numel() > 0 && t->dim(0) == dirs_ &&
             (!square || t->dim(2) == hidden_) && hidden_ <= t->dim(1) && t->dim(1) == gates_of(cell_) * hidden_;
    };
    const bool pack_w = fits(w, false), pack_r_too = fits(r, true);
    if (!pack_w && !pack_r_too) return;
    packed_.resize(static_cast<size_t>(dirs_));
    const int64_t GH = gates_of(cell_) * hidden_;
    for (int64_t d = 0; d < dirs_; ++d) {
      PackedDir& p = packed_[static_cast<size_t>(d)];
      if (pack_w) {
        const int64_t I = w->dim(2);
        p.w = PackedMatrix::pack_b(true, GH, I, w->data<float>() + d * GH * I, I);
      }
      if (pack_r_too) pack_r(r->data<float>() + d * GH * hidden_, p);
    }
    if (pack_w) const_w_ = w->data<float>(), w_shape_ = w->shape();
    if (pack_r_too) const_r_ = r->data<float>(), r_shape_ = r->shape();
  }

  // Offset of (d, b) in a state tensor of layout 0 [D, B, H] or 1 [B, D, H].
  int64_t state_at(int64_t d, int64_t b, int64_t B) const {
    return layout_ == 0 ? (d * B + b) * hidden_ : (b * dirs_ + d) * hidden_;
  }
  int64_t y_at(int64_t t, int64_t d, int64_t b, int64_t T, int64_t B) const {
    return layout_ == 0 ? ((t * dirs_ + d) * B + b) * hidden_ : ((b * T + t) * dirs_ + d) * hidden_;
  }

  float clip(float v) const { return clip_ > 0 ? std::min(clip_, std::max(-clip_, v)) : v; }

  // Input projections of the first `rows` rows: xw [rows, G*H] = X W^T + Wb +
  // Rb (all but GRU's Rb_h), written whole by the GEMM (no zero fill); `bias`
  // (GH zeros of workspace) is left holding those biases. `xw` has room for
  // T*B*GH.
  void project_inputs(ThreadPool* pool, const Direction& dir, const float* x, int64_t rows, std::span<float> bias,
                      float* xw) const {
    const int64_t I = dir.I, H = dir.H, GH = dir.G * H;
    const bool gru_h_bias_apart = cell_ == Cell::kGru;  // Rb_h is scaled by r (lbr) or added after r.H R_h
    for (int64_t k = 0; k < GH; ++k) {
      if (dir.wb) bias[static_cast<size_t>(k)] += dir.wb[k];
      if (dir.rb && !(gru_h_bias_apart && k >= 2 * H)) bias[static_cast<size_t>(k)] += dir.rb[k];
    }
    // DynamicQuantizeLSTM: X W dequantized, the biases added in each step (rnn_q8.h).
    if (dir.q8) {
      q8_project(pool, x, rows, I, *dir.q8, GH, xw);
      return;
    }
    // Blocks split the gate columns first (choose_gemm_blocks): each block
    // reads its columns of W once for all rows. Thin row blocks each
    // streamed the whole W (1 MB for LSTM 256), which on two threads
    // doubled the GEMM's CPU time for no gain.
    const GemmBlocks gb = choose_gemm_blocks(1, rows, GH, I, GH);
    parallel_for(pool, 0, gb.m_blocks * gb.n_blocks, 1, gemm_cost(gb.mt, gb.nt, I),
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t r0 = (b / gb.n_blocks) * gb.mt, r1 = std::min(rows, r0 + gb.mt);
                     const int64_t k0 = (b % gb.n_blocks) * gb.nt, k1 = std::min(GH, k0 + gb.nt);
                     if (dir.w_packed)
                       sgemm(false, true, r1 - r0, k1 - k0, I, 1.0f, x + r0 * I, I, dir.w ? dir.w + k0 * I : nullptr, I, 0.0f,
                             xw + r0 * GH + k0, GH, SgemmExtras{.packed_b = dir.w_packed->panel(k0)});
                     else
                       gemm(false, true, r1 - r0, k1 - k0, I, 1.0f, x + r0 * I, I, dir.w + k0 * I, I, 0.0f,
                            xw + r0 * GH + k0, GH);
                     for (int64_t r = r0; r < r1; ++r)
                       for (int64_t k = k0; k < k1; ++k) xw[r * GH + k] += bias[static_cast<size_t>(k)];
                   }
                 });
  }

  // out [B, ld] = in [B, H] x R[0:rows_used]^T (`packed`: the same rows in
  // rnn_pack panels). `backward`: odd steps stream R last row first
  // (rnn_matvec_packed); on one thread the blocks run last to first too.
  static void recurrence(ThreadPool* pool, int64_t B, int64_t H, const float* in, const float* r, const float* packed,
                         const PackedMatrix* r_gemm, int64_t rows_used, float* out, int64_t ld, bool backward) {
    static const auto matvec = SPINDLE_ISA_SELECT(rnn_matvec_packed);
    static const int64_t panel = SPINDLE_ISA_SELECT(rnn_panel_rows)();
    if (B > kMatvecBatch) {
      sgemm(false, true, B, rows_used, H, 1.0f, in, H, r, H, 0.0f, out, ld, SgemmExtras{.packed_b = r_gemm->panel(0)});
      return;
    }
    // Row blocks of whole panels; a panel starting at row j0 begins at j0 * H in `packed`.
    const int64_t per_block = std::max<int64_t>(1, kStepBlockFma / (panel * H * B)) * panel;
    auto rows_block = [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t j0 = k * per_block, j1 = std::min(rows_used, j0 + per_block);
        for (int64_t b = 0; b < B; ++b) matvec(packed + j0 * H, j1 - j0, H, in + b * H, out + b * ld + j0, backward);
      }
    };
    const int64_t blocks = ceil_div(rows_used, per_block);
    if (backward && blocks > 1 && (!pool || pool->dop() <= 1)) {
      for (int64_t k = blocks - 1; k >= 0; --k) rows_block(k, k + 1);
      return;
    }
    // Several blocks run on every thread of the pool, with no Cost gate:
    // steps follow each other within the workers' spin window, so the
    // caller takes block 0 and a spinning worker claims the next one
    // step after step, and each thread keeps its rows of R in its own
    // L2 (LSTM 256: two 512 KB halves of a 1 MB R that one core's L2
    // does not hold with everything else). lstm_lm at intra 2: 3.57 ->
    // 2.80 ms (docs/benchmarks.md); a cost estimate of one thread
    // streaming R from L3 kept the step inline.
    if (blocks == 1) rows_block(0, 1);
    else parallel_for(pool, 0, blocks, 1, rows_block);
  }

  // One step of one sequence with activations other than the defaults (the
  // fused per-ISA steps take the defaults): xg its input projections, hg
  // H_{t-1} R^T, hb / cb its state, g and tmp scratch of GH and H floats.
  // GRU without linear_before_reset keeps z in `z_slot` and writes r . H
  // into `rh` for after the batch's (r . H) R_h product.
  void general_step(const Direction& dir, const Act* acts, const float* xg, const float* hg, float* hb, float* cb,
                    float* g, float* tmp, float* z_slot, float* rh) const {
    const int64_t H = dir.H;
    switch (cell_) {
      case Cell::kRnn:
        for (int64_t k = 0; k < H; ++k) g[k] = clip(xg[k] + hg[k]);
        acts[0].apply(g, H);
        std::copy(g, g + H, hb);
        break;
      case Cell::kGru: {
        // z and r: g[0:2H]
        for (int64_t k = 0; k < 2 * H; ++k) g[k] = clip(xg[k] + hg[k]);
        acts[0].apply(g, 2 * H);
        if (linear_before_reset_) {
          const float* rbh = dir.rb ? dir.rb + 2 * H : nullptr;
          for (int64_t k = 0; k < H; ++k)
            g[2 * H + k] = clip(xg[2 * H + k] + g[H + k] * (hg[2 * H + k] + (rbh ? rbh[k] : 0.0f)));
          acts[1].apply(g + 2 * H, H);
          for (int64_t k = 0; k < H; ++k) hb[k] = (1.0f - g[k]) * g[2 * H + k] + g[k] * hb[k];
        } else {
          // keep z for after the batch's (r . H) R_h product
          std::copy(g, g + H, z_slot);
          for (int64_t k = 0; k < H; ++k) rh[k] = g[H + k] * hb[k];
        }
        break;
      }
      case Cell::kLstm: {
        const float* p = dir.peep;  // [i, o, f]
        float* ig = g;
        float* og = g + H;
        float* fg = g + 2 * H;
        float* cc = g + 3 * H;
        for (int64_t k = 0; k < H; ++k) {
          ig[k] = clip(xg[k] + hg[k] + (p ? p[k] * cb[k] : 0.0f));
          fg[k] = clip(xg[2 * H + k] + hg[2 * H + k] + (p ? p[2 * H + k] * cb[k] : 0.0f));
          cc[k] = clip(xg[3 * H + k] + hg[3 * H + k]);
        }
        acts[0].apply(ig, H);
        if (input_forget_)
          for (int64_t k = 0; k < H; ++k) fg[k] = 1.0f - ig[k];
        else
          acts[0].apply(fg, H);
        acts[1].apply(cc, H);
        for (int64_t k = 0; k < H; ++k) {
          const float ct = fg[k] * cb[k] + ig[k] * cc[k];
          cb[k] = ct;
          og[k] = clip(xg[H + k] + hg[H + k] + (p ? p[H + k] * ct : 0.0f));
          tmp[k] = ct;
        }
        acts[0].apply(og, H);
        acts[2].apply(tmp, H);
        for (int64_t k = 0; k < H; ++k) hb[k] = og[k] * tmp[k];
        break;
      }
    }
  }

  // The workspaces of one direction's run in one zeroed allocation (a few
  // small vectors each call cost more in malloc than a short sequence's
  // compute), each part starting on a 64-byte boundary.
  struct Workspace {
    std::unique_ptr<float[]> mem;
    std::span<float> bias, h, c;
    std::span<float> hr;  // H_{t-1} R^T (DynamicQuantizeLSTM: X_t W + H_{t-1} R)
    std::span<float> gates, tmp, rbh_zeros, rh, rhr;
    float* xw = nullptr;  // the input projections, T * B * G * H (not zeroed)
  };
  Workspace workspace(const Direction& dir) const {
    const int64_t T = dir.T, B = dir.B, H = dir.H, GH = dir.G * H;
    const bool gru_split = this->gru_split();
    const size_t bh = static_cast<size_t>(B * H), gh = static_cast<size_t>(GH);
    constexpr size_t kAlign = 16;  // floats
    auto padded = [](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
    const size_t xw_size = static_cast<size_t>(T * B * GH);
    const size_t zeroed = padded(gh) * 3 + padded(bh) * (gru_split ? 4 : 2) + padded(static_cast<size_t>(B) * gh) +
                          padded(static_cast<size_t>(H)) * 2;
    Workspace w;
    w.mem.reset(new float[zeroed + xw_size + kAlign]);
    float* next = w.mem.get() + (kAlign - reinterpret_cast<uintptr_t>(w.mem.get()) / sizeof(float) % kAlign) % kAlign;
    std::fill(next, next + zeroed, 0.0f);
    auto take = [&next, &padded](size_t n) {
      const std::span<float> s(next, n);
      next += padded(n);
      return s;
    };
    w.bias = take(gh);
    w.h = take(bh);
    w.c = take(bh);
    w.hr = take(static_cast<size_t>(B) * gh);
    w.gates = take(gh);
    w.tmp = take(static_cast<size_t>(H));
    w.rbh_zeros = take(static_cast<size_t>(H));
    w.rh = take(gru_split ? bh : 0);
    w.rhr = take(gru_split ? bh : 0);
    w.xw = take(xw_size).data();
    return w;
  }

  // DynamicQuantizeLSTM's products of one step into ws.hr: X_t W + H_{t-1} R
  // for every running sequence. H_{t-1} is quantized as one block, as ONNX
  // Runtime does on one thread, and with its rows: with Y wanted, those of
  // sequences that ended before the previous step count as zeros (it reads
  // H_{t-1} from Y, where they are zeroed); without, as their last state
  // (it reads Y_h).
  struct Q8Scratch {
    std::vector<uint8_t> hq;
    std::vector<float> hz;
    std::vector<const float*> xg;
  };
  void q8_step(ThreadPool* pool, const Direction& dir, const RunIo& io, const Workspace& ws, int64_t step,
               Q8Scratch& s) const {
    const int64_t B = dir.B, H = dir.H, GH = dir.G * H;
    const std::vector<int64_t>& lens = *io.lens;
    s.hq.resize(static_cast<size_t>(B * H));
    s.xg.resize(static_cast<size_t>(B));
    const float* h = ws.h.data();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = lens[static_cast<size_t>(b)];
      const int64_t t = dir.reverse ? len - 1 - step : step;
      s.xg[static_cast<size_t>(b)] = step < len ? ws.xw + (t * B + b) * GH : nullptr;
      if (io.y && len < step) {
        if (s.hz.empty()) s.hz.resize(static_cast<size_t>(B * H));
        h = s.hz.data();
      }
    }
    if (h != ws.h.data())
      for (int64_t b = 0; b < B; ++b) {
        const bool zero = lens[static_cast<size_t>(b)] < step;
        for (int64_t k = 0; k < H; ++k)
          s.hz[static_cast<size_t>(b * H + k)] = zero ? 0.0f : ws.h[static_cast<size_t>(b * H + k)];
      }
    q8_recurrence(pool, h, B, H, *dir.q8, GH, s.xg.data(), s.hq.data(), ws.hr.data());
  }

  void run_direction(ThreadPool* pool, const Direction& dir, const RunIo& io, int64_t d) const {
    const int64_t T = dir.T, B = dir.B, H = dir.H, G = dir.G, GH = G * H;
    const bool gru_split = this->gru_split();
    const std::vector<int64_t>& lens = *io.lens;
    Workspace ws = workspace(dir);
    const std::span<float> h = ws.h, c = ws.c, hr = ws.hr, rh = ws.rh, rhr = ws.rhr;
    float* const xw = ws.xw;
    // DynamicQuantizeLSTM quantizes the rows up to the longest sequence, as
    // ONNX Runtime does; the float cells project every row.
    const int64_t longest = lens.empty() ? 0 : *std::max_element(lens.begin(), lens.end());
    project_inputs(pool, dir, io.x, dir.q8 ? longest * B : T * B, ws.bias, xw);
    Q8Scratch q8s;

    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < H; ++k) {
        if (io.h0) h[static_cast<size_t>(b * H + k)] = io.h0[state_at(d, b, B) + k];
        if (io.c0) c[static_cast<size_t>(b * H + k)] = io.c0[state_at(d, b, B) + k];
      }
    const int64_t r_rows = recurrence_rows();
    const Act* acts = &acts_[static_cast<size_t>((dir.reverse && dirs_ == 2 ? 1 : 0) * acts_per_dir())];
    auto active = [&](int64_t b, int64_t step) { return step < lens[static_cast<size_t>(b)]; };
    auto time_of = [&](int64_t b, int64_t step) { return dir.reverse ? lens[static_cast<size_t>(b)] - 1 - step : step; };
    float* g = ws.gates.data();
    // The default activations: gates and state update in one pass
    // (rnn_step.isa.cpp).
    static const auto lstm_step = SPINDLE_ISA_SELECT(lstm_step);
    static const auto gru_lbr_step = SPINDLE_ISA_SELECT(gru_lbr_step);
    static const auto gru_zr_step = SPINDLE_ISA_SELECT(gru_zr_step);
    static const auto gru_h_step = SPINDLE_ISA_SELECT(gru_h_step);
    static const auto rnn_tanh_step = SPINDLE_ISA_SELECT(rnn_tanh_step);
    const bool fused_step = default_activations();
    const float* rbh_or_zeros = dir.rb ? dir.rb + 2 * H : nullptr;
    if (fused_step && cell_ == Cell::kGru && !rbh_or_zeros) rbh_or_zeros = ws.rbh_zeros.data();

    for (int64_t step = 0; step < T; ++step) {
      if (dir.q8) {
        q8_step(pool, dir, io, ws, step, q8s);
      } else {
        recurrence(pool, B, H, h.data(), dir.r, dir.r_packed, dir.r_gemm, r_rows, hr.data(), GH, step % 2 == 1);
      }
      for (int64_t b = 0; b < B; ++b) {
        if (!active(b, step)) continue;  // this sequence has ended: its state stays, its Y stays 0
        // The gate sums: X_t W (+ biases) and H_{t-1} R; DynamicQuantizeLSTM's
        // (X_t W + H_{t-1} R) in hr and the biases.
        const float* xg = dir.q8 ? hr.data() + b * GH : xw + (time_of(b, step) * B + b) * GH;
        const float* hg = dir.q8 ? ws.bias.data() : hr.data() + b * GH;
        float* hb = h.data() + b * H;
        float* cb = c.data() + b * H;
        float* z_slot = hr.data() + b * GH + 2 * H;  // GRU: hr's h-gate slot, unused after the product
        if (!fused_step)
          general_step(dir, acts, xg, hg, hb, cb, g, ws.tmp.data(), z_slot, gru_split ? rh.data() + b * H : nullptr);
        else if (cell_ == Cell::kRnn)
          rnn_tanh_step(xg, hg, H, clip_, hb);
        else if (cell_ == Cell::kLstm)
          lstm_step(xg, hg, H, dir.peep, clip_, input_forget_, cb, hb);
        else if (gru_split)  // z kept in z_slot for after the batch's (r . H) R_h product
          gru_zr_step(xg, hg, hb, H, clip_, z_slot, rh.data() + b * H);
        else
          gru_lbr_step(xg, hg, rbh_or_zeros, H, clip_, hb);
      }
      if (gru_split) {
        // h~ = g(X_t W_h^T + Wb_h + (r . H_{t-1}) R_h^T + Rb_h)
        recurrence(pool, B, H, rh.data(), dir.r + 2 * H * H, dir.rh_packed, dir.rh_gemm, H, rhr.data(), H,
                   step % 2 == 1);
        const float* rbh = dir.rb ? dir.rb + 2 * H : nullptr;
        for (int64_t b = 0; b < B; ++b) {
          if (!active(b, step)) continue;
          const float* xg = xw + (time_of(b, step) * B + b) * GH;
          const float* z = hr.data() + b * GH + 2 * H;
          float* hb = h.data() + b * H;
          if (fused_step) {
            gru_h_step(xg + 2 * H, rhr.data() + b * H, rbh_or_zeros, z, H, clip_, hb);
            continue;
          }
          for (int64_t k = 0; k < H; ++k)
            g[k] = clip(xg[2 * H + k] + rhr[static_cast<size_t>(b * H + k)] + (rbh ? rbh[k] : 0.0f));
          acts[1].apply(g, H);
          for (int64_t k = 0; k < H; ++k) hb[k] = (1.0f - z[k]) * g[k] + z[k] * hb[k];
        }
      }
      if (io.y)
        for (int64_t b = 0; b < B; ++b)
          if (active(b, step))
            std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, io.y + y_at(time_of(b, step), d, b, T, B));
    }
    for (int64_t b = 0; b < B; ++b) {
      if (io.yh) std::copy(h.begin() + b * H, h.begin() + (b + 1) * H, io.yh + state_at(d, b, B));
      if (io.yc) std::copy(c.begin() + b * H, c.begin() + (b + 1) * H, io.yc + state_at(d, b, B));
    }
  }

  const float* optional_state(KernelContext& ctx, int index, const char* name, const Shape& shape) const {
    if (!ctx.has_input(index)) return nullptr;
    const Tensor& t = ctx.input(index);
    require_float(ctx.node(), t, name);
    check_shape(ctx.node(), t, name, shape);
    return t.data<float>();
  }

  static void check_shape(const NodeInfo& node, const Tensor& t, const char* name, const Shape& want) {
    check_shape(node, t.shape(), name, want);
  }
  static void check_shape(const NodeInfo& node, const Shape& got, const char* name, const Shape& want) {
    if (got != want)
      fail(node, fmt::format("input {} has shape {}, expected {}", name, shape_to_string(got), shape_to_string(want)));
  }

  // ONNX's defaults in every direction: RNN Tanh; GRU Sigmoid, Tanh; LSTM
  // Sigmoid, Tanh, Tanh.
  bool default_activations() const {
    for (size_t i = 0; i < acts_.size(); ++i) {
      const bool gate = cell_ != Cell::kRnn && i % static_cast<size_t>(acts_per_dir()) == 0;
      if (acts_[i].kind != (gate ? Act::kSigmoid : Act::kTanh)) return false;
    }
    return true;
  }

  int64_t acts_per_dir() const { return cell_ == Cell::kRnn ? 1 : cell_ == Cell::kGru ? 2 : 3; }

  void parse_activations(const NodeInfo& node) {
    const int64_t per = acts_per_dir();
    std::vector<std::string> names;
    if (node.attrs.has("activations")) names = node.attrs.get_strings("activations");
    if (names.empty()) {
      const std::vector<std::string> defaults = cell_ == Cell::kRnn   ? std::vector<std::string>{"Tanh"}
                                                : cell_ == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                      : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
      for (int64_t d = 0; d < dirs_; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
    }
    if (static_cast<int64_t>(names.size()) != per * dirs_)
      fail(node, fmt::format("attribute activations has {} entries, expected {} ({} per direction for {})",
                             names.size(), per * dirs_, per, name_of(cell_)));
    const std::vector<float> alphas = node.attrs.get_floats("activation_alpha", {});
    const std::vector<float> betas = node.attrs.get_floats("activation_beta", {});
    size_t ai = 0, bi = 0;
    for (const std::string& n : names) {
      const ActSpec* spec = nullptr;
      for (const auto& s : kActs)
        if (n == s.name) spec = &s;
      if (!spec)
        fail_unsupported(node, fmt::format("activation '{}' is not supported (expected one of Relu, Tanh, Sigmoid, "
                                           "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                                           "Softsign, Softplus)", n));
      Act a;
      a.kind = spec->kind;
      a.alpha = spec->alpha;
      a.beta = spec->beta;
      if (spec->params >= 1 && ai < alphas.size()) a.alpha = alphas[ai++];
      if (spec->params >= 2 && bi < betas.size()) a.beta = betas[bi++];
      acts_.push_back(a);
    }
  }

  Cell cell_;
  bool quantized_ = false;
  Q8RnnWeights q8_;  // quantized_: the packed constant W and R
  int64_t hidden_ = 0;
  int64_t dirs_ = 1;
  bool reverse_only_ = false;
  int64_t layout_ = 0;
  float clip_ = 0;
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  std::vector<Act> acts_;  // per direction: RNN f; GRU f g; LSTM f g h
  std::vector<PackedDir> packed_;  // per direction, when W or R is a constant (else empty)
  const float* const_w_ = nullptr;  // the constant W packed_[d].w was packed from (freed when owned)
  const float* const_r_ = nullptr;  // the constant R packed_[d].r was packed from (freed when owned)
  Shape w_shape_;  // the constant W packed_[d].w replaces (empty when W is not packed)
  Shape r_shape_;  // the constant R packed_[d].r (and r_h) replace
};

}  // namespace

void register_rnn(KernelRegistry& r) {
  r.add("", "RNN", 7, 17, [](const NodeInfo& n) { return std::make_unique<RecurrentKernel>(n, Cell::kRnn); });
  r.add("", "GRU", 7, 17, [](const NodeInfo& n) { return std::make_unique<RecurrentKernel>(n, Cell::kGru); });
  r.add("", "LSTM", 7, 17, [](const NodeInfo& n) { return std::make_unique<RecurrentKernel>(n, Cell::kLstm); });
  r.add("com.microsoft", "DynamicQuantizeLSTM", 1, 1,
        [](const NodeInfo& n) { return std::make_unique<RecurrentKernel>(n, Cell::kLstm, true); });
}

}  // namespace spindle::kernels::nn
