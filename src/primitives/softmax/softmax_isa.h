// softmax_isa.h — the loops of softmax.cpp, computed per ISA level
// (softmax.isa.cpp).
//   softmax_row_*:  one row x[0, D) -> y[0, D) (the normalized axis is last).
//   softmax_cols_*: columns [0, n) (n <= kSoftmaxChunk) of a [D, inner] block
//                   starting at x / y, normalized along D.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels::reduce {

enum class SoftmaxKind { kSoftmax, kLogSoftmax, kHardmax };

inline constexpr int64_t kSoftmaxChunk = 256;

}  // namespace spindle::kernels::reduce

SPINDLE_ISA_DECLARE(void, softmax_row_float,
                    (spindle::kernels::reduce::SoftmaxKind kind, const float* x, float* y, int64_t D));
SPINDLE_ISA_DECLARE(void, softmax_row_double,
                    (spindle::kernels::reduce::SoftmaxKind kind, const double* x, double* y, int64_t D));
SPINDLE_ISA_DECLARE(void, softmax_cols_float,
                    (spindle::kernels::reduce::SoftmaxKind kind, const float* x, float* y, int64_t D, int64_t inner,
                     int64_t n));
SPINDLE_ISA_DECLARE(void, softmax_cols_double,
                    (spindle::kernels::reduce::SoftmaxKind kind, const double* x, double* y, int64_t D,
                     int64_t inner, int64_t n));
