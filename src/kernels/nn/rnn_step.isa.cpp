// rnn_step.isa.cpp — the recurrent product of RNN / GRU / LSTM for small
// batches, compiled once per ISA level (src/kernels/isa/dispatch.h).
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
// so they run at the level's vector width.
//
// Determinism: each out[j] is one running sum over k in index order, whatever
// the threads (levels differ in the last bits: fused multiply-add from AVX2
// on, a multiply and an add at the baseline).
#include <cstdint>

#include "kernels/isa/dispatch.h"
#include "kernels/isa/simd.h"
#include "kernels/math/vec_math.h"

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

void rnn_matvec_packed(const float* packed, int64_t rows, int64_t len, const float* x, float* out) {
  for (int64_t j0 = 0; j0 < rows; j0 += kPanel) {
    const int64_t w = panel_width(j0, rows), valid = rows - j0 < w ? rows - j0 : w;
    switch (w / kW) {
      case 8: panel_product<8>(packed, len, x, out + j0, valid); break;
      case 7: panel_product<7>(packed, len, x, out + j0, valid); break;
      case 6: panel_product<6>(packed, len, x, out + j0, valid); break;
      case 5: panel_product<5>(packed, len, x, out + j0, valid); break;
      case 4: panel_product<4>(packed, len, x, out + j0, valid); break;
      case 3: panel_product<3>(packed, len, x, out + j0, valid); break;
      case 2: panel_product<2>(packed, len, x, out + j0, valid); break;
      default: panel_product<1>(packed, len, x, out + j0, valid); break;
    }
    packed += w * len;
  }
}

void sigmoid_inplace(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_sigmoid(v[i]);
}

void tanh_inplace(float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) v[i] = vm::fast_tanh(v[i]);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
