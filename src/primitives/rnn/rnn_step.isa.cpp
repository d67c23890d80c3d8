// rnn_step.isa.cpp — the recurrent product of RNN / GRU / LSTM for small
// batches, compiled once per ISA level (src/primitives/isa/dispatch.h).
//
// One step multiplies the previous hidden state h [len] by the recurrence
// weights R [rows, len]: out[j] = sum_k R[j, k] h[k]. R is packed once (at
// session creation when it is a constant, else once per call) into panels
// of rnn_panel_rows() rows (eight vectors of the level's width), each stored
// k-major: panel[k][j]. A step then streams the packed R once, front to
// back: for each k, one broadcast of h[k] and one multiply-add per vector of
// the panel into accumulators that stay in registers; no horizontal sums, no
// packing per step.
//
// The gate non-linearities (sigmoid, tanh over a gate vector) are here too,
// so they run at the level's vector width, and so are the fused steps of the
// cells with their default activations (LSTM; GRU with linear_before_reset
// as PyTorch exports it, and without, ONNX's default, in two halves around
// its second product; RNN with tanh): gates and state update in one pass.
//
// Determinism: each out[j] is one running sum over k in index order, whatever
// the threads (levels differ in the last bits: fused multiply-add from AVX2
// on, a multiply and an add at the baseline).
#include <cstdint>

#include "primitives/isa/dispatch.h"
#include "primitives/isa/simd.h"
#include "primitives/math/vec_exp.h"
#include "primitives/math/vec_math.h"
#include "primitives/rnn/rnn_step.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr int64_t kW = simd::kWidth;
constexpr int kPanelVecs = 8;  // accumulators per panel: enough to hide the multiply-add latency
constexpr int64_t kPanel = kPanelVecs * kW;

// Width of the panel starting at row j0 (rows past `rows` are zero padding).
inline int64_t panel_width(int64_t j0, int64_t rows) {
  const int64_t n = rows - j0 < kPanel ? rows - j0 : kPanel;
  return (n + kW - 1) / kW * kW;
}

// One panel of N vectors: out[0:valid] = panel x.
template <int N>
inline void panel_product(const float* p, int64_t len, const float* x, float* out, int64_t valid) {
  simd::VFloat acc[N];
  for (int i = 0; i < N; ++i) acc[i] = simd::set1(0.0f);
  for (int64_t k = 0; k < len; ++k) {
    const simd::VFloat xv = simd::set1(x[k]);
    const float* pk = p + k * N * kW;
    for (int i = 0; i < N; ++i) acc[i] = simd::fmadd(simd::load(pk + i * kW), xv, acc[i]);
  }
  for (int i = 0; i < N; ++i) {
    const int64_t n = valid - i * kW;
    if (n >= kW) simd::store(out + i * kW, acc[i]);
    else if (n > 0) simd::store_n(out + i * kW, acc[i], static_cast<int>(n));
  }
}

}  // namespace

int64_t rnn_panel_rows() { return kPanel; }

int64_t rnn_packed_size(int64_t rows, int64_t len) {
  int64_t n = 0;
  for (int64_t j0 = 0; j0 < rows; j0 += kPanel) n += panel_width(j0, rows) * len;
  return n;
}

void rnn_pack(const float* r, int64_t rows, int64_t len, float* out) {
  for (int64_t j0 = 0; j0 < rows; j0 += kPanel) {
    const int64_t w = panel_width(j0, rows);
    for (int64_t k = 0; k < len; ++k)
      for (int64_t j = 0; j < w; ++j) out[k * w + j] = j0 + j < rows ? r[(j0 + j) * len + k] : 0.0f;
    out += w * len;
  }
}

void rnn_matvec_packed(const float* packed, int64_t rows, int64_t len, const float* x, float* out, bool backward) {
  // Every panel but the last is kPanel rows wide, so the panel starting at
  // row j0 begins at j0 * len. `backward` runs the panels last to first: R
  // streams through the cache in alternating directions step after step,
  // so a step starts on the rows the previous one read last, still in L2
  // when R is about as large as L2 (LSTM 256: 1 MB). Each panel's sums are
  // the same either way.
  const int64_t panels = (rows + kPanel - 1) / kPanel;
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = (backward ? panels - 1 - q : q) * kPanel;
    const int64_t w = panel_width(j0, rows), valid = rows - j0 < w ? rows - j0 : w;
    const float* p = packed + j0 * len;
    switch (w / kW) {
      case 8: panel_product<8>(p, len, x, out + j0, valid); break;
      case 7: panel_product<7>(p, len, x, out + j0, valid); break;
      case 6: panel_product<6>(p, len, x, out + j0, valid); break;
      case 5: panel_product<5>(p, len, x, out + j0, valid); break;
      case 4: panel_product<4>(p, len, x, out + j0, valid); break;
      case 3: panel_product<3>(p, len, x, out + j0, valid); break;
      case 2: panel_product<2>(p, len, x, out + j0, valid); break;
      default: panel_product<1>(p, len, x, out + j0, valid); break;
    }
  }
}

namespace {

// clip(v) of the ONNX recurrent ops (NaN stays NaN).
template <bool Clip>
inline float clipped(float v, float c) {
  if constexpr (Clip) return v < -c ? -c : (v > c ? c : v);
  return v;
}

inline void sigmoid_n(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_sigmoid(v[i]);
}
inline void tanh_n(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_tanh(v[i]);
}

// The fused steps go through the hidden units in chunks that stay in L1,
// each as a few simple loops (one loop calling several polynomial
// activations is left scalar by the vectorizer).
constexpr int64_t kChunk = 64;

// The LSTM cell on 8 lanes: gate_sigmoid_v and gate_tanh_v below as
// intrinsics (32 units at a time, four vectors of chains in flight, then 16,
// then 8), with scalar twins doing the same operations one for one for the
// units past the last multiple of 8, so a unit's bits do not depend on where
// it falls. Auto-vectorized from the vec_math.h forms, the cells spent ~16
// cycles a unit (blends after every select and clamp); they were 12% of a
// bidirectional LSTM 128 tagger (docs/benchmarks.md).
//   sigmoid: e = exp(max(-|v|, -87.3)), v >= 0 ? 1 / (1 + e) : e / (1 + e)
//   tanh:    |v| < 0.625: Cephes' odd polynomial; else sign(v) (1 - 2 / (exp(min(2|v|, 88.3)) + 1))
// (exp_normal of vec_exp.h; ~2.4e-7 relative; NaN stays NaN).
inline float gate_sigmoid(float v) {
  const float a = v < 0.0f ? v : -v;  // -|v|; NaN stays NaN
  const float e = vm::exp_normal(-87.3f > a ? -87.3f : a);
  const float s = 1.0f / (1.0f + e);
  return v >= 0.0f ? s : e * s;
}
inline float gate_tanh(float v) {
  const float ax = __builtin_fabsf(v), z = v * v;
  float p = -5.70498872745e-3f;
  p = vm::fma_or_mul_add(p, z, 2.06390887954e-2f);
  p = vm::fma_or_mul_add(p, z, -5.37397155531e-2f);
  p = vm::fma_or_mul_add(p, z, 1.33314422036e-1f);
  p = vm::fma_or_mul_add(p, z, -3.33332819422e-1f);
  const float small = vm::fma_or_mul_add(p * z, v, v);
  const float t = 2.0f * ax;
  const float e = vm::exp_normal(88.3f < t ? 88.3f : t);
  const float big = 1.0f - 2.0f / (e + 1.0f);
  return ax < 0.625f ? small : (v < 0.0f ? -big : big);
}
template <bool Clip>
inline float clip_s(float v, float c) {
  if constexpr (Clip) return v < -c ? -c : (v > c ? c : v);
  return v;
}

#if defined(SPINDLE_VEC_EXP_AVX2)
// max(a, v) / min(a, v) with the constant first: a NaN v comes out as v.
// Over V = __m256 or vm::Lanes<N> (N vectors of units in flight), or
// vm::Wide<N> at the AVX-512 level.
template <class V>
__attribute__((always_inline)) inline V gate_sigmoid_v(V v) {
  using namespace vm;
  const V zero = l_set1<V>(0.0f);
  const V a = l_min(l_sub(zero, v), v);  // -|v|; NaN stays NaN
  const V e = exp_normal_v(l_max(l_set1<V>(-87.3f), a));
  const V s = l_div(l_set1<V>(1.0f), l_add(l_set1<V>(1.0f), e));
  return l_blendv(l_mul(e, s), s, l_ge(v, zero));
}
template <class V>
__attribute__((always_inline)) inline V gate_tanh_v(V v) {
  using namespace vm;
  const V sign = l_set1<V>(-0.0f);
  const V ax = l_andnot(sign, v), z = l_mul(v, v);
  V p = l_set1<V>(-5.70498872745e-3f);
  p = l_fmadd(p, z, l_set1<V>(2.06390887954e-2f));
  p = l_fmadd(p, z, l_set1<V>(-5.37397155531e-2f));
  p = l_fmadd(p, z, l_set1<V>(1.33314422036e-1f));
  p = l_fmadd(p, z, l_set1<V>(-3.33332819422e-1f));
  const V small = l_fmadd(l_mul(p, z), v, v);
  const V t = l_add(ax, ax);
  const V e = exp_normal_v(l_min(l_set1<V>(88.3f), t));
  const V big = l_sub(l_set1<V>(1.0f), l_div(l_set1<V>(2.0f), l_add(e, l_set1<V>(1.0f))));
  const V signed_big = l_or(big, l_and(sign, v));  // big >= 0: the sign of v
  return l_blendv(signed_big, small, l_lt(ax, l_set1<V>(0.625f)));
}
template <bool Clip, class V>
__attribute__((always_inline)) inline V clip_v(V v, V lo, V hi) {
  if constexpr (Clip) return vm::l_min(hi, vm::l_max(lo, v));
  return v;
}
#endif

// One LSTM step of one batch entry: the cell of unit j (Vec = __m256 for 8
// units at a time, float for one).
template <bool Peep, bool Clip, bool InputForget>
void lstm_cells(const float* xg, const float* hg, int64_t H, const float* p, float clip, float* c, float* h) {
  int64_t j = 0;
#if defined(SPINDLE_VEC_EXP_AVX2)
  // 32 units (four vectors of chains in flight; two 16-lane vectors at the
  // AVX-512 level), 16, then 8 (eight vectors measured slower: 1.04-1.05x).
  auto cells = [&](auto tag) {
    using V = decltype(tag);
    constexpr int64_t kUnits = sizeof(V) / sizeof(float);
    const V lo = vm::l_set1<V>(-clip), hi = vm::l_set1<V>(clip), one = vm::l_set1<V>(1.0f);
    auto ld = [](const float* q) { return vm::l_load<V>(q); };
    auto st = [](float* q, const V& v) { vm::l_store(q, v); };
    using namespace vm;
    for (; j + kUnits <= H; j += kUnits) {
      const V cj = ld(c + j);
      V pi = l_add(ld(xg + j), ld(hg + j)), pf = l_add(ld(xg + 2 * H + j), ld(hg + 2 * H + j));
      if constexpr (Peep) {
        pi = l_fmadd(ld(p + j), cj, pi);
        pf = l_fmadd(ld(p + 2 * H + j), cj, pf);
      }
      const V ig = gate_sigmoid_v(clip_v<Clip>(pi, lo, hi));
      const V fg = InputForget ? l_sub(one, ig) : gate_sigmoid_v(clip_v<Clip>(pf, lo, hi));
      const V gg = gate_tanh_v(clip_v<Clip>(l_add(ld(xg + 3 * H + j), ld(hg + 3 * H + j)), lo, hi));
      const V ct = l_fmadd(fg, cj, l_mul(ig, gg));
      V po = l_add(ld(xg + H + j), ld(hg + H + j));
      if constexpr (Peep) po = l_fmadd(ld(p + H + j), ct, po);
      const V og = gate_sigmoid_v(clip_v<Clip>(po, lo, hi));
      st(c + j, ct);
      st(h + j, l_mul(og, gate_tanh_v(ct)));
    }
  };
#if defined(__AVX512F__)
  cells(vm::Wide<2>{});
#endif
  cells(vm::Lanes<4>{});
  cells(vm::Lanes<2>{});
  cells(__m256{});
#endif
  for (; j < H; ++j) {
    const float cj = c[j];
    float pi = xg[j] + hg[j], pf = xg[2 * H + j] + hg[2 * H + j];
    if constexpr (Peep) {
      pi = vm::fma_or_mul_add(p[j], cj, pi);
      pf = vm::fma_or_mul_add(p[2 * H + j], cj, pf);
    }
    const float ig = gate_sigmoid(clip_s<Clip>(pi, clip));
    const float fg = InputForget ? 1.0f - ig : gate_sigmoid(clip_s<Clip>(pf, clip));
    const float gg = gate_tanh(clip_s<Clip>(xg[3 * H + j] + hg[3 * H + j], clip));
    const float ct = vm::fma_or_mul_add(fg, cj, ig * gg);
    float po = xg[H + j] + hg[H + j];
    if constexpr (Peep) po = vm::fma_or_mul_add(p[H + j], ct, po);
    const float og = gate_sigmoid(clip_s<Clip>(po, clip));
    c[j] = ct;
    h[j] = og * gate_tanh(ct);
  }
}

// One GRU step (linear_before_reset) of one batch entry.
template <bool Clip>
void gru_lbr_cells(const float* xg, const float* hg, const float* rbh, int64_t H, float clip, float* h) {
  float zg[kChunk], rg[kChunk], ng[kChunk];
  for (int64_t k0 = 0; k0 < H; k0 += kChunk) {
    const int64_t n = H - k0 < kChunk ? H - k0 : kChunk;
    const float* x = xg + k0;
    const float* r = hg + k0;
    for (int64_t j = 0; j < n; ++j) {
      zg[j] = clipped<Clip>(x[j] + r[j], clip);
      rg[j] = clipped<Clip>(x[H + j] + r[H + j], clip);
    }
    sigmoid_n(zg, n);
    sigmoid_n(rg, n);
    for (int64_t j = 0; j < n; ++j) ng[j] = clipped<Clip>(x[2 * H + j] + rg[j] * (r[2 * H + j] + rbh[k0 + j]), clip);
    tanh_n(ng, n);
    for (int64_t j = 0; j < n; ++j) h[k0 + j] = (1.0f - zg[j]) * ng[j] + zg[j] * h[k0 + j];
  }
}

// GRU without linear_before_reset (ONNX's default), first half of a step:
// z = sigmoid(x_z + h_z), r = sigmoid(x_r + h_r) from xg, hg ([z r ...] of H
// each); writes z and rh = r . h_{t-1}, the input of the R_h product.
// f(k0, n) for the chunks [k0, k0 + n) of H hidden units.
template <class F>
inline void for_chunks(int64_t H, F&& f) {
  for (int64_t k0 = 0; k0 < H; k0 += kChunk) f(k0, H - k0 < kChunk ? H - k0 : kChunk);
}

template <bool Clip>
void gru_zr_cells(const float* xg, const float* hg, const float* h, int64_t H, float clip, float* z, float* rh) {
  float rg[kChunk];
  for_chunks(H, [&](int64_t k0, int64_t n) {
    float* zk = z + k0;
    for (int64_t j = 0; j < n; ++j) {
      zk[j] = clipped<Clip>(xg[k0 + j] + hg[k0 + j], clip);
      rg[j] = clipped<Clip>(xg[H + k0 + j] + hg[H + k0 + j], clip);
    }
    sigmoid_n(zk, n);
    sigmoid_n(rg, n);
    for (int64_t j = 0; j < n; ++j) rh[k0 + j] = rg[j] * h[k0 + j];
  });
}

// Second half: h = (1 - z) . tanh(x_h + (r . h_{t-1}) R_h^T + Rb_h) + z . h.
template <bool Clip>
void gru_h_cells(const float* xh, const float* rhr, const float* rbh, const float* z, int64_t H, float clip,
                 float* h) {
  float ng[kChunk];
  for_chunks(H, [&](int64_t k0, int64_t n) {
    for (int64_t j = 0; j < n; ++j) ng[j] = clipped<Clip>(xh[k0 + j] + rhr[k0 + j] + rbh[k0 + j], clip);
    tanh_n(ng, n);
    const float* zk = z + k0;
    for (int64_t j = 0; j < n; ++j) h[k0 + j] = (1.0f - zk[j]) * ng[j] + zk[j] * h[k0 + j];
  });
}

// RNN with tanh: h = tanh(x + h_{t-1} R^T).
template <bool Clip>
void rnn_tanh_cells(const float* xg, const float* hg, int64_t H, float clip, float* h) {
  for (int64_t j = 0; j < H; ++j) h[j] = clipped<Clip>(xg[j] + hg[j], clip);
  tanh_n(h, H);
}

}  // namespace

// LSTM with the default activations (sigmoid, tanh, tanh): from the gate
// pre-activations xg (X_t W^T + biases) and hg (H_{t-1} R^T), both [i o f c]
// of H each, updates the cell state c and the hidden state h in one pass.
// peep: [i o f] peepholes or null; clip 0: none.
void lstm_step(const float* xg, const float* hg, int64_t H, const float* peep, float clip, bool input_forget, float* c,
               float* h) {
  const bool cl = clip > 0;
  if (peep) {
    if (cl) input_forget ? lstm_cells<true, true, true>(xg, hg, H, peep, clip, c, h)
                         : lstm_cells<true, true, false>(xg, hg, H, peep, clip, c, h);
    else input_forget ? lstm_cells<true, false, true>(xg, hg, H, peep, clip, c, h)
                      : lstm_cells<true, false, false>(xg, hg, H, peep, clip, c, h);
  } else {
    if (cl) input_forget ? lstm_cells<false, true, true>(xg, hg, H, peep, clip, c, h)
                         : lstm_cells<false, true, false>(xg, hg, H, peep, clip, c, h);
    else input_forget ? lstm_cells<false, false, true>(xg, hg, H, peep, clip, c, h)
                      : lstm_cells<false, false, false>(xg, hg, H, peep, clip, c, h);
  }
}

// GRU with linear_before_reset and the default activations (sigmoid, tanh):
// xg, hg are [z r h] of H each, rbh the hidden gate's recurrence bias (H
// values, zeros when the model has none).
void gru_lbr_step(const float* xg, const float* hg, const float* rbh, int64_t H, float clip, float* h) {
  if (clip > 0) gru_lbr_cells<true>(xg, hg, rbh, H, clip, h);
  else gru_lbr_cells<false>(xg, hg, rbh, H, clip, h);
}

// GRU without linear_before_reset and the default activations, in two
// halves around the batch's (r . h) R_h^T product: gru_zr_step writes z [H]
// and rh = r . h [H]; gru_h_step takes x_h (X_t W_h^T + Wb_h), that
// product, Rb_h (zeros when the model has none) and z, and updates h.
void gru_zr_step(const float* xg, const float* hg, const float* h, int64_t H, float clip, float* z, float* rh) {
  if (clip > 0) gru_zr_cells<true>(xg, hg, h, H, clip, z, rh);
  else gru_zr_cells<false>(xg, hg, h, H, clip, z, rh);
}

void gru_h_step(const float* xh, const float* rhr, const float* rbh, const float* z, int64_t H, float clip, float* h) {
  if (clip > 0) gru_h_cells<true>(xh, rhr, rbh, z, H, clip, h);
  else gru_h_cells<false>(xh, rhr, rbh, z, H, clip, h);
}

// RNN with the default activation (tanh): h = tanh(clip(xg + hg)).
void rnn_tanh_step(const float* xg, const float* hg, int64_t H, float clip, float* h) {
  if (clip > 0) rnn_tanh_cells<true>(xg, hg, H, clip, h);
  else rnn_tanh_cells<false>(xg, hg, H, clip, h);
}

void sigmoid_inplace(float* v, int64_t n) { sigmoid_n(v, n); }

void tanh_inplace(float* v, int64_t n) { tanh_n(v, n); }

}  // namespace spindle::kernels::SPINDLE_ISA_NS
