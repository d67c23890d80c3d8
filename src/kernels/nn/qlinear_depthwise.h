// qlinear_depthwise.h — QLinearConvNhwc's depthwise path (one input and one
// output channel per group): with AVX512-VNNI and weights that fit int8 once
// centered, dw_q8_row (primitives/quant/dw_q8.h) on padded rows of the
// input, its weights packed when the kernel is created; otherwise
// dw_requant_row (primitives/quant/requant.h) on the input as it is.
// Internal to kernels/nn.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/nn/nn_util.h"
#include "kernels/nn/qlinear_grouped.h"
#include "primitives/quant/dw_q8.h"

namespace spindle::kernels::nn {

class QDepthwise {
 public:
  QDepthwise() = default;
  // w: the depthwise W [C][1][kh][kw] as loaded (kept, its storage
  // shared); w_zp: its zero points when they are a constant (else null);
  // strided: the stride along the rows is above 1.
  QDepthwise(const Tensor& w, const Tensor* w_zp, bool strided);

  // X: [N, H, W, C] int8 / uint8, y: [N, OH, OW, C] of T (g's output
  // sizes); w_zp: C zero points (one per channel); on ctx's intra-op pool.
  template <class T>
  void run(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const std::vector<int32_t>& w_zp,
           const ChannelRequant& r, T* y) const;

  const Tensor& weights() const { return w_; }
  size_t bytes() const { return w_.nbytes() + q8_.bytes(); }

 private:
  int32_t weight(int64_t i) const;
  template <class T>
  void run_rows(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const std::vector<int32_t>& w_zp,
                const ChannelRequant& r, T* y) const;
  template <class T>
  void run_q8(KernelContext& ctx, const Tensor& X, const Window3& g, int32_t x_zp, const ChannelRequant& r, T* y) const;

  Tensor w_;
  bool w_signed_ = true;
  std::vector<int32_t> q8_zp_;  // the zero points q8_ was packed with
  DwQ8Weights q8_;              // empty: dw_requant_row runs
};

}  // namespace spindle::kernels::nn
