// qgemm_vnni_step.h — one k group of an AVX512-VNNI tile, shared by the
// plain tiles (qgemm.isa.cpp) and the requantizing ones
// (qgemm_requant.isa.cpp). Expands inside a tile function that has declared
// the accumulators c<r><p> (rows r < MR, panels p < NP: 1, 2 or 4), `pb`
// (the first panel at k group 0), `pstride` (bytes between panels), `g` (the
// k group), `vflip` (the A sign flip, used when FLIP) and two macros of its
// own: QG_A(r), the address of row r's 4 bytes at group g, and LOADA(p),
// which loads those 4 bytes as an int32 (load_part_a4 for a last partial
// group).
#pragma once

#include <cstdint>
#include <cstring>

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

// The first k4 (1 to 3) bytes at p, the rest zero, as an int32: fixed-size
// moves (a variable-size memcpy is a library call, around which a tile's
// accumulators are spilled to the stack).
inline uint32_t load_part_a4(const uint8_t* p, int k4) {
  if (k4 == 1) return p[0];
  uint16_t two;
  std::memcpy(&two, p, 2);
  return k4 == 2 ? uint32_t{two} : uint32_t{two} | (uint32_t{p[2]} << 16);
}

}  // namespace
}  // namespace spindle::kernels::SPINDLE_ISA_NS

#if defined(__AVX512F__)
#define QG_VNNI_ROW(r)                                                    \
  if constexpr (MR > r) {                                                 \
    __m512i av = _mm512_set1_epi32(LOADA(QG_A(r)));                       \
    if constexpr (FLIP) av = _mm512_xor_si512(av, vflip);                 \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                       \
    if constexpr (NP > 1) c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1); \
    if constexpr (NP > 2) {                                               \
      c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, b2);                     \
      c##r##3 = _mm512_dpbusd_epi32(c##r##3, av, b3);                     \
    }                                                                     \
  }
// KGROUP: bytes of one k group of one panel.
#define QG_VNNI_GROUP(KGROUP)                                                       \
  {                                                                                 \
    const int8_t* bp = pb + g * (KGROUP);                                           \
    const __m512i b0 = _mm512_loadu_si512(bp);                                      \
    __m512i b1 = b0, b2 = b0, b3 = b0;                                              \
    if constexpr (NP > 1) b1 = _mm512_loadu_si512(bp + pstride);                    \
    if constexpr (NP > 2) {                                                         \
      b2 = _mm512_loadu_si512(bp + 2 * pstride);                                    \
      b3 = _mm512_loadu_si512(bp + 3 * pstride);                                    \
    }                                                                               \
    QG_VNNI_ROW(0) QG_VNNI_ROW(1) QG_VNNI_ROW(2) QG_VNNI_ROW(3) QG_VNNI_ROW(4) QG_VNNI_ROW(5) \
  }
#endif
