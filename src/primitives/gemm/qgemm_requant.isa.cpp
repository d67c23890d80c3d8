// qgemm_requant.isa.cpp — the 8-bit GEMM's register tile with QLinearConv's
// requantizing epilogue, or the dequantizing one of DynamicQuantizeMatMul /
// MatMulIntegerToFloat, applied straight from its accumulators (AVX512-VNNI
// level only; qgemm.isa.cpp drives it, and runs its own tile and epilogue at
// the other levels and for one-row tiles).
//
// Dequantized: the accumulators start at the column terms, lose
// zb[j] * row_terms[i] when a weight zero point is not 0, and become
// float(v) * scale, then + bias: two roundings, as the epilogue through
// memory does (no fused multiply-add: the rounding intrinsics below are not
// contracted).
//
// The accumulators start at the column terms plus the bias (col_terms[j] +
// bias[j], the int32 sum the epilogue would add), take the k groups'
// products, lose zb[j] * row_terms[i] when a weight zero point is not 0,
// and then go through requant_row's float arithmetic in its order
// (requant.h): int32 additions wrap, so the sum is the same whichever comes
// first, and the float steps are the same ones: the same bits as the tile
// through memory followed by requant_row. Four panels of a row (64 output
// channels) are packed to bytes together (vpackssdw, vpackuswb / vpacksswb,
// one vpermd) and stored at once; the values are already inside the
// output's range, so the saturating packs only narrow.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "primitives/gemm/qgemm_isa.h"
#include "primitives/gemm/qgemm_vnni_step.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

#if defined(__AVX512F__)

// GCC 12 takes the intrinsics' _mm512_undefined_* pass-through operands for
// uninitialized variables once they are inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace {

inline int32_t load_full4(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline int32_t load_part4(const uint8_t* p, int k4) { return static_cast<int32_t>(load_part_a4(p, k4)); }

constexpr int64_t kGroup = 64;  // bytes of one k group of one panel

// The epilogue's constants for one tile (columns [j0, j0 + count)).
struct Epi {
  const float* scale;      // scale + j0
  const int32_t* zb;       // zb + j0
  const int32_t* row_terms;
  bool zb_any;
  __mmask16 m[4];          // valid columns of each panel
  bool full;               // all NP * 16 columns valid
  // full, and every scale below 1 in magnitude: a product float(v) * scale
  // is then below 2^31 in magnitude (float(v) at most 2^31, times at most
  // 1 - 2^-24), so its conversion cannot overflow, and the clamp to the
  // output's integer bounds may follow the rounding (the same integers):
  // the saturating packs to int16, the zero point added with int16
  // saturation, and the pack to bytes clamp to the type's range exactly
  // (every saturated value is far outside it); a raised lower bound (Relu)
  // is one byte max.
  bool fast;
  __m512i lo8;             // fast: the lower bound in every byte
  __m512i zp16;            // fast: the zero point in every int16
  __m512 lo_z, hi_z;
  __m512i zp;
  uint8_t* y;              // row i0's first output byte
  int64_t ldy;
  bool y_signed;
  // Dequantizing instead (yf set): row i0's first float, its row stride,
  // scale per column or one, the float bias (or null).
  float* yf = nullptr;
  int64_t ldyf = 0;
  bool per_column_scale = false;
  const float* fbias = nullptr;  // fbias + j0
};

// Panel q of row `row` dequantized into y (16 floats, masked).
__attribute__((always_inline)) inline void dequant16(const Epi& e, __m512i v, int q, int64_t row, float* y) {
  if (e.zb_any) {
    const __m512i zb = _mm512_maskz_loadu_epi32(e.m[q], e.zb + 16 * q);
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(e.row_terms[row])));
  }
  const __m512 scale = e.per_column_scale ? _mm512_maskz_loadu_ps(e.m[q], e.scale + 16 * q) : _mm512_set1_ps(e.scale[0]);
  __m512 f = _mm512_mul_round_ps(_mm512_cvtepi32_ps(v), scale, _MM_FROUND_CUR_DIRECTION);
  if (e.fbias) f = _mm512_add_round_ps(f, _mm512_maskz_loadu_ps(e.m[q], e.fbias + 16 * q), _MM_FROUND_CUR_DIRECTION);
  _mm512_mask_storeu_ps(y + 16 * q, e.m[q], f);
}

__attribute__((always_inline)) inline __m512i requant16(const Epi& e, __m512i v, int q, int64_t row) {
  if (e.zb_any) {
    const __m512i zb = _mm512_maskz_loadu_epi32(e.m[q], e.zb + 16 * q);
    v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zb, _mm512_set1_epi32(e.row_terms[row])));
  }
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(e.m[q], e.scale + 16 * q));
  f = _mm512_min_ps(_mm512_max_ps(f, e.lo_z), e.hi_z);
  return _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), e.zp);
}

// Row r of the tile (its NP panels' sums c0..c3) requantized and stored.
template <int NP>
__attribute__((always_inline)) inline void store_row(const Epi& e, int r, __m512i c0, __m512i c1, __m512i c2,
                                                     __m512i c3) {
  if (e.yf) {
    float* yf = e.yf + r * e.ldyf;
    dequant16(e, c0, 0, r, yf);
    if constexpr (NP > 1) dequant16(e, c1, 1, r, yf);
    if constexpr (NP > 2) {
      dequant16(e, c2, 2, r, yf);
      dequant16(e, c3, 3, r, yf);
    }
    return;
  }
  uint8_t* y = e.y + r * e.ldy;
  if constexpr (NP == 4) {
    if (e.fast) {
      __m512i q[4] = {c0, c1, c2, c3};
      for (int t = 0; t < 4; ++t)
        q[t] = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(q[t]), _mm512_loadu_ps(e.scale + 16 * t)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512i w01 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), e.zp16);
      const __m512i w23 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), e.zp16);
      __m512i b;
      if (e.y_signed) b = _mm512_max_epi8(_mm512_packs_epi16(w01, w23), e.lo8);
      else b = _mm512_max_epu8(_mm512_packus_epi16(w01, w23), e.lo8);
      const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
      _mm512_storeu_si512(static_cast<void*>(e.y + r * e.ldy), _mm512_permutexvar_epi32(order, b));
      return;
    }
  }
  const __m512i q0 = requant16(e, c0, 0, r);
  if constexpr (NP == 4) {
    const __m512i q1 = requant16(e, c1, 1, r), q2 = requant16(e, c2, 2, r), q3 = requant16(e, c3, 3, r);
    if (e.full) {
      // Per 128-bit lane l: q0[4l..4l+3], q1[4l..], q2[4l..], q3[4l..] as bytes; vpermd puts them in order.
      const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
      const __m512i b = e.y_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
      const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
      _mm512_storeu_si512(static_cast<void*>(y), _mm512_permutexvar_epi32(order, b));
      return;
    }
    _mm_mask_storeu_epi8(y, e.m[0], _mm512_cvtepi32_epi8(q0));
    _mm_mask_storeu_epi8(y + 16, e.m[1], _mm512_cvtepi32_epi8(q1));
    _mm_mask_storeu_epi8(y + 32, e.m[2], _mm512_cvtepi32_epi8(q2));
    _mm_mask_storeu_epi8(y + 48, e.m[3], _mm512_cvtepi32_epi8(q3));
    return;
  }
  _mm_mask_storeu_epi8(y, e.m[0], _mm512_cvtepi32_epi8(q0));
  if constexpr (NP > 1) _mm_mask_storeu_epi8(y + 16, e.m[1], _mm512_cvtepi32_epi8(requant16(e, c1, 1, r)));
}

#define QG_A(r) ADDR(r)
#define RQ_GROUP QG_VNNI_GROUP(kGroup)
#define RQ_DECL_ROW(r) __m512i c##r##0 = i0v, c##r##1 = i1v, c##r##2 = i2v, c##r##3 = i3v;
#define RQ_STORE_ROW(r) \
  if constexpr (MR > r) store_row<NP>(e, r, c##r##0, c##r##1, c##r##2, c##r##3);

// Rows [0, MR) of A at a (row stride lda) times NP panels from pb (k bytes
// per row: `full` whole k groups, then k4 < 4 bytes of a last one when k4 >
// 0); init[q]: panel q's starting sums.
template <int MR, int NP, bool FLIP>
__attribute__((target("avx512vnni"))) void tile(const uint8_t* a, int64_t lda, int64_t full, int k4,
                                                int64_t pstride, const int8_t* pb, const __m512i* init,
                                                const Epi& e) {
  const __m512i vflip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const __m512i i0v = init[0], i1v = init[1], i2v = init[2], i3v = init[3];
  RQ_DECL_ROW(0) RQ_DECL_ROW(1) RQ_DECL_ROW(2) RQ_DECL_ROW(3) RQ_DECL_ROW(4) RQ_DECL_ROW(5)
#define ADDR(r) (a + (r) * lda + 4 * g)
  for (int64_t g = 0; g < full; ++g) {
#define LOADA(p) load_full4(p)
    RQ_GROUP
#undef LOADA
  }
  if (k4 > 0) {
    const int64_t g = full;
#define LOADA(p) load_part4(p, k4)
    RQ_GROUP
#undef LOADA
  }
#undef ADDR
  RQ_STORE_ROW(0) RQ_STORE_ROW(1) RQ_STORE_ROW(2) RQ_STORE_ROW(3) RQ_STORE_ROW(4) RQ_STORE_ROW(5)
}

// The same on indirect A: row r's run t (run_groups whole k groups) at
// rows[r * taps + t]; B's groups of tap t follow those of tap t - 1.
template <int MR, int NP, bool FLIP>
__attribute__((target("avx512vnni"))) void tile_indirect(const uint8_t* const* rows, int64_t taps,
                                                         int64_t run_groups, int64_t pstride, const int8_t* pb_all,
                                                         const __m512i* init, const Epi& e) {
  const __m512i vflip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const __m512i i0v = init[0], i1v = init[1], i2v = init[2], i3v = init[3];
  RQ_DECL_ROW(0) RQ_DECL_ROW(1) RQ_DECL_ROW(2) RQ_DECL_ROW(3) RQ_DECL_ROW(4) RQ_DECL_ROW(5)
  for (int64_t t = 0; t < taps; ++t) {
    const uint8_t* ar[6];
    for (int r = 0; r < MR; ++r) ar[r] = rows[r * taps + t];
    const int8_t* pb = pb_all + t * run_groups * kGroup;
#define ADDR(r) (ar[r] + 4 * g)
#define LOADA(p) load_full4(p)
    for (int64_t g = 0; g < run_groups; ++g) RQ_GROUP
#undef LOADA
#undef ADDR
  }
  RQ_STORE_ROW(0) RQ_STORE_ROW(1) RQ_STORE_ROW(2) RQ_STORE_ROW(3) RQ_STORE_ROW(4) RQ_STORE_ROW(5)
}

#undef QG_A
#undef RQ_GROUP
#undef RQ_DECL_ROW
#undef RQ_STORE_ROW

using TileFn = void (*)(const uint8_t*, int64_t, int64_t, int, int64_t, const int8_t*, const __m512i*, const Epi&);

template <int NP, bool FLIP>
TileFn tile_rows(int mr) {
  switch (mr) {
    case 2: return &tile<2, NP, FLIP>;
    case 3: return &tile<3, NP, FLIP>;
    case 4: return &tile<4, NP, FLIP>;
    case 5: return &tile<5, NP, FLIP>;
    default: return &tile<6, NP, FLIP>;
  }
}

template <bool FLIP>
TileFn tile_for(int mr, int np) {
  return np == 4 ? tile_rows<4, FLIP>(mr) : np == 2 ? tile_rows<2, FLIP>(mr) : tile_rows<1, FLIP>(mr);
}

using IndirectFn = void (*)(const uint8_t* const*, int64_t, int64_t, int64_t, const int8_t*, const __m512i*,
                            const Epi&);

template <int NP, bool FLIP>
IndirectFn indirect_rows(int mr) {
  switch (mr) {
    case 2: return &tile_indirect<2, NP, FLIP>;
    case 3: return &tile_indirect<3, NP, FLIP>;
    case 4: return &tile_indirect<4, NP, FLIP>;
    case 5: return &tile_indirect<5, NP, FLIP>;
    default: return &tile_indirect<6, NP, FLIP>;
  }
}

template <bool FLIP>
IndirectFn indirect_for(int mr, int np) {
  return np == 4 ? indirect_rows<4, FLIP>(mr) : np == 2 ? indirect_rows<2, FLIP>(mr) : indirect_rows<1, FLIP>(mr);
}

}  // namespace

// Panels [p0, p0 + np) (np 1, 2 or 4; columns [j0, j1)) of the call's rows
// in tiles of 2 to 6 rows, requantized into p.yq (p.requant set) or
// dequantized into p.y; returns the rows done: m, or 0 when m is 1.
int64_t qgemm_epilogue_rows(const QGemmKernelArgs& p, int64_t p0, int np, int64_t j0, int64_t j1) {
  const bool dequant = p.requant == nullptr;
  const RequantRow rq = dequant ? RequantRow{} : *p.requant;
  const int64_t pstride = (p.k + 3) / 4 * kGroup, full = p.k / 4;
  const int k4 = static_cast<int>(p.k - 4 * full);
  Epi e;
  e.scale = dequant ? (p.per_column_scale ? p.scale + j0 : p.scale) : rq.scale + j0;
  e.zb = p.zb + j0;
  e.zb_any = p.zb_any;
  const int64_t count = j1 - j0;
  e.full = count == 16 * np;
  // (the upper bound the type's: it is never lowered)
  e.fast = !dequant && e.full && np == 4 && !p.zb_any && rq.hi == (rq.y_signed ? 127.0f : 255.0f) &&
           rq.lo >= (rq.y_signed ? -128.0f : 0.0f);
  for (int q = 0; q < 4 && e.fast; ++q) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(rq.scale + j0 + 16 * q));
    e.fast = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_LT_OQ) == 0xFFFF;  // NaN: not below 1
  }
  e.lo8 = _mm512_set1_epi8(static_cast<char>(static_cast<int>(rq.lo)));
  e.zp16 = _mm512_set1_epi16(static_cast<int16_t>(rq.zp));
  alignas(64) __m512i init[4];
  for (int q = 0; q < 4; ++q) {
    const int64_t left = count - 16 * q;
    e.m[q] = left >= 16 ? static_cast<__mmask16>(0xFFFF)
             : left <= 0 ? static_cast<__mmask16>(0)
                         : static_cast<__mmask16>((1u << left) - 1);
    init[q] = _mm512_maskz_loadu_epi32(e.m[q], p.col_terms + j0 + 16 * q);
    if (!dequant) init[q] = _mm512_add_epi32(init[q], _mm512_maskz_loadu_epi32(e.m[q], rq.bias + j0 + 16 * q));
  }
  e.per_column_scale = p.per_column_scale;
  e.fbias = dequant && p.bias ? p.bias + j0 : nullptr;
  e.ldyf = p.ldy;
  e.lo_z = _mm512_set1_ps(rq.lo - rq.zp);
  e.hi_z = _mm512_set1_ps(rq.hi - rq.zp);
  e.zp = _mm512_set1_epi32(static_cast<int32_t>(rq.zp));
  e.ldy = p.ldyq;
  e.y_signed = rq.y_signed;
  const int8_t* pb = p.pb + p0 * pstride;
  // Tiles of 6 rows; 7 left are 4 + 3 (a one-row tile would load B for
  // one row's products), 8 are 4 + 4 (a two-row tile loads B for two); one
  // row alone is the caller's.
  const int64_t rows = p.m == 1 ? 0 : p.m;
  for (int64_t i0 = 0, mr = 0; i0 < rows; i0 += mr) {
    const int64_t left = rows - i0;
    mr = left == 7 || left == 8 ? 4 : left < 6 ? left : 6;
    e.row_terms = p.row_terms + i0;
    if (dequant) e.yf = p.y + i0 * p.ldy + j0;
    else e.y = p.yq + i0 * p.ldyq + j0;
    if (p.a_rows) {  // K / a_taps a multiple of 4 (qgemm.cpp)
      const IndirectFn fn = p.a_flip ? indirect_for<true>(static_cast<int>(mr), np)
                                     : indirect_for<false>(static_cast<int>(mr), np);
      fn(p.a_rows + i0 * p.a_taps, p.a_taps, full / p.a_taps, pstride, pb, init, e);
    } else {
      const TileFn fn = p.a_flip ? tile_for<true>(static_cast<int>(mr), np) : tile_for<false>(static_cast<int>(mr), np);
      fn(p.a + i0 * p.lda, p.lda, full, k4, pstride, pb, init, e);
    }
  }
  return rows;
}

#pragma GCC diagnostic pop

#endif  // __AVX512F__

}  // namespace spindle::kernels::SPINDLE_ISA_NS
