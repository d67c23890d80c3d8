// conv_algorithms.h — the convolution algorithms ConvKernel (conv.cpp)
// dispatches to, one driver file each: what runs on a finished output block
// (Epilogue), a folded input scale (InScale), the arguments every driver
// takes (ConvArgs), the state an algorithm prepares from constant weights
// when the kernel is created, and each driver's run function.
//
// conv.cpp validates the node, chooses the algorithm for each call from the
// shapes and says why; the drivers only run what they are given. A driver
// holds its own loops (so the compiler sees them with their callers); the
// per-ISA micro-kernels are reached through SPINDLE_ISA_SELECT.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/nn/activation.h"
#include "kernels/nn/nn_util.h"
#include "primitives/cache_line.h"
#include "primitives/gemm/sgemm.h"

namespace spindle::kernels::nn::conv {

// What runs on each finished block of the output: R added (same layout as
// the output, located by the block's offset from y), then the activation.
struct Epilogue {
  const float* y = nullptr;    // the output's first element
  const float* res = nullptr;  // residual of the output's shape, or null
  const Activation* act = nullptr;

  bool empty() const { return !res && !act; }
  // Block p[0, n) of the output.
  void run(float* p, int64_t n) const {
    if (res) {
      const float* __restrict r = res + (p - y);
      float* __restrict d = p;
      for (int64_t i = 0; i < n; ++i) d[i] += r[i];
    }
    if (act) act->apply(p, n);
  }
  // The SGEMM extras of a GEMM block whose output starts at p: the SGEMM
  // adds R and applies the activation as it stores each finished tile.
  void to_sgemm(const float* p, SgemmExtras& ex) const {
    ex.residual = res ? res + (p - y) : nullptr;
    ex.act = act;
  }
};

// A per-channel input scale (fuse_input_scales): channel c of image n is
// multiplied by s[n * image_stride + c]; with shift (a folded
// BatchNormalization), x * s[c] + shift[c], then Relu when relu.
struct InScale {
  const float* s = nullptr;
  int64_t image_stride = 0;
  const float* shift = nullptr;
  bool relu = false;
};

// One call's problem: X (N x C x in...), W in ONNX layout (M x C/G x k...),
// the optional bias (M values), Y (N x M x out...), the window and the
// epilogue. Pointers and references are the caller's, valid for the call.
struct ConvArgs {
  KernelContext& ctx;
  const float* x;
  const float* wd;
  const float* bias;
  float* y;
  int64_t N, C, M, G;
  const Window3& w;
  const Epilogue& ep;
};

// Largest Winograd V buffer (floats, 32 MB): conv.cpp takes the path only
// when one image's V fits, and the driver transforms images in chunks
// under it.
inline constexpr int64_t kWinogradMaxV = int64_t{8} << 20;

// Columns per im2col tile: K x tile floats near 1 MB (in L2), whole
// multiples of kGemmTileN.
inline int64_t im2col_tile(int64_t K) {
  return std::max<int64_t>(kGemmTileN, 262144 / std::max<int64_t>(K, 1) / kGemmTileN * kGemmTileN);
}

// ---------------------------------------------------------------- prepared state

// 1-D weights of one group in conv1d_pack blocks (direct 1-D path).
struct Direct1dWeights {
  CacheLineVector<float> w;
};
Direct1dWeights prepare_direct1d(const Tensor& w);

// Weights in grouped8_rows' blocks: [g][block of 8 output channels][c][kh][kw][8].
struct Grouped8Weights {
  CacheLineVector<float> w;
};
Grouped8Weights prepare_grouped8(const Tensor& w, int64_t G);

// U = G g G^T of the constant weights in the SGEMM's A panels, 36 groups of
// M x C, packed when the kernel is created if its input shape is static
// and takes the path (prepare_winograd), else on the path's first call
// (36 x M x C floats, 4x the 3x3 weights, so only for layers that take it).
struct WinogradWeights {
  std::once_flag once;
  PackedMatrix u;
};
// Packs U of wd (M x C 3x3 filters, ONNX layout) into uw, once.
void prepare_winograd(const float* wd, int64_t M, int64_t C, WinogradWeights& uw);

// ---------------------------------------------------------------- drivers

// Depthwise (group == C, one input channel per group, 1-D or 2-D):
// conv_depthwise.cpp.
void run_depthwise(const ConvArgs& a);

// The direct 1-D path (conv1d.isa.cpp): conv_direct1d.cpp.
void run_direct1d(const ConvArgs& a, const Direct1dWeights& dw);

// Groups of 8 output channels (grouped.isa.cpp): conv_grouped.cpp.
void run_grouped8(const ConvArgs& a, const Grouped8Weights& gw);

// The implicit GEMM on phase planes (sgemm_taps), narrow groups and stems;
// packed: W in the SGEMM's A panels per group. conv_taps.cpp.
void run_taps(const ConvArgs& a, const PackedMatrix& packed);

// Winograd F(4x4, 3x3): conv_winograd.cpp. u: the kernel's U of constant
// weights (packed on the first call, from a.wd, or from w_packed when the
// kernel holds W only packed and a.wd is null), or null to compute U from
// a.wd.
void run_winograd(const ConvArgs& a, WinogradWeights* u, const PackedMatrix* w_packed);

// The GEMM paths: conv_gemm.cpp. packed: W in the SGEMM's A panels per
// group, or null (run-time weights, or prepacking disabled).
//
// 1x1 convolution of a 1x1 input: a matrix-vector product per (batch, group),
// on a.wd, or on W's A panels (packed) when a.wd is null; the same sums in
// the same order either way.
void run_gemv(const ConvArgs& a, const PackedMatrix* packed);
// W (groups x rows x K, in ONNX layout) back from its A panels: exact, as
// W was packed with alpha 1.
std::vector<float> unpack_weights(const PackedMatrix& packed, int64_t groups, int64_t rows);
// X's positions that a strided 1x1 convolution without pads reads, copied
// into a buffer the blocks share (kSharedInputSlot); sub is then the
// window of a stride-1 convolution on it.
const float* subsample_input(const ConvArgs& a, Window3& sub);
// One SGEMM per (batch, group, row tile, column tile) in blocks gb; the
// columns are X in place (pointwise) or an im2col per block.
void run_gemm_blocks(const ConvArgs& a, const PackedMatrix* packed, const GemmBlocks& gb, bool pointwise,
                     const InScale& in_scale);
// The im2col (or a 1x1's input packing) of every column tile first, into
// panels the row blocks share, then the SGEMMs on them.
void run_gemm_shared_columns(const ConvArgs& a, const PackedMatrix* packed, bool pointwise, const InScale& in_scale);

}  // namespace spindle::kernels::nn::conv
