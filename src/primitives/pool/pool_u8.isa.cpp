// pool_u8.isa.cpp — max_pool_nhwc_row (pool_u8.h), compiled once per ISA
// level.
#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "primitives/pool/pool_u8.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

// out[c] = the max over the taps t of first[off[t] + c], c < C (taps > 0).
#if defined(__AVX512BW__)
template <class T>
inline __m512i max64(__m512i a, __m512i b) {
  if constexpr (std::is_same_v<T, int8_t>) return _mm512_max_epi8(a, b);
  else return _mm512_max_epu8(a, b);
}

template <class T>
void max_taps(const T* first, const int64_t* off, int64_t taps, int64_t C, T* out) {
  int64_t c = 0;
  // Whole vectors of 64 channels: unmasked loads and stores.
  for (; c + 64 <= C; c += 64) {
    __m512i acc = _mm512_loadu_si512(first + off[0] + c);
    for (int64_t t = 1; t < taps; ++t) acc = max64<T>(acc, _mm512_loadu_si512(first + off[t] + c));
    _mm512_storeu_si512(out + c, acc);
  }
  if (c < C) {
    const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(C - c));
    __m512i acc = _mm512_maskz_loadu_epi8(m, first + off[0] + c);
    for (int64_t t = 1; t < taps; ++t) acc = max64<T>(acc, _mm512_maskz_loadu_epi8(m, first + off[t] + c));
    _mm512_mask_storeu_epi8(out + c, m, acc);
  }
}
#else
template <class T>
void max_taps(const T* first, const int64_t* off, int64_t taps, int64_t C, T* __restrict out) {
  const T* __restrict p = first + off[0];
  for (int64_t c = 0; c < C; ++c) out[c] = p[c];
  for (int64_t t = 1; t < taps; ++t) {
    const T* __restrict q = first + off[t];
    for (int64_t c = 0; c < C; ++c) out[c] = std::max(out[c], q[c]);
  }
}
#endif

// One output row. The pixels [in0, in1) have every kernel column inside
// the row: their taps (the kernel rows inside the input) lie at fixed
// offsets from the window's first column, no bound checks. The others
// (borders) list their taps inside the input; none at all (a window wholly
// in the padding) gives the lowest value, as the max of nothing.
template <class T>
void max_row(const ::spindle::kernels::MaxPoolNhwcRow& a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t C = a.C, W = a.W, KW = a.kw;
  std::vector<int64_t> rows;  // the kernel rows inside the input: where their input rows start
  for (int64_t kh = 0; kh < a.kh; ++kh) {
    const int64_t ih = a.oh * a.sh - a.ph + kh * a.dh;
    if (ih >= 0 && ih < a.H) rows.push_back(ih * W * C);
  }
  const int64_t n_rows = static_cast<int64_t>(rows.size());
  std::vector<int64_t> inside(static_cast<size_t>(n_rows * KW)), border(static_cast<size_t>(n_rows * KW));
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t kw = 0; kw < KW; ++kw) inside[r * KW + kw] = rows[r] + kw * a.dw * C;
  const int64_t in0 = std::min(a.OW, (a.pw + a.sw - 1) / a.sw);
  const int64_t in1 = std::max(in0, std::min(a.OW, (W - (KW - 1) * a.dw + a.pw + a.sw - 1) / a.sw));
  for (int64_t ow = 0; ow < a.OW; ++ow) {
    const int64_t base = ow * a.sw - a.pw;  // the window's first column (may be outside)
    if (ow >= in0 && ow < in1 && n_rows > 0) {
      max_taps(x + base * C, inside.data(), n_rows * KW, C, y + ow * C);
      continue;
    }
    int64_t taps = 0;
    for (int64_t kw = 0; kw < KW; ++kw) {
      const int64_t iw = base + kw * a.dw;
      if (iw < 0 || iw >= W) continue;
      for (int64_t r = 0; r < n_rows; ++r) border[taps++] = rows[r] + iw * C;
    }
    if (taps > 0) max_taps(x, border.data(), taps, C, y + ow * C);
    else std::fill(y + ow * C, y + (ow + 1) * C, std::numeric_limits<T>::lowest());
  }
}

}  // namespace

void max_pool_nhwc_row(const ::spindle::kernels::MaxPoolNhwcRow& args) {
  if (args.sign) max_row<int8_t>(args);
  else max_row<uint8_t>(args);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
