// nhwc.h — 8-bit activations kept pixel-major ([N, H, W, C], NHWC) between
// the quantized operators of a chain (graph/passes/qdq_nhwc.cpp marks
// them): the conversions at a chain's borders and the 8-bit transposes the
// NHWC kernels share (kernels/nn/nhwc_u8.cpp). Internal to kernels/nn.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"

namespace spindle::kernels::nn {

// dst[n][j][i] = src[n][i][j] for bytes, src [N][rows][cols]: [N, C, H*W]
// to [N, H*W, C] (rows = C) or back (rows = H*W). Blocks of columns split
// over `pool` (nullptr: the calling thread alone).
void transpose_bytes(ThreadPool* pool, const uint8_t* src, uint8_t* dst, int64_t N, int64_t rows, int64_t cols);

// The 8-bit im2col of a convolution's pixel-major input x (one image,
// [input pixel][C]): row i of col (K = taps * cg bytes) is output pixel
// p0 + i's window for channel group grp, taps in order then the group's cg
// channels, taps outside the input filled with `pad` (x's zero point).
// Rows [p0, p0 + rows), on the calling thread.
void im2col_u8(const uint8_t* x, int64_t C, int64_t cg, int64_t grp, const Window3& g, int64_t p0, int64_t rows,
               uint8_t pad, uint8_t* col);

// The same rows as pointers instead of copies (qgemm's indirect A):
// rows[i * taps + t] points at tap t's cg channels of output pixel p0 + i
// (group grp's, in x), or at `pad` (cg bytes of x's zero point) for a tap
// outside the input.
void im2col_rows_u8(const uint8_t* x, int64_t C, int64_t cg, int64_t grp, const Window3& g, int64_t p0, int64_t rows,
                    const uint8_t* pad, const uint8_t** out);

// Rows [q0, q0 + rows) of every group's im2col (G groups of C / G
// channels), split over `pool`: as pointers (tab: group grp's row i at
// tab + (grp * rows + i) * taps) when tab is set, else copied (col: at
// col + (grp * rows + i) * K). pad: C / G bytes of x's zero point.
void im2col_chunk_u8(ThreadPool* pool, const uint8_t* x, int64_t C, int64_t G, const Window3& g, int64_t q0,
                     int64_t rows, const uint8_t* pad, const uint8_t** tab, uint8_t* col);

// A GEMM block's requantized rows (rows pixels x cols channels from
// channel m0, q) transposed into an image's NCHW output planes (P pixels each).
template <class T>
void store_planes(const T* q, int64_t rows, int64_t cols, int64_t m0, int64_t p0, int64_t P, T* yn) {
  for (int64_t j = 0; j < cols; ++j) {
    T* out = yn + (m0 + j) * P + p0;
    const T* src = q + j;
    for (int64_t i = 0; i < rows; ++i) out[i] = src[i * cols];
  }
}

// spindle.ToNhwc / spindle.FromNhwc (8-bit rank-4 conversions) and
// spindle.MaxPoolNhwc (MaxPool's attributes, 8-bit NHWC in and out).
void register_nhwc(KernelRegistry& r);

// spindle.QLinearGateMul, in NCHW or NHWC (qlinear_gate.cpp; register_nhwc
// registers it).
void register_qlinear_gate(KernelRegistry& r);

}  // namespace spindle::kernels::nn
