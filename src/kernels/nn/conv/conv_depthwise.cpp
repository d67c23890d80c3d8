// conv_depthwise.cpp — the depthwise convolution driver (group == C, one
// input channel per group, 1-D or 2-D): blocks of kDwLanes channels where
// the ISA has them (depthwise_block), the remaining channels one plane at a
// time on phase planes (depthwise_flat, depthwise.isa.cpp).
#include <array>
#include <cstring>
#include <vector>

#include "kernels/nn/conv/conv_algorithms.h"
#include "kernels/nn/conv/conv_planes.h"
#include "primitives/conv/depthwise.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn::conv {

namespace {


// Output rows [oh0, oh1) of one depthwise plane (spatial dims 1 and 2 of w).
//
// The padded input rows of the band are split into sh x sw phase planes
// (row phase r % sh, column phase j % sw) of L = ceil(NW / sw) columns.
// Output (oh, ow) is computed at the flat index f = (oh - oh0) * L + ow, and
// tap (kh, kw) then reads its phase plane at f plus a constant offset, so
// the whole band is one long vectorized loop (depthwise.isa.cpp); columns
// ow >= OW of the flat output are discarded when the rows are copied out.
void depthwise_band(const float* x, const float* wk, float bias, float* y, const Window3& w, int64_t oh0, int64_t oh1,
                    const Epilogue& ep) {
  const int64_t OW = w.out[2], KH = w.k[1], KW = w.k[2];
  const int64_t band = oh1 - oh0;
  const PhasePlanes pp(w, band);
  const int64_t L = pp.L;
  float* buf = scratch_floats(0, static_cast<size_t>(pp.nphases * pp.psize));
  fill_phase_planes(x, w, oh0, band, pp, buf);

  const int nt = static_cast<int>(KH * KW);
  constexpr int kStackTaps = 64;
  std::array<const float*, kStackTaps> tap_stack;
  std::vector<const float*> tap_heap;
  const float** taps = tap_stack.data();
  if (nt > kStackTaps) {
    tap_heap.resize(static_cast<size_t>(nt));
    taps = tap_heap.data();
  }
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) taps[kh * KW + kw] = buf + pp.tap(w, kh, kw);

  const int64_t n = band * L;
  float* out = OW == L ? y + oh0 * OW : scratch_floats(2, static_cast<size_t>(n));
  static const auto flat_fn = SPINDLE_ISA_SELECT(depthwise_flat);
  flat_fn(taps, nt, wk, bias, out, n);
  if (OW != L)
    for (int64_t i = 0; i < band; ++i)
      std::memcpy(y + (oh0 + i) * OW, out + i * L, static_cast<size_t>(OW) * sizeof(float));
  if (!ep.empty()) ep.run(y + oh0 * OW, band * OW);
}


// Depthwise (multiplier 1) in blocks of kDwLanes channels (depthwise.h):
// items (batch, channel block, band of output rows), the band as many rows
// as keep its interleaved input under ~64 KB. Channels past the last full
// block are left to run_depthwise_planes.
void run_depthwise_blocks(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y,
                          int64_t N, int64_t C, const Window3& w, const Epilogue& ep) {
  static const auto block_fn = SPINDLE_ISA_SELECT(depthwise_block);
  const int64_t OH = w.out[1], OW = w.out[2], T = w.k_size();
  const int64_t Wp = depthwise_block_width(OW, w.k[2], w.s[2], w.d[2]);
  constexpr int64_t kBufFloats = 16384;
  const int64_t fit_rows = std::max<int64_t>(kBufFloats / (Wp * kDwLanes), 1);
  const int64_t band_rows =
      std::clamp<int64_t>((fit_rows - (w.k[1] - 1) * w.d[1] - 1) / w.s[1] + 1, 1, OH);
  const int64_t nbands = ceil_div(OH, band_rows);
  const int64_t blocks = C / kDwLanes;
  const int64_t items = N * blocks * nbands;
  const int64_t in_plane = w.in_size(), out_plane = w.out_size();
  const int64_t buf_rows = depthwise_block_rows(band_rows, w.k[1], w.s[1], w.d[1]);
  const Activation* act = ep.res ? nullptr : ep.act;
  parallel_for(ctx.pool(), 0, items, grain_for_cost(ops_cost(static_cast<double>(kDwLanes * band_rows * OW * T))),
               [&](int64_t i0, int64_t i1) {
                 float* in_buf = scratch_floats(0, static_cast<size_t>(buf_rows * Wp * kDwLanes));
                 float* out_buf = scratch_floats(2, static_cast<size_t>((OW + 8) * kDwLanes));
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t nb = i / nbands, band = i % nbands;
                   const int64_t n = nb / blocks, c0 = (nb % blocks) * kDwLanes;
                   const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
                   DwBlockArgs a{};
                   a.x = x + (n * C + c0) * in_plane;
                   a.in_plane = in_plane;
                   a.w = wd + c0 * T;
                   a.taps = T;
                   a.bias = bias ? bias + c0 : nullptr;
                   a.y = y + (n * C + c0) * out_plane;
                   a.out_plane = out_plane;
                   a.H = w.in[1], a.W = w.in[2], a.OH = OH, a.OW = OW, a.KH = w.k[1], a.KW = w.k[2];
                   a.sh = w.s[1], a.sw = w.s[2], a.dh = w.d[1], a.dw = w.d[2], a.pt = w.pb[1], a.pl = w.pb[2];
                   a.oh0 = oh0, a.oh1 = oh1;
                   a.act = act;
                   a.in_buf = in_buf;
                   a.out_buf = out_buf;
                   block_fn(a);
                   if (ep.res)
                     for (int64_t l = 0; l < kDwLanes; ++l) ep.run(a.y + l * out_plane + oh0 * OW, (oh1 - oh0) * OW);
                 }
               });
}

// Depthwise one plane at a time (phase planes, depthwise_band), for the
// channels from c_first on.
void run_depthwise_planes(KernelContext& ctx, const float* x, const float* wd, const float* bias, float* y, int64_t N,
                          int64_t C, int64_t M, const Window3& w, const Epilogue& ep, int64_t c_first) {
  const int64_t mult = M / C;
  const int64_t OH = w.out[1], OW = w.out[2], T = w.k_size();
  const int64_t in_plane = w.in_size(), out_plane = w.out_size();
  const double row_work = static_cast<double>(OW * T);
  // Bands of output rows: a plane is split only when it is large (> ~256K
  // FMAs), so the duplicated halo rows stay a small fraction.
  const int64_t bands = std::clamp<int64_t>(
      static_cast<int64_t>(row_work * static_cast<double>(OH) / (4.0 * 65536.0)), 1, OH);
  const int64_t band_rows = ceil_div(OH, bands);
  const int64_t nbands = ceil_div(OH, band_rows);
  const int64_t m_first = c_first * mult, planes = M - m_first;  // output planes of an image from m_first on
  const int64_t items = N * planes * nbands;
  const int64_t grain = grain_for_cost(ops_cost(row_work * static_cast<double>(band_rows)));
  parallel_for(ctx.pool(), 0, items, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / (planes * nbands), m = m_first + (i / nbands) % planes, band = i % nbands;
      const int64_t plane = n * M + m, c = m / mult;
      const int64_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
      depthwise_band(x + (n * C + c) * in_plane, wd + m * T, bias ? bias[m] : 0.0f, y + plane * out_plane, w, oh0,
                     oh1, ep);
    }
  });
}

}  // namespace

void run_depthwise(const ConvArgs& a) {
  static const bool blocks_available = SPINDLE_ISA_SELECT(depthwise_block_available)();
  const Window3& w = a.w;
  const int64_t C = a.C;
  const bool blocks = blocks_available && a.M == C && w.k[0] == 1 && w.k_size() <= kDwMaxTaps && C >= kDwLanes;
  if (blocks) run_depthwise_blocks(a.ctx, a.x, a.wd, a.bias, a.y, a.N, C, w, a.ep);
  const int64_t c_first = blocks ? C - C % kDwLanes : 0;
  if (c_first < C) run_depthwise_planes(a.ctx, a.x, a.wd, a.bias, a.y, a.N, C, a.M, w, a.ep, c_first);
}

}  // namespace spindle::kernels::nn::conv
