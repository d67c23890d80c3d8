// tensor_util.cpp — out-of-line helpers of tensor_util.h.
#include "kernels/tensor/tensor_util.h"

#include <cstring>

#include "kernels/math/float_to_int.h"

namespace spindle::kernels::tensor {

std::vector<unsigned char> value_bytes(const NodeInfo& node, DataType dtype, double value) {
  std::vector<unsigned char> out(dtype_size(dtype));
  auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof(v)); };
  switch (dtype) {
    case DataType::kFloat32: put(static_cast<float>(value)); break;
    case DataType::kFloat64: put(value); break;
    case DataType::kFloat16: put(float_to_float16(static_cast<float>(value))); break;
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
