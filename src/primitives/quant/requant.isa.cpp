// requant.isa.cpp — requant_row (requant.h), compiled once per ISA level:
// plain loops the compiler vectorizes at the level's width.
#include <cstdint>

#include "primitives/quant/requant.h"

namespace spindle::kernels::SPINDLE_ISA_NS {

namespace {

constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
constexpr double kBound = 1099511627776.0;     // 2^40

// The reference's order: max(lo, v) then min(hi, .), so a NaN gives lo.
inline double one(int32_t acc, int32_t bias, double scale, double zp, double lo, double hi) {
  double v = (static_cast<double>(acc) + static_cast<double>(bias)) * scale;
  v = v < -kBound ? -kBound : v;
  v = v > kBound ? kBound : v;
  double r = (v + kMagic) - kMagic + zp;
  r = lo < r ? r : lo;
  r = r < hi ? r : hi;
  return r;
}

// Every field copied to a local and the pointers restricted: the byte
// stores could otherwise alias them, which keeps the loop scalar.
template <class T>
void run(const ::spindle::kernels::RequantRow& a, T* __restrict y) {
  const int32_t* __restrict acc = a.acc;
  const int64_t n = a.n;
  const double zp = a.zp, lo = a.lo, hi = a.hi;
  if (a.per_value) {
    const int32_t* __restrict bias = a.bias;
    const double* __restrict scale = a.scale;
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<int32_t>(one(acc[i], bias[i], scale[i], zp, lo, hi)));
  } else {
    const int32_t bias = a.bias[0];
    const double scale = a.scale[0];
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<int32_t>(one(acc[i], bias, scale, zp, lo, hi)));
  }
}

}  // namespace

void requant_row(const ::spindle::kernels::RequantRow& args) {
  if (args.y_signed) run(args, static_cast<int8_t*>(args.y));
  else run(args, static_cast<uint8_t*>(args.y));
}

}  // namespace spindle::kernels::SPINDLE_ISA_NS
