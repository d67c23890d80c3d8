// qlinear_grouped.h — QLinearConvNhwc's path for narrow square groups
// (primitives/quant/qgrouped.h): each output row accumulated by
// qgrouped_row, then requantized as the other paths do. Internal to
// kernels/nn.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"
#include "primitives/quant/qgrouped.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

// The requantization QLinearConv applies to every output channel m:
// requant_row's (primitives/quant/requant.h) with bias[m] and scale[m].
struct ChannelRequant {
  const int32_t* bias = nullptr;  // M
  const float* scale = nullptr;   // M
  float zp = 0, lo = 0, hi = 255;
};

// The requantization of an output row of OW pixels x C channels as one
// requant_row call: the per-channel terms repeated along the row.
class RowRequant {
 public:
  RowRequant(const ChannelRequant& r, int64_t OW, int64_t C, bool y_signed);
  RequantRow row(const int32_t* acc, void* y) const;

 private:
  ChannelRequant r_;
  std::vector<int32_t> bias_;
  std::vector<float> scale_;
  bool y_signed_;
};

// The geometry fields of a row loop's arguments (DwRow, QGroupedRow) for a
// 2-D convolution g of the NHWC input X.
template <class Row>
void set_row_geometry(Row& a, const Tensor& X, const Window3& g) {
  a.x_signed = X.dtype() == DataType::kInt8;
  a.H = X.dim(1);
  a.W = X.dim(2);
  a.C = X.dim(3);
  a.OW = g.out[2];
  a.kh = g.k[1];
  a.kw = g.k[2];
  a.sh = g.s[1];
  a.sw = g.s[2];
  a.dh = g.d[1];
  a.dw = g.d[2];
  a.ph = g.pb[1];
  a.pw = g.pb[2];
}

// X: [N, H, W, C] int8 / uint8 (C == w.m), y: [N, OH, OW, C] of T (g's
// output sizes), on ctx's intra-op pool.
template <class T>
void qgrouped_conv(KernelContext& ctx, const QGroupedWeights& w, const Tensor& X, const Window3& g, int32_t x_zp,
                   const ChannelRequant& r, T* y);

}  // namespace spindle::kernels::nn
