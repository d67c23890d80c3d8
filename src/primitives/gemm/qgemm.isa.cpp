// qgemm.isa.cpp — the 8-bit integer GEMM's micro-kernels, compiled once per
// ISA level (docs/isa-dispatch.md); qgemm_isa.h describes the packed B and
// what a call computes.
//
// Each k group multiplies 4 bytes of a row of A, broadcast to every 32-bit
// lane, by 4 bytes of each column of B and adds the four products to the
// column's int32 lane. With AVX512-VNNI that is one vpdpbusd (uint8 x int8,
// no saturation). Without it the same sums come exactly from 16-bit
// products: the even and the odd bytes of A (zero-extended) and of B
// (sign-extended) go through pmaddwd, whose pair sums (at most 2 * 255 * 128)
// cannot saturate, unlike pmaddubsw's. The register tile is MR rows x NP
// panels of 16 columns; the tile's sums go through a small buffer to the
// epilogue (zero-point terms, then int32, the dequantized float or the
// requantized 8-bit values).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "primitives/gemm/qgemm_isa.h"
#include "primitives/gemm/qgemm_vnni_step.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

#if defined(__AVX512F__)
using V = __m512i;
constexpr int kVpp = 1;  // vectors per panel
#define QV_LOAD(p) _mm512_loadu_si512(static_cast<const void*>(p))
#define QV_STORE(p, v) _mm512_storeu_si512(static_cast<void*>(p), v)
#define QV_SET1(x) _mm512_set1_epi32(x)
#define QV_ZERO() _mm512_setzero_si512()
#define QV_AND(a, b) _mm512_and_si512(a, b)
#define QV_SRLI16(a, s) _mm512_srli_epi16(a, s)
#define QV_SRAI16(a, s) _mm512_srai_epi16(a, s)
#define QV_SLLI16(a, s) _mm512_slli_epi16(a, s)
#define QV_MADD(a, b) _mm512_madd_epi16(a, b)
#define QV_ADD(a, b) _mm512_add_epi32(a, b)
constexpr int kMaxMr = 6;
#elif defined(__AVX2__)
using V = __m256i;
constexpr int kVpp = 2;
#define QV_LOAD(p) _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
#define QV_STORE(p, v) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v)
#define QV_SET1(x) _mm256_set1_epi32(x)
#define QV_ZERO() _mm256_setzero_si256()
#define QV_AND(a, b) _mm256_and_si256(a, b)
#define QV_SRLI16(a, s) _mm256_srli_epi16(a, s)
#define QV_SRAI16(a, s) _mm256_srai_epi16(a, s)
#define QV_SLLI16(a, s) _mm256_slli_epi16(a, s)
#define QV_MADD(a, b) _mm256_madd_epi16(a, b)
#define QV_ADD(a, b) _mm256_add_epi32(a, b)
constexpr int kMaxMr = 4;
#else
using V = __m128i;
constexpr int kVpp = 4;
#define QV_LOAD(p) _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
#define QV_STORE(p, v) _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v)
#define QV_SET1(x) _mm_set1_epi32(x)
#define QV_ZERO() _mm_setzero_si128()
#define QV_AND(a, b) _mm_and_si128(a, b)
#define QV_SRLI16(a, s) _mm_srli_epi16(a, s)
#define QV_SRAI16(a, s) _mm_srai_epi16(a, s)
#define QV_SLLI16(a, s) _mm_slli_epi16(a, s)
#define QV_MADD(a, b) _mm_madd_epi16(a, b)
#define QV_ADD(a, b) _mm_add_epi32(a, b)
constexpr int kMaxMr = 2;
#endif

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

constexpr int kVecBytes = static_cast<int>(64 / kVpp);
constexpr int kGroupBytes = 64;  // one k group of one panel

// 4 whole bytes of A at p as an int32 (broadcast straight from memory).
inline int32_t load_a4_full(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 4 bytes of A at p (k4 of them valid, the rest zero), flipped, as an int32.
inline int32_t load_a4(const uint8_t* p, int k4, uint32_t flip4) {
  uint32_t v;
  if (k4 == 4) std::memcpy(&v, p, 4);
  else v = load_part_a4(p, k4);
  return static_cast<int32_t>(v ^ flip4);
}

// The body of a register tile: acc[r][t] over every k group; kDp(acc, a, b)
// adds one group's products.
#define QGEMM_TILE_BODY(DP)                                                                      \
  V acc[MR][NP * kVpp];                                                                          \
  for (int r = 0; r < MR; ++r)                                                                   \
    for (int t = 0; t < NP * kVpp; ++t) acc[r][t] = QV_ZERO();                                   \
  const int64_t groups = (k + 3) / 4, full = k / 4;                                              \
  const int64_t pstride = groups * kGroupBytes;                                                  \
  for (int64_t g = 0; g < groups; ++g) {                                                         \
    const int k4 = g < full ? 4 : static_cast<int>(k - 4 * full);                                \
    V b[NP * kVpp];                                                                              \
    for (int p = 0; p < NP; ++p)                                                                 \
      for (int v = 0; v < kVpp; ++v) b[p * kVpp + v] = QV_LOAD(pb + p * pstride + g * kGroupBytes + v * kVecBytes); \
    DP##_PREP_B                                                                                  \
    for (int r = 0; r < MR; ++r) {                                                               \
      const V av = QV_SET1(load_a4(a + r * lda + 4 * g, k4, flip4));                             \
      DP##_PREP_A                                                                                \
      for (int t = 0; t < NP * kVpp; ++t) DP##_STEP;                                             \
    }                                                                                            \
  }                                                                                              \
  for (int r = 0; r < MR; ++r)                                                                   \
    for (int t = 0; t < NP * kVpp; ++t) QV_STORE(out + r * 64 + t * (16 / kVpp), acc[r][t]);

// Exact pmaddwd emulation of vpdpbusd.
#define EMU_PREP_B                                                  \
  V be[NP * kVpp], bo[NP * kVpp];                                   \
  for (int t = 0; t < NP * kVpp; ++t) {                             \
    be[t] = QV_SRAI16(QV_SLLI16(b[t], 8), 8);                       \
    bo[t] = QV_SRAI16(b[t], 8);                                     \
  }
#define EMU_PREP_A                                                  \
  const V ae = QV_AND(av, QV_SET1(0x00FF00FF)), ao = QV_SRLI16(av, 8);
#define EMU_STEP acc[r][t] = QV_ADD(acc[r][t], QV_ADD(QV_MADD(ae, be[t]), QV_MADD(ao, bo[t])))

// out: MR rows of NP * 16 int32 sums, row stride 64.
template <int MR, int NP>
void tile_emulated(const uint8_t* a, int64_t lda, uint32_t flip4, int64_t k, const int8_t* pb, int32_t* out) {
  QGEMM_TILE_BODY(EMU)
}

#if defined(__AVX512F__)
// The VNNI tile with its accumulators as named variables (an array of 24
// vectors is too large for the compiler to keep in registers): rows r < MR,
// panels p < NP (1, 2 or 4); c<r><p> is row r's sums of panel p.
#define QG_A(r) (a + (r) * lda + 4 * g)
#define VNNI_GROUP QG_VNNI_GROUP(kGroupBytes)
#define VNNI_STORE_ROW(r)                                                           \
  if constexpr (MR > r) {                                                           \
    _mm512_storeu_si512(out + (r) * 64, c##r##0);                                   \
    if constexpr (NP > 1) _mm512_storeu_si512(out + (r) * 64 + 16, c##r##1);        \
    if constexpr (NP > 2) {                                                         \
      _mm512_storeu_si512(out + (r) * 64 + 32, c##r##2);                            \
      _mm512_storeu_si512(out + (r) * 64 + 48, c##r##3);                            \
    }                                                                               \
  }
#define VNNI_DECL_ROW(r) __m512i c##r##0 = z, c##r##1 = z, c##r##2 = z, c##r##3 = z;

#define VNNI_LOAD_ROW(r)                                                            \
  if constexpr (MR > r) {                                                           \
    c##r##0 = _mm512_loadu_si512(out + (r) * 64);                                   \
    if constexpr (NP > 1) c##r##1 = _mm512_loadu_si512(out + (r) * 64 + 16);        \
    if constexpr (NP > 2) {                                                         \
      c##r##2 = _mm512_loadu_si512(out + (r) * 64 + 32);                            \
      c##r##3 = _mm512_loadu_si512(out + (r) * 64 + 48);                            \
    }                                                                               \
  }

// The whole k groups [0, full) into out.
template <int MR, int NP, bool FLIP>
__attribute__((target("avx512vnni"), always_inline)) inline void vnni_body(const uint8_t* a, int64_t lda,
                                                                            uint32_t flip4, int64_t full,
                                                                            int64_t pstride, const int8_t* pb,
                                                                            int32_t* out) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i vflip = _mm512_set1_epi32(static_cast<int32_t>(flip4));
  VNNI_DECL_ROW(0) VNNI_DECL_ROW(1) VNNI_DECL_ROW(2) VNNI_DECL_ROW(3) VNNI_DECL_ROW(4) VNNI_DECL_ROW(5)
  for (int64_t g = 0; g < full; ++g) {
#define LOADA(p) load_a4_full(p)
    VNNI_GROUP
#undef LOADA
  }
  VNNI_STORE_ROW(0) VNNI_STORE_ROW(1) VNNI_STORE_ROW(2) VNNI_STORE_ROW(3) VNNI_STORE_ROW(4) VNNI_STORE_ROW(5)
}

// The partial last k group g (k4 < 4 bytes of A) added to out.
template <int MR, int NP, bool FLIP>
__attribute__((target("avx512vnni"), noinline)) void vnni_tail(const uint8_t* a, int64_t lda, uint32_t flip4,
                                                                int64_t g, int k4, int64_t pstride,
                                                                const int8_t* pb, int32_t* out) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i vflip = _mm512_set1_epi32(static_cast<int32_t>(flip4));
  VNNI_DECL_ROW(0) VNNI_DECL_ROW(1) VNNI_DECL_ROW(2) VNNI_DECL_ROW(3) VNNI_DECL_ROW(4) VNNI_DECL_ROW(5)
  VNNI_LOAD_ROW(0) VNNI_LOAD_ROW(1) VNNI_LOAD_ROW(2) VNNI_LOAD_ROW(3) VNNI_LOAD_ROW(4) VNNI_LOAD_ROW(5)
#define LOADA(p) load_a4(p, k4, 0)
  VNNI_GROUP
#undef LOADA
  VNNI_STORE_ROW(0) VNNI_STORE_ROW(1) VNNI_STORE_ROW(2) VNNI_STORE_ROW(3) VNNI_STORE_ROW(4) VNNI_STORE_ROW(5)
}

// How far vnni_row asks for B ahead of its loads, in k groups (1 KB of
// each panel): decode products stream B from memory once.
constexpr int64_t kRowAhead = 16;

// One row (a matrix-vector product, decode's shape): the even and the odd k
// groups in two sets of accumulators, so that 2 x NP sums are in flight
// instead of NP (vpdpbusd's latency would otherwise bound the row).
template <int NP, bool FLIP>
__attribute__((target("avx512vnni"), always_inline)) inline void vnni_row(const uint8_t* a, uint32_t flip4,
                                                                           int64_t full, int64_t pstride,
                                                                           const int8_t* pb, int32_t* out) {
  const __m512i z = _mm512_setzero_si512();
  const __m512i vflip = _mm512_set1_epi32(static_cast<int32_t>(flip4));
  __m512i c0 = z, c1 = z, c2 = z, c3 = z, d0 = z, d1 = z, d2 = z, d3 = z;
  int64_t g = 0;
  for (; g + 2 <= full; g += 2) {
    const int8_t* bp = pb + g * kGroupBytes;
    // The two lines kRowAhead groups on in each panel, or past a panel's
    // end the same lines of the panel NP on (the next tile's; a prefetch
    // past the matrix is harmless).
    const int8_t* ahead = g + kRowAhead + 2 <= full ? bp + kRowAhead * kGroupBytes
                                                    : bp + NP * pstride + (kRowAhead - full) * kGroupBytes;
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      _mm_prefetch(reinterpret_cast<const char*>(ahead + q * pstride), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ahead + q * pstride + kGroupBytes), _MM_HINT_T0);
    }
    __m512i av = _mm512_set1_epi32(load_a4_full(a + 4 * g));
    __m512i aw = _mm512_set1_epi32(load_a4_full(a + 4 * g + 4));
    if constexpr (FLIP) av = _mm512_xor_si512(av, vflip), aw = _mm512_xor_si512(aw, vflip);
    c0 = _mm512_dpbusd_epi32(c0, av, _mm512_loadu_si512(bp));
    d0 = _mm512_dpbusd_epi32(d0, aw, _mm512_loadu_si512(bp + kGroupBytes));
    if constexpr (NP > 1) {
      c1 = _mm512_dpbusd_epi32(c1, av, _mm512_loadu_si512(bp + pstride));
      d1 = _mm512_dpbusd_epi32(d1, aw, _mm512_loadu_si512(bp + pstride + kGroupBytes));
    }
    if constexpr (NP > 2) {
      c2 = _mm512_dpbusd_epi32(c2, av, _mm512_loadu_si512(bp + 2 * pstride));
      d2 = _mm512_dpbusd_epi32(d2, aw, _mm512_loadu_si512(bp + 2 * pstride + kGroupBytes));
      c3 = _mm512_dpbusd_epi32(c3, av, _mm512_loadu_si512(bp + 3 * pstride));
      d3 = _mm512_dpbusd_epi32(d3, aw, _mm512_loadu_si512(bp + 3 * pstride + kGroupBytes));
    }
  }
  if (g < full) {
    const int8_t* bp = pb + g * kGroupBytes;
    __m512i av = _mm512_set1_epi32(load_a4_full(a + 4 * g));
    if constexpr (FLIP) av = _mm512_xor_si512(av, vflip);
    c0 = _mm512_dpbusd_epi32(c0, av, _mm512_loadu_si512(bp));
    if constexpr (NP > 1) c1 = _mm512_dpbusd_epi32(c1, av, _mm512_loadu_si512(bp + pstride));
    if constexpr (NP > 2) {
      c2 = _mm512_dpbusd_epi32(c2, av, _mm512_loadu_si512(bp + 2 * pstride));
      c3 = _mm512_dpbusd_epi32(c3, av, _mm512_loadu_si512(bp + 3 * pstride));
    }
  }
  _mm512_storeu_si512(out, _mm512_add_epi32(c0, d0));
  if constexpr (NP > 1) _mm512_storeu_si512(out + 16, _mm512_add_epi32(c1, d1));
  if constexpr (NP > 2) {
    _mm512_storeu_si512(out + 32, _mm512_add_epi32(c2, d2));
    _mm512_storeu_si512(out + 48, _mm512_add_epi32(c3, d3));
  }
}

template <int MR, int NP>
__attribute__((target("avx512vnni"))) void tile_vnni(const uint8_t* a, int64_t lda, uint32_t flip4, int64_t k,
                                                     const int8_t* pb, int32_t* out) {
  const int64_t groups = (k + 3) / 4, full = k / 4;
  const int64_t pstride = groups * kGroupBytes;
  if constexpr (MR == 1) {
    if (flip4) vnni_row<NP, true>(a, flip4, full, pstride, pb, out);
    else vnni_row<NP, false>(a, flip4, full, pstride, pb, out);
  } else {
    if (flip4) vnni_body<MR, NP, true>(a, lda, flip4, full, pstride, pb, out);
    else vnni_body<MR, NP, false>(a, lda, flip4, full, pstride, pb, out);
  }
  if (full < groups) {
    if (flip4) vnni_tail<MR, NP, true>(a, lda, flip4, full, static_cast<int>(k - 4 * full), pstride, pb, out);
    else vnni_tail<MR, NP, false>(a, lda, flip4, full, static_cast<int>(k - 4 * full), pstride, pb, out);
  }
}
#endif

using TileFn = void (*)(const uint8_t*, int64_t, uint32_t, int64_t, const int8_t*, int32_t*);

template <int MR>
TileFn tile_for(int np, bool vnni) {
#if defined(__AVX512F__)
  if (vnni) return np == 4 ? &tile_vnni<MR, 4> : np == 2 ? &tile_vnni<MR, 2> : &tile_vnni<MR, 1>;
#else
  (void)vnni;
#endif
  return np >= 2 ? &tile_emulated<MR, 2> : &tile_emulated<MR, 1>;
}

TileFn select_tile(int mr, int np, bool vnni) {
  switch (mr) {
    case 1: return tile_for<1>(np, vnni);
    case 2: return tile_for<2>(np, vnni);
#if defined(__AVX2__)
    case 3: return tile_for<3>(np, vnni);
    case 4: return tile_for<4>(np, vnni);
#endif
#if defined(__AVX512F__)
    case 5: return tile_for<5>(np, vnni);
    case 6: return tile_for<6>(np, vnni);
#endif
    default: return nullptr;
  }
}

#if defined(__AVX512F__)
}  // namespace

// qgemm_requant.isa.cpp: tiles of 2 to 6 rows requantized or dequantized from their registers (VNNI);
// returns the rows done.
int64_t qgemm_epilogue_rows(const QGemmKernelArgs& p, int64_t p0, int np, int64_t j0, int64_t j1);

namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The requantizing epilogue of rows [0, mr) of a tile (columns [j0, j1)),
// 16 columns per step: the zero-point terms, then requant_row's float
// arithmetic (requant.h) in the same order, so the same bits as the
// corrected sums followed by requant_row. zb_any: some zb[j] is not 0 (else
// the row term is skipped: it would add 0).
void requant_tile16(const QGemmKernelArgs& p, const int32_t* tile, int mr, int64_t i0, int64_t j0, int64_t j1,
                    bool zb_any) {
  const RequantRow& rq = *p.requant;
  const __m512 lo_z = _mm512_set1_ps(rq.lo - rq.zp), hi_z = _mm512_set1_ps(rq.hi - rq.zp);
  const __m512i zp = _mm512_set1_epi32(static_cast<int32_t>(rq.zp));
  for (int64_t j = j0; j < j1; j += 16) {
    const int count = static_cast<int>(min64(16, j1 - j));
    const __mmask16 m = count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
    const __m512i ct = _mm512_maskz_loadu_epi32(m, p.col_terms + j);
    const __m512i zb = zb_any ? _mm512_maskz_loadu_epi32(m, p.zb + j) : _mm512_setzero_si512();
    const __m512i bias = _mm512_maskz_loadu_epi32(m, rq.bias + j);
    const __m512 scale = _mm512_maskz_loadu_ps(m, rq.scale + j);
    for (int r = 0; r < mr; ++r) {
      __m512i v = _mm512_add_epi32(_mm512_loadu_si512(tile + r * 64 + (j - j0)), ct);
      if (zb_any) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(p.row_terms[i0 + r])));
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(v, bias)), scale);
      f = _mm512_min_ps(_mm512_max_ps(f, lo_z), hi_z);
      const __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
      // Every value is inside the output type's range: truncating to bytes is exact.
      _mm_mask_storeu_epi8(p.yq + (i0 + r) * p.ldyq + j, m, _mm512_cvtepi32_epi8(q));
    }
  }
}
// The float epilogue of rows [0, mr) of a tile (columns [j0, j1)), 16
// columns per step: the zero-point terms, the product by the scale, then
// the bias, each rounded as the scalar loop does (no fused multiply-add).
__attribute__((optimize("fp-contract=off"))) void dequant_tile16(const QGemmKernelArgs& p, const int32_t* tile,
                                                                 int mr, int64_t i0, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; j += 16) {
    const int count = static_cast<int>(min64(16, j1 - j));
    const __mmask16 m = count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
    const __m512i ct = _mm512_maskz_loadu_epi32(m, p.col_terms + j);
    // Every zb 0 (symmetric weights): the row terms are 0 and skipped.
    const __m512i zb = p.zb_any ? _mm512_maskz_loadu_epi32(m, p.zb + j) : _mm512_setzero_si512();
    const __m512 scale = p.per_column_scale ? _mm512_maskz_loadu_ps(m, p.scale + j) : _mm512_set1_ps(p.scale[0]);
    const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(m, p.bias + j) : _mm512_setzero_ps();
    for (int r = 0; r < mr; ++r) {
      __m512i v = _mm512_add_epi32(_mm512_loadu_si512(tile + r * 64 + (j - j0)), ct);
      if (p.zb_any) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(p.row_terms[i0 + r])));
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), scale);
      if (p.bias) f = _mm512_add_ps(f, bias);
      _mm512_mask_storeu_ps(p.y + (i0 + r) * p.ldy + j, m, f);
    }
  }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void qgemm_kernel(const QGemmKernelArgs& p) {
  const int64_t panels = (p.n + kQGemmPanel - 1) / kQGemmPanel;
  const int64_t pstride = (p.k + 3) / 4 * kGroupBytes;
  const uint32_t flip4 = p.a_flip ? 0x80808080u : 0u;
#if defined(__AVX512F__)
  const bool vnni = p.vnni;
  const int max_np = vnni ? 4 : 2;
#elif defined(__AVX2__)
  const bool vnni = false;
  const int max_np = 2;
#else
  const bool vnni = false;
  const int max_np = 1;
#endif
  alignas(64) int32_t tile[kMaxMr * 64];
  RequantRow rq;  // requantizing epilogue: one row of the tile at a time
  if (p.requant) {
    rq = *p.requant;
    rq.per_value = true;
  }
  for (int64_t p0 = 0; p0 < panels;) {
    const int64_t left = panels - p0;
    const int np = left >= 4 && max_np >= 4 ? 4 : left >= 2 && max_np >= 2 ? 2 : 1;
    const int64_t j0 = p0 * kQGemmPanel, j1 = min64(p.n, (p0 + np) * kQGemmPanel);
    const int8_t* pb = p.pb + p0 * pstride;
    int64_t done = 0;
#if defined(__AVX512F__)
    if ((p.requant || p.y) && vnni) done = qgemm_epilogue_rows(p, p0, np, j0, j1);
#endif
    for (int64_t i0 = done; i0 < p.m; i0 += kMaxMr) {
      const int mr = static_cast<int>(min64(kMaxMr, p.m - i0));
      select_tile(mr, np, vnni)(p.a + i0 * p.lda, p.lda, flip4, p.k, pb, tile);
#if defined(__AVX512F__)
      if (p.requant) {
        requant_tile16(p, tile, mr, i0, j0, j1, p.zb_any);
        continue;
      }
      if (p.y) {
        dequant_tile16(p, tile, mr, i0, j0, j1);
        continue;
      }
#endif
      for (int r = 0; r < mr; ++r) {
        const int64_t i = i0 + r;
        const uint32_t rt = static_cast<uint32_t>(p.row_terms[i]);
        int32_t* t = tile + r * 64 - j0;
        if (p.requant) {  // the corrected sums in place, then requantized from the tile
          for (int64_t j = j0; j < j1; ++j)
            t[j] = static_cast<int32_t>(static_cast<uint32_t>(t[j]) + static_cast<uint32_t>(p.col_terms[j]) -
                                        static_cast<uint32_t>(p.zb[j]) * rt);
          rq.acc = t + j0;
          rq.n = j1 - j0;
          rq.bias = p.requant->bias + j0;
          rq.scale = p.requant->scale + j0;
          rq.y = p.yq + i * p.ldyq + j0;
          requant_row(rq);
        } else if (p.y) {
          float* y = p.y + i * p.ldy;
          if (p.per_column_scale) {
            for (int64_t j = j0; j < j1; ++j) {
              const uint32_t v = static_cast<uint32_t>(t[j]) + static_cast<uint32_t>(p.col_terms[j]) -
                                 static_cast<uint32_t>(p.zb[j]) * rt;
              y[j] = static_cast<float>(static_cast<int32_t>(v)) * p.scale[j];
            }
          } else {
            const float s = p.scale[0];
            for (int64_t j = j0; j < j1; ++j) {
              const uint32_t v = static_cast<uint32_t>(t[j]) + static_cast<uint32_t>(p.col_terms[j]) -
                                 static_cast<uint32_t>(p.zb[j]) * rt;
              y[j] = static_cast<float>(static_cast<int32_t>(v)) * s;
            }
          }
          if (p.bias)
            for (int64_t j = j0; j < j1; ++j) y[j] = y[j] + p.bias[j];
        } else {
          int32_t* c = p.c + i * p.ldc;
          for (int64_t j = j0; j < j1; ++j)
            c[j] = static_cast<int32_t>(static_cast<uint32_t>(t[j]) + static_cast<uint32_t>(p.col_terms[j]) -
                                        static_cast<uint32_t>(p.zb[j]) * rt);
        }
      }
    }
    p0 += np;
  }
}

void qgemm_row_sums(const uint8_t* a, int64_t lda, uint8_t flip, int64_t m, int64_t k, int32_t* sums) {
  for (int64_t i = 0; i < m; ++i) {
    const uint8_t* row = a + i * lda;
    uint32_t s = 0;
    int64_t p = 0;
#if defined(__AVX2__)
    // psadbw against zero: the sums of each 8 bytes, in 64-bit lanes.
    const __m256i vflip = _mm256_set1_epi8(static_cast<char>(flip)), zero = _mm256_setzero_si256();
    __m256i acc = zero;
    for (; p + 32 <= k; p += 32) {
      const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + p)), vflip);
      acc = _mm256_add_epi64(acc, _mm256_sad_epu8(v, zero));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc);
    s = static_cast<uint32_t>(lanes[0] + lanes[1] + lanes[2] + lanes[3]);
#endif
    for (; p < k; ++p) s += static_cast<uint8_t>(row[p] ^ flip);
    sums[i] = static_cast<int32_t>(s);
  }
}

void qgemm_col_terms(const int32_t* colsum, int64_t n, uint32_t za, uint32_t shift, int32_t* terms) {
  for (int64_t j = 0; j < n; ++j) terms[j] = static_cast<int32_t>(0u - za * (static_cast<uint32_t>(colsum[j]) - shift));
}

// ---------------------------------------------------------------- DynamicQuantizeLinear

// GCC 12's unmasked AVX-512 min / max pass an "undefined" vector that the
// uninitialized-use warnings flag.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

void quantize_min_max(const float* x, int64_t n, float* lo, float* hi) {
  int64_t i = 0;
#if defined(__AVX512F__)
  // Two running pairs of 16 lanes (more loads in flight than one pair's
  // dependency chain allows).
  __m512 lo0 = _mm512_set1_ps(*lo), hi0 = _mm512_set1_ps(*hi), lo1 = lo0, hi1 = hi0;
  for (; i + 32 <= n; i += 32) {
    const __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
    lo0 = _mm512_min_ps(v0, lo0);
    hi0 = _mm512_max_ps(v0, hi0);
    lo1 = _mm512_min_ps(v1, lo1);
    hi1 = _mm512_max_ps(v1, hi1);
  }
  // min / max of two running values (never NaN) are exact either way round.
  lo0 = _mm512_min_ps(lo0, lo1);
  hi0 = _mm512_max_ps(hi0, hi1);
  alignas(64) float l[16], h[16];
  _mm512_store_ps(l, lo0);
  _mm512_store_ps(h, hi0);
  for (int t = 0; t < 16; ++t) {
    *lo = l[t] < *lo ? l[t] : *lo;
    *hi = *hi < h[t] ? h[t] : *hi;
  }
#elif defined(__AVX2__)
  __m256 vlo = _mm256_set1_ps(*lo), vhi = _mm256_set1_ps(*hi);
  // min_ps / max_ps return the second operand when either is NaN: the
  // running value, as std::min(lo, x) keeps lo.
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    vlo = _mm256_min_ps(v, vlo);
    vhi = _mm256_max_ps(v, vhi);
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, vlo);
  _mm256_store_ps(h, vhi);
  for (int t = 0; t < 8; ++t) {
    *lo = l[t] < *lo ? l[t] : *lo;
    *hi = *hi < h[t] ? h[t] : *hi;
  }
#else
  __m128 vlo = _mm_set1_ps(*lo), vhi = _mm_set1_ps(*hi);
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    vlo = _mm_min_ps(v, vlo);
    vhi = _mm_max_ps(v, vhi);
  }
  alignas(16) float l[4], h[4];
  _mm_store_ps(l, vlo);
  _mm_store_ps(h, vhi);
  for (int t = 0; t < 4; ++t) {
    *lo = l[t] < *lo ? l[t] : *lo;
    *hi = *hi < h[t] ? h[t] : *hi;
  }
#endif
  for (; i < n; ++i) {
    *lo = x[i] < *lo ? x[i] : *lo;
    *hi = *hi < x[i] ? x[i] : *hi;
  }
}

#pragma GCC diagnostic pop

// Below AVX-512, x / scale is clamped to [-512, 512] first (NaN becomes
// -512, then 0): past that the result saturates either way, and inside it
// the conversion's round half to even (the default rounding mode) is exact.

void quantize_u8(const float* x, int64_t n, float scale, float zero, uint8_t* y) {
  int64_t i = 0;
  const int32_t zp = static_cast<int32_t>(zero);
#if defined(__AVX512F__)
  // QuantizeLinear's row (requant.h): x / scale rounded half to even, the
  // division only where the product by 1 / scale could round otherwise;
  // the same bytes (NaN 0, beyond the range saturated).
  ::spindle::kernels::QuantRow row;
  row.n = n;
  row.a = x;
  row.y = y;
  row.y_scale = scale;
  row.y_zero = zero;
  quantize_row(row);
  i = n;
  (void)zp;
#elif defined(__AVX2__)
  const __m256 vs = _mm256_set1_ps(scale), lo = _mm256_set1_ps(-512.0f), hi = _mm256_set1_ps(512.0f);
  const __m256i vz = _mm256_set1_epi32(zp);
  for (; i + 16 <= n; i += 16) {
    __m256 q0 = _mm256_div_ps(_mm256_loadu_ps(x + i), vs), q1 = _mm256_div_ps(_mm256_loadu_ps(x + i + 8), vs);
    q0 = _mm256_min_ps(_mm256_max_ps(q0, lo), hi);
    q1 = _mm256_min_ps(_mm256_max_ps(q1, lo), hi);
    const __m256i i0 = _mm256_add_epi32(_mm256_cvtps_epi32(q0), vz), i1 = _mm256_add_epi32(_mm256_cvtps_epi32(q1), vz);
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(i0, i1), 0xD8);  // 16 int16 in order
    const __m128i b = _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), b);
  }
#else
  const __m128 vs = _mm_set1_ps(scale), lo = _mm_set1_ps(-512.0f), hi = _mm_set1_ps(512.0f);
  const __m128i vz = _mm_set1_epi32(zp);
  for (; i + 8 <= n; i += 8) {
    __m128 q0 = _mm_div_ps(_mm_loadu_ps(x + i), vs), q1 = _mm_div_ps(_mm_loadu_ps(x + i + 4), vs);
    q0 = _mm_min_ps(_mm_max_ps(q0, lo), hi);
    q1 = _mm_min_ps(_mm_max_ps(q1, lo), hi);
    const __m128i i0 = _mm_add_epi32(_mm_cvtps_epi32(q0), vz), i1 = _mm_add_epi32(_mm_cvtps_epi32(q1), vz);
    const __m128i w = _mm_packs_epi32(i0, i1);
    const __m128i b = _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), b);
  }
#endif
  for (; i < n; ++i) {
    const __m128 q = _mm_min_ss(_mm_max_ss(_mm_set_ss(x[i] / scale), _mm_set_ss(-512.0f)), _mm_set_ss(512.0f));
    int32_t v = _mm_cvtss_si32(q) + zp;
    v = v < 0 ? 0 : v > 255 ? 255 : v;
    y[i] = static_cast<uint8_t>(v);
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
