// nbits.isa.cpp — nbits_gemv and nbits_dequantize_rows (nbits.h), compiled
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

template <int BITS, int R>
void gemv_rows(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const int64_t K = w.K, bs = w.block_size, chunk_bytes = kChunk * BITS / 8;
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    const uint8_t* row = w.b + n * w.k_blocks * w.blob;
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const __m256 zv = _mm256_set1_ps(w.zero[n * w.k_blocks + b]);
      const __m256 sv = _mm256_set1_ps(w.scale[n * w.k_blocks + b]);
      const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
      const uint8_t* blk = row + b * w.blob;
      for (int64_t c = 0; c * kChunk < valid; ++c) {
        __m128i q;
        if constexpr (BITS == 4) {
          const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + c * chunk_bytes));
          q = _mm_unpacklo_epi8(_mm_and_si128(bytes, low4), _mm_and_si128(_mm_srli_epi16(bytes, 4), low4));
        } else {
          q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + c * chunk_bytes));
        }
        __m256 w0 = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), zv), sv);
        __m256 w1 = _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8))), zv), sv);
        const int64_t k = k0 + c * kChunk, v = valid - c * kChunk;
        if (v >= kChunk) {
          for (int r = 0; r < R; ++r) {
            const float* a = p.a + r * p.lda + k;
            acc[r][0] = _mm256_fmadd_ps(_mm256_loadu_ps(a), w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8), w1, acc[r][1]);
          }
        } else {  // the row's last values: lanes past K read nothing and add 0
          const __m256i m0 = simd::tail_mask8(static_cast<int>(v < 8 ? v : 8));
          const __m256i m1 = simd::tail_mask8(static_cast<int>(v > 8 ? v - 8 : 0));
          w0 = _mm256_and_ps(w0, _mm256_castsi256_ps(m0));
          w1 = _mm256_and_ps(w1, _mm256_castsi256_ps(m1));
          for (int r = 0; r < R; ++r) {
            const float* a = p.a + r * p.lda + k;
            acc[r][0] = _mm256_fmadd_ps(_mm256_maskload_ps(a, m0), w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(_mm256_maskload_ps(a + 8, m1), w1, acc[r][1]);
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const float s = reduce16(acc[r][0], acc[r][1]);
      p.y[r * p.ldy + n] = p.bias ? s + p.bias[n] : s;
    }
  }
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

template <int BITS>
void dequantize_rows_bits(const NbitsWeights& w, int64_t n0, int64_t n1, float* dst) {
  const int64_t K = w.K, bs = w.block_size, chunk_bytes = kChunk * BITS / 8;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w.b + n * w.k_blocks * w.blob;
    float* out = dst + (n - n0) * K;
    for (int64_t b = 0; b < w.k_blocks; ++b) {
      const float zero = w.zero[n * w.k_blocks + b], scale = w.scale[n * w.k_blocks + b];
      const int64_t k0 = b * bs, valid = K - k0 < bs ? K - k0 : bs;
      const uint8_t* blk = row + b * w.blob;
      for (int64_t c = 0; c * kChunk < valid; ++c) {
        const int64_t k = k0 + c * kChunk, v = valid - c * kChunk;
        if (v >= kChunk) {
          dequantize_chunk<BITS>(blk + c * chunk_bytes, zero, scale, out + k);
        } else {
          float wv[kChunk];
          dequantize_chunk<BITS>(blk + c * chunk_bytes, zero, scale, wv);
          for (int64_t j = 0; j < v; ++j) out[k + j] = wv[j];
        }
      }
    }
  }
}

}  // namespace

void nbits_gemv(const NbitsWeights& w, const NbitsGemv& p, int64_t n0, int64_t n1) {
  if (p.rows <= 0 || n1 <= n0) return;
  if (w.bits == 8) gemv_bits<8>(w, p, n0, n1);
  else gemv_bits<4>(w, p, n0, n1);
}

void nbits_dequantize_rows(const NbitsWeights& w, int64_t n0, int64_t n1, float* dst) {
  if (w.bits == 8) dequantize_rows_bits<8>(w, n0, n1, dst);
  else dequantize_rows_bits<4>(w, n0, n1, dst);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
