// requant_one.h — the requantization of requant.h, one value and (AVX-512)
// 16 at a time, shared by the per-ISA files that requantize int32 sums
// (requant.isa.cpp, dw_q8.isa.cpp). Include it from a *.isa.cpp only: its
// definitions live in the level's namespace with internal linkage.
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

constexpr float kMagicF = 12582912.0f;  // 1.5 * 2^23

// requant.h's definition for one value. The int32 sum wraps (unsigned
// arithmetic); v > lo_z ? v : lo_z keeps lo_z for a NaN product, as MAXPS
// does; the clamped product lies within +-510, where adding and subtracting
// 1.5 * 2^23 rounds it half to even exactly.
inline int32_t one(int32_t acc, int32_t bias, float scale, float zp, float lo, float hi) {
  const int32_t sum = static_cast<int32_t>(static_cast<uint32_t>(acc) + static_cast<uint32_t>(bias));
  const float lo_z = lo - zp, hi_z = hi - zp;
  float v = static_cast<float>(sum) * scale;
  v = v > lo_z ? v : lo_z;
  v = v < hi_z ? v : hi_z;
  return static_cast<int32_t>((v + kMagicF) - kMagicF + zp);
}

#if defined(__AVX512F__)
// GCC 12's unmasked AVX-512 intrinsics pass an "undefined" vector that
// -Wmaybe-uninitialized flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// 16 values of one(): the same float operations. MAXPS returns its second
// operand for a NaN, so a NaN product gives lo - zp; the conversion rounds
// half to even whatever MXCSR says.
inline __m512i one16(__m512i acc, __m512i bias, __m512 scale, __m512 lo_z, __m512 hi_z, __m512i zp) {
  __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc, bias)), scale);
  v = _mm512_min_ps(_mm512_max_ps(v, lo_z), hi_z);
  return _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
}

// The clamp bounds and zero point of one(), in registers.
struct Bounds16 {
  __m512 lo_z, hi_z;
  __m512i zp;
  Bounds16(float zp_f, float lo, float hi)
      : lo_z(_mm512_set1_ps(lo - zp_f)), hi_z(_mm512_set1_ps(hi - zp_f)),
        zp(_mm512_set1_epi32(static_cast<int32_t>(zp_f))) {}
};
#pragma GCC diagnostic pop
#endif

}  // namespace
}  // namespace spindle::kernels::SPINDLE_ISA_NS
