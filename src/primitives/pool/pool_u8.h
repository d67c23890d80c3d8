// pool_u8.h — one output row of a 2-D MaxPool over 8-bit NHWC pixels
// (spindle.MaxPoolNhwc), per ISA level (pool_u8.isa.cpp): each output pixel
// is the element-wise max of its window's pixel vectors inside the input
// (all C channels at once; the max of integers does not depend on the order
// of the taps). AVX-512 BW: 64 channels per vector, the pixels whose every
// tap is inside the input without bound checks; a loop the compiler
// vectorizes at the level's width otherwise.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

struct MaxPoolNhwcRow {
  const void* x = nullptr;  // one image [H][W][C]: int8 when sign, else uint8
  void* y = nullptr;        // the output row [OW][C]
  bool sign = false;
  int64_t H = 0, W = 0, C = 0, oh = 0, OW = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;  // kernel, strides, dilations, begin pads
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, max_pool_nhwc_row, (const ::spindle::kernels::MaxPoolNhwcRow& args));
