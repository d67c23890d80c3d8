// nbits_q4.isa.cpp — 4-bit weights kept in panels of 16 columns (nbits.h's
// NbitsQ4Panels) for the int8 products of accuracy_level 4, compiled once
// per ISA level: the packing, the few-row product (nbits_q4_gemv) and the
// unpacking into the int8 GEMM's panels (nbits_q4_to_q8).
//
// The few-row product at AVX-512: 16 columns per register, 4 values of a
// row broadcast against 4 values of each column, the codes unpacked in
// registers from 64 bytes (a 4-byte word of each column) that hold two
// such steps (its low and its high nibbles),
// summed with vpdpbusd (VNNI; vpmaddubsw + vpmaddwd without: codes <= 15,
// |qa| <= 127, far from int16's saturation) in two independent sets of
// accumulators (the two nibbles). Per block, the exact integer sum less
// zero * sum(qa) (both below 2^24: exact in float) is added to the float
// sums with one fused multiply-add by scale_a * scale_b: nbits_q8_gemm's
// arithmetic, so a row gets the same bits whichever of the two runs it.
// The baseline and AVX2 levels write the same arithmetic in plain loops
// (a separate multiply and add): the reference the tests hold AVX-512 to;
// MatMulNBits keeps panels only at the AVX-512 level.
#include <cstdint>
#include <cstring>

#include "primitives/gemm/nbits.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

using ::spindle::kernels::NbitsQ4A;
using ::spindle::kernels::NbitsQ4Panels;
using ::spindle::kernels::NbitsWeights;

// Panel q's three parts.
struct Q4Panel {
  const uint8_t* codes;  // per block, 8 * block_size bytes
  const float* scale;    // per block, 16
  const uint8_t* zero;   // per block, 16
};

inline Q4Panel q4_panel(const NbitsQ4Panels& w, int64_t q) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  const uint8_t* base = w.data + q * ::spindle::kernels::nbits_q4_panel_bytes(kb, bs);
  return {base, reinterpret_cast<const float*>(base + kb * 8 * bs), base + kb * (8 * bs + 64)};
}

#if !defined(__AVX512F__)
// The code of column j at position p of A's layout within block b: in a
// group of G = min(32, block_size) values, position i < G / 2 is the low
// nibble of the group's byte i, G / 2 + i the high nibble of byte i; byte
// c of the block is byte (c / 4) * 64 + 4j + c % 4 of the block's codes.
inline int code_at(const Q4Panel& pn, int64_t bs, int64_t b, int64_t j, int64_t p) {
  const int64_t G = bs < 32 ? bs : 32, i = p % G, c = p / G * (G / 2) + i % (G / 2);
  const uint8_t byte = pn.codes[b * 8 * bs + c / 4 * 64 + 4 * j + c % 4];
  return i < G / 2 ? byte & 0x0F : byte >> 4;
}
#endif

}  // namespace

bool nbits_q4_panels_used() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

void nbits_q4_pack(const NbitsWeights& w, const uint8_t* zero, uint8_t* dst) {
  const int64_t kb = w.k_blocks, bs = w.block_size, words = bs / 8;  // 4-byte words per block
  const int64_t panels = (w.N + 15) / 16, panel_bytes = ::spindle::kernels::nbits_q4_panel_bytes(kb, bs);
  std::memset(dst, 0, static_cast<size_t>(panels * panel_bytes));
  for (int64_t q = 0; q < panels; ++q) {
    uint8_t* codes = dst + q * panel_bytes;
    auto* scale = reinterpret_cast<float*>(codes + kb * 8 * bs);
    uint8_t* zp = codes + kb * (8 * bs + 64);
    for (int64_t j = 0; j < 16 && 16 * q + j < w.N; ++j) {
      const int64_t n = 16 * q + j;
      const uint8_t* col = w.b + n * kb * w.blob;
      for (int64_t b = 0; b < kb; ++b) {
        for (int64_t t = 0; t < words; ++t)
          std::memcpy(codes + b * 8 * bs + t * 64 + 4 * j, col + b * w.blob + 4 * t, 4);
        scale[b * 16 + j] = w.scale[n * kb + b];
        zp[b * 16 + j] = zero[n * kb + b];
      }
    }
  }
}

namespace {

#if !defined(__AVX512F__)
// Plain loops: columns [n0, n1) of every row, block after block.
void gemv_loops(const NbitsQ4Panels& w, const NbitsQ4A& p, int64_t n0, int64_t n1) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t n = n0; n < n1; ++n) {
      const Q4Panel pn = q4_panel(w, n / 16);
      const int64_t j = n % 16;
      float acc = 0.0f;
      for (int64_t b = 0; b < kb; ++b) {
        const int8_t* a = p.q + r * p.ld + b * bs;
        int32_t dot = 0;
        for (int64_t k = 0; k < bs; ++k) dot += code_at(pn, bs, b, j, k) * a[k];
        dot -= pn.zero[b * 16 + j] * p.sum[r * kb + b];
        acc += static_cast<float>(dot) * (p.scale[r * kb + b] * pn.scale[b * 16 + j]);
      }
      p.y[r * p.ldy + n] = p.bias ? acc + p.bias[n] : acc;
    }
}

#else

inline __m512i dots_madd(__m512i acc, __m512i codes, __m512i a) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(codes, a), _mm512_set1_epi16(1)));
}

__attribute__((target("avx512vnni"), always_inline)) inline __m512i dots_vnni(__m512i acc, __m512i codes,
                                                                             __m512i a) {
  return _mm512_dpbusd_epi32(acc, codes, a);
}

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

constexpr int64_t kAheadBytes = 4096;

// (GCC 12's unmasked conversions pass an "undefined" vector that
// -Wmaybe-uninitialized flags.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// R rows x NP panels from panel q0; columns past n1 are not stored. The
// bytes of block b + D of each panel are asked for as block b is read
// (about kAheadBytes ahead over the tile; past the last block, the next NP
// panels' first blocks when `ahead`): the tile reads 3 NP streams, which
// the hardware prefetchers left waiting on memory.
#define SPINDLE_NBITS_Q4_TILE(NAME, DOTS, ATTR)                                                              \
  template <int R, int NP>                                                                                   \
  ATTR void NAME(const NbitsQ4Panels& w, const NbitsQ4A& p, int64_t q0, int64_t n1, bool ahead) {            \
    const int64_t kb = w.k_blocks, bs = w.block_size, H = bs / 8;  /* 4-byte words of a block */             \
    const int64_t G = bs < 32 ? bs : 32, wpg = G / 8;  /* values and words of a group */                     \
    const int64_t next = NP * ::spindle::kernels::nbits_q4_panel_bytes(kb, bs);                              \
    const int64_t D = kAheadBytes / (NP * 8 * bs) > 1 ? kAheadBytes / (NP * 8 * bs) : 1;                    \
    Q4Panel pn[NP];                                                                                          \
    for (int q = 0; q < NP; ++q) pn[q] = q4_panel(w, q0 + q);                                                \
    const __m512i nib = _mm512_set1_epi8(0x0F);                                                              \
    __m512 acc[R][NP];                                                                                       \
    for (int r = 0; r < R; ++r)                                                                              \
      for (int q = 0; q < NP; ++q) acc[r][q] = _mm512_setzero_ps();                                          \
    for (int64_t b = 0; b < kb; ++b) {                                                                       \
      /* the block D ahead: in these panels, or the next ones' (offset `next`) */                            \
      const int64_t bt = b + D < kb ? b + D : b + D - kb, off = b + D < kb ? 0 : next;                       \
      const bool fetch = b + D < kb || (ahead && bt < kb);                                                   \
      __m512i lo_sum[R][NP], hi_sum[R][NP];                                                                  \
      for (int r = 0; r < R; ++r)                                                                            \
        for (int q = 0; q < NP; ++q) lo_sum[r][q] = hi_sum[r][q] = _mm512_setzero_si512();                   \
      for (int64_t t = 0; t < H; ++t) {                                                                      \
        __m512i lo[NP], hi[NP];                                                                              \
        for (int q = 0; q < NP; ++q) {                                                                       \
          if (fetch) _mm_prefetch(reinterpret_cast<const char*>(pn[q].codes + off + bt * 8 * bs + t * 64), _MM_HINT_T0); \
          const __m512i v = _mm512_loadu_si512(pn[q].codes + b * 8 * bs + t * 64);                          \
          lo[q] = _mm512_and_si512(v, nib);                                                                  \
          hi[q] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);                                            \
        }                                                                                                    \
        for (int r = 0; r < R; ++r) {                                                                        \
          const int8_t* a = p.q + r * p.ld + b * bs + t / wpg * G + 4 * (t % wpg);                           \
          const __m512i al = broadcast4(a), ah = broadcast4(a + G / 2);                                      \
          for (int q = 0; q < NP; ++q) {                                                                     \
            lo_sum[r][q] = DOTS(lo_sum[r][q], lo[q], al);                                                    \
            hi_sum[r][q] = DOTS(hi_sum[r][q], hi[q], ah);                                                    \
          }                                                                                                  \
        }                                                                                                    \
      }                                                                                                      \
      for (int q = 0; q < NP; ++q) {                                                                         \
        if (fetch) {                                                                                         \
          _mm_prefetch(reinterpret_cast<const char*>(pn[q].scale + bt * 16) + off, _MM_HINT_T0);            \
          if (bt % 4 == 0) _mm_prefetch(reinterpret_cast<const char*>(pn[q].zero + bt * 16 + off), _MM_HINT_T0); \
        }                                                                                                    \
        const __m512 z = _mm512_cvtepi32_ps(                                                                 \
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pn[q].zero + b * 16))));  \
        const __m512 sb = _mm512_loadu_ps(pn[q].scale + b * 16);                                             \
        for (int r = 0; r < R; ++r) {                                                                        \
          const __m512 dot = _mm512_fnmadd_ps(z, _mm512_set1_ps(static_cast<float>(p.sum[r * kb + b])),     \
                                              _mm512_cvtepi32_ps(_mm512_add_epi32(lo_sum[r][q], hi_sum[r][q]))); \
          acc[r][q] = _mm512_fmadd_ps(dot, _mm512_mul_ps(sb, _mm512_set1_ps(p.scale[r * kb + b])), acc[r][q]); \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
    for (int q = 0; q < NP; ++q) {                                                                           \
      const int64_t n = (q0 + q) * 16, c = n1 - n < 16 ? n1 - n : 16;                                        \
      const __mmask16 m = static_cast<__mmask16>(c >= 16 ? 0xFFFF : (1u << c) - 1);                         \
      const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(m, p.bias + n) : _mm512_setzero_ps();               \
      for (int r = 0; r < R; ++r)                                                                            \
        _mm512_mask_storeu_ps(p.y + r * p.ldy + n, m, p.bias ? _mm512_add_ps(acc[r][q], bias) : acc[r][q]);  \
    }                                                                                                        \
  }

SPINDLE_NBITS_Q4_TILE(tile_madd, dots_madd, )
SPINDLE_NBITS_Q4_TILE(tile_vnni, dots_vnni, __attribute__((target("avx512vnni"))))
#undef SPINDLE_NBITS_Q4_TILE
#pragma GCC diagnostic pop

// Panels [q0, q1) for R rows: NP = 4 / R panels at a time (8 chains of
// vpdpbusd in flight), then one at a time.
template <int R>
void rows_of(const NbitsQ4Panels& w, const NbitsQ4A& p, int64_t q0, int64_t q1, int64_t n1) {
  constexpr int NP = R == 1 ? 4 : R == 2 ? 2 : 1;
  // The first tile's first kAheadBytes, which no tile before asks for.
  const int64_t bs = w.block_size, first = kAheadBytes / NP;
  for (int64_t q = q0; q < q0 + NP && q < q1; ++q) {
    const Q4Panel pn = q4_panel(w, q);
    for (int64_t off = 0; off < first && off < w.k_blocks * 8 * bs; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(pn.codes + off), _MM_HINT_T0);
      if (off % (8 * bs) == 0) _mm_prefetch(reinterpret_cast<const char*>(pn.scale + off / (8 * bs) * 16), _MM_HINT_T0);
    }
    _mm_prefetch(reinterpret_cast<const char*>(pn.zero), _MM_HINT_T0);
  }
  int64_t q = q0;
  for (; q + NP <= q1; q += NP) {
    const bool ahead = q + 2 * NP <= q1;
    p.vnni ? tile_vnni<R, NP>(w, p, q, n1, ahead) : tile_madd<R, NP>(w, p, q, n1, ahead);
  }
  for (; q < q1; ++q) p.vnni ? tile_vnni<R, 1>(w, p, q, n1, false) : tile_madd<R, 1>(w, p, q, n1, false);
}

#endif

}  // namespace

void nbits_q4_gemv(const NbitsQ4Panels& w, const NbitsQ4A& p, int64_t n0, int64_t n1) {
  if (p.rows <= 0 || n1 <= n0) return;
#if defined(__AVX512F__)
  const int64_t q0 = n0 / 16, q1 = (n1 + 15) / 16;
  switch (p.rows) {
    case 1: rows_of<1>(w, p, q0, q1, n1); break;
    case 2: rows_of<2>(w, p, q0, q1, n1); break;
    case 3: rows_of<3>(w, p, q0, q1, n1); break;
    default: rows_of<4>(w, p, q0, q1, n1); break;
  }
#else
  gemv_loops(w, p, n0, n1);
#endif
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// NbitsQ8Gemm's panel q: codes (16 * kb * bs int8), corrections (16 * kb
// int32), scales (16 * kb float), nbits_q8_gemm's layout.
void nbits_q4_to_q8(const NbitsQ4Panels& w, int64_t n0, int64_t n1, uint8_t* dst) {
  const int64_t kb = w.k_blocks, bs = w.block_size;
  const int64_t out_bytes = ::spindle::kernels::nbits_q8_panel_bytes(kb, bs);
  for (int64_t q = 0; q * 16 < n1 - n0; ++q) {
    const Q4Panel pn = q4_panel(w, n0 / 16 + q);
    auto* codes = reinterpret_cast<int8_t*>(dst + q * out_bytes);
    auto* corr = reinterpret_cast<int32_t*>(codes + 16 * kb * bs);
    auto* scale = reinterpret_cast<float*>(corr + 16 * kb);
    std::memcpy(scale, pn.scale, static_cast<size_t>(16 * kb) * sizeof(float));
    for (int64_t b = 0; b < kb; ++b) {
      int8_t* out = codes + b * bs * 16;
#if defined(__AVX512F__)
      const uint8_t* in = pn.codes + b * 8 * bs;
      const int64_t H = bs / 8, wpg = (bs < 32 ? bs : 32) / 8;  // words of the block, of a group
      const __m512i zl = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pn.zero + b * 16)));
      const __m512i zb = _mm512_mullo_epi32(zl, _mm512_set1_epi32(0x01010101));
      const __m512i nib = _mm512_set1_epi8(0x0F), ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
      __m512i sum = _mm512_setzero_si512();
      for (int64_t t = 0; t < H; ++t) {
        const __m512i v = _mm512_loadu_si512(in + t * 64);
        const __m512i lo = _mm512_and_si512(v, nib), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);
        const int64_t step = t / wpg * 2 * wpg + t % wpg;  // (A's layout: a group's low nibbles, then its high ones)
        _mm512_storeu_si512(out + step * 64, _mm512_sub_epi8(lo, zb));
        _mm512_storeu_si512(out + (step + wpg) * 64, _mm512_sub_epi8(hi, zb));
        sum = _mm512_add_epi32(sum, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_add_epi8(lo, hi), ones8), ones16));
      }
      // -128 * (sum of codes - bs * zero)
      const __m512i c = _mm512_slli_epi32(_mm512_sub_epi32(_mm512_mullo_epi32(zl, _mm512_set1_epi32(static_cast<int32_t>(bs))), sum), 7);
      _mm512_storeu_si512(corr + b * 16, c);
#else
      for (int64_t j = 0; j < 16; ++j) {
        const int z = pn.zero[b * 16 + j];
        int32_t sum = 0;
        for (int64_t k = 0; k < bs; ++k) {
          const int v = code_at(pn, bs, b, j, k) - z;
          out[k / 4 * 64 + 4 * j + k % 4] = static_cast<int8_t>(v);
          sum += v;
        }
        corr[b * 16 + j] = -128 * sum;
      }
#endif
    }
  }
}

#pragma GCC diagnostic pop

}  // namespace spindle::kernels::SPINDLE_ISA_NS
