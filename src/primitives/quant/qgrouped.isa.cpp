// qgrouped.isa.cpp — qgrouped_row (qgrouped.h), compiled once per ISA
// level: a scalar loop, and at the avx512 level the VNNI loop when the CPU
// has it. Inputs are read as uint8 (int8 with the top bit flipped, the zero
// point moved by 128): sum (x' - z') * w = sum x' * w - z' * sum w, with
// taps outside the input taken as x' = z', so the correction is the same
// for every output pixel.
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "primitives/quant/qgrouped.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

void scalar_row(const ::spindle::kernels::QGroupedRow& a) {
  const ::spindle::kernels::QGroupedWeights& w = *a.w;
  const int64_t C = a.C, cg = w.cg, steps = cg / 4;
  const uint8_t flip = a.x_signed ? 0x80 : 0;
  const int32_t zp = a.x_zp + (a.x_signed ? 128 : 0);
  for (int64_t ow = 0; ow < a.OW; ++ow) {
    int32_t* acc = a.acc + ow * C;
    for (int64_t oc = 0; oc < C; ++oc) acc[oc] = 0;
    for (int64_t i = 0; i < a.kh; ++i) {
      const int64_t ih = a.oh * a.sh - a.ph + i * a.dh;
      if (ih < 0 || ih >= a.H) continue;
      for (int64_t j = 0; j < a.kw; ++j) {
        const int64_t iw = ow * a.sw - a.pw + j * a.dw;
        if (iw < 0 || iw >= a.W) continue;
        const uint8_t* px = a.x + (ih * a.W + iw) * C;
        const int64_t t = i * a.kw + j;
        for (int64_t oc = 0; oc < C; ++oc) {
          const int64_t b = oc / kQGroupedLanes, lane = oc % kQGroupedLanes, base = oc / cg * cg;
          const int8_t* wp = w.packed.data() + ((b * w.taps + t) * steps * kQGroupedLanes + lane) * 4;
          int32_t s = 0;
          for (int64_t c = 0; c < cg; ++c)
            s += (static_cast<int32_t>(static_cast<uint8_t>(px[base + c] ^ flip)) - zp) *
                 wp[(c / 4) * kQGroupedLanes * 4 + c % 4];
          acc[oc] += s;
        }
      }
    }
  }
}

#if defined(__AVX512F__)
// GCC 12's AVX-512 intrinsics pass an "undefined" vector that
// -Wmaybe-uninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512vnni"))) void vnni_row(const ::spindle::kernels::QGroupedRow& a) {
  const ::spindle::kernels::QGroupedWeights& w = *a.w;
  const int64_t C = a.C, cg = w.cg, steps = cg / 4, taps = w.taps;
  const int64_t blocks = (C + kQGroupedLanes - 1) / kQGroupedLanes;
  const int32_t zp = a.x_zp + (a.x_signed ? 128 : 0);
  const __m512i vflip = _mm512_set1_epi32(a.x_signed ? static_cast<int32_t>(0x80808080u) : 0);
  const __m512i pad = _mm512_set1_epi8(static_cast<char>(zp));
  // Lane l's step j reads dword (l / cg) * steps + j of the pixel's 16 bytes.
  __m512i idx[4];
  for (int64_t j = 0; j < steps; ++j) {
    alignas(64) int32_t v[kQGroupedLanes];
    for (int64_t l = 0; l < kQGroupedLanes; ++l) v[l] = static_cast<int32_t>(l / cg * steps + j);
    idx[j] = _mm512_load_si512(v);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lanes = C - b * kQGroupedLanes < kQGroupedLanes ? C - b * kQGroupedLanes : kQGroupedLanes;
    const __mmask16 km = lanes == kQGroupedLanes ? static_cast<__mmask16>(0xFFFF)
                                                 : static_cast<__mmask16>((1u << lanes) - 1);
    const int8_t* wb = w.packed.data() + b * taps * steps * kQGroupedLanes * 4;
    const __m512i corr =
        _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(km, w.sums.data() + b * kQGroupedLanes), _mm512_set1_epi32(zp));
    for (int64_t ow = 0; ow < a.OW; ++ow) {
      __m512i acc = _mm512_setzero_si512();
      for (int64_t i = 0; i < a.kh; ++i) {
        const int64_t ih = a.oh * a.sh - a.ph + i * a.dh;
        const bool row_in = ih >= 0 && ih < a.H;
        for (int64_t j = 0; j < a.kw; ++j) {
          const int64_t iw = ow * a.sw - a.pw + j * a.dw;
          __m512i xv = pad;
          if (row_in && iw >= 0 && iw < a.W) {
            const __m128i x16 = _mm_maskz_loadu_epi8(km, a.x + (ih * a.W + iw) * C + b * kQGroupedLanes);
            xv = _mm512_xor_si512(_mm512_broadcast_i32x4(x16), vflip);
          }
          const int8_t* wt = wb + (i * a.kw + j) * steps * kQGroupedLanes * 4;
          for (int64_t s = 0; s < steps; ++s)
            acc = _mm512_dpbusd_epi32(acc, _mm512_permutexvar_epi32(idx[s], xv),
                                      _mm512_loadu_si512(wt + s * kQGroupedLanes * 4));
        }
      }
      _mm512_mask_storeu_epi32(a.acc + ow * C + b * kQGroupedLanes, km, _mm512_sub_epi32(acc, corr));
    }
  }
}
#pragma GCC diagnostic pop
#endif

}  // namespace

void qgrouped_row(const ::spindle::kernels::QGroupedRow& args) {
#if defined(__AVX512F__)
  if (args.vnni) {
    vnni_row(args);
    return;
  }
#endif
  scalar_row(args);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
