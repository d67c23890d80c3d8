// nhwc_bytes.h — bytes of a few planes interleaved (the NCHW -> NHWC move of
// an image with 2 to 4 channels, as a network's input; spindle.ToNhwc), per
// ISA level (nhwc_bytes.isa.cpp): a loop the compiler vectorizes with byte
// shuffles at the level's width; and 16 x 16 tiles of bytes transposed in
// registers (the general NCHW <-> NHWC move of 8-bit tensors).
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

// dst[j * planes + i] = src[i * cols + j] for i < planes, j in [j0, j1);
// planes 2, 3 or 4.
SPINDLE_ISA_DECLARE(void, interleave_planes_u8,
                    (const uint8_t* src, uint8_t* dst, int64_t planes, int64_t cols, int64_t j0, int64_t j1));

// dst[j * dst_stride + i] = src[i * src_stride + j] for i < 16 and j < 16:
// one 16 x 16 tile of bytes transposed in registers (SSE2 byte, word,
// dword and qword interleaves, at every level).
SPINDLE_ISA_DECLARE(void, transpose_tile16_u8, (const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride));
