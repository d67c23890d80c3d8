// conv_winograd.cpp — the Winograd F(4x4, 3x3) convolution driver
// (winograd.isa.cpp holds the transforms): U of the weights, the input
// transform into the SGEMM's B panels, 36 GEMMs per block and the output
// transform, over bands of tile rows (large images) or channel blocks on a
// shared V (smaller ones).
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/nn/conv/conv_algorithms.h"
#include "primitives/conv/winograd.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn::conv {

namespace {

// Output channels of a block, and the largest V of one image (floats,
// ~1 MB) that the blocks share (run_winograd).
constexpr int64_t kWinogradBlockChannels = 32;
constexpr int64_t kWinogradPrivateV = 262144;
// The input transform's cost in FMA-equivalents (the unit of fma_cost,
// 16 a cycle): ~60 cycles a tile and ~500 a row of tiles, measured on
// 55x55 (14 tiles a row) and 13x13 / 14x14 (4) planes. At the 100 a tile
// once assumed, 16 planes of 55x55 looked like 20K cycles and ran on one
// thread for 130 us of the layer's 490.
constexpr double kWinogradInputTileWork = 1000.0;
constexpr double kWinogradInputRowWork = 8000.0;
constexpr int64_t kWinogradMinItems = 4;
// The 36 V[xi] (and O[xi]) lie `stride` floats apart and the transforms
// touch all 36 per tile row: a stride of an even number of cache lines
// maps them onto few L1 sets (8 KB apart: one set, 36 lines in 8 ways),
// and every store missed. An odd number of lines spreads them over 36
// sets: the input transform of 128 planes at 14x14 went from 320 to 190
// us (129 with the transform's other changes).
int64_t spread_stride(int64_t floats) {
  const int64_t lines = ceil_div(floats, int64_t{16});
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

// One call's geometry and weights, shared by its steps.
struct WinogradPlan {
  const ConvArgs& a;
  int64_t H, W, OH, OW, P, TH, TW, tiles;
  const PackedMatrix* packed_u;  // U in A panels (constant weights), or null
  const float* u;                // U computed for this call (run-time weights), or null
  int64_t MR, mt, m_blocks;
  // V is written straight into the SGEMM's B panels (NR columns of the C
  // channels each); a block's tiles start at a panel boundary, and the
  // last panel's unused columns are zero (the input transform writes them).
  int64_t NR, kp;
};

// The input transform of tile rows [ty0, ty1) of plane x into V panels at
// v (xi_stride floats apart), using work as scratch.
void input_plane(const WinogradPlan& p, const float* x, int64_t ty0, int64_t ty1, float* v, int64_t xi_stride,
                 float* work) {
  static const auto input_fn = SPINDLE_ISA_SELECT(winograd_input_plane);
  const Window3& w = p.a.w;
  input_fn({.x = x, .H = p.H, .W = p.W, .pt = w.pb[1], .pl = w.pb[2], .ty0 = ty0, .ty1 = ty1, .TW = p.TW, .v = v,
            .xi_stride = xi_stride, .nr = p.NR, .kp = p.kp, .work = work});
}

// The 36 GEMMs of output channels [m0, m0 + mm) over the tiles of tile
// rows [ty0, ty1) of image n, whose V[xi] panels start at vb + xi *
// xi_stride, then Y = A^T O A + bias and the epilogue.
void gemms_and_output(const WinogradPlan& p, int64_t n, int64_t ty0, int64_t ty1, int64_t m0, int64_t mm,
                      const float* vb, int64_t xi_stride) {
  static const auto output_fn = SPINDLE_ISA_SELECT(winograd_output_plane);
  static const auto output_work_fn = SPINDLE_ISA_SELECT(winograd_output_work);
  const ConvArgs& a = p.a;
  const int64_t M = a.M, C = a.C, TW = p.TW, OH = p.OH, OW = p.OW;
  const int64_t tb = (ty1 - ty0) * TW;
  // (+64: the output transform reads its rows in whole vectors.)
  const int64_t os = spread_stride(mm * tb);  // floats between O[xi] and O[xi + 1]
  float* o = scratch_floats(2, static_cast<size_t>(36 * os + 64));
  for (int64_t xi = 0; xi < 36; ++xi) {
    SgemmExtras ex;
    ex.packed_a = p.packed_u ? p.packed_u->panel(m0, xi) : nullptr;
    ex.packed_b = vb + xi * xi_stride;
    // (A packed or B packed is not read; W / V stand in for them.)
    sgemm(false, false, mm, tb, C, 1.0f, p.u ? p.u + (xi * M + m0) * C : a.wd, C, vb, tb, 0.0f, o + xi * os, tb, ex);
  }
  float* work = scratch_floats(0, static_cast<size_t>(output_work_fn(TW)));
  const int64_t oy0 = 4 * ty0, oy1 = std::min(OH, 4 * ty1);
  for (int64_t m = 0; m < mm; ++m) {
    float* ym = a.y + (n * M + m0 + m) * p.P;
    output_fn({.o = o + m * tb, .xi_stride = os, .TR = ty1 - ty0, .TW = TW,
               .bias = a.bias ? a.bias[m0 + m] : 0.0f, .y = ym + oy0 * OW, .rows = oy1 - oy0, .OW = OW, .work = work});
    if (!a.ep.empty()) a.ep.run(ym + oy0 * OW, (oy1 - oy0) * OW);
  }
}

// Large images: bands of tile rows, each transforming its own input tiles
// into a private V (at most ~1 MB) and running every output channel on
// them; no block reads what another thread wrote.
void run_bands(const WinogradPlan& p, double tile_work) {
  static const auto input_work_fn = SPINDLE_ISA_SELECT(winograd_input_work);
  const ConvArgs& a = p.a;
  const int64_t N = a.N, C = a.C, M = a.M, TH = p.TH, TW = p.TW, NR = p.NR, mt = p.mt;
  const int64_t band = ceil_div(TH, ceil_div(36 * C * p.tiles, kWinogradPrivateV));
  const int64_t bands = ceil_div(TH, band);
  const int64_t items = N * bands;
  const double item_work = tile_work * static_cast<double>(band * TW);
  const Cost item_cost = fma_cost(item_work);  // vectorized multiply-adds: grain and threads
  parallel_for(a.ctx.pool(), 0, items, grain_for_cost(item_cost), item_cost,
               [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) {
                   const int64_t n = b / bands, ty0 = (b % bands) * band, ty1 = std::min(TH, ty0 + band);
                   const int64_t tb = (ty1 - ty0) * TW, xi_stride = spread_stride(round_up(tb, NR) * C);
                   float* vb = scratch_floats(1, static_cast<size_t>(36 * xi_stride));
                   float* work = scratch_floats(0, static_cast<size_t>(input_work_fn(ty1 - ty0, TW)));
                   for (int64_t c = 0; c < C; ++c)
                     input_plane(p, a.x + (n * C + c) * p.H * p.W, ty0, ty1, vb + c * NR, xi_stride, work);
                   for (int64_t m0 = 0; m0 < M; m0 += mt)
                     gemms_and_output(p, n, ty0, ty1, m0, std::min(M, m0 + mt) - m0, vb, xi_stride);
                 }
               });
}

// Smaller images: V of every plane once, into a buffer the blocks share
// (chunks of images under kWinogradMaxV), then blocks of ~32 output
// channels by image, which split the channels among threads.
void run_shared_v(const WinogradPlan& p) {
  static const auto input_work_fn = SPINDLE_ISA_SELECT(winograd_input_work);
  const ConvArgs& a = p.a;
  const int64_t N = a.N, C = a.C, M = a.M, TH = p.TH, TW = p.TW, NR = p.NR, MR = p.MR;
  const int64_t image_v = round_up(p.tiles, NR) * C;  // floats of one image's V[xi] panels
  const int64_t chunk = std::clamp<int64_t>(kWinogradMaxV / (36 * image_v), 1, N);
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t nc = std::min(chunk, N - n0), xi_stride = spread_stride(nc * image_v);
    float* v = scratch_floats(kSharedScratchSlot, static_cast<size_t>(36 * xi_stride));
    const int64_t planes = nc * C;
    const double plane_work =
        static_cast<double>(TH) * (kWinogradInputRowWork + kWinogradInputTileWork * static_cast<double>(TW));
    const Cost plane_cost = fma_cost(plane_work);  // vectorized multiply-adds: grain and threads
    parallel_for(a.ctx.pool(), 0, planes, grain_for_cost(plane_cost), plane_cost,
                 [&](int64_t i0, int64_t i1) {
                   float* work = scratch_floats(0, static_cast<size_t>(input_work_fn(TH, TW)));
                   for (int64_t i = i0; i < i1; ++i) {
                     const int64_t n = i / C, c = i % C;
                     input_plane(p, a.x + ((n0 + n) * C + c) * p.H * p.W, 0, TH, v + n * image_v + c * NR,
                                 xi_stride, work);
                   }
                 });
    // With several threads, at least kWinogradMinItems blocks where the
    // channels allow: with two blocks, a worker that wakes late leaves the
    // caller waiting for most of one (64 output channels at 55x55). Sizes
    // are rounded down to whole register tiles: 32 channels in blocks of
    // 12 were 3 blocks, run 2 : 1 by two threads (dense_28 0.92x with
    // blocks of 6). One thread keeps whole blocks (each block reads all of
    // V: blocks of 6 were 1.06x there). The bits are the same either way:
    // an output channel's sums do not depend on its block.
    int64_t bt = p.mt;
    if (a.ctx.pool() && a.ctx.pool()->dop() > 1 && nc * p.m_blocks < kWinogradMinItems)
      bt = std::min(M, std::max(MR, M / ceil_div(kWinogradMinItems, nc) / MR * MR));
    const int64_t bm = ceil_div(M, bt), items = nc * bm;
    const double item_work = 36.0 * static_cast<double>(bt * p.tiles * C);
    const Cost item_cost = fma_cost(item_work);  // vectorized multiply-adds: grain and threads
    parallel_for(a.ctx.pool(), 0, items, grain_for_cost(item_cost), item_cost,
                 [&](int64_t b0, int64_t b1) {
                   for (int64_t b = b0; b < b1; ++b) {
                     const int64_t n = b / bm, m0 = (b % bm) * bt;
                     gemms_and_output(p, n0 + n, 0, TH, m0, std::min(M, m0 + bt) - m0, v + n * image_v, xi_stride);
                   }
                 });
  }
}

// U = G g G^T of wd (M x C 3x3 filters) in the SGEMM's A panels, 36 groups:
// computed a block of output channels at a time into a scratch of ~1 MB
// (cache-resident, not the 36 x M x C floats of the whole U), each block's
// rows packed into every group's panels. The panels are the ones the whole
// U packed at once gives (a panel holds its own rows only).
PackedMatrix pack_u(const float* wd, int64_t M, int64_t C) {
  static const auto weights_fn = SPINDLE_ISA_SELECT(winograd_weights);
  const int64_t MR = sgemm_mr();
  const int64_t mb = std::min(round_up(M, MR), std::max<int64_t>(1, (int64_t{1} << 18) / (36 * C * MR)) * MR);
  const std::unique_ptr<float[]> u(new float[static_cast<size_t>(36 * mb * C)]);  // every element written
  return PackedMatrix::pack_a_filled(M, C, 36, [&](float* dst) {
    const int64_t group_stride = round_up(M, MR) * C;
    for (int64_t m0 = 0; m0 < M; m0 += mb) {
      const int64_t rows = std::min(mb, M - m0);
      weights_fn(wd + m0 * C * 9, rows, C, u.get());  // u[xi][r][c] for this block
      for (int64_t xi = 0; xi < 36; ++xi)
        sgemm_pack_a_panels(false, rows, C, 1.0f, u.get() + xi * rows * C, C, 0, ceil_div(rows, MR),
                            dst + xi * group_stride + (m0 / MR) * C * MR);
    }
  });
}

}  // namespace

void prepare_winograd(const float* wd, int64_t M, int64_t C, WinogradWeights& uw) {
  std::call_once(uw.once, [&] { uw.u = pack_u(wd, M, C); });
}

// V = B^T d B of each input plane goes straight into the SGEMM's B
// panels (V[xi]: C x tiles, NR tiles per panel); the 36 GEMMs
// O[xi] = U[xi] V[xi] of a block go to a per-thread buffer, then
// Y = A^T O A + bias into the output and the epilogue on the block's rows.
// Large images run in bands of tile rows with a private V each; smaller
// ones share one V and split the output channels (run_shared_v).
// U = G g G^T of constant weights is packed into the SGEMM's A panels at
// creation or on the first call (WinogradWeights), or computed per call
// from run-time weights.
void run_winograd(const ConvArgs& a, WinogradWeights* uw, const PackedMatrix* w_packed) {
  static const auto weights_fn = SPINDLE_ISA_SELECT(winograd_weights);
  const int64_t C = a.C, M = a.M;
  const Window3& w = a.w;
  std::vector<float> u_run;
  if (uw) {
    // U prepared at creation (prepare_winograd), else now, once.
    std::call_once(uw->once, [&] {
      std::vector<float> w;
      if (!a.wd) {
        if (!w_packed) fail(a.ctx.node(), "internal: Winograd weights without W");
        w = unpack_weights(*w_packed, 1, M);
      }
      uw->u = pack_u(a.wd ? a.wd : w.data(), M, C);
    });
  } else {
    u_run.resize(static_cast<size_t>(36 * M * C));
    weights_fn(a.wd, M, C, u_run.data());
  }
  const int64_t OH = w.out[1], OW = w.out[2], TH = ceil_div(OH, 4), TW = ceil_div(OW, 4);
  const int64_t MR = sgemm_mr();
  const int64_t mt = std::min(M, round_up(ceil_div(M, ceil_div(M, kWinogradBlockChannels)), MR));
  const int64_t NR = sgemm_nr();
  const WinogradPlan p{.a = a, .H = w.in[1], .W = w.in[2], .OH = OH, .OW = OW, .P = OH * OW, .TH = TH, .TW = TW,
                       .tiles = TH * TW, .packed_u = uw ? &uw->u : nullptr, .u = uw ? nullptr : u_run.data(),
                       .MR = MR, .mt = mt, .m_blocks = ceil_div(M, mt), .NR = NR, .kp = C * NR};
  const double tile_work = 36.0 * static_cast<double>(M * C) +
                           (kWinogradInputTileWork + kWinogradInputRowWork / static_cast<double>(p.TW)) *
                               static_cast<double>(C);
  if (36 * C * p.tiles > kWinogradPrivateV) {
    run_bands(p, tile_work);
    return;
  }
  run_shared_v(p);
}

}  // namespace spindle::kernels::nn::conv
