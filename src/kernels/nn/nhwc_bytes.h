// nhwc_bytes.h — bytes of a few planes interleaved (the NCHW -> NHWC move of
// an image with 2 to 4 channels, as a network's input; spindle.ToNhwc), per
// ISA level (nhwc_bytes.isa.cpp): a loop the compiler vectorizes with byte
// shuffles at the level's width, where the general tiled transpose stores a
// byte at a time.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

// dst[j * planes + i] = src[i * cols + j] for i < planes, j in [j0, j1);
// planes 2, 3 or 4.
SPINDLE_ISA_DECLARE(void, interleave_planes_u8,
                    (const uint8_t* src, uint8_t* dst, int64_t planes, int64_t cols, int64_t j0, int64_t j1));
