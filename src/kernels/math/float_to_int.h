// float_to_int.h — float -> integer conversion with defined results for
// every input, matching ONNX Runtime on x86-64.
//
// C++ leaves static_cast<int>(x) undefined when x is NaN or out of the
// target's range, and hostile models choose x (Cast, Pow on integers,
// constant fill values). ONNX Runtime's results are those of the x86
// truncating conversions (cvttss2si / cvttsd2si), which return the "integer
// indefinite" value 0x80...0 for NaN and out-of-range inputs; narrower types
// go through int32 and keep the low bits; unsigned 32/64-bit types convert
// x - 2^31 (x - 2^63) when x >= 2^31 (2^63) and flip the top bit. Measured
// with onnxruntime-node 1.30 (Cast float/double -> every integer type on
// NaN, +-3e38, +-1e10, +-300.7, -1.5; Pow on int32/int64): see
// docs/nan-and-overflow.md. In-range values truncate toward zero as C++ does.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

namespace spindle::kernels::math {

// x86 cvttsd2si with a 32-bit destination.
inline int32_t truncate_to_int32(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(v);
}

// x86 cvttsd2si with a 64-bit destination.
inline int64_t truncate_to_int64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// Integer `To` (not bool) from a float or double, defined for every input.
template <class To>
inline To float_to_int(double v) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>);
  if constexpr (std::is_same_v<To, int64_t>) {
    return truncate_to_int64(v);
  } else if constexpr (std::is_same_v<To, uint64_t>) {
    constexpr double kTop = 9223372036854775808.0;  // 2^63
    if (v >= kTop) return static_cast<uint64_t>(truncate_to_int64(v - kTop)) ^ (uint64_t{1} << 63);
    return static_cast<uint64_t>(truncate_to_int64(v));
  } else if constexpr (std::is_same_v<To, uint32_t>) {
    constexpr double kTop = 2147483648.0;  // 2^31
    if (v >= kTop) return static_cast<uint32_t>(truncate_to_int32(v - kTop)) ^ (uint32_t{1} << 31);
    return static_cast<uint32_t>(truncate_to_int32(v));
  } else {  // int32 and the narrower types keep the low bits of the int32 result
    return static_cast<To>(truncate_to_int32(v));
  }
}

}  // namespace spindle::kernels::math
