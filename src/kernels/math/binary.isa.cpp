// binary.isa.cpp — float32 Add, Sub, Mul, Div, Min, Max over one inner run
// of the broadcasting engine, compiled once per ISA level
// (src/primitives/isa/dispatch.h; binary_isa.h says what each argument means).
//
// Plain loops that the compiler vectorizes at the level's width; a stride-0
// operand is loaded once. Min / Max propagate NaN like binary.cpp's generic
// ops: (a < b || a != a) ? a : b, a compare and a select per element.
#include "kernels/math/binary_isa.h"

namespace spindle::kernels::SPINDLE_ISA_NS {
namespace {

using math::FloatBinOp;

template <class F>
inline void apply(unsigned mask, float* o, const float* a, const float* b, int64_t n, F f) {
  switch (mask) {
    case 0:
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
      return;
    case 1: {
      const float s = a[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(s, b[i]);
      return;
    }
    case 2: {
      const float s = b[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], s);
      return;
    }
    default: {
      const float v = f(a[0], b[0]);
      for (int64_t i = 0; i < n; ++i) o[i] = v;
      return;
    }
  }
}

}  // namespace

void binary_float_chunk(FloatBinOp op, unsigned scalar_mask, float* o, const float* a, const float* b, int64_t n) {
  switch (op) {
    case FloatBinOp::kAdd: return apply(scalar_mask, o, a, b, n, [](float x, float y) { return x + y; });
    case FloatBinOp::kSub: return apply(scalar_mask, o, a, b, n, [](float x, float y) { return x - y; });
    case FloatBinOp::kMul: return apply(scalar_mask, o, a, b, n, [](float x, float y) { return x * y; });
    case FloatBinOp::kDiv: return apply(scalar_mask, o, a, b, n, [](float x, float y) { return x / y; });
    case FloatBinOp::kMin:
      return apply(scalar_mask, o, a, b, n, [](float x, float y) { return (x < y || x != x) ? x : y; });
    case FloatBinOp::kMax:
      return apply(scalar_mask, o, a, b, n, [](float x, float y) { return (x > y || x != x) ? x : y; });
  }
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
