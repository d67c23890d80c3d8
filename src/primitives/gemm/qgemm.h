// qgemm.h — spindle's 8-bit integer GEMM: A (m x K, uint8 or int8, one zero
// point) times B (K x n, uint8 or int8, one zero point or one per column),
// accumulated exactly in int32:
//
//   C[i][j] = sum_k (A[i][k] - a_zero_point) * (B[k][j] - b_zero_point[j])
//
// B is a constant operand in every model this serves (MatMulInteger's,
// QLinearMatMul's and QLinearConv's weights), so it is packed once, at session
// creation, into QGemmPackedB with its column sums; the zero-point terms are
// then applied from the row sums of A and the column sums of B:
//
//   C = A.B - zb[j] * rowsum(A)[i] - za * colsum(B)[j] + K * za * zb[j]
//
// Integer arithmetic is exact, so results do not depend on the ISA level, on
// blocking or on how callers split rows and columns over threads.
//
// Thread-safety: qgemm runs on the calling thread only; parallelism comes from
// callers running it on disjoint row or column ranges of C. QGemmPackedB is
// immutable after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "primitives/cache_line.h"
#include "primitives/quant/requant.h"

namespace spindle {
class ThreadPool;
}

namespace spindle::kernels::nn {

// B (K x n) in the layout of the active ISA level's micro-kernel.
struct QGemmPackedB {
  int64_t k = 0, n = 0;
  bool b_signed = true;                // the values as given: int8 (true) or uint8
  std::vector<int32_t> column_sums;    // n: sum over k of B[k][j], as given
  CacheLineVector<uint8_t> data;       // the packed panels (implementation's layout, 64-byte aligned)
  int64_t panel_columns = 0;           // columns per panel; column ranges start at multiples of it
  size_t bytes() const { return data.size() + column_sums.size() * sizeof(int32_t); }
};

// Packs B (row-major K x n with row stride ldb; int8 when b_signed, else
// uint8). trans_b: B is given as n x K (row stride ldb), as Gemm's transB.
QGemmPackedB qgemm_pack_b(const void* b, bool b_signed, int64_t k, int64_t n, int64_t ldb, bool trans_b = false);

struct QGemmArgs {
  const void* a = nullptr;       // m x K, row stride lda
  bool a_signed = false;         // int8 (true) or uint8
  int64_t lda = 0;
  // Optional indirect A (a convolution's rows without an im2col copy): row
  // i is a_taps runs of K / a_taps bytes, run t at a_rows[i * a_taps + t]
  // (a and lda unused). The VNNI requantizing kernel reads the runs in
  // place when K / a_taps is a multiple of 4 and every B zero point is 0;
  // otherwise the rows are gathered into a buffer first. Same results.
  const uint8_t* const* a_rows = nullptr;
  int64_t a_taps = 0;
  int32_t a_zero_point = 0;
  int64_t m = 0;
  const QGemmPackedB* b = nullptr;
  const int32_t* b_zero_points = nullptr;  // nullptr: 0; else 1 value, or n when per_column_b_zero_points
  bool per_column_b_zero_points = false;
  int64_t col_begin = 0, col_end = -1;     // C's columns to compute (-1: n); col_begin a multiple of panel_columns
  int32_t* c = nullptr;                    // C[i][j] at c[i * ldc + (j - col_begin)]
  int64_t ldc = 0;
  // Optional dequantizing epilogue. When y is set, c is not written (may be
  // null) and instead
  //   y[i * ldy + (j - col_begin)] = float(C[i][j]) * scale[per_column_scale ? j : 0]  (+ bias[j])
  // as two float roundings, the multiply then the add: what Cast(int32 ->
  // float), Mul and Add compute one after the other. bias (n values) may be
  // null.
  float* y = nullptr;
  int64_t ldy = 0;
  const float* scale = nullptr;
  bool per_column_scale = false;
  const float* bias = nullptr;
  // Optional requantizing epilogue (QLinearConv's). When requant is set, c
  // and y are not written and instead C[i][j] goes through requant_row's
  // arithmetic (primitives/quant/requant.h) with requant->bias[j] and
  // requant->scale[j] (indexed by B's column, as scale and bias above) into
  // the 8-bit yq[i * ldyq + (j - col_begin)] (int8 when requant->y_signed).
  // The same bits as c followed by requant_row, without the int32 pass.
  const RequantRow* requant = nullptr;
  void* yq = nullptr;
  int64_t ldyq = 0;
};

// C for rows [0, m) and columns [col_begin, col_end).
void qgemm(const QGemmArgs& args);

// DynamicQuantizeLinear (opset 11) on x[0, n): the range [min(0, min x),
// max(0, max x)] (NaNs skipped), scale = (max - min) / 255, zero point =
// saturate(round_half_even(-min / scale)), and
// y = saturate(round_half_even(x / scale) + zero point) (NaN -> 0; every y
// the zero point when scale is 0). Two vectorized passes over x.
struct DynamicQuantization {
  float scale = 0.0f;
  uint8_t zero_point = 0;
};
// With a pool, each pass runs in chunks of a fixed size across its threads
// (min and max are exact in any order: the same bytes at any thread count).
DynamicQuantization dynamic_quantize_u8(const float* x, int64_t n, uint8_t* y, ThreadPool* pool = nullptr);

// Whether the active kernels read indirect A (QGemmArgs::a_rows) in place
// (requantizing, every B zero point 0, runs of whole k groups): the
// AVX512-VNNI level. Elsewhere indirect rows are gathered per call.
bool qgemm_reads_indirect_a();

// The ISA level qgemm's kernels run at ("baseline", "avx2", "avx512",
// "avx512-vnni").
const char* qgemm_kernel_name();

// Whether the CPU has the AVX512-VNNI instructions.
bool cpu_has_avx512_vnni();

// For tests and benchmarks: qgemm with the kernels of a given level (0
// baseline, 1 AVX2, 2 AVX-512; the CPU must have it), and at level 2 with or
// without the VNNI instructions (the CPU must have them when asked for).
void qgemm_at_level(const QGemmArgs& args, int level, bool vnni);

}  // namespace spindle::kernels::nn
