// requant.h — the requantization of int32 accumulators to 8 bits that
// QLinearConv computes (requant.isa.cpp, per ISA level):
//
//   y = clamp(round_half_even((double(acc) + double(bias)) * scale) + zp, lo, hi)
//
// in double, as the reference QLinearConv (kernels/nn/qlinear.cpp) computes
// it, so the results are its bits. The rounding adds and subtracts 1.5 * 2^52
// after clamping the product to +-2^40 (exact below 2^51; anything larger
// saturates the same way); a NaN product gives lo, as the reference's clamp.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

struct RequantRow {
  const int32_t* acc = nullptr;
  int64_t n = 0;
  // Per value (n entries) when per_value, else one value for the row.
  const int32_t* bias = nullptr;
  const double* scale = nullptr;
  bool per_value = true;
  double zp = 0, lo = 0, hi = 255;  // lo / hi: the output type's range (lo raised for a fused Relu)
  void* y = nullptr;                // n bytes: uint8, or int8 when y_signed
  bool y_signed = false;
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, requant_row, (const ::spindle::kernels::RequantRow& args));
