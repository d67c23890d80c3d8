// qlinear_params.h — the checks of the com.microsoft and spindle quantized
// element-wise operators (qlinear_contrib.cpp, qlinear_gate.cpp) on their
// 8-bit data, scalar scales and optional scalar zero points, each failing
// with the input's name and what was expected. Internal to kernels/nn.
#pragma once

#include <cstdint>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels::nn::qparams {

inline bool is_q8(DataType t) { return t == DataType::kUInt8 || t == DataType::kInt8; }

inline void require_q8_input(const NodeInfo& node, const Tensor& t, const char* name) {
  if (!is_q8(t.dtype())) fail(node, fmt::format("input {} is {}, expected uint8 or int8", name, t.describe()));
}

inline float scalar_scale(KernelContext& ctx, int index, const char* name) {
  const Tensor& s = ctx.input(index);
  if (s.dtype() != DataType::kFloat32 || s.numel() != 1)
    fail(ctx.node(), fmt::format("input {} is {}, expected one float32 value", name, s.describe()));
  return s.data<float>()[0];
}

// An optional scalar zero point of `type` (absent: 0).
inline int32_t scalar_zero_point(KernelContext& ctx, int index, const char* name, DataType type) {
  if (!ctx.has_input(index)) return 0;
  const Tensor& z = ctx.input(index);
  if (z.dtype() != type || z.numel() != 1)
    fail(ctx.node(), fmt::format("input {} is {}, expected one {} value", name, z.describe(), dtype_name(type)));
  return type == DataType::kUInt8 ? z.data<uint8_t>()[0] : z.data<int8_t>()[0];
}

}  // namespace spindle::kernels::nn::qparams
