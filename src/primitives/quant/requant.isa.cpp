// requant.isa.cpp — requant_row, dw_requant_row and the QDQ rows (requant.h), compiled once per ISA level:
// plain loops the compiler vectorizes at the level's width; requant_row and
// dw_requant_row have an AVX-512 body (16 values per step, the same float
// operations in the same order).
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "primitives/quant/requant.h"
#include "primitives/quant/requant_one.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr float kBoundF = 4194304.0f;   // 2^22

// Every field copied to a local and the pointers restricted: the byte
// stores could otherwise alias them, which keeps the loop scalar.
#if defined(__AVX512F__)
// GCC 12's unmasked AVX-512 intrinsics (and a few masked ones, inlined)
// pass an "undefined" vector that -Wmaybe-uninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 values from i (the first `count` of them when count < 16: masked
// loads and stores, nothing past them touched).
inline void step16(const ::spindle::kernels::RequantRow& a, uint8_t* out, int64_t i, int count, const Bounds16& b) {
  const __mmask16 m = count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
  const __m512i acc = _mm512_maskz_loadu_epi32(m, a.acc + i);
  __m512i bias;
  __m512 scale;
  if (a.per_value) {
    bias = _mm512_maskz_loadu_epi32(m, a.bias + i);
    scale = _mm512_maskz_loadu_ps(m, a.scale + i);
  } else {
    bias = _mm512_set1_epi32(a.bias[0]);
    scale = _mm512_set1_ps(a.scale[0]);
  }
  // Every value is inside the output type's range: truncating to bytes is exact.
  _mm_mask_storeu_epi8(out + i, m, _mm512_cvtepi32_epi8(one16(acc, bias, scale, b.lo_z, b.hi_z, b.zp)));
}

// Every value into y.
inline void run16(const ::spindle::kernels::RequantRow& a, void* y) {
  const Bounds16 b(a.zp, a.lo, a.hi);
  uint8_t* out = static_cast<uint8_t*>(y);
  int64_t i = 0;
  for (; i + 16 <= a.n; i += 16) step16(a, out, i, 16, b);
  if (i < a.n) step16(a, out, i, static_cast<int>(a.n - i), b);
}

// P consecutive output pixels whose every kernel column is inside the
// input, 16 channels (mask m) each, over the kernel rows inside it: the sums
// of x * w, less x_zp * (the sum of those rows' weights), requantized as
// one16.
struct DwInside {
  const void* x;  // the first pixel's first tap, channel c0
  int64_t pixel_step;
  const int32_t* w;  // channel c0
  int64_t C;
  const int64_t* x_rows;
  const int64_t* w_rows;
  int64_t n_rows, KW, x_step;
  __mmask16 m;
  __m512i low16, zp_terms, bias;
  __m512 scale;
};

template <int P, class X>
inline void dw_inside(const DwInside& d, uint8_t* out, const Bounds16& b) {
  const X* x = static_cast<const X*>(d.x);
  __m512i acc[P];
  for (int q = 0; q < P; ++q) acc[q] = _mm512_setzero_si512();
  for (int64_t r = 0; r < d.n_rows; ++r) {
    const int32_t* wp = d.w + d.w_rows[r];
    const X* xr = x + d.x_rows[r];
    for (int64_t kw = 0; kw < d.KW; ++kw, wp += d.C, xr += d.x_step) {
      const __m512i wv = _mm512_and_si512(_mm512_maskz_loadu_epi32(d.m, wp), d.low16);
      for (int q = 0; q < P; ++q) {
        const __m128i xb = _mm_maskz_loadu_epi8(d.m, xr + q * d.pixel_step);
        __m512i xv;
        if constexpr (std::is_same_v<X, int8_t>) xv = _mm512_cvtepi8_epi32(xb);
        else xv = _mm512_cvtepu8_epi32(xb);
        acc[q] = _mm512_add_epi32(acc[q], _mm512_madd_epi16(xv, wv));
      }
    }
  }
  for (int q = 0; q < P; ++q)
    _mm_mask_storeu_epi8(out + q * d.C, d.m,
                         _mm512_cvtepi32_epi8(one16(_mm512_sub_epi32(acc[q], d.zp_terms), d.bias, d.scale, b.lo_z,
                                                    b.hi_z, b.zp)));
}

// dw_requant_row, 16 channels of one output pixel per register: each tap
// inside the input adds (x - x_zp) * w (int32, exact; padding adds
// nothing), then the sums take one16's arithmetic with their channels' bias
// and scale.
template <class X>
void dw_fused16(const ::spindle::kernels::DwRequantRow& p) {
  const ::spindle::kernels::DwRow& a = p.row;
  const X* x = static_cast<const X*>(a.x);
  const int64_t C = a.C, W = a.W, KW = a.kw;
  const int32_t* w = a.w;
  const __m512i xzp = _mm512_set1_epi32(a.x_zp), low16 = _mm512_set1_epi32(0xFFFF);
  const Bounds16 b(p.zp, p.lo, p.hi);
  uint8_t* out = static_cast<uint8_t*>(p.y);
  // The kernel rows inside the input (the same for every pixel of the row).
  // x_rows: where an input row starts; w_rows: where its kernel row's
  // weights start.
  int64_t x_rows[64], w_rows[64];
  int64_t n_rows = 0;
  for (int64_t kh = 0; kh < a.kh && n_rows < 64; ++kh) {
    const int64_t ih = a.oh * a.sh - a.ph + kh * a.dh;
    if (ih < 0 || ih >= a.H) continue;
    x_rows[n_rows] = ih * W * C;
    w_rows[n_rows++] = kh * KW * C;
  }
  const int64_t x_step = a.dw * C;
  const bool all_rows = n_rows == a.kh;
  for (int64_t c0 = 0; c0 < C; c0 += 16) {
    const int64_t count = C - c0 < 16 ? C - c0 : 16;
    const __mmask16 m = count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
    const __m512i bias = _mm512_maskz_loadu_epi32(m, p.bias + c0);
    const __m512 scale = _mm512_maskz_loadu_ps(m, p.scale + c0);
    // A pixel whose every tap is inside the input sums x * w and subtracts
    // x_zp * (the sum of the weights) once: the same int32.
    __m512i w_sum = _mm512_setzero_si512();
    for (int64_t t = 0; t < a.kh * KW; ++t) w_sum = _mm512_add_epi32(w_sum, _mm512_maskz_loadu_epi32(m, w + t * C + c0));
    const __m512i inside_zp = _mm512_mullo_epi32(w_sum, xzp);
    // The same over the kernel rows inside the input only: for the pixels
    // whose every kernel column is inside (all_rows or not).
    __m512i row_w_sum = _mm512_setzero_si512();
    for (int64_t r = 0; r < n_rows; ++r)
      for (int64_t kw = 0; kw < KW; ++kw)
        row_w_sum = _mm512_add_epi32(row_w_sum, _mm512_maskz_loadu_epi32(m, w + w_rows[r] + kw * C + c0));
    const __m512i columns_zp = _mm512_mullo_epi32(row_w_sum, xzp);
    // Output columns whose every tap is inside the row: [in0, in1).
    const int64_t in0 = std::min(a.OW, (a.pw + a.sw - 1) / a.sw);
    const int64_t in1 = std::max(in0, std::min(a.OW, (W - (KW - 1) * a.dw + a.pw + a.sw - 1) / a.sw));
    for (int64_t ow = 0; ow < a.OW; ++ow) {
      if (ow >= in0 && ow + 1 < in1) {  // pixels with every column inside together: each weight vector loaded once
        const X* xp = x + (ow * a.sw - a.pw) * C + c0;
        uint8_t* o = out + ow * C + c0;
        const DwInside d{xp, a.sw * C, w + c0, C, x_rows, w_rows, n_rows, KW, x_step, m, low16, columns_zp, bias, scale};
        if (ow + 3 < in1) {
          dw_inside<4, X>(d, o, b);
          ow += 3;
        } else {
          dw_inside<2, X>(d, o, b);
          ow += 1;
        }
        continue;
      }
      const int64_t base = ow * a.sw - a.pw;
      // Kernel columns inside the input: kw in [kw0, kw1).
      const int64_t kw0 = base >= 0 ? 0 : std::min(KW, (-base + a.dw - 1) / a.dw);
      const int64_t kw1 = W - base <= 0 ? 0 : std::min(KW, (W - base + a.dw - 1) / a.dw);
      const bool inside = all_rows && kw0 == 0 && kw1 == KW;
      // x - x_zp (or x) and w - w_zp lie in [-255, 255]: with w's high 16
      // bits cleared, the pair product of vpmaddwd is x * w exactly.
      __m512i acc = _mm512_setzero_si512();
      for (int64_t r = 0; r < n_rows && kw0 < kw1; ++r) {
        const X* xp = x + x_rows[r] + (base + kw0 * a.dw) * C + c0;
        const int32_t* wp = w + w_rows[r] + kw0 * C + c0;
        for (int64_t kw = kw0; kw < kw1; ++kw, xp += x_step, wp += C) {
          const __m128i xb = _mm_maskz_loadu_epi8(m, xp);
          __m512i xv;
          if constexpr (std::is_same_v<X, int8_t>) xv = _mm512_cvtepi8_epi32(xb);
          else xv = _mm512_cvtepu8_epi32(xb);
          if (!inside) xv = _mm512_sub_epi32(xv, xzp);
          const __m512i wv = _mm512_and_si512(_mm512_maskz_loadu_epi32(m, wp), low16);
          acc = _mm512_add_epi32(acc, _mm512_madd_epi16(xv, wv));
        }
      }
      if (inside) acc = _mm512_sub_epi32(acc, inside_zp);
      _mm_mask_storeu_epi8(out + ow * C + c0, m, _mm512_cvtepi32_epi8(one16(acc, bias, scale, b.lo_z, b.hi_z, b.zp)));
    }
  }
}
#pragma GCC diagnostic pop
#endif

template <class T>
void run(const ::spindle::kernels::RequantRow& a, T* __restrict y) {
#if defined(__AVX512F__)
  run16(a, y);
#else
  const int32_t* __restrict acc = a.acc;
  const int64_t n = a.n;
  const float zp = a.zp, lo = a.lo, hi = a.hi;
  if (a.per_value) {
    const int32_t* __restrict bias = a.bias;
    const float* __restrict scale = a.scale;
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(one(acc[i], bias[i], scale[i], zp, lo, hi));
  } else {
    const int32_t bias = a.bias[0];
    const float scale = a.scale[0];
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(one(acc[i], bias, scale, zp, lo, hi));
  }
#endif
}

inline float quantize(float d, float zero, float lo, float hi) {
  float c = d < -kBoundF ? -kBoundF : d;
  c = c > kBoundF ? kBoundF : c;
  float r = (c + kMagicF) - kMagicF + zero;
  r = lo < r ? r : lo;
  r = r < hi ? r : hi;
  return d == d ? r : 0.0f;
}

#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// quantize(d / sy, zero, lo, hi) for 16 values, a division only where one
// is needed: q = d * (1 / sy) lies within 3 * 2^-24 |q| (plus a hair) of the
// rounded quotient d / sy, as both lie within about 2^-24 of the exact one,
// so the two round to the same integer unless a half-integer lies that near
// q. The lanes whose q is within 2^-20 |q| of a half-integer (ties, rare
// values, every |q| from 2^19 on) take the division; NaN gives 0 as
// quantize(). When 1 / sy is not a normal finite float, every lane divides.
struct Quantize16 {
  __m512 sy, r, lo_z, hi_z;
  __m512i zero;
  bool fast;
  Quantize16(float y_scale, float zy, float lo, float hi)
      : sy(_mm512_set1_ps(y_scale)), r(_mm512_set1_ps(1.0f / y_scale)), lo_z(_mm512_set1_ps(lo - zy)),
        hi_z(_mm512_set1_ps(hi - zy)), zero(_mm512_set1_epi32(static_cast<int32_t>(zy))) {
    const float inv = 1.0f / y_scale;
    fast = std::isnormal(inv);
  }
  // The quantized values as int32 (each inside [lo, hi], or 0).
  __m512i operator()(__m512 d) const {
    __m512 q;
    if (fast) {
      q = _mm512_mul_ps(d, r);
      const __m512 f = _mm512_sub_ps(q, _mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      const __m512 margin = _mm512_sub_ps(_mm512_set1_ps(0.5f), _mm512_abs_ps(f));
      const __mmask16 near =
          _mm512_cmp_ps_mask(margin, _mm512_mul_ps(_mm512_abs_ps(q), _mm512_set1_ps(0x1p-20f)), _CMP_LE_OQ);
      if (near) q = _mm512_mask_div_ps(q, near, d, sy);
    } else {
      q = _mm512_div_ps(d, sy);
    }
    const __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
    // lo, hi and zero are integers: clamping q to [lo - zero, hi - zero]
    // before the rounding gives quantize()'s clamp after it.
    const __m512 c = _mm512_min_ps(_mm512_max_ps(q, lo_z), hi_z);
    return _mm512_maskz_add_epi32(static_cast<__mmask16>(~nan),
                                  _mm512_cvt_roundps_epi32(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zero);
  }
};

// 16 8-bit values from p (the first count), as float.
template <class Q>
inline __m512 load16(const Q* p, __mmask16 m) {
  const __m128i v = _mm_maskz_loadu_epi8(m, p);
  if constexpr (std::is_same_v<Q, int8_t>) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
  else return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

inline __mmask16 mask16(int64_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
}

// 64 int32 values as 64 bytes in order, zero (16-bit lanes) added to each:
// two saturating packs to 16 bits (exact here), the add, two to 8 bits
// (exact once the values are inside Q's range) interleave the four vectors'
// 128-bit lanes; one permutation of dwords puts them back in order.
template <class Q>
inline __m512i pack64(__m512i o0, __m512i o1, __m512i o2, __m512i o3, __m512i zero) {
  const __m512i w01 = _mm512_add_epi16(_mm512_packs_epi32(o0, o1), zero);
  const __m512i w23 = _mm512_add_epi16(_mm512_packs_epi32(o2, o3), zero);
  const __m512i bytes = std::is_same_v<Q, int8_t> ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
  // Lane j of `bytes` holds dwords j of o0, o1, o2, o3 (4 bytes each).
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}

// 16 8-bit values from p, all of them, as float.
template <class Q>
inline __m512 load16_all(const Q* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<Q, int8_t>) return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
  else return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
}

// Quantize16 for 64 values with one test for all four vectors: a lane
// needs the division only if its q = d * (1 / sy) is within 2^-20 |q| of a
// half-integer (Quantize16), and then only if |q| <= bound, as beyond the
// clamp bounds (plus 2) q and d / sy clamp alike. So when every lane's
// |q - round(q)| is below 0.5 - 2^-20 bound (VREDUCEPS gives q - round(q)
// exactly; a NaN's bits compare above), no lane divides and none is NaN:
// the clamp and conversion alone. Otherwise Quantize16 per vector.
struct Quantize64 {
  const Quantize16& q16;
  __m512 tie;      // 0.5 - 2^-20 bound
  __m512i zero16;  // the zero point in 16-bit lanes
  bool usable;     // 1 / sy normal and the bound small
  Quantize64(const Quantize16& q, float lo_z, float hi_z, float zy) : q16(q) {
    const float bound = std::max(std::fabs(lo_z), std::fabs(hi_z)) + 2.0f;
    usable = q.fast && bound <= 0x1p16f;
    tie = _mm512_set1_ps(0.5f - bound * 0x1p-20f);
    zero16 = _mm512_set1_epi16(static_cast<int16_t>(zy));
  }
  // d0..d3 quantized, as 64 bytes.
  template <class Q>
  __m512i operator()(__m512 d0, __m512 d1, __m512 d2, __m512 d3) const {
    const __m512 q0 = _mm512_mul_ps(d0, q16.r), q1 = _mm512_mul_ps(d1, q16.r);
    const __m512 q2 = _mm512_mul_ps(d2, q16.r), q3 = _mm512_mul_ps(d3, q16.r);
    constexpr int kNear = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF);
    auto frac = [&](__m512 q) { return _mm512_and_si512(_mm512_castps_si512(_mm512_reduce_ps(q, kNear)), abs); };
    // Non-negative floats (and NaN above them) order as their bits.
    const __m512i worst = _mm512_max_epu32(_mm512_max_epu32(frac(q0), frac(q1)), _mm512_max_epu32(frac(q2), frac(q3)));
    if (_mm512_cmpge_epu32_mask(worst, _mm512_castps_si512(tie)))
      return pack64<Q>(q16(d0), q16(d1), q16(d2), q16(d3), _mm512_setzero_si512());
    auto round = [&](__m512 q) {
      return _mm512_cvt_roundps_epi32(_mm512_min_ps(_mm512_max_ps(q, q16.lo_z), q16.hi_z), kNear);
    };
    return pack64<Q>(round(q0), round(q1), round(q2), round(q3), zero16);
  }
};

// binary() and gate() 16 values at a time: the same float operations.
// binary() first 64 values a step (Quantize64: more independent work in
// flight, one tie test and whole-vector loads and stores), then the rest 16
// at a time, masked.
template <class Q>
void binary16(const ::spindle::kernels::QuantRow& p) {
  const Q* a = static_cast<const Q*>(p.a);
  const Q* b = static_cast<const Q*>(p.b);
  Q* y = static_cast<Q*>(p.y);
  const int64_t n = p.n;
  const __m512 za = _mm512_set1_ps(p.a_zero), sa = _mm512_set1_ps(p.a_scale);
  const __m512 zb = _mm512_set1_ps(p.b_zero), sb = _mm512_set1_ps(p.b_scale);
  const Quantize16 quant(p.y_scale, p.y_zero, p.lo, p.hi);
  auto op = [&](__m512 fa, __m512 fb, __m512 za_, __m512 zb_) {
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(fa, za_), sa), _mm512_mul_ps(_mm512_sub_ps(fb, zb_), sb));
  };
  int64_t i = 0;
  const Quantize64 quant64(quant, p.lo - p.y_zero, p.hi - p.y_zero, p.y_zero);
  // uint8 x as the float 2^23 + x (one masked byte shuffle into 2^23's
  // bits); less 2^23 + zero it is x - zero exactly, as before.
  const __m512 za23 = _mm512_set1_ps(0x1p23f + p.a_zero), zb23 = _mm512_set1_ps(0x1p23f + p.b_zero);
  auto load = [](const Q* q) {
    if constexpr (std::is_same_v<Q, int8_t>) {
      return load16_all(q);
    } else {
      // Lane k's dwords take bytes 4k .. 4k + 3 of the 16 into their low bytes.
      const __m512i pick = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
      const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
      return _mm512_castsi512_ps(
          _mm512_mask_shuffle_epi8(_mm512_set1_epi32(0x4B000000), 0x1111111111111111ull, v, pick));
    }
  };
  // What the 64-value step subtracts from what it loads.
  const bool u8 = std::is_same_v<Q, uint8_t>;
  const __m512 za_sub = u8 ? za23 : za, zb_sub = u8 ? zb23 : zb;
  if (quant64.usable)
    for (; i + 64 <= n; i += 64) {
      const __m512 v0 = op(load(a + i), load(b + i), za_sub, zb_sub);
      const __m512 v1 = op(load(a + i + 16), load(b + i + 16), za_sub, zb_sub);
      const __m512 v2 = op(load(a + i + 32), load(b + i + 32), za_sub, zb_sub);
      const __m512 v3 = op(load(a + i + 48), load(b + i + 48), za_sub, zb_sub);
      _mm512_storeu_si512(y + i, quant64.template operator()<Q>(v0, v1, v2, v3));
    }
  for (; i < n; i += 16) {
    const __mmask16 m = mask16(n - i);
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(quant(op(load16(a + i, m), load16(b + i, m), za, zb))));
  }
}

template <class Q>
void gate16(const ::spindle::kernels::QuantRow& p) {
  const Q* a = static_cast<const Q*>(p.a);
  Q* y = static_cast<Q*>(p.y);
  const __m512 za = _mm512_set1_ps(p.a_zero), sa = _mm512_set1_ps(p.a_scale);
  const __m512 g1 = _mm512_set1_ps(p.gate[0]);
  const Quantize16 quant(p.y_scale, p.y_zero, p.lo, p.hi);
  const Quantize64 quant64(quant, p.lo - p.y_zero, p.hi - p.y_zero, p.y_zero);
  int64_t i = 0;
  if (quant64.usable) {  // 64 values a step, one rounding test for all of them
    auto product = [&](int64_t at) {
      const __m512 g = p.gate_per_value ? _mm512_loadu_ps(p.gate + at) : g1;
      return _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(load16_all(a + at), za), sa));
    };
    for (; i + 64 <= p.n; i += 64)
      _mm512_storeu_si512(y + i, quant64.template operator()<Q>(product(i), product(i + 16), product(i + 32),
                                                                 product(i + 48)));
  }
  for (; i < p.n; i += 16) {
    const __mmask16 m = mask16(p.n - i);
    const __m512 g = p.gate_per_value ? _mm512_maskz_loadu_ps(m, p.gate + i) : g1;
    const __m512 v = _mm512_mul_ps(g, _mm512_mul_ps(_mm512_sub_ps(load16(a + i, m), za), sa));
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(quant(v)));
  }
}
#pragma GCC diagnostic pop
#endif

// ONNX Runtime's QLinearAdd arithmetic (its x86 kernel, as its build
// compiles it: products and sums contracted into fused multiply-adds): the
// ratios ra = sa / sy and rb = sb / sy and one constant
// k = zy - fma(ra, za, rb zb), then y = fma(a, ra, fma(b, rb, k)) rounded half
// to even and saturated; with one b for every a, fma(a, ra, fma(b, rb, k)) as
// well, the inner one computed once. A NaN saturates low, as its conversion
// does. Checked against ONNX Runtime by the opsets cases ms_qlinearadd_* and
// on ResNet-18 in its QOperator form (the contraction of k decides 3 of
// 50176 values of one layer).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // the masked intrinsics' pass-through operands
template <class Q>
__attribute__((optimize("fp-contract=off"))) void binary_ratio(const ::spindle::kernels::QuantRow& p) {
  const Q* __restrict a = static_cast<const Q*>(p.a);
  const Q* __restrict b = static_cast<const Q*>(p.b);
  Q* __restrict y = static_cast<Q*>(p.y);
  const float ra = p.a_scale / p.y_scale, rb = p.b_scale / p.y_scale;
  const float k = p.y_zero - std::fma(ra, p.a_zero, rb * p.b_zero);
  const float k1 = p.b_scalar ? std::fma(static_cast<float>(b[0]), rb, k) : k;
  const float lo = p.lo, hi = p.hi;
  int64_t i = 0;
#if defined(__AVX512F__)
  const __m512 vra = _mm512_set1_ps(ra), vrb = _mm512_set1_ps(rb), vk = _mm512_set1_ps(k1);
  const __m512i vlo = _mm512_set1_epi32(static_cast<int32_t>(lo)), vhi = _mm512_set1_epi32(static_cast<int32_t>(hi));
  for (; i < p.n; i += 16) {
    const __mmask16 m = mask16(p.n - i);
    const __m512 t = p.b_scalar ? vk : _mm512_fmadd_ps(load16(b + i, m), vrb, vk);
    // Rounded half to even; NaN and values past int32 convert to INT32_MIN,
    // which saturates low.
    const __m512i r = _mm512_cvtps_epi32(_mm512_fmadd_ps(load16(a + i, m), vra, t));
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(r, vlo), vhi)));
  }
#endif
  for (; i < p.n; ++i) {
    const float t = std::fma(static_cast<float>(a[i]), ra, p.b_scalar ? k1 : std::fma(static_cast<float>(b[i]), rb, k));
    const float r = std::nearbyint(t);
    const bool in_int32 = r >= -2147483648.0f && r < 2147483648.0f;  // else INT32_MIN, as the conversion gives
    y[i] = static_cast<Q>(static_cast<int32_t>(in_int32 && r >= lo ? (r <= hi ? r : hi) : lo));
  }
}
#pragma GCC diagnostic pop

// The product: QLinearMul's arithmetic is the unfused ops' (ONNX Runtime's
// too); the sum: ONNX Runtime's QLinearAdd's (binary_ratio).
template <class Q>
__attribute__((optimize("fp-contract=off"))) void binary(const ::spindle::kernels::QuantRow& p) {
  if (!p.multiply) return binary_ratio<Q>(p);
#if defined(__AVX512F__)
  if (p.n >= 16) return binary16<Q>(p);
#endif
  const Q* __restrict a = static_cast<const Q*>(p.a);
  const Q* __restrict b = static_cast<const Q*>(p.b);
  Q* __restrict y = static_cast<Q*>(p.y);
  const float sa = p.a_scale, za = p.a_zero, sb = p.b_scale, zb = p.b_zero, sy = p.y_scale, zy = p.y_zero;
  for (int64_t i = 0; i < p.n; ++i) {
    const float v = ((static_cast<float>(a[i]) - za) * sa) * ((static_cast<float>(b[i]) - zb) * sb);
    y[i] = static_cast<Q>(static_cast<int32_t>(quantize(v / sy, zy, p.lo, p.hi)));
  }
}

// The float Mul's operands in the unfused order do not matter: a float
// product is commutative, so gate * DQ(a) gives the Mul's bits.
template <class Q>
void gate(const ::spindle::kernels::QuantRow& p) {
#if defined(__AVX512F__)
  if (p.n >= 16) return gate16<Q>(p);
#endif
  const Q* __restrict a = static_cast<const Q*>(p.a);
  Q* __restrict y = static_cast<Q*>(p.y);
  const int64_t n = p.n;
  const float sa = p.a_scale, za = p.a_zero, sy = p.y_scale, zy = p.y_zero, lo = p.lo, hi = p.hi;
  if (p.gate_per_value) {
    const float* __restrict g = p.gate;
    for (int64_t i = 0; i < n; ++i) {
      const float v = g[i] * ((static_cast<float>(a[i]) - za) * sa);
      y[i] = static_cast<Q>(static_cast<int32_t>(quantize(v / sy, zy, lo, hi)));
    }
  } else {
    const float g = p.gate[0];
    for (int64_t i = 0; i < n; ++i) {
      const float v = g * ((static_cast<float>(a[i]) - za) * sa);
      y[i] = static_cast<Q>(static_cast<int32_t>(quantize(v / sy, zy, lo, hi)));
    }
  }
}

#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// quantize_all 64 values a step (Quantize64), then 16 at a time, masked:
// quantize(a / sy) with the division only where it can matter.
template <class Q>
void quantize16(const ::spindle::kernels::QuantRow& p) {
  const float* a = static_cast<const float*>(p.a);
  Q* y = static_cast<Q*>(p.y);
  const int64_t n = p.n;
  const Quantize16 quant(p.y_scale, p.y_zero, p.lo, p.hi);
  const Quantize64 quant64(quant, p.lo - p.y_zero, p.hi - p.y_zero, p.y_zero);
  int64_t i = 0;
  if (quant64.usable)
    for (; i + 64 <= n; i += 64)
      _mm512_storeu_si512(y + i, quant64.template operator()<Q>(_mm512_loadu_ps(a + i), _mm512_loadu_ps(a + i + 16),
                                                                _mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(a + i + 48)));
  for (; i < n; i += 16) {
    const __mmask16 m = mask16(n - i);
    _mm_mask_storeu_epi8(y + i, m, _mm512_cvtepi32_epi8(quant(_mm512_maskz_loadu_ps(m, a + i))));
  }
}
#pragma GCC diagnostic pop
#endif

template <class Q>
void quantize_all(const ::spindle::kernels::QuantRow& p) {
#if defined(__AVX512F__)
  if (p.n >= 16) return quantize16<Q>(p);
#endif
  const float* __restrict a = static_cast<const float*>(p.a);
  Q* __restrict y = static_cast<Q*>(p.y);
  const int64_t n = p.n;
  const float sy = p.y_scale, zy = p.y_zero, lo = p.lo, hi = p.hi;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Q>(static_cast<int32_t>(quantize(a[i] / sy, zy, lo, hi)));
}

template <class Q>
void dequantize_all(const ::spindle::kernels::QuantRow& p) {
  const Q* __restrict a = static_cast<const Q*>(p.a);
  float* __restrict y = static_cast<float*>(p.y);
  const int64_t n = p.n;
  const float sa = p.a_scale, za = p.a_zero;
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(a[i]) - za) * sa;
}

template <class X>
void dw_taps(const ::spindle::kernels::DwRow& a) {
  const X* x = static_cast<const X*>(a.x);
  const int64_t C = a.C;
  const int32_t zp = a.x_zp;
  for (int64_t i = 0; i < a.OW * C; ++i) a.acc[i] = 0;
  for (int64_t kh = 0; kh < a.kh; ++kh) {
    const int64_t ih = a.oh * a.sh - a.ph + kh * a.dh;
    if (ih < 0 || ih >= a.H) continue;
    for (int64_t kw = 0; kw < a.kw; ++kw) {
      const int32_t* __restrict w = a.w + (kh * a.kw + kw) * C;
      // Output columns whose tap lands inside the row: ow in [lo, hi).
      const int64_t off = kw * a.dw - a.pw;
      const int64_t lo = off >= 0 ? 0 : (-off + a.sw - 1) / a.sw;
      const int64_t hi = a.W - off <= 0 ? 0 : std::min(a.OW, (a.W - off + a.sw - 1) / a.sw);
      const X* xr = x + (ih * a.W + off) * C;
      if (a.w_rows && a.sw == 1) {
        const X* __restrict xp = xr + lo * C;
        const int32_t* __restrict wr = a.w_rows + (kh * a.kw + kw) * a.OW * C + lo * C;
        int32_t* __restrict acc = a.acc + lo * C;
        for (int64_t i = 0; i < (hi - lo) * C; ++i) acc[i] += (static_cast<int32_t>(xp[i]) - zp) * wr[i];
        continue;
      }
      for (int64_t ow = lo; ow < hi; ++ow) {
        const X* __restrict xp = xr + ow * a.sw * C;
        int32_t* __restrict acc = a.acc + ow * C;
        for (int64_t c = 0; c < C; ++c) acc[c] += (static_cast<int32_t>(xp[c]) - zp) * w[c];
      }
    }
  }
}

// dw_requant_row through row.acc: dw_taps, then each pixel's C sums
// requantized with their channels' terms.
template <class X, class T>
void dw_then_requant(const ::spindle::kernels::DwRequantRow& p) {
  dw_taps<X>(p.row);
  const int32_t* __restrict acc = p.row.acc;
  const int32_t* __restrict bias = p.bias;
  const float* __restrict scale = p.scale;
  T* __restrict y = static_cast<T*>(p.y);
  const int64_t C = p.row.C;
  const float zp = p.zp, lo = p.lo, hi = p.hi;
  for (int64_t ow = 0; ow < p.row.OW; ++ow)
    for (int64_t c = 0; c < C; ++c) y[ow * C + c] = static_cast<T>(one(acc[ow * C + c], bias[c], scale[c], zp, lo, hi));
}

#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// AffineQ8Rows 64 channels of a pixel a step (Quantize64: one rounding
// test for the four vectors), then 16 at a time, the last masked. The
// fields in locals: the byte stores could alias them.
template <class X, class Y>
void affine_q8(const ::spindle::kernels::AffineQ8Rows& p) {
  const X* x = static_cast<const X*>(p.dq.a);
  Y* y = static_cast<Y*>(p.q.y);
  const float* __restrict a = p.a;
  const float* __restrict b = p.b;
  const int64_t C = p.C, pixels = p.pixels;
  const bool relu = p.relu;
  const __m512 za = _mm512_set1_ps(p.dq.a_zero), sa = _mm512_set1_ps(p.dq.a_scale), zero = _mm512_setzero_ps();
  const Quantize16 quant(p.q.y_scale, p.q.y_zero, p.q.lo, p.q.hi);
  const Quantize64 quant64(quant, p.q.lo - p.q.y_zero, p.q.hi - p.q.y_zero, p.q.y_zero);
  // MAXPS returns its second operand for NaN and for -0 against 0: v < 0 ? 0 : v.
  auto value = [&](__m512 xf, int64_t c, __mmask16 m) {
    const __m512 d = _mm512_mul_ps(_mm512_sub_ps(xf, za), sa);
    const __m512 v = _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(m, a + c), _mm512_maskz_loadu_ps(m, b + c));
    return relu ? _mm512_max_ps(zero, v) : v;
  };
  for (int64_t px = 0; px < pixels; ++px, x += C, y += C) {
    int64_t c = 0;
    if (quant64.usable)
      for (; c + 64 <= C; c += 64) {
        const __mmask16 all = 0xFFFF;
        _mm512_storeu_si512(y + c, quant64.template operator()<Y>(
                                       value(load16_all(x + c), c, all), value(load16_all(x + c + 16), c + 16, all),
                                       value(load16_all(x + c + 32), c + 32, all), value(load16_all(x + c + 48), c + 48, all)));
      }
    for (; c < C; c += 16) {
      const __mmask16 m = mask16(C - c);
      _mm_mask_storeu_epi8(y + c, m, _mm512_cvtepi32_epi8(quant(value(load16(x + c, m), c, m))));
    }
  }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void dw_requant_row(const ::spindle::kernels::DwRequantRow& args) {
#if defined(__AVX512F__)
  if (args.row.kh <= 64) {
    if (args.row.x_signed) dw_fused16<int8_t>(args);
    else dw_fused16<uint8_t>(args);
    return;
  }
#endif
  if (args.row.x_signed) {
    if (args.y_signed) dw_then_requant<int8_t, int8_t>(args);
    else dw_then_requant<int8_t, uint8_t>(args);
  } else {
    if (args.y_signed) dw_then_requant<uint8_t, int8_t>(args);
    else dw_then_requant<uint8_t, uint8_t>(args);
  }
}

void qlinear_binary_row(const ::spindle::kernels::QuantRow& args) {
  if (args.sign) binary<int8_t>(args);
  else binary<uint8_t>(args);
}

bool affine_q8_rows(const ::spindle::kernels::AffineQ8Rows& args) {
#if defined(__AVX512F__)
  if (args.dq.sign) {
    if (args.q.sign) affine_q8<int8_t, int8_t>(args);
    else affine_q8<int8_t, uint8_t>(args);
  } else {
    if (args.q.sign) affine_q8<uint8_t, int8_t>(args);
    else affine_q8<uint8_t, uint8_t>(args);
  }
  return true;
#else
  (void)args;
  return false;
#endif
}

void qlinear_gate_row(const ::spindle::kernels::QuantRow& args) {
  if (args.sign) gate<int8_t>(args);
  else gate<uint8_t>(args);
}

void quantize_row(const ::spindle::kernels::QuantRow& args) {
  if (args.sign) quantize_all<int8_t>(args);
  else quantize_all<uint8_t>(args);
}

void dequantize_row(const ::spindle::kernels::QuantRow& args) {
  if (args.sign) dequantize_all<int8_t>(args);
  else dequantize_all<uint8_t>(args);
}

void requant_row(const ::spindle::kernels::RequantRow& args) {
  if (args.y_signed) run(args, static_cast<int8_t*>(args.y));
  else run(args, static_cast<uint8_t*>(args.y));
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
