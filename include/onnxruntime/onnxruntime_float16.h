// onnxruntime_float16.h — the 16-bit float element types of ONNX Runtime's
// C++ API (Ort::Float16_t, Ort::BFloat16_t), written for spindle's
// libonnxruntime.so.1 (docs/capi.md). Each holds its raw bits in `val`;
// conversions to and from float round to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

namespace Ort {
namespace detail {

inline uint32_t FloatBits(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float BitsFloat(uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t FloatToHalfBits(float f) noexcept {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (ax < 0x38800000u) {                                                // below the smallest normal half
    // Scale into the half's subnormal step (2^-24) and round to nearest even.
    const float scaled = BitsFloat(ax) * 16777216.0f;  // exact: multiplying by 2^24
    uint32_t q = static_cast<uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  const uint32_t mant_odd = (ax >> 13) & 1u;
  const uint32_t rounded = ax + 0xfffu + mant_odd;  // round to nearest even on bit 13
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

inline float HalfBitsToFloat(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t FloatToBFloat16Bits(float f) noexcept {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace detail

/// IEEE 754 binary16.
struct Float16_t {
  uint16_t val{0};

  constexpr Float16_t() noexcept = default;
  explicit Float16_t(float f) noexcept : val(detail::FloatToHalfBits(f)) {}
  static constexpr Float16_t FromBits(uint16_t bits) noexcept {
    Float16_t h;
    h.val = bits;
    return h;
  }
  float ToFloat() const noexcept { return detail::HalfBitsToFloat(val); }
  explicit operator float() const noexcept { return ToFloat(); }
  bool IsNaN() const noexcept { return (val & 0x7fffu) > 0x7c00u; }
  bool IsInfinity() const noexcept { return (val & 0x7fffu) == 0x7c00u; }
  bool IsNegative() const noexcept { return (val & 0x8000u) != 0; }
  Float16_t Negate() const noexcept { return FromBits(static_cast<uint16_t>(val ^ 0x8000u)); }
  Float16_t Abs() const noexcept { return FromBits(static_cast<uint16_t>(val & 0x7fffu)); }
  bool operator==(const Float16_t& o) const noexcept {
    if (IsNaN() || o.IsNaN()) return false;
    return val == o.val || ((val | o.val) & 0x7fffu) == 0;  // +0 == -0
  }
  bool operator!=(const Float16_t& o) const noexcept { return !(*this == o); }
  bool operator<(const Float16_t& o) const noexcept { return ToFloat() < o.ToFloat(); }
};
static_assert(sizeof(Float16_t) == sizeof(uint16_t), "Float16_t is two bytes");

/// bfloat16: the upper half of a float32.
struct BFloat16_t {
  uint16_t val{0};

  constexpr BFloat16_t() noexcept = default;
  explicit BFloat16_t(float f) noexcept : val(detail::FloatToBFloat16Bits(f)) {}
  static constexpr BFloat16_t FromBits(uint16_t bits) noexcept {
    BFloat16_t b;
    b.val = bits;
    return b;
  }
  float ToFloat() const noexcept { return detail::BitsFloat(static_cast<uint32_t>(val) << 16); }
  explicit operator float() const noexcept { return ToFloat(); }
  bool IsNaN() const noexcept { return (val & 0x7fffu) > 0x7f80u; }
  bool operator==(const BFloat16_t& o) const noexcept { return ToFloat() == o.ToFloat(); }
  bool operator!=(const BFloat16_t& o) const noexcept { return !(*this == o); }
  bool operator<(const BFloat16_t& o) const noexcept { return ToFloat() < o.ToFloat(); }
};
static_assert(sizeof(BFloat16_t) == sizeof(uint16_t), "BFloat16_t is two bytes");

}  // namespace Ort
