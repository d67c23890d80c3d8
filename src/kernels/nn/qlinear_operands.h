// qlinear_operands.h — the operand checks and packing shared by the integer
// products of qlinear.cpp (MatMulInteger, QLinearMatMul, the convolutions)
// and dequantized_matmul.cpp (DynamicQuantizeMatMul, MatMulIntegerToFloat
// and their group): each check fails naming the input and what was
// expected. Internal to kernels/nn; defined in qlinear.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"
#include "primitives/gemm/qgemm.h"

namespace spindle::kernels::nn::qoperands {

void require_q8(const NodeInfo& node, const Tensor& t, const char* name);
// Values of an int8 / uint8 tensor widened to int32.
std::vector<int32_t> widen(const Tensor& t);
// A zero point input: absent = 0; one value, or `n` values (one per row /
// column / output channel, `what` says which). Its type must be its data's.
std::vector<int32_t> zero_points(KernelContext& ctx, int index, const char* name, DataType data, int64_t n,
                                 const char* what);
// A float32 scale input: one value, or `n` values.
std::vector<float> scales(KernelContext& ctx, int index, const char* name, int64_t n, const char* what);

// A constant 8-bit B (2-D, or with batch dims of 1), packed for qgemm when
// the kernel is created.
struct PrepackedB {
  QGemmPackedB packed;
  const void* data = nullptr;  // what was packed (null: nothing)
  void pack(const NodeInfo& node, int index);
};

}  // namespace spindle::kernels::nn::qoperands
