// conv1d.isa.cpp — a direct 1-D convolution (stride 1, any dilation) for
// short sequences, compiled once per ISA level (src/primitives/isa/dispatch.h).
//
// On a short sequence (audio front ends: kernel 3-5, 64-256 channels, length
// 4-128) an im2col copies kernel x channels x length floats and packs them
// for the SGEMM before a small product, and that copy costs a large share
// of the product. Here the input is read in place instead: the caller
// copies each input row once into a zero-padded row (pads and a vector of
// slack past the end), and output position p of tap t reads padded column
// p + t * dilation, so a vector of consecutive outputs is one unaligned load
// per (channel, tap). The weights are packed once per kernel into blocks of
// kRows output channels, [channel][tap][row], so a block's kRows weights of
// one (channel, tap) are adjacent broadcasts.
//
// The micro-kernel holds kRows x up to kVecs vectors of outputs in
// registers: per (channel, tap), kVecs loads of the input, kRows broadcasts
// and kRows x kVecs multiply-adds. Each output is its bias plus one running
// sum over (channel, tap) in index order, whatever the blocks, so results
// do not depend on the thread count.
#include <cstdint>

#include "primitives/conv/conv1d.h"
#include "primitives/isa/dispatch.h"
#include "primitives/isa/simd.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr int64_t kW = simd::kWidth;
constexpr int kRows = 6;  // output channels per block
constexpr int kVecs = 2;  // output vectors per tile: kRows * kVecs accumulators + kVecs inputs + 1 broadcast

// Output columns [p, p + n) of rows [0, rows) of one block, n <= NV * kW.
template <int NV>
inline void tile(const float* xp, int64_t ldx, int64_t C, int64_t k, int64_t dil, const float* wp,
                 const float* bias, int64_t rows, float* y, int64_t ldy, int64_t p, int64_t n) {
  simd::VFloat acc[kRows][NV];
  for (int r = 0; r < kRows; ++r) {
    const simd::VFloat b = simd::set1(bias && r < rows ? bias[r] : 0.0f);
    for (int j = 0; j < NV; ++j) acc[r][j] = b;
  }
  for (int64_t c = 0; c < C; ++c) {
    const float* xr = xp + c * ldx + p;
    const float* wc = wp + c * k * kRows;
    for (int64_t t = 0; t < k; ++t) {
      simd::VFloat xv[NV];
      for (int j = 0; j < NV; ++j) xv[j] = simd::load(xr + t * dil + j * kW);
      const float* wt = wc + t * kRows;
      for (int r = 0; r < kRows; ++r) {
        const simd::VFloat wv = simd::set1(wt[r]);
        for (int j = 0; j < NV; ++j) acc[r][j] = simd::fmadd(wv, xv[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < kRows && r < rows; ++r)
    for (int j = 0; j < NV; ++j) {
      const int64_t left = n - j * kW;
      if (left >= kW) simd::store(y + r * ldy + p + j * kW, acc[r][j]);
      else if (left > 0) simd::store_n(y + r * ldy + p + j * kW, acc[r][j], static_cast<int>(left));
    }
}

}  // namespace

int64_t conv1d_block_rows() { return kRows; }

// Columns a padded input row needs past the last output position's last
// tap: full-width loads of the last tile may read that far.
int64_t conv1d_slack() { return kVecs * kW; }

// W [M, CK] (CK = channels x taps, ONNX order) into blocks of kRows rows,
// out[(b * CK + i) * kRows + r] = W[b * kRows + r][i], rows past M zero.
void conv1d_pack(const float* w, int64_t M, int64_t CK, float* out) {
  for (int64_t b = 0; b * kRows < M; ++b)
    for (int64_t i = 0; i < CK; ++i)
      for (int r = 0; r < kRows; ++r) {
        const int64_t m = b * kRows + r;
        out[(b * CK + i) * kRows + r] = m < M ? w[m * CK + i] : 0.0f;
      }
}

// Output rows [0, rows) (rows <= kRows) of one block, all P positions:
// y[r][p] = bias[r] + sum over c < C, t < k of wp(c, t, r) * xp[c][p + t * dil],
// xp the zero-padded input rows (row stride ldx >= P + (k - 1) * dil +
// conv1d_slack()), wp the block's packed weights, bias null or the block's.
void conv1d_block(const ::spindle::kernels::Conv1dBlock& args) {
  const float* xp = args.xp;
  int64_t ldx = args.ldx;
  int64_t C = args.C;
  int64_t k = args.k;
  int64_t dil = args.dil;
  const float* wp = args.wp;
  const float* bias = args.bias;
  int64_t rows = args.rows;
  float* y = args.y;
  int64_t ldy = args.ldy;
  int64_t P = args.P;
  int64_t p = 0;
  for (; P - p > kW; p += kVecs * kW) {
    const int64_t n = P - p < kVecs * kW ? P - p : kVecs * kW;
    tile<kVecs>(xp, ldx, C, k, dil, wp, bias, rows, y, ldy, p, n);
  }
  if (P > p) tile<1>(xp, ldx, C, k, dil, wp, bias, rows, y, ldy, p, P - p);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
