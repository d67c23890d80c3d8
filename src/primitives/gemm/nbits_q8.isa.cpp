// nbits_q8.isa.cpp — nbits_gemv_q8 (nbits.h), compiled once per ISA level:
// 4-bit weights against int8 activations. A block's integer dot products
// run per group of 32 values (16 bytes of B; a block of 16 is one group of
// 16): the low nibbles (even k) and the high nibbles (odd k) side by side as
// unsigned bytes against the activations in the same order. AVX-512 with VNNI sums them with vpdpbusd,
// AVX2 with vpmaddubsw then vpmaddwd (no saturation: |q| <= 127, codes <=
// 15), the baseline in plain loops; the integer sums are exact, so every
// level gets the same ones. The float part is one multiply and add per row,
// column and block, in block order.
#include <cstdint>

#include "primitives/gemm/nbits.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

using ::spindle::kernels::NbitsQ8A;
using ::spindle::kernels::NbitsWeights;

#if defined(__AVX2__)

inline int32_t hsum8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 16 bytes of 4-bit codes as 32 unsigned bytes: low nibbles, then high ones.
inline __m256i unpack_codes(const uint8_t* p) {
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(w, 4), m), _mm_and_si128(w, m));
}

inline int32_t hsum4(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 8 bytes of 4-bit codes (a block of 16) as 16 unsigned bytes: low nibbles, then high ones.
inline __m128i unpack_codes16(const uint8_t* p) {
  const __m128i w = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm_unpacklo_epi64(_mm_and_si128(w, m), _mm_and_si128(_mm_srli_epi16(w, 4), m));
}

template <int R>
inline void block_dots_madd(const uint8_t* blk, const int8_t* const* a, int64_t bs, int32_t* out) {
  if (bs == 16) {
    const __m128i wv = unpack_codes16(blk);
    for (int r = 0; r < R; ++r) {
      const __m128i av = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]));
      out[r] = hsum4(_mm_madd_epi16(_mm_maddubs_epi16(wv, av), _mm_set1_epi16(1)));
    }
    return;
  }
  const int64_t groups = bs / 32;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i wv = unpack_codes(blk + 16 * g);
    for (int r = 0; r < R; ++r) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r] + 32 * g));
      acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(_mm256_maddubs_epi16(wv, av), ones));
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum8(acc[r]);
}

#if defined(__AVX512F__)
template <int R>
__attribute__((target("avx512vnni"), always_inline)) inline void block_dots_vnni(const uint8_t* blk,
                                                                                 const int8_t* const* a, int64_t bs,
                                                                                 int32_t* out) {
  if (bs == 16) {
    const __m128i wv = unpack_codes16(blk);
    for (int r = 0; r < R; ++r) {
      const __m128i av = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a[r]));
      out[r] = hsum4(_mm_dpbusd_epi32(_mm_setzero_si128(), wv, av));
    }
    return;
  }
  const int64_t groups = bs / 32;
  __m256i acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; ++g) {
    const __m256i wv = unpack_codes(blk + 16 * g);
    for (int r = 0; r < R; ++r) {
      const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[r] + 32 * g));
      acc[r] = _mm256_dpbusd_epi32(acc[r], wv, av);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = hsum8(acc[r]);
}
#endif

#else

template <int R>
inline void block_dots_madd(const uint8_t* blk, const int8_t* const* a, int64_t bs, int32_t* out) {
  const int64_t half = bs < 32 ? bs / 2 : 16;  // a group is 2 * half values
  for (int r = 0; r < R; ++r) {
    int32_t s = 0;
    for (int64_t g = 0; g < bs / (2 * half); ++g) {
      const uint8_t* w = blk + half * g;
      const int8_t* x = a[r] + 2 * half * g;
      for (int64_t i = 0; i < half; ++i) s += (w[i] & 0x0F) * x[i] + (w[i] >> 4) * x[half + i];
    }
    out[r] = s;
  }
}

#endif

// Columns [n0, n1): per block, the integer dot products (DOTS), then the
// float multiply-add of each row. Written once as a macro for the plain and
// the VNNI-targeted copies (the VNNI one carries the target attribute, so
// that its intrinsics inline; the other copy must not carry it).
#define SPINDLE_NBITS_Q8_COLUMNS(NAME, DOTS, ATTR)                                               \
  template <int R>                                                                              \
  ATTR void NAME(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {            \
    const int64_t kb = w.k_blocks, bs = w.block_size, row_bytes = kb * w.blob;                  \
    for (int64_t n = n0; n < n1; ++n) {                                                         \
      float acc[R];                                                                             \
      for (int r = 0; r < R; ++r) acc[r] = 0.0f;                                                \
      const uint8_t* row = w.b + n * row_bytes;                                                 \
      for (int64_t b = 0; b < kb; ++b) {                                                        \
        const int8_t* a[R];                                                                     \
        for (int r = 0; r < R; ++r) a[r] = p.q + r * p.ld + b * bs;                             \
        int32_t dot[R];                                                                         \
        DOTS<R>(row + b * w.blob, a, bs, dot);                                                  \
        const int32_t z = p.zero[n * kb + b];                                                   \
        const float sb = w.scale[n * kb + b];                                                   \
        for (int r = 0; r < R; ++r) {                                                           \
          const float s = p.scale[r * kb + b] * sb;                                             \
          acc[r] += static_cast<float>(dot[r] - z * p.sum[r * kb + b]) * s;                     \
        }                                                                                       \
      }                                                                                         \
      for (int r = 0; r < R; ++r) p.y[r * p.ldy + n] = p.bias ? acc[r] + p.bias[n] : acc[r];    \
    }                                                                                           \
  }

SPINDLE_NBITS_Q8_COLUMNS(columns, block_dots_madd, )
#if defined(__AVX512F__)
SPINDLE_NBITS_Q8_COLUMNS(columns_vnni, block_dots_vnni, __attribute__((target("avx512vnni"))))
#endif
#undef SPINDLE_NBITS_Q8_COLUMNS

template <int R>
void run_rows(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {
#if defined(__AVX512F__)
  if (p.vnni) {
    columns_vnni<R>(w, p, n0, n1);
    return;
  }
#endif
  columns<R>(w, p, n0, n1);
}

}  // namespace

void nbits_gemv_q8(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {
  if (p.rows <= 0 || n1 <= n0) return;
  switch (p.rows) {
    case 1: run_rows<1>(w, p, n0, n1); break;
    case 2: run_rows<2>(w, p, n0, n1); break;
    case 3: run_rows<3>(w, p, n0, n1); break;
    default: run_rows<4>(w, p, n0, n1); break;
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
