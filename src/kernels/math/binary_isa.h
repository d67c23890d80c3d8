// binary_isa.h — float32 Add, Sub, Mul, Div, Min and Max of binary.cpp,
// computed per ISA level (binary.isa.cpp) over one run of the broadcasting
// engine's inner loop (elementwise.h): out[i] = op(a[i], b[i]), i < n, where
// an operand whose bit is set in `scalar_mask` (bit 0: a, bit 1: b) has
// stride 0 and is read at [0] only.
//
// Every op is one IEEE operation (or a compare and select) per element, so
// each level gives the same bits as the others and as the generic loop.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels::math {

enum class FloatBinOp { kAdd, kSub, kMul, kDiv, kMin, kMax };

}  // namespace spindle::kernels::math

SPINDLE_ISA_DECLARE(void, binary_float_chunk,
                    (spindle::kernels::math::FloatBinOp op, unsigned scalar_mask, float* out, const float* a,
                     const float* b, int64_t n));
