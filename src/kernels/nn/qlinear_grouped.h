// qlinear_grouped.h — QLinearConvNhwc's path for narrow square groups
// (primitives/quant/qgrouped.h): each output row accumulated by
// qgrouped_row, then requantized as the other paths do. Internal to
// kernels/nn.
#pragma once

#include <cstdint>

#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"
#include "primitives/quant/qgrouped.h"

namespace spindle::kernels::nn {

// The requantization QLinearConv applies to every output channel m:
// y = clamp(round_half_even((acc + bias[m]) * scale[m]) + zp, lo, hi).
struct ChannelRequant {
  const int32_t* bias = nullptr;  // M
  const double* scale = nullptr;  // M
  double zp = 0, lo = 0, hi = 255;
};

// X: [N, H, W, C] int8 / uint8 (C == w.m), y: [N, OH, OW, C] of T (g's
// output sizes), on ctx's intra-op pool.
template <class T>
void qgrouped_conv(KernelContext& ctx, const QGroupedWeights& w, const Tensor& X, const Window3& g, int32_t x_zp,
                   const ChannelRequant& r, T* y);

}  // namespace spindle::kernels::nn
