// requant.h — the requantization of int32 accumulators to 8 bits that
// QLinearConv computes (requant.isa.cpp, per ISA level), in float32 as ONNX
// Runtime's requantization does:
//
//   y = clamp(round_half_even(float(acc + bias) * scale), lo - zp, hi - zp) + zp
//
// acc + bias wraps in int32; float() rounds to nearest even; the clamp comes
// before the rounding (its bounds are integers, so clamping first or after
// gives the same integer), and a NaN product gives lo - zp, hence lo.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

struct RequantRow {
  const int32_t* acc = nullptr;
  int64_t n = 0;
  // Per value (n entries) when per_value, else one value for the row.
  const int32_t* bias = nullptr;
  const float* scale = nullptr;
  bool per_value = true;
  float zp = 0, lo = 0, hi = 255;  // lo / hi: the output type's range (lo raised for a fused Relu)
  void* y = nullptr;                // n bytes: uint8, or int8 when y_signed
  bool y_signed = false;
};

// Element-wise QDQ arithmetic in float32, exactly as DequantizeLinear, the
// float op and QuantizeLinear compute it one after the other (the quotient
// rounded half to even by adding and subtracting 1.5 * 2^23 after a clamp to
// +-2^22, which saturates the same way; a NaN quotient gives 0, as
// QuantizeLinear); except the binary add, which computes ONNX Runtime's
// QLinearAdd arithmetic (binary_ratio in requant.isa.cpp). `sign`: the 8-bit
// values are int8 (else uint8).
struct QuantRow {
  int64_t n = 0;
  bool sign = false;
  const void* a = nullptr;  // 8-bit (binary, dequantize) or float (quantize)
  const void* b = nullptr;  // 8-bit (binary)
  void* y = nullptr;        // 8-bit (binary, quantize) or float (dequantize)
  float a_scale = 1, a_zero = 0, b_scale = 1, b_zero = 0, y_scale = 1, y_zero = 0;
  float lo = 0, hi = 255;   // output range (binary, quantize); lo raised for a fused Relu
  bool multiply = false;    // binary: a * b (else a + b)
  bool b_scalar = false;    // binary add: b is one value for every a
  // gate: y = Q(gate * DQ(a)), gate[i] per value when gate_per_value, else gate[0].
  const float* gate = nullptr;
  bool gate_per_value = false;
};

// The geometry of one output row of a 2-D depthwise convolution on
// pixel-major (NHWC) 8-bit input (dw_requant_row): for each output column
// ow, acc[ow * C + c] = the sum over
// the window's taps inside the input of (x[ih][iw][c] - x_zp) * w[tap][c],
// exact in int32 (padding adds nothing).
struct DwRow {
  const void* x = nullptr;      // one image [H][W][C]: int8 when x_signed, else uint8
  bool x_signed = false;
  int32_t x_zp = 0;
  int64_t H = 0, W = 0, C = 0, oh = 0, OW = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;  // kernel, strides, dilations, begin pads
  const int32_t* w = nullptr;   // [kh * kw][C], the weights' zero points subtracted (each in [-255, 255])
  // Optional, for sw == 1: [kh * kw][OW * C], each tap's C weights repeated
  // OW times (a tap's columns are then one run of OW * C values).
  const int32_t* w_rows = nullptr;
  int32_t* acc = nullptr;       // [OW][C], written
};

// One output row of DwRow's depthwise convolution requantized as RequantRow
// does, channel c with bias[c] and scale[c]: y[ow * C + c] (OW * C bytes,
// int8 when y_signed, else uint8). The same bits as dw_row followed by
// requant_row; the AVX-512 level keeps each pixel's 16-channel sums in a
// register (row.acc and row.w_rows unused), the others go through row.acc.
struct DwRequantRow {
  DwRow row;
  const int32_t* bias = nullptr;  // [C]
  const float* scale = nullptr;  // [C]
  float zp = 0, lo = 0, hi = 255;
  void* y = nullptr;
  bool y_signed = false;
};

// y[p][c] = Q(act(DQ(x[p][c]) * a[c] + b[c])) over `pixels` rows of C
// channels, act none or Relu (spindle.BatchNormalizationNhwc between 8-bit
// tensors): DequantizeLinear's operations (dequantize_row), the product and
// sum as one fused multiply-add (as the AVX-512 level's affine rows
// contract them), Relu as `v < 0 ? 0 : v`, then quantize_row's.
struct AffineQ8Rows {
  QuantRow dq;  // a (x), sign, a_scale, a_zero
  QuantRow q;   // y, sign, y_scale, y_zero, lo, hi
  const float* a = nullptr;  // [C]
  const float* b = nullptr;  // [C]
  int64_t pixels = 0, C = 0;
  bool relu = false;
};

}  // namespace spindle::kernels

// AffineQ8Rows in one pass; false (nothing written) at the levels without
// it, where the caller composes the three rows.
SPINDLE_ISA_DECLARE(bool, affine_q8_rows, (const ::spindle::kernels::AffineQ8Rows& args));
SPINDLE_ISA_DECLARE(void, dw_requant_row, (const ::spindle::kernels::DwRequantRow& args));
SPINDLE_ISA_DECLARE(void, requant_row, (const ::spindle::kernels::RequantRow& args));
// y = Q(DQ(a) + DQ(b)) or Q(DQ(a) * DQ(b)), same-shaped rows.
SPINDLE_ISA_DECLARE(void, qlinear_binary_row, (const ::spindle::kernels::QuantRow& args));
// y = Q(gate * DQ(a)), the gate float32 (a squeeze-excite scale).
SPINDLE_ISA_DECLARE(void, qlinear_gate_row, (const ::spindle::kernels::QuantRow& args));
// y = Q(a), a float32.
SPINDLE_ISA_DECLARE(void, quantize_row, (const ::spindle::kernels::QuantRow& args));
// y = DQ(a), y float32.
SPINDLE_ISA_DECLARE(void, dequantize_row, (const ::spindle::kernels::QuantRow& args));
