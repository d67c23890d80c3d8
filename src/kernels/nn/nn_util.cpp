// nn_util.cpp — shared geometry, blocking and scratch helpers (see nn_util.h).
#include "kernels/nn/nn_util.h"
#include "primitives/gemm/sgemm.h"
#include "threading/cost.h"

#include <cblas.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <type_traits>

namespace spindle::kernels::nn {

namespace {

// Cycles of an ops_cost operation: 65536 of them fill the pool's 20000-cycle
// block (kBlockCycles), ~10 us of scalar-ish work. A power-of-two fraction,
// so ops_cost's grains are exact. No benchmark measures it alone
// (bench/kernels has the GEMM only); the conv and pool layers are measured end
// to end by bench/models.
constexpr double kCyclesPerOp = 20000.0 / 65536.0;

// Compute per parallel GEMM block: ~2M FMAs (131072 cycles at
// kFmaPerCycle), 20-40 us on one core, so a 2..4-thread
// pool gets several blocks per thread on the OCR models' convolutions while
// each block stays large enough for the GEMM to run near peak. The count is
// not capped: choose_gemm_blocks bounds the tiles from below instead (two
// register tiles), and constant weights are pre-packed, so a block's setup
// is its share of im2col / B packing only.
constexpr double kGemmBlockCycles = 131072.0;

// Multiply-adds per cycle of the packed GEMM kernels on one core (two FMA
// pipes of 8 floats; Zen 4 runs AVX-512 at the same rate).
constexpr double kFmaPerCycle = 16.0;

}  // namespace

AutoPad parse_auto_pad(const NodeInfo& node) {
  const std::string v = node.attrs.get_string("auto_pad", "NOTSET");
  if (v == "NOTSET" || v.empty()) return AutoPad::kNotSet;
  if (v == "SAME_UPPER") return AutoPad::kSameUpper;
  if (v == "SAME_LOWER") return AutoPad::kSameLower;
  if (v == "VALID") return AutoPad::kValid;
  fail(node, fmt::format("attribute auto_pad is '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", v));
}

WindowAttrs WindowAttrs::parse(const NodeInfo& node, bool has_dilations, bool has_ceil_mode) {
  WindowAttrs a;
  a.kernel_shape = node.attrs.get_ints("kernel_shape", {});
  a.strides = node.attrs.get_ints("strides", {});
  a.dilations = has_dilations ? node.attrs.get_ints("dilations", {}) : std::vector<int64_t>{};
  a.pads = node.attrs.get_ints("pads", {});
  a.auto_pad = parse_auto_pad(node);
  a.ceil_mode = has_ceil_mode && node.attrs.get_int("ceil_mode", 0) != 0;
  for (int64_t v : a.kernel_shape)
    if (v <= 0) fail(node, fmt::format("kernel_shape has the non-positive value {}", v));
  for (int64_t v : a.strides)
    if (v <= 0) fail(node, fmt::format("strides has the non-positive value {}", v));
  for (int64_t v : a.dilations)
    if (v <= 0) fail(node, fmt::format("dilations has the non-positive value {}", v));
  for (int64_t v : a.pads)
    if (v < 0) fail(node, fmt::format("pads has the negative value {}", v));
  return a;
}

namespace {
// Windows of a pool whose padded input is shorter than its kernel by -span
// (span < 0): (span / stride) + 1 in C++'s division, which rounds toward
// zero, as ONNX Runtime sizes them. A span shorter than the stride gives one
// window, clipped to the input; a negative count is refused by the caller.
int64_t clipped_windows(int64_t span, int64_t stride) { return span / stride + 1; }
}  // namespace

Window3 forward_window(const NodeInfo& node, const WindowAttrs& a, const Shape& x_shape,
                       const std::vector<int64_t>& kernel) {
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  if (rank < 3)
    fail(node, fmt::format("input X has shape {}, expected rank >= 3 (N x C x spatial...)", shape_to_string(x_shape)));
  if (rank > 5)
    fail_unsupported(node, fmt::format("input X has shape {}: at most 3 spatial dimensions are supported",
                                       shape_to_string(x_shape)));
  const int nd = static_cast<int>(rank - 2);
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
    if (!v.empty() && v.size() != want)
      fail(node, fmt::format("attribute {} has {} values, expected {} for input X of shape {}", name, v.size(), want,
                             shape_to_string(x_shape)));
  };
  if (kernel.size() != static_cast<size_t>(nd))
    fail(node, fmt::format("kernel has {} spatial dims but input X has shape {}", kernel.size(), shape_to_string(x_shape)));
  check_len(a.strides, nd, "strides");
  check_len(a.dilations, nd, "dilations");
  check_len(a.pads, 2 * static_cast<size_t>(nd), "pads");

  Window3 w;
  w.nd = nd;
  const int off = 3 - nd;
  for (int i = 0; i < nd; ++i) {
    const int j = off + i;
    w.in[j] = x_shape[static_cast<size_t>(2 + i)];
    w.k[j] = kernel[static_cast<size_t>(i)];
    w.s[j] = a.strides.empty() ? 1 : a.strides[static_cast<size_t>(i)];
    w.d[j] = a.dilations.empty() ? 1 : a.dilations[static_cast<size_t>(i)];
    // Attributes come from the model: the dilated kernel and the padded
    // extent are checked sizes.
    const int64_t dk = size_add(node, size_mul(node, w.k[j] - 1, w.d[j], "(kernel - 1) x dilation"), 1, "the dilated kernel");
    // A stride past the padded input gives one window whatever its value, so
    // it is clamped there: the kernels' products of strides (phase planes,
    // band rows) then stay within the input's extent. A stride of 2^62
    // overflowed them (fuzz_graph). Outputs are unchanged.
    const int64_t pads_in = a.auto_pad == AutoPad::kNotSet && !a.pads.empty()
                                ? size_add(node, std::max<int64_t>(0, a.pads[static_cast<size_t>(i)]),
                                           std::max<int64_t>(0, a.pads[static_cast<size_t>(i + nd)]), "the padded input")
                                : 0;
    const int64_t stride = w.s[j];
    w.s[j] = std::min(w.s[j], size_add(node, size_add(node, w.in[j], pads_in, "the padded input"), 1, "the padded input"));
    switch (a.auto_pad) {
      case AutoPad::kNotSet: {
        w.pb[j] = a.pads.empty() ? 0 : a.pads[static_cast<size_t>(i)];
        w.pe[j] = a.pads.empty() ? 0 : a.pads[static_cast<size_t>(i + nd)];
        const int64_t span =
            size_add(node, size_add(node, w.in[j], w.pb[j], "the padded input"), w.pe[j], "the padded input") - dk;
        if (span < 0) {
          w.out[j] = a.clipped_windows ? clipped_windows(span, stride) : 0;
        } else if (a.ceil_mode) {
          w.out[j] = ceil_div(span, w.s[j]) + 1;
          // The last window must start inside the input or the left padding.
          if ((w.out[j] - 1) * w.s[j] >= w.in[j] + w.pb[j]) --w.out[j];
        } else {
          w.out[j] = span / w.s[j] + 1;
        }
        break;
      }
      case AutoPad::kValid:
        w.pb[j] = w.pe[j] = 0;
        w.out[j] = w.in[j] >= dk          ? (w.in[j] - dk) / w.s[j] + 1
                   : a.clipped_windows ? clipped_windows(w.in[j] - dk, stride)
                                       : 0;
        break;
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        w.out[j] = ceil_div(w.in[j], w.s[j]);
        const int64_t total =
            std::max<int64_t>(0, size_add(node, (w.out[j] - 1) * w.s[j], dk, "the SAME-padded extent") - w.in[j]);
        const int64_t small = total / 2, big = total - total / 2;
        w.pb[j] = a.auto_pad == AutoPad::kSameUpper ? small : big;
        w.pe[j] = a.auto_pad == AutoPad::kSameUpper ? big : small;
        break;
      }
    }
    if (w.out[j] < 0 || (w.out[j] == 0 && w.in[j] > 0 && !a.clipped_windows))
      fail(node, fmt::format("input X of shape {} is smaller than the (dilated, padded) kernel {} in spatial dim {}",
                             shape_to_string(x_shape), shape_to_string(kernel), i));
  }
  return w;
}

namespace {
template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, T alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const auto op = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  const auto i = [](int64_t v) { return static_cast<f77_int>(v); };
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), i(m), i(n), i(K), alpha, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
  else
    cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), i(m), i(n), i(K), alpha, a, i(lda), b, i(ldb), beta, c,
                i(ldc));
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  sgemm(trans_a, trans_b, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas_gemm(trans_a, trans_b, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

const float* pack_shared_a(KernelContext& ctx, const GemmBlocks& gb, bool trans, int64_t m, int64_t K, float alpha,
                           const float* a, int64_t lda) {
  if (gb.n_blocks < 2 || K <= 0 || m <= 0) return nullptr;
  const int64_t MR = sgemm_mr(), panels = ceil_div(m, MR);
  float* dst = scratch_floats(kSharedScratchSlot, static_cast<size_t>(panels * MR * K));
  // A panel interleaves MR rows (strided reads): ~4 ops per value, measured
  // (the decoder's 128 x 512 A took 30 us on one thread, as one block,
  // while the other thread waited; at 1 op per value it was too small to
  // split). Split, it is one block per thread.
  const int64_t dop = ctx.pool() ? ctx.pool()->dop() : 1;
  const int64_t grain = std::max(grain_for_cost(ops_cost(4.0 * static_cast<double>(MR * K))), ceil_div(panels, dop));
  parallel_for(ctx.pool(), 0, panels, grain, [&](int64_t p0, int64_t p1) {
    sgemm_pack_a_panels(trans, m, K, alpha, a, lda, p0, p1, dst);
  });
  return dst;
}

GemmBlocks choose_gemm_blocks(int64_t batches, int64_t M, int64_t N, int64_t K, int64_t max_nt,
                              int64_t max_blocks) {
  // Tiles are whole register tiles: mt a multiple of the SGEMM's MR, nt of
  // kGemmTileN (except when they cover the whole dimension).
  const int64_t MR = sgemm_mr(), NR = kGemmTileN;
  GemmBlocks b;
  M = std::max<int64_t>(M, 1);
  N = std::max<int64_t>(N, 1);
  batches = std::max<int64_t>(batches, 1);
  b.mt = M;
  b.nt = std::min(N, std::max<int64_t>(max_nt / NR * NR, NR));
  int64_t want = blocks_for_cost(batches, gemm_cost(M, N, K));
  if (max_blocks > 0) want = std::min(want, max_blocks);
  b.n_blocks = ceil_div(N, b.nt);
  // Even tiles: 3025 columns under a 3008-column cap are 1536 + 1489, not
  // 3008 + 17 (two threads would split the work 99:1).
  b.nt = std::min(N, round_up(ceil_div(N, b.n_blocks), NR));
  b.n_blocks = ceil_div(N, b.nt);
  if (batches * b.n_blocks < want && N > 2 * NR) {
    const int64_t nb = ceil_div(want, batches);
    b.nt = std::min(b.nt, std::max<int64_t>(2 * NR, round_up(ceil_div(N, nb), NR)));
    b.n_blocks = ceil_div(N, b.nt);
  }
  if (batches * b.n_blocks < want && M > 2 * MR) {
    // Each row block reads all of its columns' B: blocks of at least ~48
    // rows when that B is larger than ~256 KB (a 7x7 convolution of 512
    // channels: 4608 x 49), so B is not streamed from L3 once per few rows.
    const int64_t min_rows = static_cast<double>(K) * static_cast<double>(b.nt) * 4.0 > 262144.0
                                 ? round_up(48, MR)
                                 : 2 * MR;
    const int64_t mb = ceil_div(want, batches * b.n_blocks);
    b.mt = std::min(M, std::max<int64_t>(min_rows, round_up(ceil_div(M, mb), MR)));
  }
  b.m_blocks = ceil_div(M, b.mt);
  return b;
}

int64_t blocks_for_cost(int64_t n, const Cost& per_item) {
  const double cycles = cycles_of(n, per_item);
  const int64_t blocks = std::max<int64_t>(static_cast<int64_t>(std::ceil(cycles / kGemmBlockCycles)), 1);
  // Work of most of a block is still two: DenseNet's 3x3 128 -> 32 at 7x7
  // (1.8M FMAs) ran on one thread for 85 us at intra 2, in two blocks 53 us.
  if (blocks == 1 && cycles >= 0.75 * kGemmBlockCycles) return 2;
  return blocks > 1 && blocks < 16 && blocks % 2 != 0 ? blocks + 1 : blocks;
}

Cost fma_cost(double fma) { return Cost{0, 0, fma / kFmaPerCycle}; }

Cost gemm_cost(int64_t m, int64_t n, int64_t k) {
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(std::max<int64_t>(k, 1));
  return Cost{4.0 * dk * dn, 4.0 * dm * dn, dm * dn * dk / kFmaPerCycle};
}

Cost ops_cost(double ops) { return Cost{0, 0, ops * kCyclesPerOp}; }


}  // namespace spindle::kernels::nn
