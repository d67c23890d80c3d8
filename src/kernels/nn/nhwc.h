// nhwc.h — 8-bit activations kept pixel-major ([N, H, W, C], NHWC) between
// the quantized operators of a chain (graph/passes/qdq_nhwc.cpp marks
// them): the conversions at a chain's borders and the 8-bit transposes the
// NHWC kernels share (kernels/nn/nhwc_u8.cpp). Internal to kernels/nn.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace spindle::kernels::nn {

// dst[n][j][i] = src[n][i][j] for bytes, src [N][rows][cols]: [N, C, H*W]
// to [N, H*W, C] (rows = C) or back (rows = H*W). Blocks of columns split
// over `pool` (nullptr: the calling thread alone).
void transpose_bytes(ThreadPool* pool, const uint8_t* src, uint8_t* dst, int64_t N, int64_t rows, int64_t cols);

// spindle.ToNhwc / spindle.FromNhwc (8-bit rank-4 conversions) and
// spindle.MaxPoolNhwc (MaxPool's attributes, 8-bit NHWC in and out).
void register_nhwc(KernelRegistry& r);

// spindle.QLinearGateMul, in NCHW or NHWC (qlinear_gate.cpp; register_nhwc
// registers it).
void register_qlinear_gate(KernelRegistry& r);

}  // namespace spindle::kernels::nn
