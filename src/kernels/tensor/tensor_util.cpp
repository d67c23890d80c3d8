// tensor_util.cpp — out-of-line helpers of tensor_util.h.
#include "kernels/tensor/tensor_util.h"

#include <cmath>

#include "kernels/math/float_to_int.h"

namespace spindle::kernels::tensor {
namespace {

// IEEE binary16 bits of f, rounded to nearest even.
uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7FFFFFFFu;
  if (absx >= 0x7F800000u) return static_cast<uint16_t>(sign | (absx > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (absx < 0x38800000u) {  // subnormal half (or zero)
    const float a = std::fabs(f) * 16777216.0f;  // 2^24: units of the smallest subnormal
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a)));
  }
  const uint32_t mant = absx & 0x7FFFFFu;
  uint32_t h = ((absx >> 23) - 112u) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

}  // namespace

std::vector<unsigned char> value_bytes(const NodeInfo& node, DataType dtype, double value) {
  std::vector<unsigned char> out(dtype_size(dtype));
  auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof(v)); };
  switch (dtype) {
    case DataType::kFloat32: put(static_cast<float>(value)); break;
    case DataType::kFloat64: put(value); break;
    case DataType::kFloat16: put(float_to_half(static_cast<float>(value))); break;
    case DataType::kBool: put(static_cast<uint8_t>(value != 0.0)); break;
    case DataType::kInt8: put(math::float_to_int<int8_t>(value)); break;
    case DataType::kInt16: put(math::float_to_int<int16_t>(value)); break;
    case DataType::kInt32: put(math::float_to_int<int32_t>(value)); break;
    case DataType::kInt64: put(math::float_to_int<int64_t>(value)); break;
    case DataType::kUInt8: put(math::float_to_int<uint8_t>(value)); break;
    case DataType::kUInt16: put(math::float_to_int<uint16_t>(value)); break;
    case DataType::kUInt32: put(math::float_to_int<uint32_t>(value)); break;
    case DataType::kUInt64: put(math::float_to_int<uint64_t>(value)); break;
    default: fail_unsupported(node, fmt::format("values of type {} are not supported", dtype_name(dtype)));
  }
  return out;
}

}  // namespace spindle::kernels::tensor
