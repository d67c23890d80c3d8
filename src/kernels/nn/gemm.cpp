// gemm.cpp — MatMul (ai.onnx 1..17: N-d with batch broadcasting and the 1-D
// promotion rules) and Gemm (1..17: transA, transB, alpha, beta, C broadcast),
// both with a fused activation from the optimizer.
//
// Work is split into (batch, row tile, column tile) blocks chosen from the
// shape (and, for column blocks sharing one packed A, capped by the thread
// count: shared_a_blocks); an output element's sums do not depend on its
// block, so neither do the results. Each block is one packed SGEMM
// (sgemm.h) over the whole K, with Gemm's beta * C written into the block
// first and the activation applied by the SGEMM to each cache block of the
// output. A MatMul whose B has no batch dims folds A's batch into the rows
// (one larger GEMM). A constant B (weights) is packed into the SGEMM's
// panels once, when the kernel is created (NodeInfo::prepack). A MatMul may
// carry a third input from the optimizer (MatMul + Add of a constant bias
// vector fused): a float [N] bias added to each output block right after
// its SGEMM, while the block is in cache (no extra pass over the output),
// and a fourth (MatMulBinaryFusion): a tensor of the output's shape added
// to or multiplied with each block the same way (attribute fused_op), before
// the activation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/broadcast.h"
#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "primitives/gemm/sgemm.h"

namespace spindle::kernels::nn {

namespace {

// The SGEMM extras of a block: its first column's panel of a pre-packed B
// and the fused activation.
inline SgemmExtras block_extras(const PackedMatrix& packed_b, int64_t n0, const Activation& act) {
  SgemmExtras ex;
  if (!packed_b.empty()) ex.packed_b = packed_b.panel(n0), ex.b_constant = true;
  if (!act.is_none()) ex.act = &act;
  return ex;
}

// Most blocks of a GEMM whose column blocks share one packed A of many rows
// (batches == 1, rows >= 4 register tiles): two per thread. Each column
// block streams all of A, and an encoder's 128 x 1024 x 256 product in 16
// blocks spent 21% more CPU at intra 2 than at intra 1; capped at 4 blocks
// the encoder ran 0.96x (convolutions, whose blocks do not share A, lost
// 1.05x with the same cap; a fully connected layer of one row streams only
// its weights, split as before). The bits do not depend on the blocks
// (sgemm.h), so the count may follow the threads.
int64_t shared_a_blocks(const KernelContext& ctx, int64_t batches, int64_t rows) {
  if (batches != 1 || rows < 4 * sgemm_mr()) return 0;
  return 2 * int64_t{ctx.pool() ? ctx.pool()->dop() : 1};
}

// Decode-shaped products: a few rows (a generated token, up to 16) against
// a constant packed B are bound by reading B from memory, not by their
// multiply-adds (a 1 x 512 x 512 product is 0.26M FMAs, one block by work,
// but 1 MB of weights). They are split over N into column blocks of about
// kStreamBlockBytes of packed B each, contiguous panels in the packed
// layout, so each thread streams its own range of the weights once. The
// split follows the shape only, and a column block's sums run over the
// whole K in the same order whatever the block, so no bit depends on it.
constexpr double kStreamBlockBytes = 256.0 * 1024;
constexpr int64_t kDecodeMaxRows = 16;

bool decode_shaped(int64_t batches, int64_t rows, const PackedMatrix& packed_b) {
  return batches == 1 && rows <= kDecodeMaxRows && !packed_b.empty();
}

GemmBlocks decode_blocks(int64_t rows, int64_t N, int64_t K) {
  const int64_t NR = kGemmTileN;
  int64_t want = static_cast<int64_t>(std::ceil(static_cast<double>(N) * static_cast<double>(K) * 4.0 / kStreamBlockBytes));
  want = std::clamp<int64_t>(want, 1, 128);
  if (want > 1 && want < 16 && want % 2 != 0) ++want;  // two threads get even shares
  GemmBlocks b;
  b.mt = std::max<int64_t>(rows, 1);
  b.m_blocks = 1;
  b.nt = std::min(std::max<int64_t>(N, 1), round_up(ceil_div(std::max<int64_t>(N, 1), want), NR));
  b.n_blocks = ceil_div(std::max<int64_t>(N, 1), b.nt);
  return b;
}

// The MatMul's fused input 3 (optimizer: MatMulBinaryFusion): none, or r
// added to / multiplied with the product.
enum class FusedOp { kNone, kAdd, kMul };

FusedOp fused_op_from_attrs(const NodeInfo& node) {
  const std::string op = node.attrs.get_string("fused_op", "");
  if (op.empty()) return FusedOp::kNone;
  if (op == "Add") return FusedOp::kAdd;
  if (op == "Mul") return FusedOp::kMul;
  fail(node, fmt::format("attribute fused_op is '{}', expected Add or Mul", op));
}

// What follows the product over an m x n block of C (row stride ldc, still
// in cache from the SGEMM that wrote it): C[i][j] += bias[j], then C[i][j]
// += or *= r[i * ldc + j] (fused_op), then the activation; each the same
// single rounding in the same order as MatMul followed by the Add, the Add or
// Mul and the activation as separate nodes, so fusing changes no bit.
struct BlockEpilogue {
  const float* bias = nullptr;  // at the block's first column
  const float* r = nullptr;     // at the block's first element
  FusedOp op = FusedOp::kNone;
  const Activation* act = nullptr;

  bool empty() const { return !bias && !r; }
  void apply(float* c, int64_t ldc, int64_t m, int64_t n) const {
    for (int64_t i = 0; i < m; ++i) {
      float* row = c + i * ldc;
      if (bias)
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      if (r) {
        const float* ri = r + i * ldc;
        if (op == FusedOp::kAdd)
          for (int64_t j = 0; j < n; ++j) row[j] += ri[j];
        else
          for (int64_t j = 0; j < n; ++j) row[j] *= ri[j];
      }
      if (act && !act->is_none()) act->apply(row, n);
    }
  }
};

// ---------------------------------------------------------------- MatMul

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const NodeInfo& node) : act_(activation_from_attrs(node)), fused_op_(fused_op_from_attrs(node)) {
    // A constant float B without batch dims (or with batch dims of 1).
    const Tensor* b = node.const_input(1);
    if (node.prepack && b && b->dtype() == DataType::kFloat32 && b->rank() >= 2 && b->numel() > 0 &&
        b->numel() == b->dim(b->rank() - 2) * b->dim(b->rank() - 1)) {
      const int64_t K = b->dim(b->rank() - 2), N = b->dim(b->rank() - 1);
      packed_b_ = PackedMatrix::pack_b(false, N, K, b->data<float>(), N);
      const_b_ = b->data<float>();
      b_shape_ = b->shape();
    }
  }

  bool owns_constant_input(int i) const override { return i == 1 && !packed_b_.empty(); }
  size_t packed_bytes() const override { return packed_b_.bytes(); }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    // B absent: the constant packed at creation, whose original the plan dropped.
    const Tensor* Bp = !packed_b_.empty() && !ctx.has_input(1) ? nullptr : &ctx.input(1);
    const Shape& b_shape = Bp ? Bp->shape() : b_shape_;
    require_float(node, A, "A");
    if (Bp) require_float(node, *Bp, "B");
    const Product p = product_of(node, A.shape(), b_shape);
    BlockEpilogue ep;
    if (ctx.has_input(2)) {
      const Tensor& bias_t = ctx.input(2);
      require_float(node, bias_t, "bias");
      if (bias_t.rank() != 1 || bias_t.dim(0) != p.N)
        fail(node, fmt::format("fused bias has shape {}, expected [{}] (the last dimension of B)",
                               shape_to_string(bias_t.shape()), p.N));
      ep.bias = bias_t.data<float>();
    }
    ep.act = act_.is_none() ? nullptr : &act_;
    const float* b = Bp ? Bp->data<float>() : const_b_;  // const_b_ is never read when packed
    if (ctx.has_input(3)) {
      if (fused_op_ == FusedOp::kNone) fail(node, "a fourth input needs the attribute fused_op (Add or Mul)");
      const Tensor& R = ctx.input(3);
      require_float(node, R, "the fused Add / Mul's other operand");
      if (R.shape() != p.ys) return apply_unfused(ctx, A, b, p, ep, R);
      ep.r = R.data<float>();
      ep.op = fused_op_;
    }
    Tensor& Y = ctx.output(0, DataType::kFloat32, p.ys);
    if (Y.numel() > 0) multiply(ctx, A.data<float>(), b, p, Y.mutable_data<float>(), ep);
  }

 private:
  // The shapes of one MatMul: Y's, the broadcast batch, M x K times K x N.
  struct Product {
    Shape ys, a_batch, b_batch, out_batch;
    int64_t M = 0, K = 0, N = 0;
  };

  static Product product_of(const NodeInfo& node, const Shape& a_shape, const Shape& b_shape) {
    if (a_shape.empty() || b_shape.empty())
      fail(node, fmt::format("inputs A {} and B {} must have rank >= 1", shape_to_string(a_shape),
                             shape_to_string(b_shape)));
    const bool a_vec = a_shape.size() == 1, b_vec = b_shape.size() == 1;
    const Shape as = a_vec ? Shape{1, a_shape[0]} : a_shape;
    const Shape bs = b_vec ? Shape{b_shape[0], 1} : b_shape;
    Product p;
    p.M = as[as.size() - 2], p.K = as[as.size() - 1];
    const int64_t Kb = bs[bs.size() - 2];
    p.N = bs[bs.size() - 1];
    if (p.K != Kb)
      fail(node, fmt::format("inputs A {} and B {} have incompatible inner dimensions ({} vs {})",
                             shape_to_string(a_shape), shape_to_string(b_shape), p.K, Kb));
    p.a_batch = Shape(as.begin(), as.end() - 2), p.b_batch = Shape(bs.begin(), bs.end() - 2);
    const Shape batch_shapes[2] = {p.a_batch, p.b_batch};
    p.out_batch = broadcast_shapes(node, batch_shapes);
    p.ys = p.out_batch;
    if (!a_vec) p.ys.push_back(p.M);
    if (!b_vec) p.ys.push_back(p.N);
    return p;
  }

  // An operand r whose shape is not the output's: the product (with its
  // bias) alone, then the Add or Mul as the model wrote it (broadcasting),
  // then the activation.
  void apply_unfused(KernelContext& ctx, const Tensor& A, const float* b, const Product& p, BlockEpilogue ep,
                     const Tensor& R) const {
    const Shape shapes[2] = {p.ys, R.shape()};
    broadcast_shapes(ctx.node(), shapes);  // throws naming both shapes
    const Activation* act = ep.act;
    ep.act = nullptr;
    Tensor y(DataType::kFloat32, p.ys);
    if (y.numel() > 0) multiply(ctx, A.data<float>(), b, p, y.mutable_data<float>(), ep);
    Tensor out = run_kernel_once(fused_op_ == FusedOp::kAdd ? "Add" : "Mul", 14, Attributes(), {y, R}, 1,
                                 ctx.pool())[0];
    if (act) act->apply(out.mutable_data<float>(), out.numel());
    ctx.set_output(0, std::move(out));
  }

  void multiply(KernelContext& ctx, const float* a, const float* b, const Product& p, float* y,
                const BlockEpilogue& ep) const {
    const int64_t M = p.M, K = p.K, N = p.N;
    const int64_t batches = shape_numel(p.out_batch);
    // The pre-packed B when this run's B is the constant it was packed from.
    static const PackedMatrix kNone;
    const PackedMatrix& packed_b = !packed_b_.empty() && b == const_b_ ? packed_b_ : kNone;

    // B shared by every batch and A not broadcast: one GEMM of batches*M rows.
    const bool fold = shape_numel(p.b_batch) == 1 && shape_numel(p.a_batch) == batches;
    const int64_t gb_batches = fold ? 1 : batches;
    const int64_t rows = fold ? batches * M : M;
    std::vector<int64_t> a_off(static_cast<size_t>(gb_batches), 0), b_off(static_cast<size_t>(gb_batches), 0);
    if (!fold) {
      const Shape sa = broadcast_strides(p.a_batch, p.out_batch), sb = broadcast_strides(p.b_batch, p.out_batch);
      std::vector<int64_t> pos(p.out_batch.size(), 0);
      for (int64_t i = 0; i < batches; ++i) {
        int64_t oa = 0, ob = 0;
        for (size_t k = 0; k < pos.size(); ++k) {
          oa += pos[k] * sa[k];
          ob += pos[k] * sb[k];
        }
        a_off[static_cast<size_t>(i)] = oa * M * K;
        b_off[static_cast<size_t>(i)] = ob * K * N;
        for (size_t k = pos.size(); k-- > 0;) {
          if (++pos[k] < p.out_batch[k]) break;
          pos[k] = 0;
        }
      }
    }
    const GemmBlocks gb = decode_shaped(gb_batches, rows, packed_b)
                              ? decode_blocks(rows, N, K)
                              : choose_gemm_blocks(gb_batches, rows, N, K, N, shared_a_blocks(ctx, gb_batches, rows));
    const int64_t per_batch = gb.m_blocks * gb.n_blocks;
    const int64_t blocks = gb_batches * per_batch;
    const float* shared_a = gb_batches == 1 ? pack_shared_a(ctx, gb, false, rows, K, 1.0f, a, K) : nullptr;
    parallel_for(ctx.pool(), 0, blocks,
                 grain_for_cost(ops_cost(static_cast<double>(gb.mt * gb.nt * std::max<int64_t>(K, 1)))),
                 gemm_cost(gb.mt, gb.nt, K),
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t blk = b0; blk < b1; ++blk) {
                     const int64_t bi = blk / per_batch, rem = blk % per_batch;
                     const int64_t m0 = (rem / gb.n_blocks) * gb.mt, m1 = std::min(rows, m0 + gb.mt);
                     const int64_t n0 = (rem % gb.n_blocks) * gb.nt, n1 = std::min(N, n0 + gb.nt);
                     const int64_t at = bi * rows * N + m0 * N + n0;
                     float* c = y + at;
                     SgemmExtras ex = block_extras(packed_b, n0, Activation{});
                     ex.act = ep.empty() ? ep.act : nullptr;  // else after the bias and r
                     if (shared_a) ex.packed_a = shared_a + m0 * K;
                     sgemm(false, false, m1 - m0, n1 - n0, K, 1.0f, a + a_off[static_cast<size_t>(bi)] + m0 * K, K,
                           b + b_off[static_cast<size_t>(bi)] + n0, N, 0.0f, c, N, ex);
                     if (ep.empty()) continue;
                     BlockEpilogue e = ep;
                     if (e.bias) e.bias += n0;
                     if (e.r) e.r += at;
                     e.apply(c, N, m1 - m0, n1 - n0);
                   }
                 });
  }

  Activation act_;
  FusedOp fused_op_;
  PackedMatrix packed_b_;          // constant B in SGEMM panels (empty when not packed)
  const float* const_b_ = nullptr;  // the data packed_b_ was packed from (an identity: may be freed)
  Shape b_shape_;                   // its shape
};

// ---------------------------------------------------------------- MatMulGroup

// spindle.MatMulGroup (MatMulSiblingFusion): the MatMuls of one float A by
// n constant 2-D weights (a decoder's query / key / value projections).
// Inputs A, B_0..B_{n-1}, then bias_0..bias_{n-1} (each absent or [N_i]);
// output i is A x B_i (+ bias_i), of A's shape with N_i last. Each member
// keeps its own packed B and the blocks it would have as a MatMul alone
// (decode_blocks, or choose_gemm_blocks on its own shape); the blocks of
// all members run in one parallel loop over one packing of A: one dispatch
// and one join where the separate nodes had n, and a narrow member (a
// 512 x 128 key projection, one block alone) shares the threads with the
// wide ones. Each block computes what it computes in the member's own
// MatMul, so no bit changes.
class MatMulGroupKernel final : public OpKernel {
 public:
  explicit MatMulGroupKernel(const NodeInfo& node) : n_(node.num_outputs), members_(static_cast<size_t>(n_)) {
    if (n_ < 1 || node.num_inputs < 1 + n_ || node.num_inputs > 1 + 2 * n_)
      fail(node, fmt::format("has {} inputs and {} outputs, expected A, one B per output and up to one bias each",
                             node.num_inputs, n_));
    for (int i = 0; i < n_; ++i) {
      const Tensor* b = node.const_input(1 + i);
      if (!b || b->dtype() != DataType::kFloat32 || b->rank() != 2)
        fail(node, fmt::format("input {} must be a constant 2-D float32 weight matrix", 1 + i));
      Member& m = members_[static_cast<size_t>(i)];
      m.K = b->dim(0), m.N = b->dim(1);
      if (node.prepack && b->numel() > 0) m.packed = PackedMatrix::pack_b(false, m.N, m.K, b->data<float>(), m.N);
    }
  }

  bool owns_constant_input(int i) const override {
    return i >= 1 && i <= n_ && !members_[static_cast<size_t>(i - 1)].packed.empty();
  }
  size_t packed_bytes() const override {
    size_t bytes = 0;
    for (const Member& m : members_) bytes += m.packed.bytes();
    return bytes;
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    require_float(node, A, "A");
    const int64_t K = members_[0].K;
    if (A.rank() < 1 || A.dim(A.rank() - 1) != K)
      fail(node, fmt::format("input A has shape {}, expected a last dimension of {} (the rows of B)",
                             shape_to_string(A.shape()), K));
    const int64_t rows = shape_numel(Shape(A.shape().begin(), A.shape().end() - 1));
    std::vector<Run> runs(static_cast<size_t>(n_));
    int64_t blocks = 0, grain = std::numeric_limits<int64_t>::max();
    double cycles = 0;
    for (int i = 0; i < n_; ++i) {
      const Member& m = members_[static_cast<size_t>(i)];
      Run& r = runs[static_cast<size_t>(i)];
      if (m.K != K) fail(node, fmt::format("input {} has {} rows, expected {} like B_0", 1 + i, m.K, K));
      Shape ys = A.shape();
      ys.back() = m.N;
      r.y = ctx.output(i, DataType::kFloat32, ys).mutable_data<float>();
      r.bias = member_bias(ctx, i, m.N);
      r.b = m.packed.empty() ? member_weights(ctx, i, m) : nullptr;
      r.gb = decode_shaped(1, rows, m.packed) ? decode_blocks(rows, m.N, K)
                                               : choose_gemm_blocks(1, rows, m.N, K, m.N, shared_a_blocks(ctx, 1, rows));
      r.first = blocks;
      blocks += r.gb.m_blocks * r.gb.n_blocks;
      cycles += cycles_of(r.gb.m_blocks * r.gb.n_blocks, gemm_cost(r.gb.mt, r.gb.nt, K));
      grain = std::min(grain, grain_for_cost(ops_cost(static_cast<double>(r.gb.mt * r.gb.nt * std::max<int64_t>(K, 1)))));
    }
    if (rows == 0 || blocks == 0) return;
    // A packed once for every block that reads it (all of them).
    GemmBlocks all;
    all.n_blocks = blocks;
    const float* shared_a = pack_shared_a(ctx, all, false, rows, K, 1.0f, A.data<float>(), K);
    // Each block's cost the members' mean: the pool weighs the loop's whole work.
    const double per_block = cycles / static_cast<double>(blocks);
    parallel_for(ctx.pool(), 0, blocks, grain, Cost{0, 0, per_block}, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) run_block(runs, blk, rows, K, A.data<float>(), shared_a);
    });
  }

 private:
  struct Member {
    int64_t K = 0, N = 0;
    PackedMatrix packed;  // B_i in SGEMM panels (empty: read from the input at run time)
  };
  // One member's output and blocks in this run.
  struct Run {
    float* y = nullptr;
    const float* bias = nullptr;
    const float* b = nullptr;  // the weights as given when not packed
    GemmBlocks gb;
    int64_t first = 0;  // its first block in the loop
  };

  const float* member_bias(KernelContext& ctx, int i, int64_t N) const {
    const int index = 1 + n_ + i;
    if (!ctx.has_input(index)) return nullptr;
    const Tensor& t = ctx.input(index);
    require_float(ctx.node(), t, "bias");
    if (t.rank() != 1 || t.dim(0) != N)
      fail(ctx.node(), fmt::format("input {} (bias of output {}) has shape {}, expected [{}]", index, i,
                                   shape_to_string(t.shape()), N));
    return t.data<float>();
  }

  // B_i as this run gives it (the kernel did not pack it): the shape it had at creation.
  static const float* member_weights(KernelContext& ctx, int i, const Member& m) {
    const Tensor& t = ctx.input(1 + i);
    require_float(ctx.node(), t, "B");
    if (t.shape() != Shape{m.K, m.N})
      fail(ctx.node(), fmt::format("input {} has shape {}, expected [{}, {}]", 1 + i, shape_to_string(t.shape()), m.K, m.N));
    return t.data<float>();
  }

  void run_block(const std::vector<Run>& runs, int64_t blk, int64_t rows, int64_t K, const float* a,
                 const float* shared_a) const {
    size_t i = runs.size() - 1;
    while (blk < runs[i].first) --i;
    const Run& r = runs[i];
    const Member& m = members_[i];
    const int64_t local = blk - r.first;
    const int64_t m0 = (local / r.gb.n_blocks) * r.gb.mt, m1 = std::min(rows, m0 + r.gb.mt);
    const int64_t n0 = (local % r.gb.n_blocks) * r.gb.nt, n1 = std::min(m.N, n0 + r.gb.nt);
    float* c = r.y + m0 * m.N + n0;
    SgemmExtras ex = block_extras(m.packed, n0, Activation{});
    if (shared_a) ex.packed_a = shared_a + m0 * K;
    sgemm(false, false, m1 - m0, n1 - n0, K, 1.0f, a + m0 * K, K, r.b ? r.b + n0 : nullptr, m.N, 0.0f, c, m.N, ex);
    if (!r.bias) return;
    BlockEpilogue e;
    e.bias = r.bias + n0;
    e.apply(c, m.N, m1 - m0, n1 - n0);
  }

  int n_;
  std::vector<Member> members_;
};

// ---------------------------------------------------------------- Gemm

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const NodeInfo& node)
      : alpha_(node.attrs.get_float("alpha", 1.0f)),
        beta_(node.attrs.get_float("beta", 1.0f)),
        trans_a_(node.attrs.get_int("transA", 0) != 0),
        trans_b_(node.attrs.get_int("transB", 0) != 0),
        act_(activation_from_attrs(node)) {
    const Tensor* b = node.const_input(1);
    if (node.prepack && b && b->dtype() == DataType::kFloat32 && b->rank() == 2 && b->numel() > 0) {
      packed_b_ = PackedMatrix::pack_b(trans_b_, trans_b_ ? b->dim(0) : b->dim(1), trans_b_ ? b->dim(1) : b->dim(0),
                                       b->data<float>(), b->dim(1));
      const_b_ = b->data<float>();
      b_shape_ = b->shape();
    }
  }

  bool owns_constant_input(int i) const override { return i == 1 && !packed_b_.empty(); }
  size_t packed_bytes() const override { return packed_b_.bytes(); }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    require_float(node, A, "A");
    // B absent: the constant packed at creation, whose original the plan dropped.
    const Tensor* Bp = !packed_b_.empty() && !ctx.has_input(1) ? nullptr : &ctx.input(1);
    const Shape& b_shape = Bp ? Bp->shape() : b_shape_;
    if (Bp) require_float(node, *Bp, "B");
    if (A.rank() != 2 || b_shape.size() != 2)
      fail(node, fmt::format("inputs A {} and B {} must be 2-D", shape_to_string(A.shape()), shape_to_string(b_shape)));
    const int64_t M = trans_a_ ? A.dim(1) : A.dim(0), K = trans_a_ ? A.dim(0) : A.dim(1);
    const int64_t Kb = trans_b_ ? b_shape[1] : b_shape[0], N = trans_b_ ? b_shape[0] : b_shape[1];
    if (K != Kb)
      fail(node, fmt::format("inputs A {} (transA={}) and B {} (transB={}) have incompatible inner dimensions ({} vs {})",
                             shape_to_string(A.shape()), trans_a_ ? 1 : 0, shape_to_string(b_shape), trans_b_ ? 1 : 0,
                             K, Kb));
    const float* c = nullptr;
    int64_t c_rs = 0, c_cs = 0;  // element strides of C read as M x N
    if (ctx.has_input(2) && beta_ != 0.0f) {
      const Tensor& C = ctx.input(2);
      require_float(node, C, "C");
      const Shape& cs = C.shape();
      const bool ok = cs.size() <= 2 && (cs.empty() || cs.back() == N || cs.back() == 1) &&
                      (cs.size() < 2 || cs[0] == M || cs[0] == 1);
      if (!ok)
        fail(node, fmt::format("input C has shape {}, which does not broadcast to the output {}x{}",
                               shape_to_string(cs), M, N));
      const Shape st = broadcast_strides(cs, Shape{M, N});
      c = C.data<float>();
      c_rs = st[0];
      c_cs = st[1];
    }
    Tensor& Y = ctx.output(0, DataType::kFloat32, {M, N});
    if (Y.numel() == 0) return;
    const float* a = A.data<float>();
    const float* b = Bp ? Bp->data<float>() : const_b_;  // const_b_ is never read when packed
    float* y = Y.mutable_data<float>();
    static const PackedMatrix kNone;
    const PackedMatrix& packed_b = !packed_b_.empty() && b == const_b_ ? packed_b_ : kNone;
    const GemmBlocks gb = decode_shaped(1, M, packed_b) ? decode_blocks(M, N, K)
                                                        : choose_gemm_blocks(1, M, N, K, N, shared_a_blocks(ctx, 1, M));
    const int64_t blocks = gb.m_blocks * gb.n_blocks;
    const int64_t lda = A.dim(1), ldb = b_shape[1];
    const float* shared_a = pack_shared_a(ctx, gb, trans_a_, M, K, alpha_, a, lda);
    parallel_for(ctx.pool(), 0, blocks,
                 grain_for_cost(ops_cost(static_cast<double>(gb.mt * gb.nt * std::max<int64_t>(K, 1)))),
                 gemm_cost(gb.mt, gb.nt, K),
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t blk = b0; blk < b1; ++blk) {
                     const int64_t m0 = (blk / gb.n_blocks) * gb.mt, m1 = std::min(M, m0 + gb.mt);
                     const int64_t n0 = (blk % gb.n_blocks) * gb.nt, n1 = std::min(N, n0 + gb.nt);
                     float* yb = y + m0 * N + n0;
                     // Y = beta * C (broadcast) first, then Y += alpha * A'B'.
                     if (c)
                       for (int64_t i = m0; i < m1; ++i) {
                         const float* ci = c + i * c_rs;
                         float* row = y + i * N;
                         for (int64_t j = n0; j < n1; ++j) row[j] = beta_ * ci[j * c_cs];
                       }
                     SgemmExtras ex = block_extras(packed_b, n0, act_);
                     if (shared_a) ex.packed_a = shared_a + m0 * K;
                     sgemm(trans_a_, trans_b_, m1 - m0, n1 - n0, K, alpha_, trans_a_ ? a + m0 : a + m0 * lda, lda,
                           trans_b_ ? b + n0 * ldb : b + n0, ldb, c ? 1.0f : 0.0f, yb, N, ex);
                   }
                 });
  }

 private:
  float alpha_, beta_;
  bool trans_a_, trans_b_;
  Activation act_;
  PackedMatrix packed_b_;          // constant op(B) in SGEMM panels (empty when not packed)
  const float* const_b_ = nullptr;  // the data packed_b_ was packed from (an identity: may be freed)
  Shape b_shape_;                   // its shape
};

}  // namespace

void register_gemm(KernelRegistry& r) {
  // MatMul: 1, 9, 13 (same float semantics).
  r.add("", "MatMul", 1, 17, factory_of<MatMulKernel>());
  // Gemm: 1 and 6 (broadcast attribute; C is broadcast either way), 7, 9,
  // 11 (C optional), 13.
  r.add("", "Gemm", 1, 17, factory_of<GemmKernel>());
  r.add("spindle", "MatMulGroup", 1, 1, factory_of<MatMulGroupKernel>());
}

}  // namespace spindle::kernels::nn
