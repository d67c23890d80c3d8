// qlinear_residual.h — a com.microsoft.QLinearAdd folded into the
// spindle.QLinearConvNhwc that makes one of its operands (NhwcTransformer:
// ResNet's residual Add after the block's last convolution). The
// convolution node then has seven more inputs,
//   9 R (the Add's other operand), 10 / 11 the convolution operand's scale
//   and zero point as the Add reads it, 12 / 13 R's, 14 / 15 the Add's
//   output scale and zero point,
// and the attributes add_conv_operand (0: the convolution was the Add's A,
// 1: its B) and add_activation ("Relu" or absent, the Add's fused Relu). Its
// output is the Add's. The convolution's own 8-bit values (requantized with
// inputs 6 / 7) are computed as before, block by block into scratch, and
// each block goes through the Add's row (qlinear_binary_row, the operands in
// the Add's order) into the output while it is in cache: the bits of the two
// nodes, without the pass over memory between them. An R whose shape or type
// differs from the output's (broadcasting) runs the two nodes one after the
// other. Internal to kernels/nn.
#pragma once

#include <cstdint>
#include <optional>

#include "kernels/kernel.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::nn {

class QResidualAdd {
 public:
  // The folded Add of a QLinearConvNhwc node, when it has one.
  static std::optional<QResidualAdd> of(const NodeInfo& node);

  // The Add's row arguments (scales, zero points, range) when R has the
  // output's shape and type: the blocks can be added as they are made.
  std::optional<QuantRow> row(KernelContext& ctx, const Shape& out_shape, DataType out_type) const;
  // y[i][j] = Add(conv[i][j], r[i][j]) for `rows` rows of n values (row
  // strides ld_conv, ld), through `row`'s arguments.
  void add_rows(const QuantRow& row, const void* conv, int64_t ld_conv, const void* r, void* y, int64_t ld,
                int64_t rows, int64_t n) const;
  // The Add on the convolution's whole output (the unfused node).
  Tensor unfused(KernelContext& ctx, const Tensor& conv_out) const;

 private:
  bool conv_is_a_ = true;
  bool relu_ = false;
};

}  // namespace spindle::kernels::nn
