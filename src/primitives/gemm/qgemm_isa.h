// qgemm_isa.h — the per-ISA entry points of the 8-bit integer GEMM
// (qgemm.isa.cpp), declared for every level; qgemm.cpp picks the active
// level's versions and drives them. Only plain structs here: nothing the
// linker could share between the ISA objects.
//
// The micro-kernels multiply uint8 A by int8 B (qgemm.cpp shifts int8 A and
// uint8 B by 128 into those types and adjusts the zero points). Packed B
// (QGemmPackedB::data) is a sequence of panels of kQGemmPanel columns; a
// panel holds ceil(K / 4) groups, each group 4 consecutive k of each of the
// panel's columns (64 bytes: column j's 4 bytes at 4 * j), as vpdpbusd
// consumes them; k past K and columns past n are zero.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels {

inline constexpr int64_t kQGemmPanel = 16;

// One call: rows [0, m) of A times the panels of B from pb on, for n
// columns (the last panel may be partial). Every result is
//   v = dot(a'[i], b'[j]) - zb[j] * row_terms[i] + col_terms[j]   (int32, wrapping)
// stored as c[i * ldc + j], or, when y is set, as float:
//   y[i * ldy + j] = float(v) * scale[per_column_scale ? j : 0]  (+ bias[j])
// two roundings, a multiply then an add, as Cast, Mul and Add compute them;
// or, when requant is set, requantized to 8 bits as requant_row (requant.h)
// computes it, column j with requant->bias[j] and requant->scale[j]:
//   yq[i * ldyq + j] (bytes: int8 when requant->y_signed, else uint8)
// straight from the register tile's sums (requant's acc, n, y and per_value
// are not read).
struct QGemmKernelArgs {
  const uint8_t* a = nullptr;
  int64_t lda = 0;
  // Indirect A (qgemm.h's a_rows; requant with vnni only, K / a_taps a
  // multiple of 4): row i's run t at a_rows[i * a_taps + t]; a unused.
  const uint8_t* const* a_rows = nullptr;
  int64_t a_taps = 0;
  uint8_t a_flip = 0;  // 0x80: A holds int8, read as uint8 a' = a + 128
  int64_t m = 0, k = 0;
  const int8_t* pb = nullptr;  // first panel
  int64_t n = 0;
  const int32_t* row_terms = nullptr;  // m
  const int32_t* col_terms = nullptr;  // n
  const int32_t* zb = nullptr;         // n
  int32_t* c = nullptr;
  int64_t ldc = 0;
  float* y = nullptr;
  int64_t ldy = 0;
  const float* scale = nullptr;
  bool per_column_scale = false;
  const float* bias = nullptr;  // n, or null
  const RequantRow* requant = nullptr;
  uint8_t* yq = nullptr;
  int64_t ldyq = 0;
  bool vnni = false;  // avx512 level only: the CPU has AVX512-VNNI
  bool zb_any = true;  // some zb[j] is not 0 (else the row terms, all multiplied by 0, may be skipped)
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, qgemm_kernel, (const ::spindle::kernels::QGemmKernelArgs& args));
// sums[i] = sum over k of (a[i * lda + k] ^ flip) as uint8, rows [0, m).
SPINDLE_ISA_DECLARE(void, qgemm_row_sums, (const uint8_t* a, int64_t lda, uint8_t flip, int64_t m, int64_t k,
                                           int32_t* sums));
// terms[j] = -za * (colsum[j] - shift), wrapping as uint32 (the A zero
// point's term of every column), j < n.
SPINDLE_ISA_DECLARE(void, qgemm_col_terms, (const int32_t* colsum, int64_t n, uint32_t za, uint32_t shift,
                                            int32_t* terms));
// DynamicQuantizeLinear's two passes. min / max of x[0, n) folded into
// *lo / *hi (NaNs skipped, as std::min / std::max with the running value
// first skip them); then y = saturate(round_half_even(x / scale) + zero).
SPINDLE_ISA_DECLARE(void, quantize_min_max, (const float* x, int64_t n, float* lo, float* hi));
SPINDLE_ISA_DECLARE(void, quantize_u8, (const float* x, int64_t n, float scale, float zero, uint8_t* y));
