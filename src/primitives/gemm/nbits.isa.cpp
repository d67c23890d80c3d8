// nbits.isa.cpp — nbits_gemv and nbits_dequantize_panels (nbits.h), compiled
// once per ISA level. The product walks K in chunks of 16 values (8 bytes of
// 4-bit values, 16 of 8-bit ones; a block is a whole number of chunks), k
// going to lane k % 16 of a row's sums; each chunk's values are unpacked and
// dequantized once for all rows. At the end the 16 lanes are reduced in a
// fixed tree: (l + l+8), then (+4), (+2), (+1). AVX2 and AVX-512 run the
// 8-lane intrinsics below (fused multiply-adds); the baseline the same
// order in plain loops (separate multiply and add).
#include <cstdint>

#include "primitives/gemm/nbits.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

using ::spindle::kernels::NbitsGemv;
using ::spindle::kernels::NbitsWeights;

constexpr int64_t kChunk = 16;

// Values [0, 16) of a chunk as (q - zero) * scale.
template <int BITS>
inline void dequantize_chunk(const uint8_t* p, float zero, float scale, float* w) {
  if constexpr (BITS == 4) {
    for (int i = 0; i < 8; ++i) {
      w[2 * i] = (static_cast<float>(p[i] & 0x0F) - zero) * scale;
      w[2 * i + 1] = (static_cast<float>(p[i] >> 4) - zero) * scale;
    }
  } else {
    for (int i = 0; i < 16; ++i) w[i] = (static_cast<float>(p[i]) - zero) * scale;
  }
}

#if defined(__AVX2__) && defined(__FMA__)

inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 s8 = _mm256_add_ps(lo, hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
  return _mm_cvtss_f32(s1);
}

#if defined(__AVX512F__)
// 4 bits at AVX-512, blocks of 32 or more values, A split (NbitsGemv::a_split):
// a block's 16 possible weights (c - zero) * scale in one register; 16 bytes
// (32 values) widened to one byte per 32-bit lane, whose low nibble (the
// even k) and, shifted, high nibble (the odd k) index the table directly
// (the lookup reads the low 4 bits of a lane): no conversion, subtraction or
// multiplication per value. Even and odd values go to two 16-lane sums per
// row and column, added and reduced at the end in a fixed order. C columns
// at a time, for C independent chains of multiply-adds (each column's sums
// keep their order, so C changes no bit).
template <int R, int C>
void q4_split_columns(const NbitsWeights& w, const NbitsGemv& p, int64_t n) {
  const __m512 codes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const int64_t K = w.K, bs = w.block_size, row_bytes = w.k_blocks * w.blob, lda = p.lda_split;
  __m512 even[C][R], odd[C][R];
  for (int j = 0; j < C; ++j)
    for (int r = 0; r < R; ++r) even[j][r] = odd[j][r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    __m512 table[C];
    for (int j = 0; j < C; ++j) {
      const int64_t bi = (n + j) * w.k_blocks + b;
      table[j] = _mm512_mul_ps(_mm512_sub_ps(codes, _mm512_set1_ps(w.zero[bi])), _mm512_set1_ps(w.scale[bi]));
    }
    const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
    const uint8_t* blk = w.b + n * row_bytes + b * w.blob;
    for (int64_t g = 0; g * 32 < valid; ++g) {
      const int64_t k = k0 + g * 32, v = valid - g * 32;
      // Lanes past K (A is 0 there) take weight 0.
      __mmask16 me = 0xFFFF, mo = 0xFFFF;
      if (v < 32) {
        me = static_cast<__mmask16>((1u << ((v + 1) / 2)) - 1u);
        mo = static_cast<__mmask16>((1u << (v / 2)) - 1u);
      }
      __m512 ae[R], ao[R];
      for (int r = 0; r < R; ++r) {
        ae[r] = _mm512_loadu_ps(p.a_split + r * lda + k);
        ao[r] = _mm512_loadu_ps(p.a_split + r * lda + k + 16);
      }
      for (int j = 0; j < C; ++j) {
        const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + j * row_bytes + g * 16)));
        const __m512 we = _mm512_maskz_permutexvar_ps(me, idx, table[j]);
        const __m512 wo = _mm512_maskz_permutexvar_ps(mo, _mm512_srli_epi32(idx, 4), table[j]);
        for (int r = 0; r < R; ++r) {
          even[j][r] = _mm512_fmadd_ps(ae[r], we, even[j][r]);
          odd[j][r] = _mm512_fmadd_ps(ao[r], wo, odd[j][r]);
        }
      }
    }
  }
  for (int j = 0; j < C; ++j)
    for (int r = 0; r < R; ++r) {
      const __m512 t = _mm512_add_ps(even[j][r], odd[j][r]);
      const float s = reduce16(_mm512_castps512_ps256(t), _mm512_extractf32x8_ps(t, 1));
      p.y[r * p.ldy + n + j] = p.bias ? s + p.bias[n + j] : s;
    }
}

template <int R>
void gemv_rows_q4_split(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  constexpr int C = R <= 2 ? 4 : 2;
  int64_t n = n0;
  for (; n + C <= n1; n += C) q4_split_columns<R, C>(w, p, n);
  for (; n < n1; ++n) q4_split_columns<R, 1>(w, p, n);
}
#endif

// A chunk's 16 values as (q - zero) * scale: values 0-7 in w0, 8-15 in w1.
template <int BITS>
inline void dequantize_chunk8x2(const uint8_t* p, __m256 zv, __m256 sv, __m256& w0, __m256& w1) {
  __m128i q;
  if constexpr (BITS == 4) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    q = _mm_unpacklo_epi8(_mm_and_si128(bytes, low4), _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
  } else {
    q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  w0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), zv), sv);
  w1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8))), zv), sv);
}

// Columns n .. n + C - 1 at AVX2 (and at AVX-512 for 8 bits or blocks of
// 16): C independent chains of multiply-adds, each column's sums in its own
// order (C changes no bit).
template <int BITS, int R, int C>
void avx2_columns(const NbitsWeights& w, const NbitsGemv& p, int64_t n) {
  const int64_t K = w.K, bs = w.block_size, chunk_bytes = kChunk * BITS / 8, row_bytes = w.k_blocks * w.blob;
  __m256 acc[C][R][2];
  for (int j = 0; j < C; ++j)
    for (int r = 0; r < R; ++r) acc[j][r][0] = acc[j][r][1] = _mm256_setzero_ps();
  for (int64_t b = 0; b < w.k_blocks; ++b) {
    __m256 zv[C], sv[C];
    for (int j = 0; j < C; ++j) {
      zv[j] = _mm256_set1_ps(w.zero[(n + j) * w.k_blocks + b]);
      sv[j] = _mm256_set1_ps(w.scale[(n + j) * w.k_blocks + b]);
    }
    const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
    const uint8_t* blk = w.b + n * row_bytes + b * w.blob;
    for (int64_t c = 0; c * kChunk < valid; ++c) {
      const int64_t k = k0 + c * kChunk, v = valid - c * kChunk;
      // The row's last values: lanes past K read nothing and add 0.
      const __m256i m0 = simd::tail_mask8(static_cast<int>(v < 8 ? v : 8));
      const __m256i m1 = simd::tail_mask8(static_cast<int>(v >= kChunk ? 8 : v > 8 ? v - 8 : 0));
      for (int j = 0; j < C; ++j) {
        __m256 w0, w1;
        dequantize_chunk8x2<BITS>(blk + j * row_bytes + c * chunk_bytes, zv[j], sv[j], w0, w1);
        if (v >= kChunk) {
          for (int r = 0; r < R; ++r) {
            const float* a = p.a + r * p.lda + k;
            acc[j][r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a), w0, acc[j][r][0]);
            acc[j][r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8), w1, acc[j][r][1]);
          }
        } else {
          w0 = _mm256_and_ps(w0, _mm256_castsi256_ps(m0));
          w1 = _mm256_and_ps(w1, _mm256_castsi256_ps(m1));
          for (int r = 0; r < R; ++r) {
            const float* a = p.a + r * p.lda + k;
            acc[j][r][0] = _mm256_fmadd_ps(_mm256_maskload_ps(a, m0), w0, acc[j][r][0]);
            acc[j][r][1] = _mm256_fmadd_ps(_mm256_maskload_ps(a + 8, m1), w1, acc[j][r][1]);
          }
        }
      }
    }
  }
  for (int j = 0; j < C; ++j)
    for (int r = 0; r < R; ++r) {
      const float s = reduce16(acc[j][r][0], acc[j][r][1]);
      p.y[r * p.ldy + n + j] = p.bias ? s + p.bias[n + j] : s;
    }
}

template <int BITS, int R>
void gemv_rows(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
#if defined(__AVX512F__)
  if constexpr (BITS == 4) {
    if (p.a_split) {
      gemv_rows_q4_split<R>(w, p, n0, n1);
      return;
    }
  }
#endif
  constexpr int C = R <= 2 ? 2 : 1;
  int64_t n = n0;
  for (; n + C <= n1; n += C) avx2_columns<BITS, R, C>(w, p, n);
  for (; n < n1; ++n) avx2_columns<BITS, R, 1>(w, p, n);
}

#else

inline float reduce16(const float* l) {
  float s8[8], s4[4];
  for (int j = 0; j < 8; ++j) s8[j] = l[j] + l[j + 8];
  for (int j = 0; j < 4; ++j) s4[j] = s8[j] + s8[j + 4];
  const float s2a = s4[0] + s4[2], s2b = s4[1] + s4[3];
  return s2a + s2b;
}

template <int BITS, int R>
void gemv_rows(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  const int64_t K = w.K, bs = w.block_size, chunk_bytes = kChunk * BITS / 8;
  for (int64_t n = n0; n < n1; ++n) {
    float acc[R][kChunk] = {};
    const uint8_t* row = w.b + n * w.k_blocks * w.blob;
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const float zero = w.zero[n * w.k_blocks + b], scale = w.scale[n * w.k_blocks + b];
      const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
      const uint8_t* blk = row + b * w.blob;
      for (int64_t c = 0; c * kChunk < valid; ++c) {
        float wv[kChunk];
        dequantize_chunk<BITS>(blk + c * chunk_bytes, zero, scale, wv);
        const int64_t k = k0 + c * kChunk, v = valid - c * kChunk < kChunk ? valid - c * kChunk : kChunk;
        for (int r = 0; r < R; ++r) {
          const float* a = p.a + r * p.lda + k;
          float* ar = acc[r];
          for (int64_t j = 0; j < v; ++j) ar[j] += a[j] * wv[j];
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float s = reduce16(acc[r]);
      p.y[r * p.ldy + n] = p.bias ? s + p.bias[n] : s;
    }
  }
}

#endif

template <int BITS>
void gemv_bits(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  switch (p.rows) {
    case 1: gemv_rows<BITS, 1>(w, p, n0, n1); break;
    case 2: gemv_rows<BITS, 2>(w, p, n0, n1); break;
    case 3: gemv_rows<BITS, 3>(w, p, n0, n1); break;
    default: gemv_rows<BITS, 4>(w, p, n0, n1); break;
  }
}

// Packed panels (nbits_dequantize_panels), any nr: column by column, each
// chunk's 16 values dequantized, then written down the panel's column.
template <int BITS>
void panels_scalar(const NbitsWeights& w, int64_t n0, int64_t n1, int64_t nr, float* dst) {
  const int64_t K = w.K, bs = w.block_size, chunk_bytes = kChunk * BITS / 8, row_bytes = w.k_blocks * w.blob;
  for (int64_t c0 = n0; c0 < n1; c0 += nr) {
    float* panel = dst + (c0 - n0) * K;
    for (int64_t j = 0; j < nr; ++j) {
      if (c0 + j >= n1) {
        for (int64_t k = 0; k < K; ++k) panel[k * nr + j] = 0.0f;
        continue;
      }
      const int64_t n = c0 + j;
      for (int64_t b = 0; b < w.k_blocks; ++b) {
        const float zero = w.zero[n * w.k_blocks + b], scale = w.scale[n * w.k_blocks + b];
        const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
        const uint8_t* blk = w.b + n * row_bytes + b * w.blob;
        for (int64_t c = 0; c * kChunk < valid; ++c) {
          float wv[kChunk];
          dequantize_chunk<BITS>(blk + c * chunk_bytes, zero, scale, wv);
          const int64_t k = k0 + c * kChunk, v = valid - c * kChunk < kChunk ? valid - c * kChunk : kChunk;
          for (int64_t i = 0; i < v; ++i) panel[(k + i) * nr + j] = wv[i];
        }
      }
    }
  }
}

#if defined(__AVX2__) && defined(__FMA__)
// Packed panels a vector of kL columns at a time (kL = 16 at AVX-512, 8 at
// AVX2), no gathers: each column's next 16 bytes (8 when a block is 8
// bytes) are loaded, and a 4 x 4 transposition of 32-bit words within the
// 128-bit lanes turns them into D = bytes / 4 vectors, vector d holding word
// d of every column (one 32-bit lane per column, in column order). Each
// word's 32 / BITS values, lowest bits first, are rows of the panel: (q -
// zero) * scale, with the blocks' zero points and scales transposed
// beforehand into one vector per block. Columns past n1 load nothing and
// take zero, scale and codes 0: (0 - 0) * 0 = 0.
#if defined(__AVX512F__)
struct ColumnLanes {
  static constexpr int kL = 16;
  using V = __m512;
  using I = __m512i;
  // z[g] (g < 4), 128-bit lane l = the bytes of column 4 l + g.
  static void gather_lanes(const __m128i* x, I* z) {
    for (int g = 0; g < 4; ++g)
      z[g] = _mm512_inserti32x4(
          _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(x[g]), x[4 + g], 1), x[8 + g], 2), x[12 + g],
          3);
  }
  static I unpacklo32(I a, I b) { return _mm512_unpacklo_epi32(a, b); }
  static I unpackhi32(I a, I b) { return _mm512_unpackhi_epi32(a, b); }
  static I unpacklo64(I a, I b) { return _mm512_unpacklo_epi64(a, b); }
  static I unpackhi64(I a, I b) { return _mm512_unpackhi_epi64(a, b); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  template <int BITS>
  static V value(I g, V z, V s) {
    const I q = _mm512_and_si512(g, _mm512_set1_epi32((1 << BITS) - 1));
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(q), z), s);
  }
  template <int BITS>
  static I next(I g) { return _mm512_srli_epi32(g, BITS); }
  static I high16(I g) { return _mm512_srli_epi32(g, 16); }
  // (g & mask) | magic, as floats
  static V and_or(I g, I mask, I magic) { return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(g, mask, magic, 0xEA)); }
  static I set1(int v) { return _mm512_set1_epi32(v); }
  static V set1f(float v) { return _mm512_set1_ps(v); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static bool all_equal(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ) == 0xFFFF; }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V zeros() { return _mm512_setzero_ps(); }
};
#else
struct ColumnLanes {
  static constexpr int kL = 8;
  using V = __m256;
  using I = __m256i;
  static void gather_lanes(const __m128i* x, I* z) {
    for (int g = 0; g < 4; ++g) z[g] = _mm256_inserti128_si256(_mm256_castsi128_si256(x[g]), x[4 + g], 1);
  }
  static I unpacklo32(I a, I b) { return _mm256_unpacklo_epi32(a, b); }
  static I unpackhi32(I a, I b) { return _mm256_unpackhi_epi32(a, b); }
  static I unpacklo64(I a, I b) { return _mm256_unpacklo_epi64(a, b); }
  static I unpackhi64(I a, I b) { return _mm256_unpackhi_epi64(a, b); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  template <int BITS>
  static V value(I g, V z, V s) {
    const I q = _mm256_and_si256(g, _mm256_set1_epi32((1 << BITS) - 1));
    return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q), z), s);
  }
  template <int BITS>
  static I next(I g) { return _mm256_srli_epi32(g, BITS); }
  static I high16(I g) { return _mm256_srli_epi32(g, 16); }
  static V and_or(I g, I mask, I magic) { return _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(g, mask), magic)); }
  static I set1(int v) { return _mm256_set1_epi32(v); }
  static V set1f(float v) { return _mm256_set1_ps(v); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static bool all_equal(V a, V b) { return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)) == 0xFF; }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V zeros() { return _mm256_setzero_ps(); }
};
#endif

// Words 0..3 of `cols` columns' 16 (or, with half, 8) bytes at p, columns
// stride bytes apart: t[d] lane j = word d of column j (0 past cols).
inline void load_words(const uint8_t* p, int64_t stride, int64_t cols, bool half, ColumnLanes::I* t) {
  using X = ColumnLanes;
  __m128i x[X::kL];
  for (int j = 0; j < X::kL; ++j) {
    const uint8_t* q = p + j * stride;
    x[j] = j >= cols ? _mm_setzero_si128()
           : half    ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))
                     : _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
  }
  X::I z[4];
  X::gather_lanes(x, z);
  const X::I a0 = X::unpacklo32(z[0], z[1]), a1 = X::unpackhi32(z[0], z[1]);
  const X::I a2 = X::unpacklo32(z[2], z[3]), a3 = X::unpackhi32(z[2], z[3]);
  t[0] = X::unpacklo64(a0, a2);
  t[1] = X::unpackhi64(a0, a2);
  t[2] = X::unpacklo64(a1, a3);
  t[3] = X::unpackhi64(a1, a3);
}

// A block's values without a shift and a conversion per value: value u of
// a word's low 16 bits (u < kHalf) is bits [BITS u, BITS u + BITS) as
// the float 2^23 + q c (c = 2^(BITS u): the masked word with 2^23's
// exponent), minus 2^23 + zero c, times scale / c. Both terms are exact, so
// is their difference (q - zero) c, and the product is (q - zero) * scale
// rounded once: the bits of nbits.h's formula, whenever 2^23 + zero c and
// scale / c are exact for every c (integral zero points of at most 2^20,
// scales far from underflow); exact() checks that per block, and a block
// that fails takes the shift-and-convert form. The high 16 bits are shifted
// down once.
template <int BITS>
struct ScaledBlock {
  using X = ColumnLanes;
  static constexpr int kHalf = 16 / BITS;
  X::V zc[kHalf], sc[kHalf];
  bool exact = false;

  ScaledBlock(X::V z, X::V s) {
    const X::V two23 = X::set1f(8388608.0f);
    for (int u = 0; u < kHalf; ++u) {
      const float c = static_cast<float>(1 << (BITS * u));
      zc[u] = X::fma(z, X::set1f(c), two23);
      sc[u] = X::mul(s, X::set1f(1.0f / c));
    }
    constexpr float kLast = static_cast<float>(1 << (BITS * (kHalf - 1)));
    exact = X::all_equal(X::sub(zc[0], two23), z) && X::all_equal(X::sub(zc[kHalf - 1], two23), X::mul(z, X::set1f(kLast))) &&
            X::all_equal(X::mul(sc[kHalf - 1], X::set1f(kLast)), s);
  }

  // Rows o, o + nr, ... of a word's `count` (<= 32 / BITS) values.
  void emit(X::I g, float* o, int64_t nr, int64_t count) const {
    const X::I magic = X::set1(0x4B000000);  // 2^23
    X::I part = g;
    for (int64_t u = 0; u < count; ++u) {
      const int h = static_cast<int>(u % kHalf);
      if (u == kHalf) part = X::high16(g);
      const X::I mask = X::set1(((1 << BITS) - 1) << (BITS * h));
      X::store(o + u * nr, X::mul(X::sub(X::and_or(part, mask, magic), zc[h]), sc[h]));
    }
  }
};

template <int BITS>
void panels_vector(const NbitsWeights& w, int64_t n0, int64_t n1, int64_t nr, float* dst) {
  using X = ColumnLanes;
  constexpr int kL = X::kL, kPer = 32 / BITS;  // columns per vector, values per 32-bit word
  constexpr int64_t kBlocksAtOnce = 64;        // zero points and scales transposed per pass
  const int64_t K = w.K, bs = w.block_size, row_bytes = w.k_blocks * w.blob;
  const int64_t chunk = w.blob < 16 ? w.blob : 16, words = chunk / 4, chunk_values = chunk * 8 / BITS;
  alignas(64) float zs[kBlocksAtOnce * kL], ss[kBlocksAtOnce * kL];
  for (int64_t c0 = n0; c0 < n1; c0 += nr) {
    float* panel = dst + (c0 - n0) * K;
    for (int64_t j0 = 0; j0 < nr; j0 += kL) {
      float* out = panel + j0;
      const int64_t n = c0 + j0, left = n1 - n, cols = left < kL ? left : kL;
      if (cols <= 0) {
        for (int64_t k = 0; k < K; ++k) X::store(out + k * nr, X::zeros());
        continue;
      }
      const uint8_t* col = w.b + n * row_bytes;
      for (int64_t bb = 0; bb < w.k_blocks; bb += kBlocksAtOnce) {
        const int64_t nb = w.k_blocks - bb < kBlocksAtOnce ? w.k_blocks - bb : kBlocksAtOnce;
        for (int64_t j = 0; j < kL; ++j)
          for (int64_t i = 0; i < nb; ++i) {
            zs[i * kL + j] = j < cols ? w.zero[(n + j) * w.k_blocks + bb + i] : 0.0f;
            ss[i * kL + j] = j < cols ? w.scale[(n + j) * w.k_blocks + bb + i] : 0.0f;
          }
        for (int64_t i = 0; i < nb; ++i) {
          const int64_t b = bb + i, k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
          const X::V zv = X::load(zs + i * kL), sv = X::load(ss + i * kL);
          const ScaledBlock<BITS> scaled(zv, sv);
          for (int64_t c = 0; c * chunk_values < valid; ++c) {
            X::I t[4];
            load_words(col + b * w.blob + c * chunk, row_bytes, cols, chunk == 8, t);
            for (int64_t d = 0; d < words; ++d) {
              const int64_t first = c * chunk_values + d * kPer;  // the word's first value in the block
              if (first >= valid) break;
              float* o = out + (k0 + first) * nr;
              X::I g = t[d];
              if (scaled.exact) {
                scaled.emit(g, o, nr, valid - first < kPer ? valid - first : kPer);
              } else if (valid - first >= kPer) {
                for (int u = 0; u < kPer; ++u, g = X::next<BITS>(g)) X::store(o + u * nr, X::value<BITS>(g, zv, sv));
              } else {
                for (int64_t u = 0; u < valid - first; ++u, g = X::next<BITS>(g))
                  X::store(o + u * nr, X::value<BITS>(g, zv, sv));
              }
            }
          }
        }
      }
    }
  }
}
#endif

template <int BITS>
void panels_bits(const NbitsWeights& w, int64_t n0, int64_t n1, int64_t nr, float* dst) {
#if defined(__AVX2__) && defined(__FMA__)
  if (nr % ColumnLanes::kL == 0) {  // nr a whole number of vectors
    panels_vector<BITS>(w, n0, n1, nr, dst);
    return;
  }
#endif
  panels_scalar<BITS>(w, n0, n1, nr, dst);
}

}  // namespace

void nbits_gemv(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  if (p.rows <= 0 || n1 <= n0) return;
  if (w.bits == 8) gemv_bits<8>(w, p, n0, n1);
  else gemv_bits<4>(w, p, n0, n1);
}

void nbits_split_a(const float* a, int64_t lda, int64_t rows, int64_t K, float* dst) {
  const int64_t ld = (K + 31) / 32 * 32;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a + r * lda;
    float* out = dst + r * ld;
    for (int64_t g = 0; g < ld; g += 32)
      for (int64_t i = 0; i < 16; ++i) {
        out[g + i] = g + 2 * i < K ? src[g + 2 * i] : 0.0f;
        out[g + 16 + i] = g + 2 * i + 1 < K ? src[g + 2 * i + 1] : 0.0f;
      }
  }
}

void nbits_dequantize_panels(const NbitsWeights& w, int64_t n0, int64_t n1, int64_t nr, float* dst) {
  if (n1 <= n0 || nr <= 0) return;
  if (w.bits == 8) panels_bits<8>(w, n0, n1, nr, dst);
  else panels_bits<4>(w, n0, n1, nr, dst);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
