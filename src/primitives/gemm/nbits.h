// nbits.h — block-quantized weights (com.microsoft MatMulNBits, 4 or 8 bits)
// against float activations (nbits.isa.cpp, per ISA level).
//
// B holds N rows (one per output column) of K quantized values in blocks of
// `block_size` along K: row n, block b is `blob` bytes at b_data + (n *
// k_blocks + b) * blob, values packed low bits first (4 bits: the low nibble
// of a byte is the earlier k). The last block of a row may be padded past K.
// Value k of row n dequantizes to
//
//   w = (q - zero[n * k_blocks + b]) * scale[n * k_blocks + b]
//
// (one subtraction, exact for integer zero points, and one rounding of the
// product), the values a dequantize-then-MatMul computes.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

struct NbitsWeights {
  const uint8_t* b = nullptr;
  const float* scale = nullptr;  // N * k_blocks
  const float* zero = nullptr;   // N * k_blocks (as float; the default zero point filled in)
  int64_t N = 0, K = 0, k_blocks = 0, block_size = 0, blob = 0;
  int bits = 4;
};

// Rows of a small product, Y[r][n] = sum_k A[r][k] * w(n, k) (+ bias[n]), for
// r < rows (at most kNbitsGemvMaxRows) and n in [n0, n1), fusing the
// dequantization into the dot products: each weight is unpacked once for all
// rows. A row's sums run over K in a fixed order of vector lanes, then a
// fixed reduction of the lanes: the same bits whatever [n0, n1).
inline constexpr int64_t kNbitsGemvMaxRows = 4;
struct NbitsGemv {
  const float* a = nullptr;  // rows x K, row stride lda
  int64_t lda = 0, rows = 0;
  // Optional (4 bits, block_size >= 32): A again with each group of 32
  // values k0..k0+31 (k0 a multiple of 32) stored as its 16 even-k values
  // then its 16 odd-k values, zeros past K, rows of stride lda_split
  // (nbits_split_a); the AVX-512 level reads it instead of a.
  const float* a_split = nullptr;
  int64_t lda_split = 0;
  const float* bias = nullptr;  // N, or null
  float* y = nullptr;           // rows x N, row stride ldy
  int64_t ldy = 0;
};

// Int8 activations (accuracy_level 4, 4-bit weights, 16 <= block_size <=
// 256): each row of A quantized per block of B to int8, symmetric:
// scale = max|a| / 127, q = round_half_even(a * (127 / max|a|)) (0 when
// the block is all zeros), stored per group of G = min(32, block_size)
// values as the G/2 even-k values then the G/2 odd-k ones (the order of a
// run of B's nibbles, low then high), zeros past K. Then
//
//   Y[r][n] = sum over blocks b, in order, of
//             float(sum_k qa * qb - zero * sum_k qa) * (scale_a * scale_b)
//
// with integer zero points (qb the 4-bit code). The integer sums are exact,
// whatever instructions compute them; the float sums run in block order, so
// results do not depend on which columns a call is given. B in its own
// layout: the few-row product of the AVX2 and baseline levels (AVX-512
// keeps NbitsQ4Panels, below).
struct NbitsQ8A {
  const int8_t* q = nullptr;     // rows x ld bytes
  const float* scale = nullptr;  // rows x k_blocks
  const int32_t* sum = nullptr;  // rows x k_blocks: sum of the block's q
  int64_t ld = 0;                // k_blocks * block_size, zeros past K
  int64_t rows = 0;              // at most kNbitsGemvMaxRows
  const uint8_t* zero = nullptr;  // N * k_blocks integer zero points of B
  const float* bias = nullptr;    // N, or null
  float* y = nullptr;             // rows x N, row stride ldy
  int64_t ldy = 0;
};

// Int8 activations against 4-bit weights for products of many rows
// (accuracy_level 4, zero points in [0, 15]): NbitsQ8A's activations and
// the arithmetic of its AVX2 and baseline levels,
//
//   Y[r][n] = sum over blocks b, in order, of
//             float(sum_k qa * (qb - zero)) * (scale_a * scale_b)
//
// as a blocked GEMM. B's columns [n0, n1) are first packed
// (nbits_q8_pack) into panels of 16 columns, each
// nbits_q8_panel_bytes(k_blocks, block_size) bytes: per block and per 4
// consecutive values of A's layout (nbits_quantize_a's: per group, the even k then
// the odd k), 64 bytes, the 4 values qb - zero of each column as int8;
// then, per block, the 16 columns' corrections -128 * sum(qb - zero) as
// int32 and their 16 scales (zeros past n1). A comes as u = qa + 128
// (unsigned bytes), so that sum(u * (qb - zero)) plus the correction is
// the exact integer sum (AVX-512 VNNI's vpdpbusd multiplies unsigned by
// signed bytes).
inline int64_t nbits_q8_panel_bytes(int64_t k_blocks, int64_t block_size) { return 16 * k_blocks * (block_size + 8); }
struct NbitsQ8Gemm {
  const uint8_t* a = nullptr;     // rows x ld: qa + 128, nbits_quantize_a's layout
  const float* a_scale = nullptr;  // rows x k_blocks
  int64_t ld = 0, rows = 0;
  const float* bias = nullptr;  // N, or null
  float* y = nullptr;           // rows x N (column n at y[n]), row stride ldy
  int64_t ldy = 0;
  bool vnni = false;  // AVX-512 level: the CPU has AVX512-VNNI
};

// 4-bit weights kept at creation for the int8 products (accuracy_level 4,
// integer zero points) where nbits_q4_panels_used() (the AVX-512 level), in
// panels of 16 columns: panel q (columns 16q .. 16q + 15) is
// nbits_q4_panel_bytes(k_blocks, block_size) bytes at data + q * that,
// holding first the codes of every block, 8 * block_size bytes each: B's
// bytes of the block transposed by 4-byte words, word t of column j at
// byte 64t + 4j (the low nibbles of a word are 4 consecutive values of A's
// int8 layout, its high nibbles the 4 half a group further); then the
// blocks' 16 scales (float32), then their 16 zero points (a byte each).
// Columns past N are zeros. The same bytes as B, scales and zero points,
// rearranged, so that a product reads 16 columns' codes per 64-byte load
// and needs no horizontal sums.
struct NbitsQ4Panels {
  const uint8_t* data = nullptr;
  int64_t N = 0, k_blocks = 0, block_size = 0;
};
inline int64_t nbits_q4_panel_bytes(int64_t k_blocks, int64_t block_size) {
  return (k_blocks * (8 * block_size + 80) + 63) / 64 * 64;
}

// Few rows of int8 activations against NbitsQ4Panels: A as NbitsQ8A's q
// (nbits_quantize_a's layout), scale and sum, and
//
//   Y[r][n] = sum over blocks b, in order, of
//             float(sum_k qa * qb - zero * sum_k qa) * (scale_a * scale_b)
//
// NbitsQ8Gemm's arithmetic (fused multiply-adds at AVX-512: the same bits
// as nbits_q8_gemm for the same row).
struct NbitsQ4A {
  const int8_t* q = nullptr;     // rows x ld, zeros past K
  const float* scale = nullptr;  // rows x k_blocks
  const int32_t* sum = nullptr;  // rows x k_blocks
  int64_t ld = 0, rows = 0;      // rows: at most kNbitsGemvMaxRows
  const float* bias = nullptr;   // N, or null
  float* y = nullptr;            // rows x N (column n at y[n]), row stride ldy
  int64_t ldy = 0;
  bool vnni = false;  // AVX-512 level: the CPU has AVX512-VNNI
};

}  // namespace spindle::kernels

// Columns [n0, n1) of the int8-activation product (NbitsQ8A); 4-bit B.
SPINDLE_ISA_DECLARE(void, nbits_gemv_q8,
                    (const ::spindle::kernels::NbitsWeights& w, const ::spindle::kernels::NbitsQ8A& p, int64_t n0,
                     int64_t n1));
SPINDLE_ISA_DECLARE(void, nbits_gemv,
                    (const ::spindle::kernels::NbitsWeights& w, const ::spindle::kernels::NbitsGemv& p, int64_t n0,
                     int64_t n1));
// A's rows (rows x K, row stride lda) split for NbitsGemv::a_split into dst,
// rows of stride round_up(K, 32).
SPINDLE_ISA_DECLARE(void, nbits_split_a, (const float* a, int64_t lda, int64_t rows, int64_t K, float* dst));
// Columns [n0, n1) of B dequantized into the SGEMM's packed B panels
// (sgemm.h; nr = sgemm_nr(), the active level's): panel q holds columns
// n0 + q * nr onwards, w(n, k) at dst[q * K * nr + k * nr + j], j = n - n0 -
// q * nr, and zeros past n1; round_up(n1 - n0, nr) * K floats. Each value
// is the (q - zero) * scale of nbits.h.
SPINDLE_ISA_DECLARE(void, nbits_dequantize_panels,
                    (const ::spindle::kernels::NbitsWeights& w, int64_t n0, int64_t n1, int64_t nr, float* dst));
// Columns [n0, n1) of B into NbitsQ8Gemm's panels at dst; zero: N * k_blocks
// integer zero points, each in [0, 15]; 16 rows of B (16 * k_blocks * blob
// bytes) below 2^31 bytes.
SPINDLE_ISA_DECLARE(void, nbits_q8_pack,
                    (const ::spindle::kernels::NbitsWeights& w, const uint8_t* zero, int64_t n0, int64_t n1,
                     uint8_t* dst));
// Columns [n0, n1) of every row of p from the panels nbits_q8_pack wrote.
SPINDLE_ISA_DECLARE(void, nbits_q8_gemm,
                    (const ::spindle::kernels::NbitsWeights& w, const uint8_t* packed, int64_t n0, int64_t n1,
                     const ::spindle::kernels::NbitsQ8Gemm& p));
// One row of A (K floats) quantized per block (16 <= block_size <= 256) to int8 in NbitsQ8A's layout
// (NbitsQ4A's and NbitsQ8Gemm's too):
// k_blocks * block_size values to q (zeros past K), the blocks' scales to
// scale and, when sum is not null, the sums of their values to sum; with
// offset, each value is stored plus 128 as an unsigned byte (NbitsQ8Gemm).
// A NaN quantizes to 0 and takes no part in max|a|.
SPINDLE_ISA_DECLARE(void, nbits_quantize_a,
                    (const float* a, int64_t K, int64_t block_size, int64_t k_blocks, int8_t* q, float* scale,
                     int32_t* sum, bool offset));
// Whether MatMulNBits keeps int8-path weights as NbitsQ4Panels (the
// AVX-512 level; the other levels' functions below are their plain-loop
// reference).
SPINDLE_ISA_DECLARE(bool, nbits_q4_panels_used, ());
// All N columns of w (4 bits; zero: its N * k_blocks integer zero points)
// into NbitsQ4Panels at dst (ceil(N / 16) panels).
SPINDLE_ISA_DECLARE(void, nbits_q4_pack,
                    (const ::spindle::kernels::NbitsWeights& w, const uint8_t* zero, uint8_t* dst));
// Columns [n0, n1) of every row of p (n0 a multiple of 16).
SPINDLE_ISA_DECLARE(void, nbits_q4_gemv,
                    (const ::spindle::kernels::NbitsQ4Panels& w, const ::spindle::kernels::NbitsQ4A& p, int64_t n0,
                     int64_t n1));
// Columns [n0, n1) (n0 a multiple of 16) into NbitsQ8Gemm's panels at dst:
// the products nbits_q8_pack's panels give for those columns.
SPINDLE_ISA_DECLARE(void, nbits_q4_to_q8,
                    (const ::spindle::kernels::NbitsQ4Panels& w, int64_t n0, int64_t n1, uint8_t* dst));
