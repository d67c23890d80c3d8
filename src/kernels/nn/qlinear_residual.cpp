// qlinear_residual.cpp — the QLinearAdd folded into a QLinearConvNhwc
// (qlinear_residual.h).
#include "kernels/nn/qlinear_residual.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "kernels/nn/qlinear_params.h"

namespace spindle::kernels::nn {

std::optional<QResidualAdd> QResidualAdd::of(const NodeInfo& node) {
  if (node.num_inputs <= 9) return std::nullopt;
  if (node.num_inputs != 16)
    fail(node, fmt::format("has {} inputs, expected 9 or, with a folded QLinearAdd, 16", node.num_inputs));
  QResidualAdd a;
  const int64_t operand = node.attrs.get_int("add_conv_operand", 0);
  if (operand != 0 && operand != 1)
    fail(node, fmt::format("attribute add_conv_operand is {}, expected 0 (A) or 1 (B)", operand));
  a.conv_is_a_ = operand == 0;
  const std::string act = node.attrs.get_string("add_activation", "");
  if (!act.empty() && act != "Relu")
    fail_unsupported(node, fmt::format("attribute add_activation is '{}', expected Relu or none", act));
  a.relu_ = act == "Relu";
  return a;
}

std::optional<QuantRow> QResidualAdd::row(KernelContext& ctx, const Shape& out_shape, DataType out_type) const {
  const Tensor& R = ctx.input(9);
  if (R.shape() != out_shape || R.dtype() != out_type) return std::nullopt;
  const float sc = qparams::scalar_scale(ctx, 10, "conv operand's scale"), sr = qparams::scalar_scale(ctx, 12, "R_scale"),
              sy = qparams::scalar_scale(ctx, 14, "C_scale");
  if (!std::isfinite(sy) || sy == 0.0f) return std::nullopt;  // the unfused node's scalar path
  const int32_t zc = qparams::scalar_zero_point(ctx, 11, "conv operand's zero point", out_type);
  const int32_t zr = qparams::scalar_zero_point(ctx, 13, "R_zero_point", out_type);
  const int32_t zy = qparams::scalar_zero_point(ctx, 15, "C_zero_point", out_type);
  const bool sign = out_type == DataType::kInt8;
  QuantRow q;
  q.sign = sign;
  q.a_scale = conv_is_a_ ? sc : sr;
  q.a_zero = static_cast<float>(conv_is_a_ ? zc : zr);
  q.b_scale = conv_is_a_ ? sr : sc;
  q.b_zero = static_cast<float>(conv_is_a_ ? zr : zc);
  q.y_scale = sy;
  q.y_zero = static_cast<float>(zy);
  const int32_t lo = sign ? std::numeric_limits<int8_t>::min() : 0;
  q.lo = static_cast<float>(relu_ ? std::max(zy, lo) : lo);
  q.hi = sign ? 127.0f : 255.0f;
  return q;
}

void QResidualAdd::add_rows(const QuantRow& row, const void* conv, int64_t ld_conv, const void* r, void* y, int64_t ld,
                            int64_t rows, int64_t n) const {
  static const auto row_fn = SPINDLE_ISA_SELECT(qlinear_binary_row);
  QuantRow q = row;
  q.n = n;
  const auto* c8 = static_cast<const uint8_t*>(conv);
  const auto* r8 = static_cast<const uint8_t*>(r);
  auto* y8 = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < rows; ++i) {
    q.a = conv_is_a_ ? c8 + i * ld_conv : r8 + i * ld;
    q.b = conv_is_a_ ? r8 + i * ld : c8 + i * ld_conv;
    q.y = y8 + i * ld;
    row_fn(q);
  }
}

Tensor QResidualAdd::unfused(KernelContext& ctx, const Tensor& conv_out) const {
  NodeInfo add;
  add.op_type = "QLinearAdd";
  add.domain = "com.microsoft";
  add.opset = 1;
  if (relu_) add.attrs.set("activation", std::string("Relu"));
  add.num_inputs = 8;
  const auto at = [&](int i) { return ctx.has_input(i) ? ctx.input(i) : Tensor(); };
  std::vector<Tensor> in = conv_is_a_ ? std::vector<Tensor>{conv_out, at(10), at(11), at(9), at(12), at(13), at(14), at(15)}
                                      : std::vector<Tensor>{at(9), at(12), at(13), conv_out, at(10), at(11), at(14), at(15)};
  try {
    return std::move(run_kernel_once(add, std::move(in), ctx.pool())[0]);
  } catch (const Error& e) {
    fail(ctx.node(), fmt::format("in its folded QLinearAdd: {}", e.status().message()));
  }
}

}  // namespace spindle::kernels::nn
