// transformer.h — shared by transformer.cpp (RotaryEmbedding),
// group_query_attention.cpp (com.microsoft GroupQueryAttention), and the
// optimizer's fused nodes attention.cpp (spindle.FusedAttention) and
// rotary_half.cpp (spindle.RotaryHalf).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels::nn {

// Rotates the first 2 * half values of a head's row x into y by the angles
// whose cosines / sines are c / s (half values each): pairs (x[i], x[i +
// half]) or, interleaved, (x[2i], x[2i + 1]) become (c x1 - s x2, s x1 +
// c x2). Values past 2 * half are copied. x and y may be the same row.
inline void rotate_row(const float* x, float* y, const float* c, const float* s, int64_t half, int64_t D,
                       bool interleaved) {
  for (int64_t i = 0; i < half; ++i) {
    const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
    const float x1 = x[i1], x2 = x[i2];
    y[i1] = c[i] * x1 - s[i] * x2;
    y[i2] = s[i] * x1 + c[i] * x2;
  }
  if (x != y)
    for (int64_t i = 2 * half; i < D; ++i) y[i] = x[i];
}

// The output of one node a fused node replaced (op at opset, attrs, on
// `in`), run when the fused node's fast path does not take its inputs; an
// error names the fused node ("in its fused <op>: ...").
inline Tensor run_replaced(const NodeInfo& node, ThreadPool* pool, const char* op, int opset, Attributes attrs,
                           std::vector<Tensor> in) {
  try {
    return std::move(run_kernel_once(op, opset, std::move(attrs), std::move(in), 1, pool)[0]);
  } catch (const Error& e) {
    fail(node, fmt::format("in its fused {}: {}", op, e.status().message()));
  }
}

void register_group_query_attention(KernelRegistry& r);  // group_query_attention.cpp
void register_rotary_half(KernelRegistry& r);            // rotary_half.cpp: spindle.RotaryHalf

}  // namespace spindle::kernels::nn
