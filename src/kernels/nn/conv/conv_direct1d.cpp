// conv_direct1d.cpp — the direct 1-D convolution driver (one group, stride
// 1, short outputs): zero-padded input rows read in place for every tap by
// conv1d_block (conv1d.isa.cpp) on weights packed at kernel creation.
#include <cstring>

#include "kernels/nn/conv/conv_algorithms.h"
#include "primitives/conv/conv1d.h"
#include "primitives/isa/dispatch.h"

namespace spindle::kernels::nn::conv {

Direct1dWeights prepare_direct1d(const Tensor& w) {
  static const auto rows_fn = SPINDLE_ISA_SELECT(conv1d_block_rows);
  static const auto pack_fn = SPINDLE_ISA_SELECT(conv1d_pack);
  const int64_t M = w.dim(0), CK = w.dim(1) * w.dim(2);
  Direct1dWeights dw;
  dw.w.resize(static_cast<size_t>(ceil_div(M, rows_fn()) * rows_fn() * CK));
  pack_fn(w.data<float>(), M, CK, dw.w.data());
  return dw;
}

// The direct 1-D path (conv1d.isa.cpp): input rows copied once into
// zero-padded rows (a buffer on the calling thread the blocks share), then
// blocks of (batch, conv1d_block_rows() output channels), all positions.
void run_direct1d(const ConvArgs& a, const Direct1dWeights& dw) {
  KernelContext& ctx = a.ctx;
  const float* x = a.x;
  const float* bias = a.bias;
  float* y = a.y;
  const int64_t N = a.N, C = a.C, M = a.M;
  const Window3& w = a.w;
  const Epilogue& ep = a.ep;
  static const auto rows_fn = SPINDLE_ISA_SELECT(conv1d_block_rows);
  static const auto slack_fn = SPINDLE_ISA_SELECT(conv1d_slack);
  static const auto block_fn = SPINDLE_ISA_SELECT(conv1d_block);
  const int64_t L = w.in[2], P = w.out[2], k = w.k[2], dil = w.d[2], pb = w.pb[2];
  const int64_t ldx = round_up(P + (k - 1) * dil + slack_fn(), 16);
  float* xp = scratch_floats(kSharedScratchSlot, static_cast<size_t>(N * C * ldx));
  // Padded column j holds input column j - pb (0 outside the input).
  const int64_t lo = std::min(pb, ldx), hi = std::clamp<int64_t>(pb + L, lo, ldx);
  for (int64_t r = 0; r < N * C; ++r) {
    float* row = xp + r * ldx;
    std::fill(row, row + lo, 0.0f);
    std::memcpy(row + lo, x + r * L + (lo - pb), static_cast<size_t>(hi - lo) * sizeof(float));
    std::fill(row + hi, row + ldx, 0.0f);
  }
  const int64_t R = rows_fn(), blocks_per_n = ceil_div(M, R), items = N * blocks_per_n, CK = C * k;
  // The cost lets a convolution too small to pay for waking a parked
  // worker (an audio front end's 64 -> 64 channels over 128 steps, ~35 us)
  // run on the caller (threads_for_cost); the blocks follow the shape alone.
  const double item_work = static_cast<double>(R * P * CK);
  const Cost item_cost = fma_cost(item_work);  // vectorized multiply-adds: grain and threads
  parallel_for(ctx.pool(), 0, items, grain_for_cost(item_cost), item_cost,
               [&](int64_t i0, int64_t i1) {
                 for (int64_t i = i0; i < i1; ++i) {
                   const int64_t n = i / blocks_per_n, b = i % blocks_per_n, m0 = b * R;
                   const int64_t rows = std::min(R, M - m0);
                   float* yb = y + (n * M + m0) * P;
                   block_fn({.xp = xp + n * C * ldx, .ldx = ldx, .C = C, .k = k, .dil = dil,
                             .wp = dw.w.data() + b * R * CK, .bias = bias ? bias + m0 : nullptr, .rows = rows,
                             .y = yb, .ldy = P, .P = P});
                   if (!ep.empty()) ep.run(yb, rows * P);
                 }
               });
}

}  // namespace spindle::kernels::nn::conv
