// lookup.h — y[i] = table[x[i]] over bytes (spindle.QLinearLookup), per ISA
// level (lookup.isa.cpp): the 256-entry table as 16 rows of 16 bytes, each
// row a byte shuffle applied where the high nibble selects it (AVX2,
// AVX-512 BW); with AVX512-VBMI two vpermi2b over the whole table; one byte
// at a time otherwise and on the tail.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

SPINDLE_ISA_DECLARE(void, lookup_bytes, (const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table));
// lookup_bytes over `rows` rows of n bytes, x's rows x_stride bytes apart
// and y's y_stride (a QLinearConcat input's pieces of every pixel), the
// table set up once.
SPINDLE_ISA_DECLARE(void, lookup_rows,
                    (const uint8_t* x, int64_t x_stride, uint8_t* y, int64_t y_stride, int64_t n, int64_t rows,
                     const uint8_t* table));
