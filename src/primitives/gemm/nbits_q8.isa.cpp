// nbits_q8.isa.cpp — nbits_gemv_q8 (nbits.h) and nbits_quantize_a, compiled
// once per ISA level: 4-bit weights in B's own layout against int8
// activations, the few-row product of the AVX2 and baseline levels (the
// AVX-512 level keeps the weights as NbitsQ4Panels: nbits_q4.isa.cpp). A
// block's integer dot products run per group of 32 values (16 bytes of B;
// a block of 16 is one group of 16): the low nibbles (even k) and the high
// nibbles (odd k) side by side as unsigned bytes against the activations in
// the same order, with vpmaddubsw then vpmaddwd (no saturation: |q| <= 127,
// codes <= 15) or plain loops; the integer sums are exact. Then a multiply
// and add per row, column and block, in block order: any split of the
// columns gives the same bits.
#include <cstdint>

#include "primitives/gemm/nbits.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

using ::spindle::kernels::NbitsQ8A;
using ::spindle::kernels::NbitsWeights;

#if defined(__AVX2__)

inline int32_t hsum4(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline int32_t hsum8(__m256i v) {
  return hsum4(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

// 16 bytes of 4-bit codes as 32 unsigned bytes: low nibbles, then high ones.
inline __m256i unpack_codes(const uint8_t* p) {
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(w, 4), m), _mm_and_si128(w, m));
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

// Columns [n0, n1) (AVX2 and the baseline): per block, the integer dot
// products, then the float multiply-add of each row.
template <int R>
void columns(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {
  const int64_t kb = w.k_blocks, bs = w.block_size, row_bytes = kb * w.blob;
  for (int64_t n = n0; n < n1; ++n) {
    float acc[R];
    for (int r = 0; r < R; ++r) acc[r] = 0.0f;
    const uint8_t* row = w.b + n * row_bytes;
    for (int64_t b = 0; b < kb; ++b) {
      const int8_t* a[R];
      for (int r = 0; r < R; ++r) a[r] = p.q + r * p.ld + b * bs;
      int32_t dot[R];
      block_dots_madd<R>(row + b * w.blob, a, bs, dot);
      const int32_t z = p.zero[n * kb + b];
      const float sb = w.scale[n * kb + b];
      for (int r = 0; r < R; ++r) {
        const float s = p.scale[r * kb + b] * sb;
        acc[r] += static_cast<float>(dot[r] - z * p.sum[r * kb + b]) * s;
      }
    }
    for (int r = 0; r < R; ++r) p.y[r * p.ldy + n] = p.bias ? acc[r] + p.bias[n] : acc[r];
  }
}

// Values [k0, k0 + n) of a (n <= 16) as 16 floats, zeros past them.
#if defined(__AVX512F__)
inline __m512 load16(const float* a, int64_t n) {
  return n >= 16 ? _mm512_loadu_ps(a) : _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), a);
}
#endif

}  // namespace

void nbits_quantize_a(const float* a, int64_t K, int64_t block_size, int64_t k_blocks, int8_t* q, float* scale,
                      int32_t* sum, bool offset) {
  const int64_t half = (block_size < 32 ? block_size : 32) / 2;
  for (int64_t b = 0; b < k_blocks; ++b) {
    const int64_t k0 = b * block_size, valid = K - k0 < block_size ? K - k0 : block_size;
    int8_t* out = q + k0;
#if defined(__AVX512F__)
    const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7FFFFFFF));
    __m512 m = _mm512_setzero_ps();
    for (int64_t k = 0; k < valid; k += 16)  // max_ps(x, m) keeps m when x is NaN
      m = _mm512_max_ps(_mm512_and_ps(load16(a + k0 + k, valid - k), abs_mask), m);
    const float amax = _mm512_reduce_max_ps(m);
#else
    float amax = 0.0f;
    for (int64_t k = 0; k < valid; ++k) {
      const float x = a[k0 + k] < 0.0f ? -a[k0 + k] : a[k0 + k];
      amax = x > amax ? x : amax;
    }
#endif
    scale[b] = amax / 127.0f;
    const float inv = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t s = 0;
#if defined(__AVX512F__)
    // Per group of 2 * half values: the even k, then the odd k.
    const __m512 iv = _mm512_set1_ps(inv), lim = _mm512_set1_ps(127.0f);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512i acc = _mm512_setzero_si512();
    for (int64_t g = 0; g < block_size; g += 2 * half) {
      __m512i v[2];
      for (int h = 0; h < 2; ++h) {
        const int64_t k = g + 16 * h, n = valid - k;
        __m512 x = n > 0 ? _mm512_mul_ps(load16(a + k0 + k, n), iv) : _mm512_setzero_ps();
        x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, x, _CMP_ORD_Q), x);  // NaN -> 0
        x = _mm512_min_ps(_mm512_max_ps(x, _mm512_sub_ps(_mm512_setzero_ps(), lim)), lim);
        v[h] = _mm512_cvt_roundps_epi32(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      }
      const __m512i ev = _mm512_permutex2var_epi32(v[0], even, v[1]), od = _mm512_permutex2var_epi32(v[0], odd, v[1]);
      acc = _mm512_add_epi32(acc, _mm512_add_epi32(ev, od));
      __m128i e8 = _mm512_cvtepi32_epi8(ev), o8 = _mm512_cvtepi32_epi8(od);
      if (offset) {
        e8 = _mm_xor_si128(e8, _mm_set1_epi8(static_cast<char>(0x80)));
        o8 = _mm_xor_si128(o8, _mm_set1_epi8(static_cast<char>(0x80)));
      }
      if (half == 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + g), e8);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + g + 16), o8);
      } else {  // blocks of 16: 8 even, 8 odd (the upper halves are past the block)
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + g), e8);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + g + 8), o8);
      }
    }
    if (sum) s = _mm512_reduce_add_epi32(acc);
#else
    // The block's values in k order first (a loop the compiler vectorizes),
    // then in A's order: per group, the even k, then the odd k.
    int8_t nat[256];  // block_size <= 256 (MatMulNBits' int8 paths)
    for (int64_t k = 0; k < block_size; ++k) {
      float v = k < valid ? a[k0 + k] * inv : 0.0f;
      v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : (v == v ? v : 0.0f));  // NaN -> 0
      // Round half to even: adding and subtracting 1.5 * 2^23 leaves no
      // fraction bits (exact for |v| < 2^22), without a library call.
      v = (v + 12582912.0f) - 12582912.0f;
      nat[k] = static_cast<int8_t>(v);
    }
    for (int64_t k = 0; k < block_size; ++k) s += nat[k];
    const int8_t flip = offset ? static_cast<int8_t>(0x80) : 0;
    for (int64_t g = 0; g < block_size; g += 2 * half)
      for (int64_t i = 0; i < half; ++i) {
        out[g + i] = static_cast<int8_t>(nat[g + 2 * i] ^ flip);
        out[g + half + i] = static_cast<int8_t>(nat[g + 2 * i + 1] ^ flip);
      }
#endif
    if (sum) sum[b] = s;
  }
}

void nbits_gemv_q8(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {
  if (p.rows <= 0 || n1 <= n0) return;
  switch (p.rows) {
    case 1: columns<1>(w, p, n0, n1); break;
    case 2: columns<2>(w, p, n0, n1); break;
    case 3: columns<3>(w, p, n0, n1); break;
    default: columns<4>(w, p, n0, n1); break;
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
