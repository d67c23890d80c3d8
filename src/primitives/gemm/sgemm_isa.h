// sgemm_isa.h — the per-ISA entry points of the packed SGEMM
// (sgemm.isa.cpp), declared for every level; sgemm.cpp picks the active
// level's versions and drives them (cache blocking, threads' blocks,
// epilogues). Only plain structs here: nothing the linker could share
// between the ISA objects.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// Register tile of the active micro-kernel: MR rows x NR columns.
struct SgemmGeometry {
  int mr;
  int nr;
};

// An activation the micro-kernel applies to a finished sum v as it stores
// it, with Activation's pass's operations (NaN kept, -0 kept):
//   kClamp        min(hi, max(lo, v))                       Relu (0, +inf), Clip
//   kHardSigmoid  min(1, max(0, v * lo + hi))               (alpha, beta)
//   kHardSwish    v * min(1, max(0, v * lo + hi))           (1/6, 1/2)
// v * lo + hi is one fused multiply-add where the level has FMA, as the
// pass computes it.
enum class StoreAct : uint8_t { kNone, kClamp, kHardSigmoid, kHardSwish };

// One cache block for sgemm_block: C[m x n] (row stride ldc) = init +
// PA * PB over kc reductions, where init is C (accumulate), row_bias[i]
// (when not null) or 0. pa points at the first A panel (already offset to
// the block's first k), consecutive panels pa_stride floats apart; likewise
// pb / pb_stride for the B panels.
struct SgemmBlock {
  int64_t m, n, kc;
  const float* pa;
  int64_t pa_stride;
  const float* pb;
  int64_t pb_stride;
  float* c;
  int64_t ldc;
  bool accumulate;
  const float* row_bias;
  // The activation applied to the finished sums as they are stored (the
  // last k block of a GEMM with such an activation, which then needs no
  // pass of its own): StoreAct's meaning of lo and hi.
  StoreAct act = StoreAct::kNone;
  float lo = 0.0f, hi = 0.0f;
  // A residual added to the finished sums before the clamp (the last k
  // block of a GEMM with SgemmExtras::residual): R's element of c[i][j] at
  // res[i * ldc + j], or null.
  const float* res = nullptr;
  // pb holds weights packed at session creation (MatMul's and Gemm's
  // constant B), not yet in cache this run: each column's B panel is asked
  // for while the column before it starts (sgemm.isa.cpp).
  bool b_ahead = false;
};

// One block for sgemm_taps_block, an implicit GEMM (convolution without
// im2col): C[m x n] = row_bias + PA * B with B[k][j] = taps[k][j] for
// k < K (K <= the largest k block, so one pass). Every taps[k] must be
// readable up to n rounded up to NR floats.
struct SgemmTapsBlock {
  int64_t m, n, K;
  const float* pa;
  int64_t pa_stride;
  const float* const* taps;
  float* c;
  int64_t ldc;
  const float* row_bias;  // may be null (0)
  // As SgemmBlock's: the store-time activation, and a residual at
  // res[i * ldc + j].
  StoreAct act = StoreAct::kNone;
  float lo = 0.0f, hi = 0.0f;
  const float* res = nullptr;
};

// What B's rows go through as they are packed (B not transposed only): row k
// becomes op(B)[k][j] * scale[k], or op(B)[k][j] * scale[k] + shift[k] with
// shift, then with relu v < 0 ? 0 : v: a per-channel Mul, or an inference
// BatchNormalization (+ Relu), folded into a 1x1 Conv, computed as those
// kernels compute them (the same bits).
struct SgemmRowAffine {
  const float* scale = nullptr;  // null: rows packed as they are
  const float* shift = nullptr;
  bool relu = false;
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(::spindle::kernels::SgemmGeometry, sgemm_geometry, ())
SPINDLE_ISA_DECLARE(void, sgemm_block, (const ::spindle::kernels::SgemmBlock& blk))
SPINDLE_ISA_DECLARE(void, sgemm_taps_block, (const ::spindle::kernels::SgemmTapsBlock& blk))
// Packs op(A)[0..m) x [k0, k0 + kc) times alpha into MR-row panels at dst,
// dst_stride floats apart (sgemm.isa.cpp describes the format).
SPINDLE_ISA_DECLARE(void, sgemm_pack_a,
                    (bool trans, int64_t m, int64_t k0, int64_t kc, float alpha, const float* a, int64_t lda,
                     float* dst, int64_t dst_stride))
// Packs op(B)[k0, k0 + kc) x [0..n) into NR-column panels at dst; with
// rows (not null, rows->scale set, trans false only), row k goes through
// rows' transform as it is packed.
SPINDLE_ISA_DECLARE(void, sgemm_pack_b,
                    (bool trans, int64_t n, int64_t k0, int64_t kc, const float* b, int64_t ldb, float* dst,
                     int64_t dst_stride, const ::spindle::kernels::SgemmRowAffine* rows))
