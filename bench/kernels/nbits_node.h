// nbits_node.h — the com.microsoft MatMulNBits node the kernel benchmarks
// run: 4-bit weights with constant B, scales and zero points (kept by the
// kernel, as a session keeps them).
#pragma once

#include <cstdint>

#include "kernels/kernel.h"

namespace spindle::bench {

inline kernels::NodeInfo nbits_node(int64_t K, int64_t N, int64_t block_size, int64_t accuracy_level,
                                    const Tensor& b, const Tensor& scales, const Tensor& zero_points) {
  kernels::NodeInfo info;
  info.op_type = "MatMulNBits";
  info.domain = "com.microsoft";
  info.opset = 1;
  info.num_inputs = 4;
  info.attrs.set("K", K);
  info.attrs.set("N", N);
  info.attrs.set("bits", int64_t{4});
  info.attrs.set("block_size", block_size);
  info.attrs.set("accuracy_level", accuracy_level);
  info.const_inputs = {nullptr, &b, &scales, &zero_points};
  return info;
}

}  // namespace spindle::bench
