// pool_row.h — the per-ISA entry point of one output row of a float 2-D
// MaxPool or AveragePool (pool_row.isa.cpp, pool.cpp's fast path).
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

namespace spindle::kernels {

// y[ow] for ow in [c0, c1) over input rows [r0, r1) of the plane x (row
// length W), KW taps x[r][ow * sw - pl + k] a row, all inside the row.
// divisor 0: the maximum; > 0: the sum divided by it (pool_row.isa.cpp has
// the order of the operations).
struct PoolRow {
  float* y;
  const float* x;
  int64_t W, r0, r1, c0, c1, KW, sw, pl;
  float divisor;
};

}  // namespace spindle::kernels

SPINDLE_ISA_DECLARE(void, pool_row, (const ::spindle::kernels::PoolRow& args));
