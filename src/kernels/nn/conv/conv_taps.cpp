// conv_taps.cpp — the implicit-GEMM convolution driver for narrow groups
// and stems of few input channels: sgemm_taps with B rows that are
// pointers into the group's phase planes, no im2col.
#include <cstring>

#include "kernels/nn/conv/conv_algorithms.h"
#include "kernels/nn/conv/conv_planes.h"

namespace spindle::kernels::nn::conv {

// The implicit-GEMM path (sgemm_taps): blocks of (batch, group, band of
// output rows). A block lays its Cg input planes out as phase planes (as
// the depthwise path does), so the B value of reduction index k = (c, kh,
// kw) for flat output f is taps[k][f] with one pointer per k, and runs
// every output channel of the group over the band's flat outputs; the
// rows are then copied out without the flat layout's extra columns.
// Each element is the same sum as on the im2col path (bias, then k in
// increasing order, one k block), so the two give the same bits.
void run_taps(const ConvArgs& a, const PackedMatrix& packed) {
  KernelContext& ctx = a.ctx;
  const float* x = a.x;
  const float* bias = a.bias;
  float* y = a.y;
  const int64_t N = a.N, C = a.C, M = a.M, G = a.G;
  const Window3& w = a.w;
  const Epilogue& ep = a.ep;
  const int64_t Cg = C / G, Mg = M / G, OH = w.out[1], OW = w.out[2], P = w.out_size(), K = Cg * w.k_size();
  const int64_t KH = w.k[1], KW = w.k[2], in_plane = w.in_size();
  const Cost plane_cost = fma_cost(static_cast<double>(P) * static_cast<double>(K));
  const int64_t bands = std::clamp<int64_t>(ceil_div(blocks_for_cost(N * G * Mg, plane_cost), N * G), 1, OH);
  const int64_t band_rows = ceil_div(OH, bands), nbands = ceil_div(OH, band_rows);
  const int64_t items = N * G * nbands;
  const int64_t NR = sgemm_nr();
  parallel_for(ctx.pool(), 0, items,
               grain_for_cost(ops_cost(static_cast<double>(Mg * band_rows * OW) * static_cast<double>(K))),
               [&](int64_t i0, int64_t i1) {
                 const float* taps[kSgemmKC];
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t ng = i / nbands, n = ng / G, g = ng % G;
                   const int64_t oh0 = (i % nbands) * band_rows, band = std::min(OH, oh0 + band_rows) - oh0;
                   const PhasePlanes pp(w, band);
                   const int64_t cstride = pp.nphases * pp.psize;
                   // NR spare floats: the last tile's full-width loads of the last plane.
                   float* planes = scratch_floats(0, static_cast<size_t>(Cg * cstride + NR));
                   std::memset(planes + Cg * cstride, 0, sizeof(float) * static_cast<size_t>(NR));
                   const float* xg = x + (n * C + g * Cg) * in_plane;
                   for (int64_t c = 0; c < Cg; ++c) {
                     fill_phase_planes(xg + c * in_plane, w, oh0, band, pp, planes + c * cstride);
                     for (int64_t kh = 0; kh < KH; ++kh)
                       for (int64_t kw = 0; kw < KW; ++kw)
                         taps[(c * KH + kh) * KW + kw] = planes + c * cstride + pp.tap(w, kh, kw);
                   }
                   const int64_t nf = band * pp.L;
                   float* out = scratch_floats(2, static_cast<size_t>(Mg * nf));
                   sgemm_taps(Mg, nf, K, packed.panel(0, g), taps, bias ? bias + g * Mg : nullptr, out, nf);
                   for (int64_t m = 0; m < Mg; ++m) {
                     float* ym = y + (n * M + g * Mg + m) * P + oh0 * OW;
                     for (int64_t r = 0; r < band; ++r)
                       std::memcpy(ym + r * OW, out + m * nf + r * pp.L, sizeof(float) * static_cast<size_t>(OW));
                     if (!ep.empty()) ep.run(ym, band * OW);
                   }
                 }
               });
}

}  // namespace spindle::kernels::nn::conv
