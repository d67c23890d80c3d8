// unary_isa.h — the float unary ops of unary.cpp, computed per ISA level
// (unary.isa.cpp) over one contiguous chunk: out[i] = op(in[i]), i < n.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels::math {

enum class UOp {
  kAbs, kNeg, kSign, kRelu,  // generic (every numeric dtype, unary.cpp)
  kSqrt, kExp, kLog, kReciprocal, kFloor, kCeil, kRound, kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh,
  kAsinh, kAcosh, kAtanh, kErf, kTanh, kSigmoid, kLeakyRelu, kElu, kSelu, kCelu, kHardSigmoid, kHardSwish,
  kSoftplus, kSoftsign, kThresholdedRelu, kShrink, kGelu, kGeluTanh, kMish
};

// The op's attributes (alpha / beta / gamma, or Shrink's lambd / bias).
struct UnaryParams {
  float alpha = 0, beta = 0, gamma = 0;
};

}  // namespace spindle::kernels::math

SPINDLE_ISA_DECLARE(void, unary_float_chunk,
                    (spindle::kernels::math::UOp op, const spindle::kernels::math::UnaryParams& p, float* out,
                     const float* in, int64_t n));
SPINDLE_ISA_DECLARE(void, unary_double_chunk,
                    (spindle::kernels::math::UOp op, const spindle::kernels::math::UnaryParams& p, double* out,
                     const double* in, int64_t n));
