// nbits_q8.isa.cpp — nbits_gemv_q8 (nbits.h), compiled once per ISA level:
// 4-bit weights against int8 activations. A block's integer dot products
// run per group of 32 values (16 bytes of B; a block of 16 is one group of
// 16): the low nibbles (even k) and the high nibbles (odd k) side by side as
// unsigned bytes against the activations in the same order. AVX-512 with VNNI sums them with vpdpbusd,
// AVX2 with vpmaddubsw then vpmaddwd (no saturation: |q| <= 127, codes <=
// 15), the baseline in plain loops; the integer sums are exact. AVX2 and
// the baseline then multiply and add per row, column and block, in block
// order; AVX-512 keeps 16 float lanes (below). The order of the float sums
// follows the shape alone, so any split of the columns gives the same bits.
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

#if defined(__AVX512F__)
// AVX-512: 64 values (32 bytes of B) per step, across block boundaries:
// the low and high nibbles of each 16-byte half (a group of 32; for blocks
// of 16, each 8-byte block as low then high) put in 128-bit lanes in the
// order A's quarters are stored in (0, 2, 1, 3: one insert, no shuffle), so
// that the activations load straight. Each 32-bit lane of the
// dot products belongs to one block; the products are converted to float
// and multiplied by their lane's scale_a * scale_b (the block scales spread
// over the lanes) into 16 float sums. The zero points enter as
// sum over blocks of zero * scale_b * (scale_a * sum qa), 16 blocks per step.
// Both are reduced at the end, in a fixed order.
template <bool BLOCKS16>
inline __m512i codes64(const uint8_t* p, int64_t bytes) {
  const __m256i w = bytes >= 32 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                : _mm256_maskz_loadu_epi8(static_cast<__mmask32>((1ull << bytes) - 1), p);
  const __m256i m = _mm256_set1_epi8(0x0F);
  const __m256i lo = _mm256_and_si256(w, m), hi = _mm256_and_si256(_mm256_srli_epi16(w, 4), m);
  // Quarters 0, 2, 1, 3 of the 64 values in k order (A's quarters are
  // stored in that order: NbitsQ8A::q): blocks 0, 2, 1, 3 of 16, or
  // groups' even, even, odd, odd values.
  if constexpr (BLOCKS16)
    return _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_unpacklo_epi64(lo, hi)), _mm256_unpackhi_epi64(lo, hi), 1);
  else
    return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

// The scales of the blocks step c covers, spread over its 16 lanes: PER
// blocks per step (4: blocks of 16, 2: of 32), or 1: a block of 64 << shift.
template <int PER>
inline __m512 lane_scales(const float* s, int64_t c, int64_t kb, int shift) {
  if constexpr (PER == 1) {
    return _mm512_set1_ps(s[c >> shift]);
  } else {
    const int64_t b0 = c * PER;
    __m128 v;
    if (b0 + PER <= kb)
      v = PER == 4 ? _mm_loadu_ps(s + b0) : _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + b0)));
    else
      v = _mm_maskz_loadu_ps(static_cast<__mmask8>((1u << (kb - b0)) - 1), s + b0);
    // (the quarters in the order 0, 2, 1, 3)
    const __m512i idx = PER == 4 ? _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3)
                                 : _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1);
    return _mm512_permutexvar_ps(idx, _mm512_zextps128_ps512(v));
  }
}

// Sum of 16 lanes in a fixed tree (halves, then quarters, ...).
inline float reduce16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

inline __m512i dots_madd512(__m512i w, __m512i a) {
  return _mm512_madd_epi16(_mm512_maddubs_epi16(w, a), _mm512_set1_epi16(1));
}

__attribute__((target("avx512vnni"), always_inline)) inline __m512i dots_vnni512(__m512i w, __m512i a) {
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, a);
}

// NC columns side by side (4 for one row, 2 for two): NC * R independent
// sums, so the float multiply-add chains overlap instead of each column
// waiting on its own, and every activation load serves NC columns; the
// codes, scales and zero points of the columns 16 ahead are asked for as
// these run (the hardware prefetchers left the loop waiting on memory).
// Each column's operations are the ones it gets alone, in the same order.
constexpr int64_t kAheadColumns = 16;
#define SPINDLE_NBITS_Q8_COLUMNS512(NAME, DOTS, ATTR)                                                  \
  template <int R, int PER, int NC>                                                                     \
  ATTR inline void NAME##_group(const NbitsWeights& w, const NbitsQ8A& p, int64_t n, int64_t steps,      \
                                int shift) {                                                            \
    const int64_t kb = w.k_blocks, row_bytes = kb * w.blob;                                             \
    __m512 acc[NC][R];                                                                                  \
    for (int j = 0; j < NC; ++j)                                                                        \
      for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();                                      \
    if (n + NC + kAheadColumns <= w.N)                                                                  \
      for (int j = 0; j < NC; ++j) {                                                                    \
        const int64_t ahead = (n + j + kAheadColumns) * kb;                                             \
        for (int64_t b = 0; b < kb; b += 16) {                                                          \
          _mm_prefetch(reinterpret_cast<const char*>(w.scale + ahead + b), _MM_HINT_T0);                \
          _mm_prefetch(reinterpret_cast<const char*>(p.zero + ahead + b), _MM_HINT_T0);                 \
        }                                                                                               \
      }                                                                                                 \
    for (int64_t c = 0; c < steps; ++c) {                                                               \
      __m512i codes[NC];                                                                                \
      __m512 sbv[NC];                                                                                   \
      for (int j = 0; j < NC; ++j) {                                                                    \
        if (n + j + kAheadColumns < w.N && (c & 1) == 0)                                                \
          _mm_prefetch(reinterpret_cast<const char*>(w.b + (n + j + kAheadColumns) * row_bytes + 32 * c),  \
                       _MM_HINT_T0);                                                                    \
        codes[j] = codes64<PER == 4>(w.b + (n + j) * row_bytes + 32 * c, row_bytes - 32 * c);           \
        sbv[j] = lane_scales<PER>(w.scale + (n + j) * kb, c, kb, shift);                                \
      }                                                                                                 \
      for (int r = 0; r < R; ++r) {                                                                     \
        const __m512i av = _mm512_loadu_si512(p.q + r * p.ld + 64 * c);                                 \
        const __m512 ls = _mm512_loadu_ps(p.lane_scale + (r * steps + c) * 16);                         \
        for (int j = 0; j < NC; ++j)                                                                    \
          acc[j][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(DOTS(codes[j], av)), _mm512_mul_ps(ls, sbv[j]), \
                                      acc[j][r]);                                                       \
      }                                                                                                 \
    }                                                                                                   \
    for (int j = 0; j < NC; ++j) {                                                                      \
      __m512 corr[R];                                                                                   \
      for (int r = 0; r < R; ++r) corr[r] = _mm512_setzero_ps();                                        \
      const uint8_t* z = p.zero + (n + j) * kb;                                                         \
      const float* sb = w.scale + (n + j) * kb;                                                         \
      for (int64_t b = 0; b < kb; b += 16) {                                                            \
        const __mmask16 m = kb - b >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (kb - b)) - 1);       \
        const __m512 zs = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, z + b))), \
                                        _mm512_maskz_loadu_ps(m, sb + b));                              \
        for (int r = 0; r < R; ++r)                                                                     \
          corr[r] = _mm512_fmadd_ps(zs, _mm512_maskz_loadu_ps(m, p.scaled_sum + r * kb + b), corr[r]);  \
      }                                                                                                 \
      for (int r = 0; r < R; ++r) {                                                                     \
        const float v = reduce16(_mm512_sub_ps(acc[j][r], corr[r]));                                    \
        p.y[r * p.ldy + n + j] = p.bias ? v + p.bias[n + j] : v;                                        \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
  template <int R, int PER>                                                                             \
  ATTR void NAME(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {                    \
    const int64_t steps = (w.k_blocks * w.block_size + 63) / 64;                                        \
    int shift = 0;                                                                                      \
    while ((int64_t{64} << shift) < w.block_size) ++shift;                                              \
    constexpr int kCols = R == 1 ? 4 : R == 2 ? 2 : 1;                                                  \
    int64_t n = n0;                                                                                     \
    for (; n + kCols <= n1; n += kCols) NAME##_group<R, PER, kCols>(w, p, n, steps, shift);             \
    for (; n < n1; ++n) NAME##_group<R, PER, 1>(w, p, n, steps, shift);                                 \
  }

SPINDLE_NBITS_Q8_COLUMNS512(columns512, dots_madd512, )
SPINDLE_NBITS_Q8_COLUMNS512(columns512_vnni, dots_vnni512, __attribute__((target("avx512vnni"))))
#undef SPINDLE_NBITS_Q8_COLUMNS512
#endif

template <int R>
void run_rows(const NbitsWeights& w, const NbitsQ8A& p, int64_t n0, int64_t n1) {
#if defined(__AVX512F__)
  const int64_t bs = w.block_size;
  if (p.vnni) {
    if (bs == 16) columns512_vnni<R, 4>(w, p, n0, n1);
    else if (bs == 32) columns512_vnni<R, 2>(w, p, n0, n1);
    else columns512_vnni<R, 1>(w, p, n0, n1);
  } else {
    if (bs == 16) columns512<R, 4>(w, p, n0, n1);
    else if (bs == 32) columns512<R, 2>(w, p, n0, n1);
    else columns512<R, 1>(w, p, n0, n1);
  }
#else
  columns<R>(w, p, n0, n1);
#endif
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

bool nbits_gemv_q8_swaps_quarters() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

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
