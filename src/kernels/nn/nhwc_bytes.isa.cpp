// nhwc_bytes.isa.cpp — interleave_planes_u8 (nhwc_bytes.h), compiled once
// per ISA level.
#include <emmintrin.h>

#include <cstdint>

#include "kernels/nn/nhwc_bytes.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

// P planes: each output pixel's P bytes from the P planes, restricted
// pointers so the compiler vectorizes the interleaving stores.
template <int P>
void interleave(const uint8_t* src, uint8_t* __restrict dst, int64_t cols, int64_t j0, int64_t j1) {
  const uint8_t* __restrict s0 = src;
  const uint8_t* __restrict s1 = src + cols;
  const uint8_t* __restrict s2 = src + (P > 2 ? 2 : 1) * cols;
  const uint8_t* __restrict s3 = src + (P > 3 ? 3 : 1) * cols;
  for (int64_t j = j0; j < j1; ++j) {
    dst[j * P] = s0[j];
    dst[j * P + 1] = s1[j];
    if constexpr (P > 2) dst[j * P + 2] = s2[j];
    if constexpr (P > 3) dst[j * P + 3] = s3[j];
  }
}

// Two planes, 16 columns a step (the bytes of both planes' 16 unpacked into
// 32), the last step overlapping the one before when the columns are not a
// multiple of 16 (it writes the same bytes again): a channel shuffle's rows
// are short (ShuffleNet's 58 and 29 byte halves), which the vectorized loop
// above at AVX-512's width would run entirely as its scalar tail.
void interleave2(const uint8_t* src, uint8_t* dst, int64_t cols, int64_t j0, int64_t j1) {
  if (j1 - j0 < 16) return interleave<2>(src, dst, cols, j0, j1);
  const uint8_t* s1 = src + cols;
  for (int64_t j = j0;; j += 16) {
    if (j > j1 - 16) j = j1 - 16;
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s1 + j));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * j), _mm_unpacklo_epi8(a, b));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * j + 16), _mm_unpackhi_epi8(a, b));
    if (j == j1 - 16) return;
  }
}

}  // namespace

void interleave_planes_u8(const uint8_t* src, uint8_t* dst, int64_t planes, int64_t cols, int64_t j0, int64_t j1) {
  if (planes == 2) interleave2(src, dst, cols, j0, j1);
  else if (planes == 3) interleave<3>(src, dst, cols, j0, j1);
  else interleave<4>(src, dst, cols, j0, j1);
}

// Rows in, columns out: four rounds of interleaving pairs of vectors
// (bytes, then 2-, 4- and 8-byte units), each round doubling the rows a
// unit holds and halving the columns a vector holds; with the pairing
// below, vector v ends as column v's 16 bytes, rows 0..15 in order.
void transpose_tile16_u8(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride) {
  __m128i a[16], b[16];
  for (int i = 0; i < 16; ++i) a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * src_stride));
  // Bytes: rows 2k, 2k+1 -> b[k] (columns 0-7), b[k + 8] (columns 8-15).
  for (int k = 0; k < 8; ++k) {
    b[k] = _mm_unpacklo_epi8(a[2 * k], a[2 * k + 1]);
    b[k + 8] = _mm_unpackhi_epi8(a[2 * k], a[2 * k + 1]);
  }
  // 2-byte units: row pairs (0,1)+(2,3) ... -> 4 rows, 4 columns each.
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k) {
      a[h * 8 + k] = _mm_unpacklo_epi16(b[h * 8 + 2 * k], b[h * 8 + 2 * k + 1]);
      a[h * 8 + k + 4] = _mm_unpackhi_epi16(b[h * 8 + 2 * k], b[h * 8 + 2 * k + 1]);
    }
  // 4-byte units: 8 rows, 2 columns each.
  for (int q = 0; q < 4; ++q)
    for (int k = 0; k < 2; ++k) {
      b[q * 4 + k] = _mm_unpacklo_epi32(a[q * 4 + 2 * k], a[q * 4 + 2 * k + 1]);
      b[q * 4 + k + 2] = _mm_unpackhi_epi32(a[q * 4 + 2 * k], a[q * 4 + 2 * k + 1]);
    }
  // 8-byte units: 16 rows, 1 column each.
  for (int o = 0; o < 8; ++o) {
    a[o * 2] = _mm_unpacklo_epi64(b[o * 2], b[o * 2 + 1]);
    a[o * 2 + 1] = _mm_unpackhi_epi64(b[o * 2], b[o * 2 + 1]);
  }
  // a[v] is column v, rows 0..15 in order.
  for (int v = 0; v < 16; ++v) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + v * dst_stride), a[v]);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
