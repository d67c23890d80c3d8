// matmul_nbits.cpp — com.microsoft MatMulNBits (since 1): Y = A x B^T with B
// block-quantized along K (nbits.h), plus an optional bias:
//
//   A            float32 [..., K]
//   B            uint8 [N, k_blocks, blob], k_blocks = ceil(K / block_size),
//                blob = block_size * bits / 8, values packed low bits first
//   scales       float32, N * k_blocks values ([N * k_blocks] or [N, k_blocks])
//   zero_points  optional: uint8 packed like B (bits per value, each row of
//                N padded to whole bytes: N * ceil(k_blocks * bits / 8)
//                bytes), or float32 N * k_blocks values; absent: 2^(bits-1)
//   g_idx        optional, not supported (an error when given)
//   bias         optional float32 [N]
//   Y            float32 [..., N]
//
// Attributes K, N, block_size (a power of 2 >= 16) and bits (4 or 8;
// others are refused) are required or checked. accuracy_level is the
// precision A may be computed in: 4 (int8) with 4-bit weights, block_size
// <= 256 and integer zero points makes a product of any row count
// quantize A per block to int8 (symmetric, scale = max|a| / 127, nbits.h's
// NbitsQ8A) and take integer dot products with the 4-bit codes, scaled to
// float per block, the arithmetic ONNX Runtime's CPU provider uses at that
// level: fewer than kQ8GemmMinRows rows (or zero points above 15, or the
// baseline ISA level) as a fused product over B's 4-bit codes, more as an
// int8 GEMM on B unpacked to int8 once per column block (nbits_q8_gemm).
// At AVX-512 B is read as panels of 16 columns (nbits.h's NbitsQ4Panels:
// kept at creation, or packed for the run when B is given to it) by
// nbits_q4_gemv and unpacked from them for the GEMM; below, B in its own
// layout (nbits_gemv_q8, nbits_q8_pack). Every other case multiplies float
// A by the dequantized float weights.
//
// A constant B, scales and zero points are kept by the kernel at creation in
// their quantized form (4 bits per weight; the zero points as floats, or
// all three as NbitsQ4Panels), and the plan drops the model's copies. A product of at most kFloatGemvMaxRows
// rows (decoding a token) is a fused dequantize-and-dot (nbits_gemv) over
// column blocks of B, groups of 4 rows per block so that each block's
// weights are unpacked from cache for the later groups; larger products
// pack A once (sgemm.h's panels) and, per column block, dequantize B's
// columns straight into the SGEMM's packed B panels in scratch (at most
// kPanelFloats floats: B stays 4-bit, only a block is float at a time) and
// run the SGEMM on the two pre-packed operands. Blocks follow the shape
// only and each output element is computed by one block in a fixed order
// (the SGEMM's k blocks follow K alone), so results do not depend on the
// thread count.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "kernels/nn/nn_util.h"
#include "primitives/gemm/nbits.h"
#include "primitives/gemm/qgemm.h"
#include "primitives/gemm/sgemm.h"

namespace spindle::kernels::nn {

namespace {

// Float A: the fused product up to this many rows, the dequantized SGEMM
// from the next. The fused product unpacks B once per group of 4 rows, its
// cost grows with the rows; the SGEMM's dequantization is paid once. On the
// 4-bit decoder's 57 products (`spindle bench decoder_q4.onnx`, intra 1, p50
// ms, fused / SGEMM): 2 rows 2.6 / 6.4, 4 rows 4.5-4.7 / 7.1-7.3, 6 rows
// 6.6-6.9 / 7.4-7.5, 8 rows 8.8-8.9 / 8.3-8.5, 16 rows 21-22 / 13-15.
constexpr int64_t kFloatGemvMaxRows = 6;
// accuracy_level 4 at AVX2 and AVX-512: the int8 GEMM (nbits_q8_gemm) from
// this many rows, the fused int8 product (nbits_gemv_q8) below; the fused
// product unpacks B once per group of 4 rows, the GEMM once per call. Sums
// of the five products of `bench_nbits --accuracy-level 4 --rows 5,8,16`,
// 1 thread, us, fused / GEMM: 5 rows 862-1243 / 657-891, 8 rows 1188 /
// 718-732, 16 rows 2370-2420 / 979-1062. The baseline level runs the fused
// product at any row count (its GEMM is plain loops, tens of times slower).
constexpr int64_t kQ8GemmMinRows = 5;
// Column blocks of the int8 GEMM: about this many bytes of int8 panels.
constexpr int64_t kQ8BlockBytes = 192 * 1024;
// Column blocks of the fused product: about this many bytes of quantized B each.
constexpr double kGemvBlockBytes = 64.0 * 1024;
// Dequantized column block of the SGEMM path: at most about this many floats
// (packed panels over the whole K, in L2 while the SGEMM reads them).
constexpr int64_t kPanelFloats = 64 * 1024;

class MatMulNBitsKernel final : public OpKernel {
 public:
  explicit MatMulNBitsKernel(const NodeInfo& node) {
    for (const char* name : {"K", "N", "block_size"})
      if (!node.attrs.has(name)) fail(node, fmt::format("attribute {} is required", name));
    K_ = node.attrs.get_int("K");
    N_ = node.attrs.get_int("N");
    bits_ = node.attrs.get_int("bits", 4);
    block_size_ = node.attrs.get_int("block_size");
    accuracy_level_ = node.attrs.get_int("accuracy_level", 0);
    constexpr int64_t kMaxDim = int64_t{1} << 40;  // keeps the size arithmetic below far from overflow
    if (K_ < 1 || N_ < 0 || K_ > kMaxDim || N_ > kMaxDim)
      fail(node, fmt::format("attributes K={} and N={}: expected 1 <= K <= 2^40 and 0 <= N <= 2^40", K_, N_));
    if (bits_ != 4 && bits_ != 8)
      fail_unsupported(node, fmt::format("bits={} is not supported (spindle implements bits = 4 and 8)", bits_));
    if (block_size_ < 16 || (block_size_ & (block_size_ - 1)) != 0 || block_size_ > (int64_t{1} << 30))
      fail(node, fmt::format("block_size={} is invalid: expected a power of 2 >= 16", block_size_));
    k_blocks_ = ceil_div(K_, block_size_);
    blob_ = block_size_ * bits_ / 8;
    blocks_total_ = size_mul(node, N_, k_blocks_, "N * k_blocks");
    b_bytes_ = size_mul(node, blocks_total_, blob_, "N * k_blocks * blob_size");

    const Tensor* b = node.const_input(1);
    const Tensor* s = node.const_input(2);
    if (!node.prepack || !b || !s) return;
    check_b(node, *b);  // bounds N * k_blocks by the data given, before anything is allocated
    check_scales(node, *s);
    zero_.assign(static_cast<size_t>(blocks_total_), default_zero());
    if (const Tensor* z = node.const_input(3)) {
      zeros_from(node, *z, zero_);
      zero_const_ = true;
    }
    b_.assign(b->data<uint8_t>(), b->data<uint8_t>() + b_bytes_);
    if (accuracy_level_ == 4 && std::all_of(zero_.begin(), zero_.end(), [](float z) {
          return z >= 0.0f && z <= 255.0f && z == std::floor(z);
        }))
      zero_int_.assign(zero_.begin(), zero_.end());
    zero_int_small_ = std::all_of(zero_int_.begin(), zero_int_.end(), [](uint8_t z) { return z <= 15; });
    scale_.assign(s->data<float>(), s->data<float>() + blocks_total_);
    owned_ = true;
    // (zero points given at run time would replace the ones the panels hold)
    static const bool panels = SPINDLE_ISA_SELECT(nbits_q4_panels_used)();
    if (panels && bits_ == 4 && block_size_ <= 256 && !zero_int_.empty() && (zero_const_ || node.num_inputs <= 3))
      keep_panels();
  }

  bool owns_constant_input(int i) const override { return owned_ && (i == 1 || i == 2 || (i == 3 && zero_const_)); }

  // For spindle.MatMulNBitsGroup: whether a run of `rows` rows, B not given
  // (kept), takes the kept panels' fused row product (gemv_q4), whose
  // column blocks the group then runs in its own loop.
  bool panel_rows(int64_t rows) const { return owned_ && q4_ && !(rows >= kQ8GemmMinRows && zero_int_small_); }
  // Its column blocks (of whole panels, as gemv_q4's) and one block over
  // every row of A quantized by quantize_rows (the same for members of one
  // K and block_size).
  int64_t panel_columns() const { return gemv_columns_per_block(16); }
  int64_t columns() const { return N_; }
  struct QuantizedA {
    const int8_t* q;
    const float* scale;
    const int32_t* sum;
  };
  QuantizedA quantize_a(const float* a, int64_t rows) const {
    const Int8Rows r = quantize_rows(a, rows);
    return {r.q, r.scale, r.sum};
  }
  void panel_block(const QuantizedA& qa, int64_t rows, int64_t n0, int64_t n1, const float* bias, float* y) const {
    static const auto gemv_fn = SPINDLE_ISA_SELECT(nbits_q4_gemv);
    static const bool vnni = cpu_has_avx512_vnni();
    const Int8Rows r{const_cast<int8_t*>(qa.q), const_cast<float*>(qa.scale), const_cast<int32_t*>(qa.sum)};
    for (int64_t r0 = 0; r0 < rows; r0 += kNbitsGemvMaxRows) {
      NbitsQ4A p = rows_from<NbitsQ4A>(r, r0, rows, bias, y);
      p.vnni = vnni;
      gemv_fn({q4_.get(), N_, k_blocks_, block_size_}, p, n0, n1);
    }
  }
  size_t packed_bytes() const override {
    return owned_ ? b_.size() + (scale_.size() + zero_.size()) * sizeof(float) + zero_int_.size() + q4_bytes_ : 0;
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& A = ctx.input(0);
    require_float(node, A, "A");
    if (A.rank() < 1 || A.dim(A.rank() - 1) != K_)
      fail(node, fmt::format("input A has shape {}, expected [..., {}] (attribute K)", shape_to_string(A.shape()), K_));
    if (ctx.has_input(4))
      fail_unsupported(node, "input g_idx (a permutation of K for act-order quantization) is not supported");

    NbitsWeights w;
    w.N = N_, w.K = K_, w.k_blocks = k_blocks_, w.block_size = block_size_, w.blob = blob_;
    w.bits = static_cast<int>(bits_);
    std::vector<float> run_zero;  // zero points of weights given at run time
    std::vector<uint8_t> run_zero_int;  // and as integers (accuracy_level 4)
    const bool kept = owned_ && !ctx.has_input(1);
    if (kept) {
      w.b = b_.data();
      w.scale = scale_.data();
      w.zero = zero_.data();
    } else {
      const Tensor& B = ctx.input(1);
      const Tensor& S = ctx.input(2);
      check_b(node, B);
      check_scales(node, S);
      w.b = B.data<uint8_t>();
      w.scale = S.data<float>();
    }
    if (!kept || (ctx.has_input(3) && !zero_const_)) {
      run_zero.assign(static_cast<size_t>(blocks_total_), default_zero());
      if (ctx.has_input(3)) zeros_from(node, ctx.input(3), run_zero);
      w.zero = run_zero.data();
    }
    const float* bias = nullptr;
    if (ctx.has_input(5)) {
      const Tensor& bias_t = ctx.input(5);
      require_float(node, bias_t, "bias");
      if (bias_t.rank() != 1 || bias_t.dim(0) != N_)
        fail(node, fmt::format("input bias has shape {}, expected {} (attribute N)", shape_to_string(bias_t.shape()),
                               shape_to_string(Shape{N_})));
      bias = bias_t.data<float>();
    }

    Shape ys = A.shape();
    ys.back() = N_;
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;
    const int64_t rows = A.numel() / K_;
    static const bool q8_gemm = active_isa_level() >= IsaLevel::kAvx2;
    static const bool panels_used = SPINDLE_ISA_SELECT(nbits_q4_panels_used)();
    if (kept && q4_) {
      run_panels(ctx, {q4_.get(), N_, k_blocks_, block_size_}, zero_int_small_, A.data<float>(), rows, bias,
                 Y.mutable_data<float>());
    } else if (accuracy_level_ == 4 && bits_ == 4 && block_size_ <= 256 && integer_zeros(w)) {
      const uint8_t* zint = int_zeros(w, run_zero_int);
      const bool small = zint == zero_int_.data() ? zero_int_small_
                                                  : std::all_of(zint, zint + blocks_total_, [](uint8_t z) { return z <= 15; });
      if (panels_used) {  // weights given to the run: panels for this run (the kept ones' arithmetic)
        static const auto pack_fn = SPINDLE_ISA_SELECT(nbits_q4_pack);
        auto* dst = reinterpret_cast<uint8_t*>(scratch_floats(
            kSharedInputSlot, static_cast<size_t>(ceil_div(N_, 16) * nbits_q4_panel_bytes(k_blocks_, block_size_) / 4)));
        pack_fn(w, zint, dst);
        run_panels(ctx, {dst, N_, k_blocks_, block_size_}, small, A.data<float>(), rows, bias, Y.mutable_data<float>());
      } else if (q8_gemm && rows >= kQ8GemmMinRows && small && 16 * k_blocks_ * blob_ < (int64_t{1} << 31)) {
        // (nbits_q8_pack addresses 16 rows of B with 32-bit offsets: below 2^31 bytes.)
        static const auto pack_fn = SPINDLE_ISA_SELECT(nbits_q8_pack);
        gemm_q8(ctx, [&](int64_t n0, int64_t n1, uint8_t* dst) { pack_fn(w, zint, n0, n1, dst); }, A.data<float>(),
                rows, bias, Y.mutable_data<float>());
      } else {
        gemv_q8(ctx, w, zint, A.data<float>(), rows, bias, Y.mutable_data<float>());
      }
    } else if (rows <= kFloatGemvMaxRows) gemv(ctx, w, A.data<float>(), rows, bias, Y.mutable_data<float>());
    else dequantized_gemm(ctx, w, A.data<float>(), rows, bias, Y.mutable_data<float>());
  }

 private:
  float default_zero() const { return static_cast<float>(int64_t{1} << (bits_ - 1)); }

  void check_b(const NodeInfo& node, const Tensor& B) const {
    if (B.dtype() != DataType::kUInt8 || B.rank() != 3 || B.dim(0) != N_ || B.dim(1) != k_blocks_ || B.dim(2) != blob_)
      fail(node, fmt::format("input B is {} {}, expected uint8 {} (N, ceil(K / block_size), block_size * bits / 8)",
                             dtype_name(B.dtype()), shape_to_string(B.shape()),
                             shape_to_string(Shape{N_, k_blocks_, blob_})));
  }

  void check_scales(const NodeInfo& node, const Tensor& S) const {
    require_float(node, S, "scales");
    if (S.numel() != blocks_total_ || S.rank() < 1 || S.rank() > 2 || (S.rank() == 2 && S.dim(0) != N_))
      fail(node, fmt::format("input scales has shape {}, expected {} or {} (one per block of B)",
                             shape_to_string(S.shape()), shape_to_string(Shape{blocks_total_}),
                             shape_to_string(Shape{N_, k_blocks_})));
  }

  // The zero points of every block as floats, from packed uint8 (bits per
  // value, rows padded to whole bytes) or float32.
  void zeros_from(const NodeInfo& node, const Tensor& Z, std::vector<float>& out) const {
    if (Z.dtype() == DataType::kFloat32) {
      if (Z.numel() != blocks_total_)
        fail(node, fmt::format("input zero_points is float32 {}, expected {} values (one per block of B)",
                               shape_to_string(Z.shape()), blocks_total_));
      std::memcpy(out.data(), Z.data<float>(), static_cast<size_t>(blocks_total_) * sizeof(float));
      return;
    }
    const int64_t row_bytes = ceil_div(k_blocks_ * bits_, 8);
    if (Z.dtype() != DataType::kUInt8 || Z.numel() != N_ * row_bytes)
      fail(node, fmt::format("input zero_points is {} {}, expected uint8 with {} values ({} bytes per row of B, "
                             "{}-bit values packed) or float32 with {}",
                             dtype_name(Z.dtype()), shape_to_string(Z.shape()), N_ * row_bytes, row_bytes, bits_,
                             blocks_total_));
    const uint8_t* z = Z.data<uint8_t>();
    for (int64_t n = 0; n < N_; ++n)
      for (int64_t b = 0; b < k_blocks_; ++b) {
        const uint8_t byte = bits_ == 8 ? z[n * row_bytes + b] : z[n * row_bytes + b / 2];
        const int q = bits_ == 8 ? byte : (b % 2 == 0 ? byte & 0x0F : byte >> 4);
        out[static_cast<size_t>(n * k_blocks_ + b)] = static_cast<float>(q);
      }
  }

  // Whether every zero point of w is an integer in [0, 255] (always so for
  // uint8 ones); then zero_int holds them.
  bool integer_zeros(const NbitsWeights& w) const {
    if (owned_ && w.zero == zero_.data() && !zero_int_.empty()) return true;
    for (int64_t i = 0; i < blocks_total_; ++i) {
      const float z = w.zero[i];
      if (!(z >= 0.0f && z <= 255.0f) || z != std::floor(z)) return false;
    }
    return true;
  }

  // The integer zero points of w (integer_zeros holds): the kept ones, or
  // those given at run time converted into buf.
  const uint8_t* int_zeros(const NbitsWeights& w, std::vector<uint8_t>& buf) const {
    if (owned_ && w.zero == zero_.data() && !zero_int_.empty()) return zero_int_.data();
    buf.resize(static_cast<size_t>(blocks_total_));
    for (int64_t i = 0; i < blocks_total_; ++i) buf[static_cast<size_t>(i)] = static_cast<uint8_t>(w.zero[i]);
    return buf.data();
  }

  // Column blocks of B as gemv's: about kGemvBlockBytes each, an even count
  // when there are few, a multiple of `align` columns. Returns the columns per block.
  int64_t gemv_columns_per_block(int64_t align) const {
    const double col_bytes = static_cast<double>(k_blocks_ * blob_);
    int64_t want = static_cast<int64_t>(std::ceil(static_cast<double>(N_) * col_bytes / kGemvBlockBytes));
    want = std::clamp<int64_t>(want, 1, 256);
    if (want > 1 && want < 16 && want % 2 != 0) ++want;  // two threads get even shares
    return round_up(std::max<int64_t>(1, ceil_div(N_, want)), align);
  }

  // Rows of A quantized per block to int8 (nbits_quantize_a's layout, k_blocks
  // * block_size bytes a row) with their blocks' scales and sums, in the
  // calling thread's shared scratch.
  struct Int8Rows {
    int8_t* q;
    float* scale;
    int32_t* sum;
  };
  Int8Rows quantize_rows(const float* a, int64_t rows) const {
    static const auto quantize_fn = SPINDLE_ISA_SELECT(nbits_quantize_a);
    const int64_t ld = k_blocks_ * block_size_;  // a multiple of 16
    float* buf = scratch_floats(kSharedScratchSlot, static_cast<size_t>(rows * ld / 4 + 2 * rows * k_blocks_));
    Int8Rows out{reinterpret_cast<int8_t*>(buf), buf + rows * ld / 4, nullptr};
    out.sum = reinterpret_cast<int32_t*>(out.scale + rows * k_blocks_);
    for (int64_t r = 0; r < rows; ++r)
      quantize_fn(a + r * K_, K_, block_size_, k_blocks_, out.q + r * ld, out.scale + r * k_blocks_,
                  out.sum + r * k_blocks_, false);
    return out;
  }

  // NbitsQ8A's or NbitsQ4A's fields for the rows of qa from r0 (at most
  // kNbitsGemvMaxRows of `rows`) and their outputs in y.
  template <class P>
  P rows_from(const Int8Rows& qa, int64_t r0, int64_t rows, const float* bias, float* y) const {
    const int64_t ld = k_blocks_ * block_size_;
    P p;
    p.q = qa.q + r0 * ld;
    p.scale = qa.scale + r0 * k_blocks_;
    p.sum = qa.sum + r0 * k_blocks_;
    p.ld = ld;
    p.rows = std::min(kNbitsGemvMaxRows, rows - r0);
    p.bias = bias;
    p.y = y + r0 * N_;
    p.ldy = N_;
    return p;
  }

  // Few rows at accuracy_level 4 (B in its own layout): A quantized once,
  // then nbits_gemv_q8 over gemv's column blocks.
  void gemv_q8(KernelContext& ctx, const NbitsWeights& w, const uint8_t* zint, const float* a, int64_t rows,
               const float* bias, float* y) const {
    static const auto q8_fn = SPINDLE_ISA_SELECT(nbits_gemv_q8);
    const Int8Rows qa = quantize_rows(a, rows);
    for_column_blocks(ctx, rows, [&](int64_t n0, int64_t n1, int64_t r0) {
      NbitsQ8A p = rows_from<NbitsQ8A>(qa, r0, rows, bias, y);
      p.zero = zint;
      q8_fn(w, p, n0, n1);
    });
  }

  // The int8 products on NbitsQ4Panels: the int8 GEMM from kQ8GemmMinRows
  // rows when every zero point is at most 15 (`small`), else nbits_q4_gemv.
  void run_panels(KernelContext& ctx, const NbitsQ4Panels& panels, bool small, const float* a, int64_t rows,
                  const float* bias, float* y) const {
    if (rows >= kQ8GemmMinRows && small) {
      static const auto unpack_fn = SPINDLE_ISA_SELECT(nbits_q4_to_q8);
      gemm_q8(ctx, [&](int64_t n0, int64_t n1, uint8_t* dst) { unpack_fn(panels, n0, n1, dst); }, a, rows, bias, y);
    } else {
      gemv_q4(ctx, panels, a, rows, bias, y);
    }
  }

  // Few rows on NbitsQ4Panels: A quantized once, then nbits_q4_gemv over
  // column blocks of whole panels.
  void gemv_q4(KernelContext& ctx, const NbitsQ4Panels& panels, const float* a, int64_t rows, const float* bias,
               float* y) const {
    static const auto gemv_fn = SPINDLE_ISA_SELECT(nbits_q4_gemv);
    static const bool vnni = cpu_has_avx512_vnni();
    const Int8Rows qa = quantize_rows(a, rows);
    for_column_blocks(
        ctx, rows,
        [&](int64_t n0, int64_t n1, int64_t r0) {
          NbitsQ4A p = rows_from<NbitsQ4A>(qa, r0, rows, bias, y);
          p.vnni = vnni;
          gemv_fn(panels, p, n0, n1);
        },
        16);
  }

  // The kept B, scales and integer zero points as NbitsQ4Panels, in place of
  // their copies.
  void keep_panels() {
    NbitsWeights w;
    w.b = b_.data(), w.scale = scale_.data(), w.zero = zero_.data();
    w.N = N_, w.K = K_, w.k_blocks = k_blocks_, w.block_size = block_size_, w.blob = blob_, w.bits = 4;
    q4_bytes_ = static_cast<size_t>(ceil_div(N_, 16) * nbits_q4_panel_bytes(k_blocks_, block_size_));
    q4_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, std::max<size_t>(q4_bytes_, 64))));
    if (!q4_) throw std::bad_alloc();
    static const auto pack_fn = SPINDLE_ISA_SELECT(nbits_q4_pack);
    pack_fn(w, zero_int_.data(), q4_.get());
    for (auto* v : {&b_, &zero_int_}) std::vector<uint8_t>().swap(*v);
    for (auto* v : {&scale_, &zero_}) std::vector<float>().swap(*v);
  }

  // Many rows at accuracy_level 4: A quantized per block to int8 once (as
  // u = qa + 128, NbitsQ8Gemm), then blocks of columns x rows, column-major:
  // a thread packs a column block's int8 panels (nbits_q8_pack) once for its
  // consecutive row blocks. Each output is computed by one block in block
  // order, so the partition changes no bit.
  // pack(n0, n1, dst) writes columns [n0, n1) as NbitsQ8Gemm's panels.
  template <class Pack>
  void gemm_q8(KernelContext& ctx, const Pack& pack, const float* a, int64_t rows, const float* bias,
               float* y) const {
    static const auto gemm_fn = SPINDLE_ISA_SELECT(nbits_q8_gemm);
    static const bool vnni = cpu_has_avx512_vnni();
    NbitsWeights dims;  // (the GEMM reads the panels; B's dimensions only)
    dims.N = N_, dims.K = K_, dims.k_blocks = k_blocks_, dims.block_size = block_size_, dims.blob = blob_;
    const int64_t ld = k_blocks_ * block_size_;
    float* buf = scratch_floats(kSharedScratchSlot, static_cast<size_t>(rows * ld / 4 + rows * k_blocks_));
    auto* u = reinterpret_cast<uint8_t*>(buf);
    float* sa = buf + rows * ld / 4;
    static const auto quantize_fn = SPINDLE_ISA_SELECT(nbits_quantize_a);
    // One block per thread; ~6 ops per value (from perf: ~40 us for 128 x 512
    // on one thread) decide whether the other threads take part.
    const int64_t dop = ctx.pool() ? ctx.pool()->dop() : 1;
    parallel_for(ctx.pool(), 0, rows, ceil_div(rows, dop), ops_cost(6.0 * static_cast<double>(ld)),
                 [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        quantize_fn(a + r * K_, K_, block_size_, k_blocks_, reinterpret_cast<int8_t*>(u + r * ld),
                    sa + r * k_blocks_, nullptr, true);
    });

    const int64_t panel_bytes = nbits_q8_panel_bytes(k_blocks_, block_size_);
    int64_t nt = std::max<int64_t>(32, kQ8BlockBytes / (2 * panel_bytes) * 32);
    if (N_ >= 32 * dop) {  // a multiple of the thread count of column blocks (1408 columns: 6, not 5)
      nt = std::min(nt, round_up(ceil_div(N_, dop), 32));
      nt = std::max<int64_t>(32, round_up(ceil_div(N_, round_up(ceil_div(N_, nt), dop)), 32));
    }
    const int64_t n_blocks = ceil_div(N_, nt);
    const int64_t m_blocks = n_blocks < dop ? std::min(rows, ceil_div(dop, n_blocks)) : 1;
    const int64_t mt = ceil_div(rows, m_blocks);
    parallel_for(ctx.pool(), 0, n_blocks * m_blocks, 1, gemm_cost(mt, nt, K_ / 4), [&](int64_t b0, int64_t b1) {
      auto* panels = reinterpret_cast<uint8_t*>(
          scratch_floats(0, static_cast<size_t>(ceil_div(ceil_div(nt, 16) * panel_bytes, 4))));
      int64_t have = -1;  // the column block in panels
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t nb = blk / m_blocks, m0 = (blk % m_blocks) * mt, m1 = std::min(rows, m0 + mt);
        const int64_t n0 = nb * nt, n1 = std::min(N_, n0 + nt);
        if (m0 >= m1) continue;
        if (nb != have) pack(n0, n1, panels), have = nb;
        NbitsQ8Gemm p;
        p.a = u + m0 * ld;
        p.a_scale = sa + m0 * k_blocks_;
        p.ld = ld;
        p.rows = m1 - m0;
        p.bias = bias;
        p.y = y + m0 * N_;
        p.ldy = N_;
        p.vnni = vnni;
        gemm_fn(dims, panels, n0, n1, p);
      }
    });
  }

  // fn(n0, n1, r0) for each column block [n0, n1) (gemv_columns_per_block
  // columns) and each group of kNbitsGemvMaxRows rows from r0, the column
  // blocks over the intra-op pool as one run of consecutive blocks per
  // thread: each thread streams one contiguous panel of B once. The blocks
  // and each column's arithmetic follow the shape alone, so grouping them
  // changes no output bit.
  template <class Fn>
  void for_column_blocks(KernelContext& ctx, int64_t rows, const Fn& fn, int64_t align = 1) const {
    const int64_t nt = gemv_columns_per_block(align), blocks = ceil_div(N_, nt);
    const int64_t grain = ceil_div(blocks, int64_t{ctx.pool() ? ctx.pool()->dop() : 1});
    parallel_for(ctx.pool(), 0, blocks, grain, gemm_cost(rows, nt, K_ / 8), [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk)
        for (int64_t r0 = 0; r0 < rows; r0 += kNbitsGemvMaxRows) fn(blk * nt, std::min(N_, (blk + 1) * nt), r0);
    });
  }

  // Few rows: column blocks of ~kGemvBlockBytes of B, rows in groups of 4.
  void gemv(KernelContext& ctx, const NbitsWeights& w, const float* a, int64_t rows, const float* bias,
            float* y) const {
    static const auto gemv_fn = SPINDLE_ISA_SELECT(nbits_gemv);
    // A split into even and odd values per group of 32 (nbits.h), once for all blocks.
    const float* split = nullptr;
    const int64_t ld_split = round_up(K_, 32);
    if (bits_ == 4 && block_size_ >= 32) {
      static const auto split_fn = SPINDLE_ISA_SELECT(nbits_split_a);
      float* buf = scratch_floats(kSharedScratchSlot, static_cast<size_t>(rows * ld_split));
      split_fn(a, K_, rows, K_, buf);
      split = buf;
    }
    for_column_blocks(ctx, rows, [&](int64_t n0, int64_t n1, int64_t r0) {
      NbitsGemv p;
      p.a = a + r0 * K_;
      p.lda = K_;
      if (split) p.a_split = split + r0 * ld_split, p.lda_split = ld_split;
      p.rows = std::min(kNbitsGemvMaxRows, rows - r0);
      p.bias = bias;
      p.y = y + r0 * N_;
      p.ldy = N_;
      gemv_fn(w, p, n0, n1);
    });
  }

  // Many rows: A packed once; per column block, B's columns dequantized
  // straight into the SGEMM's packed panels, which the SGEMM then runs on as
  // a pre-packed B. Blocks are column-major (all row blocks of a column
  // block in a row): a thread dequantizes a column block once for its
  // consecutive row blocks.
  void dequantized_gemm(KernelContext& ctx, const NbitsWeights& w, const float* a, int64_t rows, const float* bias,
                        float* y) const {
    static const auto panels_fn = SPINDLE_ISA_SELECT(nbits_dequantize_panels);
    const int64_t NR = sgemm_nr();
    const int64_t max_nt = std::max<int64_t>(kGemmTileN, kPanelFloats / K_ / kGemmTileN * kGemmTileN);
    const GemmBlocks gb = choose_gemm_blocks(1, rows, N_, K_, max_nt);
    const int64_t blocks = gb.m_blocks * gb.n_blocks;
    const float* packed_a = pack_shared_a(ctx, gb, false, rows, K_, 1.0f, a, K_);
    parallel_for(ctx.pool(), 0, blocks, grain_for_cost(ops_cost(static_cast<double>(gb.mt * gb.nt * K_))),
                 gemm_cost(gb.mt, gb.nt, K_), [&](int64_t b0, int64_t b1) {
                   float* panel = scratch_floats(0, static_cast<size_t>(round_up(gb.nt, NR) * K_));
                   int64_t have = -1;  // the column block in panel
                   for (int64_t blk = b0; blk < b1; ++blk) {
                     const int64_t nb = blk / gb.m_blocks;
                     const int64_t m0 = (blk % gb.m_blocks) * gb.mt, m1 = std::min(rows, m0 + gb.mt);
                     const int64_t n0 = nb * gb.nt, n1 = std::min(N_, n0 + gb.nt);
                     if (nb != have) panels_fn(w, n0, n1, NR, panel), have = nb;
                     SgemmExtras ex;
                     ex.packed_b = panel;
                     if (packed_a) ex.packed_a = packed_a + m0 * K_;
                     float* c = y + m0 * N_ + n0;
                     sgemm(false, false, m1 - m0, n1 - n0, K_, 1.0f, a + m0 * K_, K_, nullptr, 0, 0.0f, c, N_, ex);
                     if (bias)
                       for (int64_t i = 0; i < m1 - m0; ++i)
                         for (int64_t j = n0; j < n1; ++j) c[i * N_ + j - n0] += bias[j];
                   }
                 });
  }

  int64_t accuracy_level_ = 0;
  std::vector<uint8_t> zero_int_;  // when owned_ at accuracy_level 4: zero_ as integers (when they all are)
  bool zero_int_small_ = false;    // every zero_int_ at most 15 (the int8 GEMM's panels hold code - zero)
  int64_t K_ = 0, N_ = 0, bits_ = 4, block_size_ = 0, k_blocks_ = 0, blob_ = 0, blocks_total_ = 0, b_bytes_ = 0;
  bool owned_ = false, zero_const_ = false;
  std::vector<uint8_t> b_;     // constant B as given (quantized), when owned_
  std::vector<float> scale_;   // constant scales, when owned_
  std::vector<float> zero_;    // when owned_: zero points as floats (constant ones, or the default 2^(bits-1))
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  // When owned_ at accuracy_level 4 and nbits_q4_panels_used(), with integer
  // zero points: b_, scale_ and zero_int_ as NbitsQ4Panels (those and zero_ then empty;
  // a run that gives B takes the other paths with its own inputs).
  std::unique_ptr<uint8_t, Free> q4_;
  size_t q4_bytes_ = 0;
};

// spindle.MatMulNBitsGroup (MatMulSiblingFusion): the MatMulNBits of one A
// (a 4-bit decoder's query / key / value projections, its gate and up) with
// the same K, bits, block_size and accuracy_level. Inputs A, then for member
// i: B_i, scales_i, zero_points_i, bias_i (the last two optional) at 1 + 4i;
// attributes K, bits, block_size, accuracy_level and N (one per member).
// Each member is the MatMulNBits kernel of its own node. When every member
// runs its rows on kept panels (a decode step at accuracy_level 4), A is
// quantized once and the members' column blocks run in one parallel loop;
// otherwise each member runs as its node would. Each output has its node's bits.
class MatMulNBitsGroupKernel final : public OpKernel {
 public:
  explicit MatMulNBitsGroupKernel(const NodeInfo& node) : n_(node.num_outputs) {
    const std::vector<int64_t> ns = node.attrs.get_ints("N");
    if (n_ < 1 || static_cast<int>(ns.size()) != n_ || node.num_inputs < 3 + 4 * (n_ - 1) || node.num_inputs > 1 + 4 * n_)
      fail(node, fmt::format("has {} inputs, {} outputs and {} values of N: expected A, then B, scales, zero_points "
                             "and bias per output, and one N each",
                             node.num_inputs, n_, ns.size()));
    for (int i = 0; i < n_; ++i) {
      NodeInfo m;
      m.op_type = "MatMulNBits";
      m.domain = "com.microsoft";
      m.opset = 1;
      m.name = node.name;
      for (const char* a : {"K", "bits", "block_size", "accuracy_level"})
        if (node.attrs.has(a)) m.attrs.set(a, node.attrs.get_int(a));
      m.attrs.set("N", ns[static_cast<size_t>(i)]);
      // As the member's node was written: a node without zero points keeps its panels.
      m.num_inputs = node.const_input(4 + 4 * i) ? 6 : node.const_input(3 + 4 * i) ? 4 : 3;
      m.prepack = node.prepack;
      m.const_inputs = {nullptr, node.const_input(1 + 4 * i), node.const_input(2 + 4 * i), node.const_input(3 + 4 * i),
                        nullptr, node.const_input(4 + 4 * i)};
      infos_.push_back(std::move(m));
    }
    for (const NodeInfo& m : infos_) members_.push_back(std::make_unique<MatMulNBitsKernel>(m));
  }

  bool owns_constant_input(int i) const override {
    if (i < 1 || i > 4 * n_) return false;
    static constexpr int kLocal[4] = {1, 2, 3, 5};  // B, scales, zero_points, bias of the member's node
    return members_[static_cast<size_t>((i - 1) / 4)]->owns_constant_input(kLocal[(i - 1) % 4]);
  }
  size_t packed_bytes() const override {
    size_t bytes = 0;
    for (const auto& m : members_) bytes += m->packed_bytes();
    return bytes;
  }

  void compute(KernelContext& ctx) const override {
    const Tensor& A = ctx.input(0);
    require_float(ctx.node(), A, "A");
    const int64_t K = infos_[0].attrs.get_int("K", 0);
    if (A.rank() < 1 || A.dim(A.rank() - 1) != K)
      fail(ctx.node(), fmt::format("input A has shape {}, expected [..., {}] (attribute K)", shape_to_string(A.shape()), K));
    const int64_t rows = shape_numel(Shape(A.shape().begin(), A.shape().end() - 1));
    // A member's node was made without zero points unless they are constant
    // (MatMulSiblingFusion groups no others): ones given to a run would be ignored.
    for (int i = 0; i < n_; ++i)
      if (ctx.has_input(3 + 4 * i) && !ctx.node().const_input(3 + 4 * i))
        fail(ctx.node(), fmt::format("input {} (zero_points of output {}) is computed, expected a constant", 3 + 4 * i, i));
    bool together = rows > 0;
    for (int i = 0; i < n_ && together; ++i)
      together = !ctx.has_input(1 + 4 * i) && members_[static_cast<size_t>(i)]->panel_rows(rows);
    if (!together) {
      for (int i = 0; i < n_; ++i) run_member(ctx, i);
      return;
    }
    std::vector<float*> y(static_cast<size_t>(n_));
    std::vector<const float*> bias(static_cast<size_t>(n_));
    std::vector<int64_t> nt(static_cast<size_t>(n_)), first(static_cast<size_t>(n_) + 1, 0);
    for (int i = 0; i < n_; ++i) {
      const MatMulNBitsKernel& m = *members_[static_cast<size_t>(i)];
      Shape ys = A.shape();
      ys.back() = m.columns();
      y[static_cast<size_t>(i)] = ctx.output(i, DataType::kFloat32, ys).mutable_data<float>();
      bias[static_cast<size_t>(i)] = member_bias(ctx, i, m.columns());
      nt[static_cast<size_t>(i)] = m.panel_columns();
      first[static_cast<size_t>(i) + 1] = first[static_cast<size_t>(i)] + ceil_div(m.columns(), nt[static_cast<size_t>(i)]);
    }
    const MatMulNBitsKernel::QuantizedA qa = members_[0]->quantize_a(A.data<float>(), rows);
    const int64_t blocks = first.back();
    if (blocks == 0) return;
    const int64_t grain = ceil_div(blocks, int64_t{ctx.pool() ? ctx.pool()->dop() : 1});
    parallel_for(ctx.pool(), 0, blocks, grain, gemm_cost(rows, nt[0], K / 8), [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        size_t i = static_cast<size_t>(n_) - 1;
        while (blk < first[i]) --i;
        const MatMulNBitsKernel& m = *members_[i];
        const int64_t n0 = (blk - first[i]) * nt[i], n1 = std::min(m.columns(), n0 + nt[i]);
        m.panel_block(qa, rows, n0, n1, bias[i], y[i]);
      }
    });
  }

 private:
  const float* member_bias(KernelContext& ctx, int i, int64_t N) const {
    if (!ctx.has_input(4 + 4 * i)) return nullptr;
    const Tensor& t = ctx.input(4 + 4 * i);
    require_float(ctx.node(), t, "bias");
    if (t.rank() != 1 || t.dim(0) != N)
      fail(ctx.node(), fmt::format("input {} (bias of output {}) has shape {}, expected [{}]", 4 + 4 * i, i,
                                   shape_to_string(t.shape()), N));
    return t.data<float>();
  }

  // Member i as its own node: A and its inputs (those the plan kept), output
  // i allocated as the group's (the run's buffers: fresh pages for a
  // prompt's outputs cost more than the products on this guest).
  void run_member(KernelContext& ctx, int i) const {
    auto given = [&](int j) { return ctx.has_input(j) ? &ctx.input(j) : nullptr; };
    const Tensor* in[6] = {&ctx.input(0), given(1 + 4 * i), given(2 + 4 * i), given(3 + 4 * i), nullptr, given(4 + 4 * i)};
    Tensor out[1];
    const OutputAllocator as_group = [&](DataType dtype, const Shape& shape) { return ctx.output(i, dtype, shape); };
    KernelContext sub(infos_[static_cast<size_t>(i)], std::span<const Tensor* const>(in, 6), std::span<Tensor>(out, 1),
                      ctx.pool(), &as_group);
    sub.set_limits(ctx.limits());
    members_[static_cast<size_t>(i)]->compute(sub);
    ctx.set_output(i, std::move(out[0]));
  }

  int n_;
  std::vector<NodeInfo> infos_;  // each member's node (run_member's contexts refer to it)
  std::vector<std::unique_ptr<MatMulNBitsKernel>> members_;
};

}  // namespace

void register_matmul_nbits(KernelRegistry& r) {
  r.add("com.microsoft", "MatMulNBits", 1, 1, factory_of<MatMulNBitsKernel>());
  r.add("spindle", "MatMulNBitsGroup", 1, 1, factory_of<MatMulNBitsGroupKernel>());
}

}  // namespace spindle::kernels::nn
