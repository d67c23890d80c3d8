// reduce_ops.h — registration entry points and shared helpers of
// src/kernels/reduce.
#pragma once

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "threading/cost.h"

namespace spindle::kernels::reduce {

void register_reduce(KernelRegistry& r);   // reduce.cpp: Reduce*, ArgMax, ArgMin
void register_softmax(KernelRegistry& r);  // softmax.cpp: Softmax, LogSoftmax, Hardmax
void register_cumsum(KernelRegistry& r);   // cumsum.cpp: CumSum

// Grain (in output elements) for loops that walk [outer, D, inner] columns:
// the cost-derived grain, but at least min(inner, 256) so that each block
// streams >= 1 KB (float) of every row instead of a few cache lines of each
// (narrower column blocks measured 2x slower on [4096, 256] axis-0 sums).
inline int64_t column_grain(const Cost& cost, int64_t inner) {
  return std::max<int64_t>(grain_for_cost(cost), std::min<int64_t>(inner, 256));
}

}  // namespace spindle::kernels::reduce
