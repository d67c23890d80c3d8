// depthwise.isa.cpp — the inner loop of depthwise convolution (kernels/nn/conv/
// conv_depthwise.cpp), compiled once per ISA level (src/primitives/isa/dispatch.h)
// with the width-generic vectors of primitives/isa/simd.h.
//
// depthwise_flat computes out[f] = bias + sum_t wk[t] * taps[t][f] for
// f < n: the depthwise driver lays a band of output rows out as one flat
// range in which every tap reads its phase plane at a constant offset.
#include "primitives/isa/simd.h"

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

// ---------------------------------------------------------------- channel blocks
//
// depthwise_block: kDwLanes = 8 planes at a time, one plane per vector lane.
// The band's input rows are transposed into an interleaved buffer
// (row, padded column, lane) with zeros for the padding, every output pixel
// of the 8 planes is one vector: bias, then one multiply-add per tap in
// (kh, kw) order reading the buffer at the tap's pixel (padding taps add
// 0 * w like the flat path's zero padding, so the sums are the same bits),
// then the activation on the row, and the row is transposed back into the
// 8 output planes. Vectors run across channels, so small planes (7x7, 14x14)
// and stride 2 cost no more per output than large stride-1 planes.
#include "primitives/conv/depthwise.h"
#include "primitives/gemm/sgemm_isa.h"  // StoreAct

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace spindle::kernels::SPINDLE_ISA_NS {

#if defined(__AVX2__)
namespace {

// Input row ih of the 8 planes into dst (Wp pixels of 8 lanes): pixel j holds
// input column j - pl, zero outside the row (or the whole row outside the
// plane).
void fill_row(const DwBlockArgs& a, int64_t ih, int64_t Wp, float* dst) {
  if (ih < 0 || ih >= a.H) {
    for (int64_t i = 0; i < Wp * 8; ++i) dst[i] = 0.0f;
    return;
  }
  const int64_t lo = a.pl < Wp ? a.pl : Wp;                        // first pixel inside the row
  const int64_t hi = a.pl + a.W < Wp ? a.pl + a.W : Wp;           // one past the last
  for (int64_t i = 0; i < lo * 8; ++i) dst[i] = 0.0f;
  for (int64_t i = hi * 8; i < Wp * 8; ++i) dst[i] = 0.0f;
  const float* src = a.x + ih * a.W;
  int64_t c = 0;
  const int64_t n = hi - lo;  // columns [0, n) of the row land at pixels lo + c
  for (; c + 8 <= n; c += 8) {
    __m256 r[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(src + l * a.in_plane + c);
    simd::transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(dst + (lo + c + j) * 8, r[j]);
  }
  if (c < n) {  // the last 1-7 columns: masked loads (nothing read past them), the same transpose
    const int rem = static_cast<int>(n - c);
    const __m256i mask = simd::tail_mask8(rem);
    __m256 r[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm256_maskload_ps(src + l * a.in_plane + c, mask);
    simd::transpose8(r);
    for (int j = 0; j < rem; ++j) _mm256_storeu_ps(dst + (lo + c + j) * 8, r[j]);
  }
}

// Output row oh (pixels of 8 lanes) from the buffer rows starting at `rows`.
template <int KW>
void compute_row(const DwBlockArgs& a, const float* rows, int64_t Wp, const float* wk, __m256 bias, float* out) {
  const int64_t OW = a.OW, KH = a.KH, kw_n = KW > 0 ? KW : a.KW, sw8 = a.sw * 8, dw8 = a.dw * 8, rs = a.dh * Wp * 8;
  int64_t ow = 0;
  for (; ow + 4 <= OW; ow += 4) {
    __m256 acc0 = bias, acc1 = bias, acc2 = bias, acc3 = bias;
    const float* r = rows + ow * sw8;
    const float* wt = wk;
    for (int64_t kh = 0; kh < KH; ++kh, r += rs) {
      const float* p = r;
      for (int64_t kw = 0; kw < kw_n; ++kw, p += dw8, wt += 8) {
        const __m256 wv = _mm256_loadu_ps(wt);
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(p), wv, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(p + sw8), wv, acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 2 * sw8), wv, acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(p + 3 * sw8), wv, acc3);
      }
    }
    _mm256_storeu_ps(out + ow * 8, acc0);
    _mm256_storeu_ps(out + ow * 8 + 8, acc1);
    _mm256_storeu_ps(out + ow * 8 + 16, acc2);
    _mm256_storeu_ps(out + ow * 8 + 24, acc3);
  }
  for (; ow < OW; ++ow) {
    __m256 acc = bias;
    const float* r = rows + ow * sw8;
    const float* wt = wk;
    for (int64_t kh = 0; kh < KH; ++kh, r += rs) {
      const float* p = r;
      for (int64_t kw = 0; kw < kw_n; ++kw, p += dw8, wt += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(p), _mm256_loadu_ps(wt), acc);
    }
    _mm256_storeu_ps(out + ow * 8, acc);
  }
}

// The store-time activation of Relu / Clip (max, then min, with the bound
// first: NaN and -0 come out as Activation's pass leaves them), HardSigmoid
// and HardSwish (x * alpha + beta as one multiply-add, as the pass computes
// it): the SGEMM store's StoreAct, with its meaning of lo and hi.
struct DwClamp {
  StoreAct act = StoreAct::kNone;
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  __m256 operator()(__m256 v) const {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    switch (act) {
      case StoreAct::kNone:
        return v;
      case StoreAct::kClamp:
        return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
      case StoreAct::kHardSigmoid:
        return _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(v, lo, hi)));
      case StoreAct::kHardSwish:
        return _mm256_mul_ps(v, _mm256_min_ps(one, _mm256_max_ps(zero, _mm256_fmadd_ps(v, lo, hi))));
    }
    return v;
  }
};

// N output pixels from ow (r = their first input column) with N chains
// of accumulation in flight; each pixel's taps in (kh, kw) order.
template <int K, int SW, int N, class Weight>
inline __attribute__((always_inline)) void pixels_k(const float* r, int64_t rs, const Weight& weight, __m256 bias,
                                                    const DwClamp& clamp, float* out) {
  __m256 acc[N];
  for (int j = 0; j < N; ++j) acc[j] = bias;
  for (int kh = 0; kh < K; ++kh, r += rs) {
    __m256 v[(N - 1) * SW + K];
    for (int q = 0; q < (N - 1) * SW + K; ++q) v[q] = _mm256_loadu_ps(r + q * 8);
    for (int kw = 0; kw < K; ++kw) {
      const __m256 wv = weight(kh * K + kw);
      for (int j = 0; j < N; ++j) acc[j] = _mm256_fmadd_ps(v[j * SW + kw], wv, acc[j]);
    }
  }
  for (int j = 0; j < N; ++j) _mm256_storeu_ps(out + j * 8, clamp(acc[j]));
}

// compute_row for K x K taps (3 or 5), dilation 1, stride SW: 4 output
// pixels share the input vectors they read (a kernel row of 4 pixels reads
// 3 SW + K pixels, not 4 K), and 3 x 3's 9 weight vectors stay in registers
// (5 x 5's 25 are loaded once per kernel row and 4 pixels); the last 1-3
// pixels of a row run side by side the same way. Each pixel is bias, then one multiply-add per tap in (kh, kw)
// order, as in compute_row, so the bits are the same. dw3_112 (96 channels
// at 112 x 112) 0.75x, dw3s2_112 0.85x, 5 x 5 layers 0.93x (docs/benchmarks.md).
template <int K, int SW>
void compute_row_k(const DwBlockArgs& a, const float* rows, int64_t Wp, const float* wk, __m256 bias,
                   const DwClamp& clamp, float* out) {
  constexpr bool kRegW = K == 3;
  const int64_t OW = a.OW, rs = Wp * 8;
  __m256 wr[kRegW ? K * K : 1];
  if constexpr (kRegW)
    for (int t = 0; t < K * K; ++t) wr[t] = _mm256_loadu_ps(wk + t * 8);
  auto weight = [&](int t) __attribute__((always_inline)) {
    if constexpr (kRegW) return wr[t];
    else return _mm256_loadu_ps(wk + t * 8);
  };
  int64_t ow = 0;
  for (; ow + 4 <= OW; ow += 4) pixels_k<K, SW, 4>(rows + ow * SW * 8, rs, weight, bias, clamp, out + ow * 8);
  // The last 1-3 pixels side by side too (a 7-wide row is 4 + 3).
  const float* r = rows + ow * SW * 8;
  switch (OW - ow) {
    case 3: pixels_k<K, SW, 3>(r, rs, weight, bias, clamp, out + ow * 8); break;
    case 2: pixels_k<K, SW, 2>(r, rs, weight, bias, clamp, out + ow * 8); break;
    case 1: pixels_k<K, SW, 1>(r, rs, weight, bias, clamp, out + ow * 8); break;
    default: break;
  }
}

// The row of pixels back into row oh of the 8 output planes.
void store_row(const DwBlockArgs& a, int64_t oh, const float* out) {
  float* dst = a.y + oh * a.OW;
  int64_t c = 0;
  for (; c + 8 <= a.OW; c += 8) {
    __m256 r[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(out + (c + j) * 8);
    simd::transpose8(r);
    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(dst + l * a.out_plane + c, r[l]);
  }
  if (c < a.OW) {  // the last 1-7 pixels: out has room for 8 (its tail is not stored)
    const int rem = static_cast<int>(a.OW - c);
    __m256 r[8];
    for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(out + (c + j) * 8);
    simd::transpose8(r);
    for (int l = 0; l < 8; ++l) simd::store_first(dst + l * a.out_plane + c, r[l], rem);
  }
}

}  // namespace

bool depthwise_block_available() { return true; }

void depthwise_block(const DwBlockArgs& a) {
  const int64_t Wp = depthwise_block_width(a.OW, a.KW, a.sw, a.dw);
  const int64_t rows = depthwise_block_rows(a.oh1 - a.oh0, a.KH, a.sh, a.dh);
  const int64_t ih0 = a.oh0 * a.sh - a.pt;
  for (int64_t r = 0; r < rows; ++r) fill_row(a, ih0 + r, Wp, a.in_buf + r * Wp * 8);
  // Weights as (tap, lane) vectors.
  alignas(32) float wk[kDwMaxTaps * 8];
  for (int64_t t = 0; t < a.taps; ++t)
    for (int l = 0; l < 8; ++l) wk[t * 8 + l] = a.w[l * a.taps + t];
  alignas(32) float bias_l[8];
  for (int l = 0; l < 8; ++l) bias_l[l] = a.bias ? a.bias[l] : 0.0f;
  const __m256 bias = _mm256_load_ps(bias_l);
  const bool kk = a.KH == a.KW && (a.KW == 3 || a.KW == 5) && a.dh == 1 && a.dw == 1 && (a.sw == 1 || a.sw == 2);
  // Relu / Clip / HardSigmoid / HardSwish as those rows are stored; other
  // activations take a pass.
  DwClamp clamp;
  const Activation* pass = a.act;
  if (kk && a.act && !a.act->affine) {
    const Activation& act = *a.act;
    pass = nullptr;
    if (act.kind == Activation::kRelu || act.kind == Activation::kClip) {
      const bool relu = act.kind == Activation::kRelu;
      clamp = DwClamp{StoreAct::kClamp, _mm256_set1_ps(relu ? 0.0f : act.a),
                      _mm256_set1_ps(relu ? __builtin_inff() : act.b)};
    } else if (act.kind == Activation::kHardSigmoid) {
      clamp = DwClamp{StoreAct::kHardSigmoid, _mm256_set1_ps(act.a), _mm256_set1_ps(act.b)};
    } else if (act.kind == Activation::kHardSwish) {
      clamp = DwClamp{StoreAct::kHardSwish, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f)};
    } else {
      pass = a.act;
    }
  }
  for (int64_t oh = a.oh0; oh < a.oh1; ++oh) {
    const float* base = a.in_buf + (oh - a.oh0) * a.sh * Wp * 8;
    if (kk) {
      const int sel = static_cast<int>(a.KW * 2 + a.sw);  // 7, 8: 3 x 3; 11, 12: 5 x 5
      if (sel == 7) compute_row_k<3, 1>(a, base, Wp, wk, bias, clamp, a.out_buf);
      else if (sel == 8) compute_row_k<3, 2>(a, base, Wp, wk, bias, clamp, a.out_buf);
      else if (sel == 11) compute_row_k<5, 1>(a, base, Wp, wk, bias, clamp, a.out_buf);
      else compute_row_k<5, 2>(a, base, Wp, wk, bias, clamp, a.out_buf);
    } else switch (a.KW) {
      case 3: compute_row<3>(a, base, Wp, wk, bias, a.out_buf); break;
      case 5: compute_row<5>(a, base, Wp, wk, bias, a.out_buf); break;
      case 7: compute_row<7>(a, base, Wp, wk, bias, a.out_buf); break;
      default: compute_row<0>(a, base, Wp, wk, bias, a.out_buf); break;
    }
    if (pass) apply_activation(*pass, a.out_buf, a.OW * 8);
    store_row(a, oh, a.out_buf);
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS

#else

bool depthwise_block_available() { return false; }
void depthwise_block(const DwBlockArgs&) {}

}  // namespace spindle::kernels::SPINDLE_ISA_NS

#endif
