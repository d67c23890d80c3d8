// dw_q8.isa.cpp — dw_q8_row (dw_q8.h), compiled once per ISA level: a
// scalar loop, and at the avx512 level the VNNI loop when the CPU has it.
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>

#include "primitives/quant/dw_q8.h"
#include "primitives/quant/requant_one.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

void scalar_row(const ::spindle::kernels::DwQ8Row& a) {
  const ::spindle::kernels::DwQ8Weights& w = *a.w;
  for (int64_t f = 0; f < a.n; ++f) {
    const int64_t r = f % w.step, b = r / 64, j = r % 64, k = j % 4;
    int32_t acc = 0;
    for (int64_t t = 0; t < w.taps; ++t)
      acc += int32_t{a.runs[t][f]} * int32_t{w.packed[static_cast<size_t>(((t * w.blocks + b) * 4 + k) * 64 + j)]};
    const int64_t lane = (b * 4 + k) * 16 + j / 4;
    const int32_t v = one(acc, a.bias_lanes[lane], a.scale_lanes[lane], a.zp, a.lo, a.hi);
    if (a.y_signed) static_cast<int8_t*>(a.y)[f] = static_cast<int8_t>(v);
    else static_cast<uint8_t*>(a.y)[f] = static_cast<uint8_t>(v);
  }
}

#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

// NB blocks of weight block wb, `step` bytes apart from byte `at`, each
// with its first `width` bytes (and none past n): the sums over every tap,
// requantized, stored.
template <int NB>
__attribute__((target("avx512vnni"))) void blocks_vnni(const ::spindle::kernels::DwQ8Row& a, int64_t at, int64_t wb,
                                                       int64_t width, const Bounds16& bounds) {
  const ::spindle::kernels::DwQ8Weights& w = *a.w;
  const int64_t step = w.step;
  __m512i acc[NB][4];
  for (int q = 0; q < NB; ++q)
    for (int k = 0; k < 4; ++k) acc[q][k] = _mm512_setzero_si512();
  const int8_t* wp = w.packed.data() + wb * 256;
  const int64_t tap_stride = w.blocks * 256;
  for (int64_t t = 0; t < w.taps; ++t, wp += tap_stride) {
    const __m512i w0 = _mm512_loadu_si512(wp), w1 = _mm512_loadu_si512(wp + 64);
    const __m512i w2 = _mm512_loadu_si512(wp + 128), w3 = _mm512_loadu_si512(wp + 192);
    const uint8_t* run = a.runs[t] + at;
    for (int q = 0; q < NB; ++q) {
      const __m512i x = _mm512_loadu_si512(run + q * step);
      acc[q][0] = _mm512_dpbusd_epi32(acc[q][0], x, w0);
      acc[q][1] = _mm512_dpbusd_epi32(acc[q][1], x, w1);
      acc[q][2] = _mm512_dpbusd_epi32(acc[q][2], x, w2);
      acc[q][3] = _mm512_dpbusd_epi32(acc[q][3], x, w3);
    }
  }
  const __m512i low = _mm512_set1_epi32(0xFF);
  __m512i bias[4];
  __m512 scale[4];
  for (int k = 0; k < 4; ++k) {
    bias[k] = _mm512_loadu_si512(a.bias_lanes + (wb * 4 + k) * 16);
    scale[k] = _mm512_loadu_ps(a.scale_lanes + (wb * 4 + k) * 16);
  }
  for (int q = 0; q < NB; ++q) {
    // Lane i of sum k is byte 4i + k: the four requantized vectors' low
    // bytes interleave into 64 bytes in order.
    __m512i bytes = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i v = one16(acc[q][k], bias[k], scale[k], bounds.lo_z, bounds.hi_z, bounds.zp);
      bytes = _mm512_or_si512(bytes, _mm512_slli_epi32(_mm512_and_si512(v, low), 8 * k));
    }
    const int64_t off = at + q * step, valid = a.n - off < width ? a.n - off : width;
    uint8_t* out = static_cast<uint8_t*>(a.y) + off;
    if (valid >= 64) _mm512_storeu_si512(out, bytes);
    else _mm512_mask_storeu_epi8(out, _bzhi_u64(~uint64_t{0}, static_cast<unsigned>(valid)), bytes);
  }
}

// Every 64-byte block of the row, four at a time among those that share
// their weights.
void row_vnni(const ::spindle::kernels::DwQ8Row& a) {
  const int64_t step = a.w->step;
  const Bounds16 bounds(a.zp, a.lo, a.hi);
  for (int64_t wb = 0; wb < a.w->blocks && wb * 64 < a.n; ++wb) {
    const int64_t first = wb * 64, count = (a.n - first + step - 1) / step;  // blocks first, first + step, ... below n
    const int64_t width = step - first < 64 ? step - first : 64;
    int64_t i = 0;
    for (; i + 4 <= count; i += 4) blocks_vnni<4>(a, first + i * step, wb, width, bounds);
    switch (count - i) {
      case 3: blocks_vnni<3>(a, first + i * step, wb, width, bounds); break;
      case 2: blocks_vnni<2>(a, first + i * step, wb, width, bounds); break;
      case 1: blocks_vnni<1>(a, first + i * step, wb, width, bounds); break;
      default: break;
    }
  }
}

#pragma GCC diagnostic pop
#endif

}  // namespace

void dw_q8_row(const ::spindle::kernels::DwQ8Row& a) {
#if defined(__AVX512F__)
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
  if (vnni) {
    row_vnni(a);
    return;
  }
#endif
  scalar_row(a);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
