// lookup.isa.cpp — lookup_bytes (lookup.h), compiled once per ISA level.
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "primitives/quant/lookup.h"

// GCC 12's unmasked AVX-512 intrinsics pass an "undefined" vector that
// -Wmaybe-uninitialized flags where they are inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace spindle::kernels::SPINDLE_ISA_NS {

#if defined(__AVX512BW__)
namespace {

bool cpu_has_vbmi() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
}

// With AVX512-VBMI: the table in four vectors; vpermi2b picks from two of
// them by the low 7 bits of each byte, the top bit picks between the two
// results (64 bytes per three instructions); the tail under a byte mask, so
// a short row (a QLinearConcat piece of 32 channels) is one step. `rows`
// rows of n bytes, x's and y's rows x_stride and y_stride apart, the table
// loaded once.
__attribute__((target("avx512vbmi"))) void lookup_rows_vbmi(const uint8_t* x, int64_t x_stride, uint8_t* y,
                                                            int64_t y_stride, int64_t n, int64_t rows,
                                                            const uint8_t* t) {
  const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64);
  const __m512i t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
  for (int64_t r = 0; r < rows; ++r, x += x_stride, y += y_stride)
    for (int64_t i = 0; i < n; i += 64) {
      const __mmask64 m = n - i >= 64 ? ~__mmask64{0} : (__mmask64{1} << (n - i)) - 1;
      const __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
      const __m512i lo = _mm512_permutex2var_epi8(t0, v, t1);
      const __m512i hi = _mm512_permutex2var_epi8(t2, v, t3);
      _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi));
    }
}

}  // namespace
#endif

void lookup_rows(const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t n, int64_t rows,
                 const uint8_t* table) {
#if defined(__AVX512BW__)
  static const bool vbmi = cpu_has_vbmi();
  if (vbmi) {
    lookup_rows_vbmi(x, x_stride, y, y_stride, n, rows, table);
    return;
  }
#endif
  for (int64_t r = 0; r < rows; ++r) lookup_bytes(x + r * x_stride, y + r * y_stride, n, table);
}

void lookup_bytes(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table) {
  int64_t i = 0;
#if defined(__AVX512BW__)
  static const bool vbmi = cpu_has_vbmi();
  if (vbmi) {
    lookup_rows_vbmi(x, 0, y, 0, n, 1, table);
    return;
  }
  __m512i rows[16];  // the 16 bytes of row h in each 128-bit lane
  for (int h = 0; h < 16; ++h)
    rows[h] = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * h)));
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (; i + 64 <= n; i += 64) {
    const __m512i v = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_and_si512(v, nibble);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
    __m512i r = _mm512_setzero_si512();
    for (int h = 0; h < 16; ++h) {
      const __mmask64 k = _mm512_cmpeq_epi8_mask(hi, _mm512_set1_epi8(static_cast<char>(h)));
      r = _mm512_mask_shuffle_epi8(r, k, rows[h], lo);
    }
    _mm512_storeu_si512(y + i, r);
  }
#elif defined(__AVX2__)
  __m256i rows[16];
  for (int h = 0; h < 16; ++h)
    rows[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * h)));
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i lo = _mm256_and_si256(v, nibble);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
    __m256i r = _mm256_setzero_si256();
    for (int h = 0; h < 16; ++h) {
      const __m256i k = _mm256_cmpeq_epi8(hi, _mm256_set1_epi8(static_cast<char>(h)));
      r = _mm256_blendv_epi8(r, _mm256_shuffle_epi8(rows[h], lo), k);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
#endif
  for (; i < n; ++i) y[i] = table[x[i]];
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS

#pragma GCC diagnostic pop
