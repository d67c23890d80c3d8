// pool_max.isa.cpp — MaxPool's tap combination over a row (pool.cpp's
// two-pass float path), compiled once per ISA level
// (src/kernels/isa/dispatch.h): a plain loop the compiler vectorizes at the
// level's width.
//
// max_fold: acc[i] = (v[i] > acc[i] || acc[i] is NaN) ? v[i] : acc[i] for
// i < n, the rule of pool.cpp (NaN taps skipped, the first of equal values
// kept).
#include <cstdint>

#include "kernels/isa/dispatch.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

void max_fold(float* acc, const float* v, int64_t n) {
  float* __restrict a = acc;
  const float* __restrict b = v;
  for (int64_t i = 0; i < n; ++i) a[i] = (b[i] > a[i]) | (a[i] != a[i]) ? b[i] : a[i];
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
