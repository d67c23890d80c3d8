// conv_planes.h — zero-padded input rows and stride-phase planes, the input
// layout of the direct convolution paths (depthwise, grouped, taps): every
// tap then reads contiguous memory at a constant offset. Inline, so each
// driver compiles them with its own loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "kernels/nn/nn_util.h"

namespace spindle::kernels::nn::conv {

// Fills one padded input row: padded column j holds input column j - pl (0
// outside the input), stored at dst[(j % sw) * phase_stride + j / sw].
inline void fill_padded_row(const float* src, int64_t W, int64_t pl, int64_t NW, int64_t sw, int64_t phase_stride,
                            float* dst) {
  const int64_t jlo = std::clamp<int64_t>(pl, 0, NW);         // first j inside the input
  const int64_t jhi = std::clamp<int64_t>(pl + W, jlo, NW);  // one past the last
  if (sw == 1) {
    for (int64_t j = 0; j < jlo; ++j) dst[j] = 0.0f;
    std::memcpy(dst + jlo, src + (jlo - pl), static_cast<size_t>(jhi - jlo) * sizeof(float));
    for (int64_t j = jhi; j < NW; ++j) dst[j] = 0.0f;
    return;
  }
  if (sw == 2) {
    float* ph[2] = {dst, dst + phase_stride};
    for (int64_t j = 0; j < jlo; ++j) ph[j & 1][j >> 1] = 0.0f;
    int64_t j = jlo;
    if (j & 1) ph[1][j >> 1] = src[j - pl], ++j;
    // Interior pairs (j even, j + 1) both inside [jlo, jhi): a plain deinterleave.
    float* ev = ph[0] + (j >> 1);
    float* od = ph[1] + (j >> 1);
    const float* s = src + (j - pl);
    const int64_t pairs = (jhi - j) / 2;
    for (int64_t t = 0; t < pairs; ++t) {
      ev[t] = s[2 * t];
      od[t] = s[2 * t + 1];
    }
    for (j += 2 * pairs; j < jhi; ++j) ph[j & 1][j >> 1] = src[j - pl];
    for (; j < NW; ++j) ph[j & 1][j >> 1] = 0.0f;
    return;
  }
  for (int64_t j = 0; j < NW; ++j)
    dst[(j % sw) * phase_stride + j / sw] = j >= jlo && j < jhi ? src[j - pl] : 0.0f;
}

// The phase planes of a band of output rows (band rows): sh x sw planes of
// prow rows x L columns each (one input plane).
struct PhasePlanes {
  int64_t L, prow, psize, nphases;
  PhasePlanes(const Window3& w, int64_t band) {
    // Strides and dilations come from the model: a stride of 2^62 overflowed
    // these products (fuzz_graph). Checked; the scratch they size is bounded
    // by scratch_floats.
    auto checked = [](int64_t a, int64_t b, bool product) {
      int64_t r = 0;
      if (product ? __builtin_mul_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r))
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("convolution phase planes: {} {} {} does not fit in 64 bits (strides or dilations "
                                "too large)", a, product ? "x" : "+", b));
      return r;
    };
    auto mul = [&](int64_t a, int64_t b) { return checked(a, b, true); };
    auto add = [&](int64_t a, int64_t b) { return checked(a, b, false); };
    const int64_t NW = add(add(mul(w.out[2] - 1, w.s[2]), mul(w.k[2] - 1, w.d[2])), 1);
    L = NW / w.s[2] + (NW % w.s[2] != 0 ? 1 : 0);
    // Rows per phase plane: the band plus the largest row offset of a tap, +1
    // so full-width vector loads of the last flat outputs stay inside.
    prow = add(band + 2, mul(w.k[1] - 1, w.d[1]) / w.s[1]);
    psize = mul(prow, L);
    nphases = mul(w.s[1], w.s[2]);
    mul(nphases, psize);  // the scratch of all phases
  }
  // Offset of tap (kh, kw) from the first plane.
  int64_t tap(const Window3& w, int64_t kh, int64_t kw) const {
    const int64_t rr = kh * w.d[1], cc = kw * w.d[2], sh = w.s[1], sw = w.s[2];
    return ((rr % sh) * sw + cc % sw) * psize + (rr / sh) * L + cc / sw;
  }
};

// Fills the phase planes (buf, pp.nphases * pp.psize floats) of one input
// plane x for the band of output rows [oh0, oh0 + band).
inline void fill_phase_planes(const float* x, const Window3& w, int64_t oh0, int64_t band, const PhasePlanes& pp,
                              float* buf) {
  const int64_t H = w.in[1], W = w.in[2], sh = w.s[1], sw = w.s[2];
  const int64_t rows = (band - 1) * sh + (w.k[1] - 1) * w.d[1] + 1;
  const int64_t NW = (w.out[2] - 1) * sw + (w.k[2] - 1) * w.d[2] + 1;
  const int64_t L = pp.L, psize = pp.psize;
  const int64_t r0 = oh0 * sh - w.pb[1];
  // Every element a tap can read is written (input, padding or zero), so
  // the flat loop never meets stale scratch values (e.g. denormals).
  for (int64_t r = 0, a = 0, i = 0; r < pp.prow * sh; ++r) {  // r = i * sh + a
    const int64_t ih = r0 + r;
    float* dst = buf + a * sw * psize + i * L;
    if (++a == sh) a = 0, ++i;
    if (r >= rows || ih < 0 || ih >= H) {
      for (int64_t q = 0; q < sw; ++q) std::memset(dst + q * psize, 0, static_cast<size_t>(L) * sizeof(float));
      continue;
    }
    fill_padded_row(x + ih * W, W, w.pb[2], NW, sw, psize, dst);
    for (int64_t q = NW % sw; q > 0 && q < sw; ++q) dst[q * psize + L - 1] = 0.0f;  // phases one short
  }
}

// Output rows [oh0, oh1) of one depthwise plane (spatial dims 1 and 2 of w).
//
// The padded input rows of the band are split into sh x sw phase planes
// (row phase r % sh, column phase j % sw) of L = ceil(NW / sw) columns.
// Output (oh, ow) is computed at the flat index f = (oh - oh0) * L + ow, and
// tap (kh, kw) then reads its phase plane at f plus a constant offset, so

}  // namespace spindle::kernels::nn::conv
