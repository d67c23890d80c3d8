// sgemm.h — spindle's packed single-precision GEMM: the cache-blocked driver
// over the per-ISA micro-kernels of sgemm.isa.cpp, constant operands packed
// once (at session creation) and epilogues applied while a block of C is in
// cache.
//
//   C (m x n, row stride ldc) = alpha * op(A) * op(B) + beta * C
//
// Blocking (BLIS / MLAS loop order): columns in NC blocks; the reduction in
// k blocks of at most kSgemmKC, split evenly from K alone (so every output
// element sums its terms in the same order whatever the caller's row and
// column split); rows in MC blocks; inside a block, MR x NR register tiles.
// A block of B (kc x nc) and of A (mc x kc) are packed per call into
// per-thread buffers, unless the caller passes the operand pre-packed.
//
// Pre-packed operands (PackedMatrix) hold panels over the full K in the
// active ISA level's format. A caller that passes one for a row (column)
// range starting at r0 must start at a multiple of sgemm_mr() (sgemm_nr()):
// PackedMatrix::panel(r0) gives the pointer. choose_gemm_blocks (nn_util.h)
// keeps block starts on these multiples.
//
// Thread-safety: sgemm runs on the calling thread only; parallelism comes
// from callers running it on disjoint blocks of C. PackedMatrix is immutable
// after construction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "primitives/gemm/sgemm_isa.h"
#include "primitives/math/activation.h"

namespace spindle::kernels::nn {

// Register tile of the active ISA level (rows of A, columns of B).
int64_t sgemm_mr();
int64_t sgemm_nr();

// Largest reduction block.
inline constexpr int64_t kSgemmKC = 256;

// A constant GEMM operand in the micro-kernel's panel format.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  // op(A) of m x K (A side, MR-row panels), scaled by alpha. `groups`
  // matrices one after the other, `group_offset` floats apart in `a` (Conv
  // with groups: each group's W_g is packed on its own).
  static PackedMatrix pack_a(bool trans, int64_t m, int64_t K, float alpha, const float* a, int64_t lda,
                             int64_t groups = 1, int64_t group_offset = 0);
  // `groups` A-side matrices of m x K whose panels `fill` writes into the
  // buffer it is given: group g at g * round_up(m, sgemm_mr()) * K floats,
  // pack_a's format, which sgemm_pack_a_panels writes a block of rows at a
  // time (matrices computed block by block, never held whole).
  static PackedMatrix pack_a_filled(int64_t m, int64_t K, int64_t groups, const std::function<void(float*)>& fill);
  // op(B) of K x n (B side, NR-column panels).
  static PackedMatrix pack_b(bool trans, int64_t n, int64_t K, const float* b, int64_t ldb);

  bool empty() const { return !data_; }
  int64_t k() const { return k_; }
  // The panel holding row (A) / column (B) `r0` of group `g`; r0 must be a
  // multiple of the panel size.
  const float* panel(int64_t r0, int64_t g = 0) const { return data_.get() + g * group_stride_ + (r0 / tile_) * k_ * tile_; }
  size_t bytes() const { return size_ * sizeof(float); }

 private:
  std::shared_ptr<float> data_;
  int64_t k_ = 0, tile_ = 1, group_stride_ = 0;
  size_t size_ = 0;
};

// What sgemm does besides the product.
struct SgemmExtras {
  const float* packed_a = nullptr;  // PackedMatrix::panel of the call's first row (alpha already applied)
  const float* packed_b = nullptr;  // PackedMatrix::panel of the call's first column
  // The K packed_b's panels were packed with, when the call reads only their
  // first K rows (0: the call's K).
  int64_t packed_b_k = 0;
  const float* row_bias = nullptr;  // C[i][j] += row_bias[i] (only with beta == 0)
  // B's rows transformed as they are packed (B not transposed and packed by
  // the call: a per-channel Mul or BatchNormalization folded into a 1x1 Conv)
  SgemmRowAffine b_rows;
  // Added to C after the product and the bias, before the activation (a
  // Conv's fused residual Add): R's element of C[i][j] at residual[i * ldc +
  // j], added as each block's last k block is stored.
  const float* residual = nullptr;
  const Activation* act = nullptr;  // applied to C after the product, the bias and the residual
  // packed_b holds weights packed at session creation (MatMul's and Gemm's
  // constant B), which a run reads from L3 or memory.
  bool b_constant = false;
};

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, const SgemmExtras& extras = {});

// Row panels [p0, p1) of alpha * op(A) (m x K) in PackedMatrix's A format
// over the full K: panel p at dst + p * K * sgemm_mr(). For a run-time A
// shared by several column blocks: packed once (panels split across
// threads), then each block passes dst + (m0 / MR) * K * MR as packed_a.
void sgemm_pack_a_panels(bool trans, int64_t m, int64_t K, float alpha, const float* a, int64_t lda, int64_t p0,
                         int64_t p1, float* dst);

// op(B) (K x n, B of row stride ldb) into NR-column panels over the full K
// at dst (round_up(n, sgemm_nr()) * K floats), PackedMatrix's B format: a
// run-time B that several calls share (attention's K and V per head), passed
// as SgemmExtras::packed_b.
void sgemm_pack_b(bool trans, int64_t n, int64_t K, const float* b, int64_t ldb, float* dst);

// Rows [k0, k0 + kc) of B (n columns, row stride ldb, not transposed; b
// points at row 0) into NR-column panels, row k of panel q at dst +
// q * dst_stride + (k - k0) * NR, through rows' transform (none when
// rows.scale is null). With dst_stride = K * NR and dst at row k0 of the
// first panel, the panels are a packed_b over the full K: B shared by
// several row blocks, packed once (channel chunks split across threads).
void sgemm_pack_b_rows(int64_t n, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* dst, int64_t dst_stride,
                       const SgemmRowAffine& rows);

// Implicit GEMM (convolution without im2col): C (m x n, row stride ldc) =
// row_bias + A * B with A pre-packed over the full K (PackedMatrix::panel of
// the first row) and B[k][j] = taps[k][j]. K <= kSgemmKC (one k block), and
// every taps[k] is readable up to round_up(n, sgemm_nr()) floats. Each
// element gets the same operations as sgemm with the same A, bias and B,
// and the same residual and activation (SgemmExtras' meaning).
void sgemm_taps(int64_t m, int64_t n, int64_t K, const float* packed_a, const float* const* taps,
                const float* row_bias, float* c, int64_t ldc, const float* residual = nullptr,
                const Activation* act = nullptr);

}  // namespace spindle::kernels::nn
