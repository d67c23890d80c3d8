// nn_util.h — helpers shared by the kernels of src/kernels/nn: input checks,
// spatial geometry (pads, auto_pad, output sizes) for Conv / ConvTranspose /
// pools, the GEMM (one serial BLAS call) and its block choice, and the
// registration entry points of each file. The per-thread scratch buffers
// are the primitives' (primitives/scratch.h).
//
// Glossary: nd = number of spatial dims (1..3); "plane" = one (n, c) slice of
// an NC... tensor; P = number of output positions of a plane; a "block" is
// one unit of work handed to parallel_for.
//
// Determinism: every block boundary here is a function of the problem shape
// only (never of the thread count), and every output element is computed by
// exactly one block, so results are bitwise identical for any pool size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "primitives/math/activation.h"  // Activation
#include "primitives/scratch.h"  // ceil_div, round_up, scratch_floats
#include "threading/cost.h"  // grain_for_cost, cycles_of

namespace spindle::kernels::nn {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };
AutoPad parse_auto_pad(const NodeInfo& node);

// Spatial geometry of a sliding-window op, always normalized to 3 spatial
// dims (1-D and 2-D problems get leading dims of size 1).
struct Window3 {
  int nd = 0;                     // spatial dims of the real problem
  int64_t in[3] = {1, 1, 1};      // input spatial sizes
  int64_t out[3] = {1, 1, 1};     // output spatial sizes
  int64_t k[3] = {1, 1, 1};       // kernel sizes
  int64_t s[3] = {1, 1, 1};       // strides
  int64_t d[3] = {1, 1, 1};       // dilations
  int64_t pb[3] = {0, 0, 0};      // pads at the beginning
  int64_t pe[3] = {0, 0, 0};      // pads at the end
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

// Attributes of a Conv / pool node that do not depend on the input shape.
struct WindowAttrs {
  std::vector<int64_t> kernel_shape;  // empty: taken from W (Conv)
  std::vector<int64_t> strides, dilations, pads;
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  // Pools size their outputs as ONNX Runtime does: (in + pads - kernel) /
  // stride + 1 in integers, so a window that starts inside the input may end
  // past its padding (a 2x2 / 2 MaxPool over width 1 gives width 1, its
  // window clipped) and the output may be empty. Conv keeps the rule of the
  // ONNX specification: an input smaller than the padded kernel is an error.
  bool clipped_windows = false;
  static WindowAttrs parse(const NodeInfo& node, bool has_dilations, bool has_ceil_mode);
};

// Output sizes and pads for Conv and pools (forward windows). `kernel` has nd
// entries. Throws naming the node and shapes when the output would be empty.
Window3 forward_window(const NodeInfo& node, const WindowAttrs& a, const Shape& x_shape,
                       const std::vector<int64_t>& kernel);

// C (m x n, row stride ldc) = alpha * op(A) * op(B) + beta * C, row-major,
// op(A) = A (m x K, row stride lda) or, with trans_a, the transpose of a
// K x m matrix (row stride lda); likewise B. On the calling thread: kernels
// get parallelism by calling it on disjoint blocks from parallel_for. float:
// spindle's packed SGEMM (sgemm.h); double: one call of the serial BLAS
// (BLIS, reentrant, no threads of its own).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t K, double alpha, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// One 8-bit GEMM (primitives/gemm/qgemm.h) over rows x N, split over the
// pool in blocks of rows and of columns chosen from the shape only (integer
// sums are exact, and each float of an epilogue depends on its own sum
// alone, so the blocks change no bit). `base` holds every field but the
// rows, columns and outputs (qlinear.cpp). `act` (float output only): a
// fused activation applied to each block of y as it is written.
struct QGemmArgs;
void parallel_qgemm(ThreadPool* pool, const QGemmArgs& base, int64_t rows, int64_t N,
                    const Activation* act = nullptr);
// Its blocks (mb rows x nb columns), and one of them run: for a loop over
// the blocks of several products (DynamicQuantizeMatMulGroup).
struct QGemmBlocks {
  int64_t nb = 1, mb = 1, n_blocks = 1, m_blocks = 1;
  int64_t blocks() const { return n_blocks * m_blocks; }
};
QGemmBlocks qgemm_blocks(const QGemmArgs& base, int64_t rows, int64_t N);
void run_qgemm_block(const QGemmArgs& base, const QGemmBlocks& g, int64_t rows, int64_t N, int64_t blk,
                     const Activation* act);

// Block granularity of GEMM splits: row tiles are multiples of the SGEMM's
// MR (sgemm_mr(), which pre-packed A panels require), column tiles of
// kGemmTileN (every level's NR divides it), so blocks do not end in ragged
// register tiles.
inline constexpr int64_t kGemmTileN = 32;

// Output-row / output-column blocking of one GEMM of M x N (reduction K) that
// is repeated `batches` times. The K reduction is never split.
struct GemmBlocks {
  int64_t mt = 1, nt = 1;  // rows and columns per block
  int64_t m_blocks = 1, n_blocks = 1;
};
// `max_nt` bounds the column tile (e.g. for an im2col buffer of K x nt). The
// block count follows gemm_cost's whole work, so a GEMM of few rows, which
// streams B, is split by columns too.
// `max_blocks` (> 0) caps the count (MatMul: see gemm.cpp).
GemmBlocks choose_gemm_blocks(int64_t batches, int64_t M, int64_t N, int64_t K, int64_t max_nt,
                              int64_t max_blocks = 0);

// Loops are sized in one vocabulary, the pool's Cost (threading/cost.h): a
// kernel states what one item of its loop costs and takes its grain from
// grain_for_cost, or, for a GEMM-like loop that picks its own tiles, its block
// count from blocks_for_cost. Partitions follow the shape only, so results are
// bitwise identical for any thread count.

// Number of parallel blocks for `n` items of `per_item` (a GEMM or a
// convolution that tiles its work itself): about one per 131K cycles of
// compute (2M FMAs at fma_cost's rate, 20-40 us on one core; two from 0.75 of
// that), from the work size alone, and an even number below 16: 3 blocks on
// 2 threads leave one thread a third of the node idle (MobileNetV3 at intra 2:
// 0.96x with even counts, 1.00-1.01x at intra 1; docs/benchmarks.md).
int64_t blocks_for_cost(int64_t n, const Cost& per_item);

// Cost of `ops` operations of a kernel loop body that is not a packed GEMM (a
// pooling compare, a depthwise tap, a normalized element, a copied float):
// about 3.3 per cycle, so grain_for_cost(ops_cost(w)) gives a block ~64K of
// them (the block of kBlockCycles, threading/thread_pool.cpp).
Cost ops_cost(double ops);

// Cost of `fma` multiply-adds of vectorized compute (e.g. one GEMM block)
// for parallel_for's cost overload, which runs a loop too small to pay for
// a second thread inline.
Cost fma_cost(double fma);
// Cost of an m x n x k SGEMM block: its multiply-adds plus the bytes of B it
// streams and of C it writes (a batch-1 fully connected layer is all B: the
// 960 x 1280 one of MobileNetV3 is 77K cycles of FMAs and ~500K of reading).
Cost gemm_cost(int64_t m, int64_t n, int64_t k);

// A run-time A read by several column blocks (an encoder's 128 x 384
// activations times 384 x 1536 weights: 24 column blocks) would be packed
// again by each of them; it is packed once instead, its row panels split evenly
// across the pool, into the calling thread's shared scratch (slot
// kSharedScratchSlot), and each block passes its rows as
// SgemmExtras::packed_a (row m0 at the result + m0 * K, m0 a multiple of
// MR). Null when the blocks do not share rows (gb.n_blocks < 2). The panels
// hold the same values sgemm would pack, so no bit changes.
const float* pack_shared_a(KernelContext& ctx, const GemmBlocks& gb, bool trans, int64_t m, int64_t K, float alpha,
                           const float* a, int64_t lda);

// Registration entry points (one per file).
// Inference BatchNormalization as y = x * a + b per channel: a = scale /
// sqrt(var + epsilon), b = B - mean * a, for n channels (norm.cpp). The
// BatchNormalization kernel and a Conv with a BatchNormalization folded into
// its input (the optimizer's fuse_input_batchnorms) both take them from
// here, so they are the same bits.
void batchnorm_coefficients(const float* scale, const float* B, const float* mean, const float* var, float epsilon,
                            int64_t n, float* a, float* b);

void register_conv(KernelRegistry& r);
void register_conv_transpose(KernelRegistry& r);
void register_pool(KernelRegistry& r);
void register_norm(KernelRegistry& r);
void register_gemm(KernelRegistry& r);
void register_resize(KernelRegistry& r);
void register_col2im(KernelRegistry& r);
void register_rnn(KernelRegistry& r);
void register_qlinear(KernelRegistry& r);
void register_dequantized_matmul(KernelRegistry& r);  // dequantized_matmul.cpp
void register_qlinear_contrib(KernelRegistry& r);  // qlinear_contrib.cpp: com.microsoft quantized ops
void register_qoperator(KernelRegistry& r);        // qoperator.cpp: com.microsoft ops of QOperator-format models
void register_matmul_nbits(KernelRegistry& r);      // matmul_nbits.cpp: com.microsoft MatMulNBits
void register_transformer(KernelRegistry& r);  // Attention, RotaryEmbedding, AffineGrid
void register_attention(KernelRegistry& r);    // spindle.FusedAttention (the optimizer's fused attention chain)
void register_blocked(KernelRegistry& r);      // spindle.ReorderToBlocked / ReorderFromBlocked / BlockedConv /
                                               // BlockedGlobalAveragePool (the NCHW8c layout, blocked.cpp)

}  // namespace spindle::kernels::nn
