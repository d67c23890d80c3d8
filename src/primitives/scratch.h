// scratch.h — per-thread scratch buffers and the integer helpers the
// primitives and the kernels above them share (blocks rounded to tiles).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spindle::kernels::nn {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t m) { return ceil_div(a, m) * m; }

// A per-thread scratch buffer (64-byte aligned floats, grows, never shrinks).
// `slot` separates buffers used at the same time by one block: 0 = padded
// input rows / pool row accumulator, 1 = im2col columns, 2 = GEMM output
// columns (ConvTranspose) / flat depthwise output / LRN sums, 3 and 4 =
// sgemm's packed B and A blocks (sgemm.h). Only used
// inside parallel_for blocks, which never nest on one thread. Contents are
// unspecified on return. Slot 5 (kSharedScratchSlot) is the exception: a
// kernel's compute() takes it on its calling thread, outside any block, for a
// buffer that all blocks of one parallel_for read (Conv's packed im2col
// columns); blocks never take slot 5 themselves. Slot 6 (kSharedInputSlot)
// is the same for a transformed input that a kernel then runs its paths on
// (Conv's subsampled input of a strided 1x1), so those may take slot 5.
float* scratch_floats(int slot, size_t n);
inline constexpr int kSharedScratchSlot = 5;
inline constexpr int kSharedInputSlot = 6;

}  // namespace spindle::kernels::nn
