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
    const int64_t r = f % w.step, b = r / 64, j = r % 64, k = j % 4, in = (f / w.step) * a.in_step + r;
    int32_t acc = 0;
    for (int64_t t = 0; t < w.taps; ++t)
      acc += int32_t{a.runs[t][in]} * int32_t{w.packed[static_cast<size_t>(((t * w.blocks + b) * 4 + k) * 64 + j)]};
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

// The sums of NB blocks (q < NB) of weight block wb, their inputs in_step
// bytes apart from byte in_at of each run, over every tap, into
// sums[4q + k] (k = 0..3): named accumulators in a function of their own,
// stored at the end (with the requantization in the same function GCC
// copies every accumulator between registers on each step).
#define DWQ8_SUMS(q) __m512i s##q##0 = _mm512_setzero_si512(), s##q##1 = s##q##0, s##q##2 = s##q##0, s##q##3 = s##q##0;
#define DWQ8_STEP(q)                                      \
  if constexpr (NB > q) {                                 \
    const __m512i x = _mm512_loadu_si512(run + q * in_step); \
    s##q##0 = _mm512_dpbusd_epi32(s##q##0, x, w0);        \
    s##q##1 = _mm512_dpbusd_epi32(s##q##1, x, w1);        \
    s##q##2 = _mm512_dpbusd_epi32(s##q##2, x, w2);        \
    s##q##3 = _mm512_dpbusd_epi32(s##q##3, x, w3);        \
  }
#define DWQ8_OUT(q)                                  \
  if constexpr (NB > q) {                            \
    _mm512_store_si512(sums + 4 * q * 16, s##q##0);      \
    _mm512_store_si512(sums + (4 * q + 1) * 16, s##q##1); \
    _mm512_store_si512(sums + (4 * q + 2) * 16, s##q##2); \
    _mm512_store_si512(sums + (4 * q + 3) * 16, s##q##3); \
  }

template <int NB>
__attribute__((target("avx512vnni"), noinline)) void sum_blocks(const ::spindle::kernels::DwQ8Row& a, int64_t in_at,
                                                                int64_t wb, int32_t* sums) {
  const ::spindle::kernels::DwQ8Weights& w = *a.w;
  const int64_t in_step = a.in_step, taps = w.taps, tap_stride = w.blocks * 256;
  const uint8_t* const* runs = a.runs;
  const int8_t* wp = w.packed.data() + wb * 256;
  DWQ8_SUMS(0) DWQ8_SUMS(1) DWQ8_SUMS(2) DWQ8_SUMS(3)
  for (int64_t t = 0; t < taps; ++t, wp += tap_stride) {
    const __m512i w0 = _mm512_loadu_si512(wp), w1 = _mm512_loadu_si512(wp + 64);
    const __m512i w2 = _mm512_loadu_si512(wp + 128), w3 = _mm512_loadu_si512(wp + 192);
    const uint8_t* run = runs[t] + in_at;
    DWQ8_STEP(0) DWQ8_STEP(1) DWQ8_STEP(2) DWQ8_STEP(3)
  }
  DWQ8_OUT(0) DWQ8_OUT(1) DWQ8_OUT(2) DWQ8_OUT(3)
}
#undef DWQ8_SUMS
#undef DWQ8_STEP
#undef DWQ8_OUT

// NB blocks of weight block wb (sum_blocks), each with its first `width`
// bytes (and none past n), requantized and stored.
template <int NB>
__attribute__((target("avx512vnni"))) void blocks_vnni(const ::spindle::kernels::DwQ8Row& a, int64_t at, int64_t wb,
                                                       int64_t width, const Bounds16& bounds) {
  alignas(64) int32_t sums[NB * 4 * 16];
  sum_blocks<NB>(a, (at / a.w->step) * a.in_step + at % a.w->step, wb, sums);
  const int64_t step = a.w->step;
  const __m512i low = _mm512_set1_epi32(0xFF);
  for (int q = 0; q < NB; ++q) {
    // Lane i of sum k is byte 4i + k: the four requantized vectors' low
    // bytes interleave into 64 bytes in order.
    __m512i bytes = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m512i v = one16(_mm512_load_si512(sums + (4 * q + k) * 16), _mm512_loadu_si512(a.bias_lanes + wb * 64 + k * 16),
                              _mm512_loadu_ps(a.scale_lanes + wb * 64 + k * 16), bounds.lo_z, bounds.hi_z, bounds.zp);
      // uint8 values are inside [0, 255] already; int8 ones keep their low byte.
      bytes = _mm512_or_si512(bytes, _mm512_slli_epi32(a.y_signed && k < 3 ? _mm512_and_si512(v, low) : v, 8 * k));
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
