// cast.cpp — Cast and CastLike between float16/32/64, bfloat16, int8..int64,
// uint8..uint64, bool and string. float -> integer truncates toward zero, and
// NaN / out-of-range values give what ONNX Runtime gives on x86-64
// (float_to_int.h); any -> bool is x != 0; bool -> numeric is 0 / 1; float16
// goes through float32 (round to nearest even). Numbers -> string: integers in
// decimal, floats as the shortest text that reads back to the same value
// ("0.9767611", "1e-07"), with NaN, INF and -INF as ONNX spells them.
// String -> numbers: the whole text must be one number ("INF", "+INF",
// "-inf", "NaN" are floats), else an error names the element. bfloat16 goes
// through float32 like float16: float32 -> bfloat16 rounds to nearest even
// and keeps NaN a NaN. bool <-> string is refused (kUnsupported naming the
// dtypes).
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "kernels/math/elementwise.h"
#include "kernels/math/float_to_int.h"
#include "kernels/math/math_ops.h"

namespace spindle::kernels::math {
namespace {

#define SPINDLE_CAST_TYPES SPINDLE_NUMERIC_TYPES, bool

template <class To, class From>
inline To cast_one(From v) {
  if constexpr (std::is_same_v<To, bool>) return v != From(0);
  else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) return float_to_int<To>(v);
  else return static_cast<To>(v);
}

void cast_tensor(const NodeInfo& node, ThreadPool* pool, const Tensor& x, Tensor& out) {
  dispatch<SPINDLE_CAST_TYPES>(x.dtype(), node, "input", [&](auto from_tag) {
    using From = decltype(from_tag);
    dispatch<SPINDLE_CAST_TYPES>(out.dtype(), node, "target", [&](auto to_tag) {
      using To = decltype(to_tag);
      run_unary(pool, out.mutable_data<To>(), x.data<From>(), x.numel(), [](From v) { return cast_one<To>(v); },
                1.0);
    });
  });
}

template <class T>
std::string number_text(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  }
  return fmt::format("{}", v);
}

template <class T>
T parse_number(const NodeInfo& node, const std::string& text, int64_t index) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  T v{};
  if constexpr (std::is_floating_point_v<T>) {
    v = static_cast<T>(std::strtod(begin, &end));
    if (errno == ERANGE && std::isinf(v)) errno = 0;  // out of float range: +-inf, as a C cast would give
  } else if constexpr (std::is_signed_v<T>) {
    const long long w = std::strtoll(begin, &end, 10);
    if (w < static_cast<long long>(std::numeric_limits<T>::min()) || w > static_cast<long long>(std::numeric_limits<T>::max()))
      errno = ERANGE;
    v = static_cast<T>(w);
  } else {
    const unsigned long long w = std::strtoull(begin, &end, 10);
    if (text.find('-') != std::string::npos || w > static_cast<unsigned long long>(std::numeric_limits<T>::max())) errno = ERANGE;
    v = static_cast<T>(w);
  }
  if (end == begin || *end != '\0' || errno != 0)
    fail(node, fmt::format("element {} is the string \"{}\", which is not a {}", index, text,
                           errno == ERANGE ? "number in range" : "number"));
  return v;
}

#define SPINDLE_STRING_CAST_TYPES float, double, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

// string <-> numbers (float16 and bfloat16 through float32), one element at a time.
void cast_strings(const NodeInfo& node, const Tensor& x, Tensor& out) {
  const int64_t n = x.numel();
  if (x.dtype() == DataType::kString && out.dtype() == DataType::kString) {
    std::copy_n(x.data<std::string>(), n, out.mutable_data<std::string>());
  } else if (x.dtype() == DataType::kString) {
    const std::string* in = x.data<std::string>();
    if (is_half(out.dtype())) {
      auto* o = static_cast<uint16_t*>(out.raw_mutable_data());
      const bool bf16 = out.dtype() == DataType::kBFloat16;
      for (int64_t i = 0; i < n; ++i) {
        const float v = parse_number<float>(node, in[i], i);
        o[i] = bf16 ? float_to_bfloat16(v) : float_to_float16(v);
      }
      return;
    }
    dispatch<SPINDLE_STRING_CAST_TYPES>(out.dtype(), node, "target", [&](auto tag) {
      using To = decltype(tag);
      To* o = out.mutable_data<To>();
      for (int64_t i = 0; i < n; ++i) o[i] = parse_number<To>(node, in[i], i);
    });
  } else {
    std::string* o = out.mutable_data<std::string>();
    if (is_half(x.dtype())) {
      const auto* in = static_cast<const uint16_t*>(x.raw_data());
      const bool bf16 = x.dtype() == DataType::kBFloat16;
      for (int64_t i = 0; i < n; ++i) o[i] = number_text(bf16 ? bfloat16_to_float(in[i]) : float16_to_float(in[i]));
      return;
    }
    dispatch<SPINDLE_STRING_CAST_TYPES>(x.dtype(), node, "input", [&](auto tag) {
      using From = decltype(tag);
      const From* in = x.data<From>();
      for (int64_t i = 0; i < n; ++i) o[i] = number_text(in[i]);
    });
  }
}

void cast_any(const NodeInfo& node, ThreadPool* pool, const Tensor& x, Tensor& out) {
  if (x.dtype() == DataType::kString || out.dtype() == DataType::kString) {
    if (x.dtype() == DataType::kBool || out.dtype() == DataType::kBool)
      fail_unsupported(node, fmt::format("cast from {} to {} is not supported", dtype_name(x.dtype()), dtype_name(out.dtype())));
    return cast_strings(node, x, out);
  }
  if (is_half(x.dtype())) {
    const Tensor f = half_to_float32(pool, x);
    if (out.dtype() == DataType::kFloat32) std::memcpy(out.raw_mutable_data(), f.raw_data(), f.nbytes());
    else if (is_half(out.dtype())) float32_to_half(pool, f, out);
    else cast_tensor(node, pool, f, out);
    return;
  }
  if (is_half(out.dtype())) {
    if (x.dtype() == DataType::kFloat32) return float32_to_half(pool, x, out);
    Tensor f(DataType::kFloat32, x.shape());
    cast_tensor(node, pool, x, f);
    return float32_to_half(pool, f, out);
  }
  cast_tensor(node, pool, x, out);
}

bool castable(DataType t) {
  switch (t) {
    case DataType::kFloat16: case DataType::kBFloat16:
    case DataType::kFloat32: case DataType::kFloat64: case DataType::kInt8: case DataType::kInt16:
    case DataType::kInt32: case DataType::kInt64: case DataType::kUInt8: case DataType::kUInt16:
    case DataType::kUInt32: case DataType::kUInt64: case DataType::kBool: case DataType::kString:
      return true;
    default:
      return false;
  }
}

std::string dtype_label(int64_t v) {
  // ONNX TensorProto.DataType values spindle has no enumerator for.
  switch (v) {
    case 14: return "complex64";
    case 15: return "complex128";
    default: return dtype_name(static_cast<DataType>(v));
  }
}

// Cast opset 1 spells `to` as a string ("FLOAT", "INT64", ...).
DataType target_from_attr(const NodeInfo& node) {
  if (!node.attrs.has("to")) fail(node, "missing required attribute 'to'");
  const AttrValue& v = node.attrs.all().at("to");
  int64_t code = 0;
  if (const auto* s = std::get_if<std::string>(&v)) {
    static const std::unordered_map<std::string, int64_t> names = {
        {"FLOAT", 1}, {"UINT8", 2}, {"INT8", 3}, {"UINT16", 4}, {"INT16", 5}, {"INT32", 6},  {"INT64", 7},
        {"STRING", 8}, {"BOOL", 9}, {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}, {"BFLOAT16", 16}};
    auto it = names.find(*s);
    if (it == names.end()) fail(node, fmt::format("unknown target type to='{}'", *s));
    code = it->second;
  } else {
    code = node.attrs.get_int("to");
  }
  if (code < 1 || code > 16 || !castable(static_cast<DataType>(code)))
    fail_unsupported(node, fmt::format("cast to {} is not supported", dtype_label(code)));
  return static_cast<DataType>(code);
}

class CastKernel final : public OpKernel {
 public:
  // like = true: CastLike, the target is input 1's dtype.
  CastKernel(DataType to, bool like) : to_(to), like_(like) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const DataType to = like_ ? ctx.input(1).dtype() : to_;
    if (!castable(x.dtype()))
      fail_unsupported(node, fmt::format("cast from {} is not supported", dtype_name(x.dtype())));
    if (!castable(to)) fail_unsupported(node, fmt::format("cast to {} is not supported", dtype_name(to)));
    Tensor& out = ctx.output(0, to, x.shape());
    if (to == x.dtype() && to != DataType::kString) {
      std::memcpy(out.raw_mutable_data(), x.raw_data(), x.nbytes());
      return;
    }
    cast_any(node, ctx.pool(), x, out);
  }

 private:
  DataType to_;
  bool like_;
};

}  // namespace

void register_cast(KernelRegistry& r) {
  // Opset 1: `to` is a string; 6+: an int (13 adds bfloat16).
  auto cast = [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<CastKernel>(target_from_attr(node), false);
  };
  r.add("", "Cast", 1, 5, cast);
  r.add("", "Cast", 6, 17, cast);
  r.add("", "CastLike", 1, 17, [](const NodeInfo&) -> std::unique_ptr<OpKernel> {
    return std::make_unique<CastKernel>(DataType::kUndefined, true);
  });
  r.allow_strings("", "Cast");
  r.allow_strings("", "CastLike");
}

}  // namespace spindle::kernels::math
