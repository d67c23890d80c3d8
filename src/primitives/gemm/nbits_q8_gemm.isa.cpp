// nbits_q8_gemm.isa.cpp — nbits_q8_pack and nbits_q8_gemm (nbits.h),
// compiled once per ISA level: 4-bit weights against int8 activations for
// products of many rows. B is unpacked once per column block into int8
// panels of 16 columns (qb - zero, in the order of A's int8 layout), then
// tiles of rows x 32 columns accumulate each block's integer sums (AVX-512:
// 16 columns per register, 4 values of a row broadcast against 4 values of
// each column, vpdpbusd with VNNI, vpmaddubsw + vpmaddwd without: |u *
// (qb - zero)| <= 255 * 15, pairs far from int16's saturation), start from
// the block's correction, and add float(sum) * (scale_a * scale_b) to the
// float sums, one fused multiply-add per block. AVX2 the same with 8
// columns per register (vpmaddubsw + vpmaddwd; the same bits); the
// baseline in plain loops with a separate multiply and add (the reference
// the tests hold the other levels to; MatMulNBits does not call it, see
// matmul_nbits.cpp). Every output is one chain of blocks
// in order, whichever tile computes it: the bits follow the shape alone.
#include <cstdint>

#include "primitives/gemm/nbits.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

using ::spindle::kernels::NbitsQ8Gemm;
using ::spindle::kernels::NbitsWeights;

// Panel q of the packed columns: its codes, corrections and scales.
struct Panel {
  int8_t* codes;
  int32_t* corr;
  float* scale;
};

inline Panel panel_at(uint8_t* dst, int64_t q, int64_t kb, int64_t bs) {
  uint8_t* base = dst + q * ::spindle::kernels::nbits_q8_panel_bytes(kb, bs);
  auto* corr = reinterpret_cast<int32_t*>(base + 16 * kb * bs);
  return {reinterpret_cast<int8_t*>(base), corr, reinterpret_cast<float*>(corr + 16 * kb)};
}

#if !defined(__AVX2__)
// One column j of a panel (plain loops): position p of block b in A's
// layout (group of G = min(32, bs) values: G/2 even k from the low nibbles,
// then G/2 odd k from the high ones) goes to byte (b * bs / 4 + p / 4) * 64
// + 4 * j + p % 4.
void pack_column(const NbitsWeights& w, const uint8_t* zero, int64_t n, bool valid, int64_t j, const Panel& pn) {
  const int64_t kb = w.k_blocks, bs = w.block_size, half = (bs < 32 ? bs : 32) / 2;
  for (int64_t b = 0; b < kb; ++b) {
    const uint8_t* blk = w.b + (n * kb + b) * w.blob;
    const int32_t z = valid ? zero[n * kb + b] : 0;
    int32_t sum = 0;
    for (int64_t p = 0; p < bs; ++p) {
      const int64_t i = p % (2 * half);
      const uint8_t byte = valid ? blk[p / (2 * half) * half + i % half] : 0;
      const int32_t v = valid ? (i < half ? byte & 0x0F : byte >> 4) - z : 0;
      pn.codes[(b * bs / 4 + p / 4) * 64 + 4 * j + p % 4] = static_cast<int8_t>(v);
      sum += v;
    }
    pn.corr[b * 16 + j] = -128 * sum;
    pn.scale[b * 16 + j] = valid ? w.scale[n * kb + b] : 0.0f;
  }
}

#elif !defined(__AVX512F__)
// AVX2: per half panel of 8 columns and per block, each 4-byte word of B
// gathered for the 8 columns, its low and high nibbles less the zero
// points stored as the half's 32 bytes of two steps; then the half's
// corrections and scales.
void pack_panel(const NbitsWeights& w, const uint8_t* zero, int64_t n, int64_t cols, const Panel& pn) {
  const int64_t kb = w.k_blocks, bs = w.block_size, row_bytes = kb * w.blob;
  const int64_t dpg = (bs < 32 ? bs : 32) / 8;  // words per group of A's layout
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i b_idx = _mm256_mullo_epi32(iota, _mm256_set1_epi32(static_cast<int32_t>(row_bytes)));
  const __m256i kb_idx = _mm256_mullo_epi32(iota, _mm256_set1_epi32(static_cast<int32_t>(kb)));
  const __m256i nib = _mm256_set1_epi8(0x0F), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t left = cols - 8 * h;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(left < 0 ? 0 : left)), iota);
    for (int64_t b = 0; b < kb; ++b) {
      const int64_t first = (n + 8 * h) * kb + b;  // block b of the half's first column
      alignas(32) int32_t zl[8];  // the 8 columns' zero points (one byte each), 0 past cols
      for (int64_t j = 0; j < 8; ++j) zl[j] = j < left ? zero[first + j * kb] : 0;
      const __m256i z = _mm256_load_si256(reinterpret_cast<const __m256i*>(zl));
      const __m256 s = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), w.scale + (left > 0 ? first : 0), kb_idx,
                                                _mm256_castsi256_ps(m), 4);
      _mm256_storeu_ps(pn.scale + b * 16 + 8 * h, s);
      const __m256i zb = _mm256_mullo_epi32(z, _mm256_set1_epi32(0x01010101));
      const uint8_t* base = w.b + (left > 0 ? (n + 8 * h) * row_bytes + b * w.blob : 0);
      int8_t* out = pn.codes + b * bs * 16 + 32 * h;
      __m256i sum = _mm256_setzero_si256();
      for (int64_t d = 0; d < w.blob / 4; ++d) {
        const __m256i v = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                                                      reinterpret_cast<const int*>(base + 4 * d), b_idx, m, 1);
        const __m256i lo = _mm256_and_si256(v, nib), hi = _mm256_and_si256(_mm256_srli_epi32(v, 4), nib);
        const int64_t step = d / dpg * 2 * dpg + d % dpg;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + step * 64), _mm256_sub_epi8(lo, zb));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (step + dpg) * 64), _mm256_sub_epi8(hi, zb));
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_add_epi8(lo, hi), ones8), ones16));
      }
      const __m256i corr = _mm256_slli_epi32(
          _mm256_sub_epi32(_mm256_mullo_epi32(z, _mm256_set1_epi32(static_cast<int32_t>(bs))), sum), 7);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(pn.corr + b * 16 + 8 * h), corr);
    }
  }
}

// AVX2: MR rows x one panel (two registers of 8 columns); the float sums
// in memory, updated once per block.
template <int MR>
void tile_avx2(const NbitsWeights& w, const Panel& pn, const NbitsQ8Gemm& p, int64_t r0, int64_t n, int64_t cols) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  const uint8_t* a = p.a + r0 * p.ld;
  const float* sa = p.a_scale + r0 * kb;
  const __m256i ones16 = _mm256_set1_epi16(1);
  alignas(32) float acc[MR][16] = {};
  for (int64_t b = 0; b < kb; ++b) {
    __m256i dot[MR][2];
    const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pn.corr + b * 16));
    const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pn.corr + b * 16 + 8));
    for (int r = 0; r < MR; ++r) dot[r][0] = c0, dot[r][1] = c1;
    const int8_t* codes = pn.codes + b * bs * 16;
    const uint8_t* ab = a + b * bs;
    for (int64_t s = 0; s < bs / 4; ++s) {
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + s * 64));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + s * 64 + 32));
      for (int r = 0; r < MR; ++r) {
        const __m256i av = _mm256_broadcastd_epi32(_mm_loadu_si32(ab + r * p.ld + 4 * s));
        dot[r][0] = _mm256_add_epi32(dot[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones16));
        dot[r][1] = _mm256_add_epi32(dot[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones16));
      }
    }
    for (int h = 0; h < 2; ++h) {
      const __m256 sb = _mm256_loadu_ps(pn.scale + b * 16 + 8 * h);
      for (int r = 0; r < MR; ++r) {
        const __m256 s = _mm256_mul_ps(sb, _mm256_set1_ps(sa[r * kb + b]));
        _mm256_store_ps(acc[r] + 8 * h, _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[r][h]), s, _mm256_load_ps(acc[r] + 8 * h)));
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int64_t j = 0; j < cols; ++j)
      p.y[(r0 + r) * p.ldy + n + j] = p.bias ? acc[r][j] + p.bias[n + j] : acc[r][j];
}

constexpr int kMrAvx2 = 4;

template <int M = kMrAvx2>
void tile_rows_avx2(const NbitsWeights& w, const Panel& pn, const NbitsQ8Gemm& p, int64_t r0, int64_t n,
                    int64_t cols, int64_t mr) {
  if constexpr (M > 1) {
    if (mr < M) return tile_rows_avx2<M - 1>(w, pn, p, r0, n, cols, mr);
  }
  tile_avx2<M>(w, pn, p, r0, n, cols);
}

#else

// Words 0-3 of 16 bytes at p + j * stride for the 16 columns j: words[d]
// holds word d of every column (4 columns per register, then a 16 x 4
// transpose of 32-bit words in two permutes and a blend per word).
inline void load_words(const uint8_t* p, int64_t stride, __m512i* words) {
  __m512i z[4];
  for (int g = 0; g < 4; ++g) {
    const uint8_t* c = p + 4 * g * stride;
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + stride)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 2 * stride)), 2);
    z[g] = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + 3 * stride)), 3);
  }
  // Column j % 8 of a pair of registers: lane (j % 4), word d, of the first (j % 8 < 4) or the second.
  const __m512i base = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  for (int d = 0; d < 4; ++d) {
    const __m512i idx = _mm512_add_epi32(base, _mm512_set1_epi32(d));
    words[d] = _mm512_mask_blend_epi32(0xFF00, _mm512_permutex2var_epi32(z[0], idx, z[1]),
                                       _mm512_permutex2var_epi32(z[2], idx, z[3]));
  }
}

// Panel q at AVX-512: per block, each 4-byte word of B for the 16 columns
// (transposed from 16-byte rows when the panel is whole and the block a
// multiple of 16 bytes, gathered otherwise), its low and high nibbles (A's
// order puts a group's low nibbles first) less the zero points stored as
// two 64-byte steps.
void pack_panel(const NbitsWeights& w, const uint8_t* zero, int64_t n, int64_t cols, const Panel& pn) {
  const int64_t kb = w.k_blocks, bs = w.block_size, row_bytes = kb * w.blob;
  const int64_t dpg = (bs < 32 ? bs : 32) / 8;  // words per group of A's layout
  const __mmask16 m = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i b_idx = _mm512_mullo_epi32(iota, _mm512_set1_epi32(static_cast<int32_t>(row_bytes)));
  const __m512i kb_idx = _mm512_mullo_epi32(iota, _mm512_set1_epi32(static_cast<int32_t>(kb)));
  const __m512i nib = _mm512_set1_epi8(0x0F), ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
  const bool transpose = cols == 16 && w.blob % 16 == 0;
  for (int64_t b = 0; b < kb; ++b) {
    alignas(64) int32_t zl[16];  // the 16 columns' zero points (one byte each), 0 past cols
    for (int64_t j = 0; j < 16; ++j) zl[j] = j < cols ? zero[(n + j) * kb + b] : 0;
    const __m512i z = _mm512_load_si512(zl);
    const __m512 s = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, kb_idx, w.scale + n * kb + b, 4);
    _mm512_storeu_ps(pn.scale + b * 16, s);
    const __m512i zb = _mm512_mullo_epi32(z, _mm512_set1_epi32(0x01010101));
    const uint8_t* base = w.b + n * row_bytes + b * w.blob;
    int8_t* out = pn.codes + b * bs * 16;
    __m512i sum = _mm512_setzero_si512();
    __m512i words[4];
    for (int64_t d = 0; d < w.blob / 4; ++d) {
      if (d % 4 == 0 && transpose) load_words(base + 4 * d, row_bytes, words);
      const __m512i v = transpose ? words[d % 4]
                                  : _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, b_idx, base + 4 * d, 1);
      const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi32(v, 4), nib);
      const int64_t step = d / dpg * 2 * dpg + d % dpg;
      _mm512_storeu_si512(out + step * 64, _mm512_sub_epi8(lo, zb));
      _mm512_storeu_si512(out + (step + dpg) * 64, _mm512_sub_epi8(hi, zb));
      sum = _mm512_add_epi32(sum, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_add_epi8(lo, hi), ones8), ones16));
    }
    // -128 * (sum of codes - bs * zero)
    const __m512i corr = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_mullo_epi32(z, _mm512_set1_epi32(static_cast<int32_t>(bs))), sum), 7);
    _mm512_storeu_si512(pn.corr + b * 16, corr);
  }
}

inline __m512i dots_madd(__m512i acc, __m512i a, __m512i b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), _mm512_set1_epi16(1)));
}

__attribute__((target("avx512vnni"), always_inline)) inline __m512i dots_vnni(__m512i acc, __m512i a, __m512i b) {
  return _mm512_dpbusd_epi32(acc, a, b);
}

// MR rows x NP panels (16 columns each) of the product; cols: the valid
// columns of the last panel.
#define SPINDLE_NBITS_Q8_TILE(NAME, DOTS, ATTR)                                                              \
  template <int MR, int NP>                                                                                   \
  ATTR void NAME(const NbitsWeights& w, const Panel* pn, const NbitsQ8Gemm& p, int64_t r0, int64_t n,       \
                 int64_t cols) {                                                                              \
    const int64_t kb = w.k_blocks, bs = w.block_size;                                                         \
    const uint8_t* a = p.a + r0 * p.ld;                                                                       \
    const float* sa = p.a_scale + r0 * kb;                                                                    \
    __m512 acc[MR][NP];                                                                                       \
    for (int r = 0; r < MR; ++r)                                                                              \
      for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_setzero_ps();                                           \
    for (int64_t b = 0; b < kb; ++b) {                                                                        \
      __m512i dot[MR][NP];                                                                                    \
      for (int q = 0; q < NP; ++q) {                                                                          \
        const __m512i c = _mm512_loadu_si512(pn[q].corr + b * 16);                                            \
        for (int r = 0; r < MR; ++r) dot[r][q] = c;                                                           \
      }                                                                                                       \
      const int8_t* codes[NP];                                                                                \
      for (int q = 0; q < NP; ++q) codes[q] = pn[q].codes + b * bs * 16;                                      \
      const uint8_t* ab = a + b * bs;                                                                         \
      for (int64_t s = 0; s < bs / 4; ++s) {                                                                  \
        __m512i bv[NP];                                                                                       \
        for (int q = 0; q < NP; ++q) bv[q] = _mm512_loadu_si512(codes[q] + s * 64);                           \
        for (int r = 0; r < MR; ++r) {                                                                        \
          const __m512i av = _mm512_broadcastd_epi32(_mm_loadu_si32(ab + r * p.ld + 4 * s));                  \
          for (int q = 0; q < NP; ++q) dot[r][q] = DOTS(dot[r][q], av, bv[q]);                                \
        }                                                                                                     \
      }                                                                                                       \
      for (int q = 0; q < NP; ++q) {                                                                          \
        const __m512 sb = _mm512_loadu_ps(pn[q].scale + b * 16);                                             \
        for (int r = 0; r < MR; ++r)                                                                          \
          acc[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][q]), _mm512_mul_ps(sb, _mm512_set1_ps(sa[r * kb + b])), \
                                      acc[r][q]);                                                             \
      }                                                                                                       \
    }                                                                                                         \
    for (int q = 0; q < NP; ++q) {                                                                            \
      const int64_t c = q + 1 < NP ? 16 : cols;                                                               \
      const __mmask16 m = c >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << c) - 1);                          \
      const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(m, p.bias + n + 16 * q) : _mm512_setzero_ps();       \
      for (int r = 0; r < MR; ++r) {                                                                          \
        const __m512 v = p.bias ? _mm512_add_ps(acc[r][q], bias) : acc[r][q];                                 \
        _mm512_mask_storeu_ps(p.y + (r0 + r) * p.ldy + n + 16 * q, m, v);                                    \
      }                                                                                                       \
    }                                                                                                         \
  }

SPINDLE_NBITS_Q8_TILE(tile_madd, dots_madd, )
SPINDLE_NBITS_Q8_TILE(tile_vnni, dots_vnni, __attribute__((target("avx512vnni"))))
#undef SPINDLE_NBITS_Q8_TILE

constexpr int kMr = 4;

template <int NP, int M = kMr>
void tile_rows(const NbitsWeights& w, const Panel* pn, const NbitsQ8Gemm& p, int64_t r0, int64_t n, int64_t cols,
               int64_t mr) {
  if constexpr (M > 1) {
    if (mr < M) return tile_rows<NP, M - 1>(w, pn, p, r0, n, cols, mr);
  }
  if (p.vnni) tile_vnni<M, NP>(w, pn, p, r0, n, cols);
  else tile_madd<M, NP>(w, pn, p, r0, n, cols);
}

#endif

}  // namespace

void nbits_q8_pack(const NbitsWeights& w, const uint8_t* zero, int64_t n0, int64_t n1, uint8_t* dst) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  for (int64_t q = 0; q * 16 < n1 - n0; ++q) {
    const Panel pn = panel_at(dst, q, kb, bs);
    const int64_t n = n0 + 16 * q, cols = n1 - n < 16 ? n1 - n : 16;
#if defined(__AVX2__)
    pack_panel(w, zero, n, cols, pn);
#else
    for (int64_t j = 0; j < 16; ++j) pack_column(w, zero, n + j, j < cols, j, pn);
#endif
  }
}

void nbits_q8_gemm(const NbitsWeights& w, const uint8_t* packed, int64_t n0, int64_t n1, const NbitsQ8Gemm& p) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  auto* dst = const_cast<uint8_t*>(packed);  // panel_at's pointers are only read here
#if defined(__AVX512F__)
  for (int64_t q = 0; q * 16 < n1 - n0; q += 2) {
    const Panel pn[2] = {panel_at(dst, q, kb, bs), panel_at(dst, q + 1, kb, bs)};
    const int64_t n = n0 + 16 * q, left = n1 - n;
    for (int64_t r0 = 0; r0 < p.rows; r0 += kMr) {
      const int64_t mr = p.rows - r0 < kMr ? p.rows - r0 : kMr;
      if (left > 16) tile_rows<2>(w, pn, p, r0, n, left - 16 < 16 ? left - 16 : 16, mr);
      else tile_rows<1>(w, pn, p, r0, n, left, mr);
    }
  }
#elif defined(__AVX2__)
  for (int64_t q = 0; q * 16 < n1 - n0; ++q) {
    const Panel pn = panel_at(dst, q, kb, bs);
    const int64_t n = n0 + 16 * q, cols = n1 - n < 16 ? n1 - n : 16;
    for (int64_t r0 = 0; r0 < p.rows; r0 += kMrAvx2)
      tile_rows_avx2(w, pn, p, r0, n, cols, p.rows - r0 < kMrAvx2 ? p.rows - r0 : kMrAvx2);
  }
#else
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t n = n0; n < n1; ++n) {
      const Panel pn = panel_at(dst, (n - n0) / 16, kb, bs);
      const int64_t j = (n - n0) % 16;
      float acc = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        int32_t dot = pn.corr[b * 16 + j];
        const int8_t* codes = pn.codes + b * bs * 16 + 4 * j;
        const uint8_t* a = p.a + r * p.ld + b * bs;
        for (int64_t k = 0; k < bs; ++k) dot += a[k] * codes[k / 4 * 64 + k % 4];
        const float s = p.a_scale[r * kb + b] * pn.scale[b * 16 + j];
        acc += static_cast<float>(dot) * s;
      }
      p.y[r * p.ldy + n] = p.bias ? acc + p.bias[n] : acc;
    }
#endif
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
