// nhwc_bytes.isa.cpp — interleave_planes_u8 (nhwc_bytes.h), compiled once
// per ISA level.
#include <cstdint>

#include "kernels/nn/nhwc_bytes.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

// P planes: each output pixel's P bytes from the P planes, restricted
// pointers so the compiler vectorizes the interleaving stores.
template <int P>
void interleave(const uint8_t* src, uint8_t* __restrict dst, int64_t cols, int64_t j0, int64_t j1) {
  const uint8_t* __restrict s0 = src;
  const uint8_t* __restrict s1 = src + cols;
  const uint8_t* __restrict s2 = src + (P > 2 ? 2 : 1) * cols;
  const uint8_t* __restrict s3 = src + (P > 3 ? 3 : 1) * cols;
  for (int64_t j = j0; j < j1; ++j) {
    dst[j * P] = s0[j];
    dst[j * P + 1] = s1[j];
    if constexpr (P > 2) dst[j * P + 2] = s2[j];
    if constexpr (P > 3) dst[j * P + 3] = s3[j];
  }
}

}  // namespace

void interleave_planes_u8(const uint8_t* src, uint8_t* dst, int64_t planes, int64_t cols, int64_t j0, int64_t j1) {
  if (planes == 2) interleave<2>(src, dst, cols, j0, j1);
  else if (planes == 3) interleave<3>(src, dst, cols, j0, j1);
  else interleave<4>(src, dst, cols, j0, j1);
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
