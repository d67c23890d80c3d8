// depthwise.isa.cpp — the inner loop of depthwise convolution (conv.cpp's
// depthwise path), compiled once per ISA level (src/kernels/isa/dispatch.h)
// with the width-generic vectors of kernels/isa/simd.h.
//
// depthwise_flat computes out[f] = bias + sum_t wk[t] * taps[t][f] for
// f < n: conv.cpp lays a band of output rows out as one flat range in which
// every tap reads its phase plane at a constant offset.
#include "kernels/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

// V vectors of outputs out[f .. f + V * width): bias + sum_t w[t] * taps[t][f ..].
template <int T, int V, bool Tail>
inline void dw_tile(const float* const* taps, int nt, const float* wk, float bias, float* out, int64_t f, int tail) {
  constexpr int W = simd::kWidth;
  const int ntaps = T > 0 ? T : nt;
  simd::VFloat acc[V];
  for (int v = 0; v < V; ++v) acc[v] = simd::set1(bias);
  for (int t = 0; t < ntaps; ++t) {
    const simd::VFloat wv = simd::set1(wk[t]);
    const float* p = taps[t] + f;
    for (int v = 0; v < V; ++v)
      acc[v] = simd::fmadd(wv, Tail ? simd::load_n(p + v * W, tail) : simd::load(p + v * W), acc[v]);
  }
  for (int v = 0; v < V; ++v) {
    if (Tail) simd::store_n(out + f + v * W, acc[v], tail);
    else simd::store(out + f + v * W, acc[v]);
  }
}

// out[0, n) in tiles of 8 / 4 / 1 vectors (8 independent FMA chains hide
// the FMA latency), then one masked vector.
template <int T>
void dw_flat(const float* const* taps, int nt, const float* wk, float bias, float* out, int64_t n) {
  constexpr int W = simd::kWidth;
  int64_t f = 0;
  for (; f + 8 * W <= n; f += 8 * W) dw_tile<T, 8, false>(taps, nt, wk, bias, out, f, W);
  for (; f + 4 * W <= n; f += 4 * W) dw_tile<T, 4, false>(taps, nt, wk, bias, out, f, W);
  for (; f + W <= n; f += W) dw_tile<T, 1, false>(taps, nt, wk, bias, out, f, W);
  if (f < n) dw_tile<T, 1, true>(taps, nt, wk, bias, out, f, static_cast<int>(n - f));
}

}  // namespace

void depthwise_flat(const float* const* taps, int nt, const float* wk, float bias, float* out, int64_t n) {
  switch (nt) {
    case 9: dw_flat<9>(taps, nt, wk, bias, out, n); break;
    case 25: dw_flat<25>(taps, nt, wk, bias, out, n); break;
    case 3: dw_flat<3>(taps, nt, wk, bias, out, n); break;
    default: dw_flat<0>(taps, nt, wk, bias, out, n); break;
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
