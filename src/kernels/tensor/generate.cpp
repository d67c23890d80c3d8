// generate.cpp — ops whose output is computed from shapes, scalars or
// positions rather than copied: ConstantOfShape, Range, NonZero, Trilu,
// EyeLike and OneHot.
#include <cmath>
#include <limits>
#include <memory>

#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// ---------------------------------------------------------------- ConstantOfShape

// Opsets 9..17: the output of shape `input` filled with the one-element
// `value` attribute (float32 0 by default).
class ConstantOfShapeKernel final : public OpKernel {
 public:
  explicit ConstantOfShapeKernel(const NodeInfo& node) {
    if (node.attrs.has("value")) {
      const Tensor v = node.attrs.get_tensor("value");
      if (v.numel() != 1) fail(node, fmt::format("value is {}, expected one element", v.describe()));
      if (dtype_size(v.dtype()) == 0)
        fail_unsupported(node, fmt::format("value is {}, which is not supported", v.describe()));
      dtype_ = v.dtype();
      const auto* p = static_cast<const unsigned char*>(v.raw_data());
      value_.assign(p, p + dtype_size(dtype_));
    } else {
      value_.assign(sizeof(float), 0);
    }
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Shape shape = read_int_list(node, ctx.input(0), "input");
    for (int64_t d : shape)
      if (d < 0) fail(node, fmt::format("input shape {} has a negative dimension", dims_string(shape)));
    Tensor& y = ctx.output(0, dtype_, shape);
    fill_elements(y.raw_mutable_data(), y.numel(), value_.data(), value_.size());
  }

 private:
  DataType dtype_ = DataType::kFloat32;
  std::vector<unsigned char> value_;
};

// ---------------------------------------------------------------- Range

// Opsets 11..17: start + i * delta for i < max(ceil((limit - start) / delta), 0).
void range(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& s = ctx.input(0);
  const Tensor& l = ctx.input(1);
  const Tensor& d = ctx.input(2);
  for (const Tensor* t : {&s, &l, &d})
    if (t->numel() != 1 || t->dtype() != s.dtype())
      fail(node, fmt::format("inputs start {}, limit {} and delta {} must be scalars of one type", s.describe(),
                             l.describe(), d.describe()));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T start = *s.data<T>(), limit = *l.data<T>(), delta = *d.data<T>();
    if (delta == T(0)) fail(node, "delta is 0, expected a nonzero step");
    // The element count in a wider type, then checked: start, limit and
    // delta come from the model (inf, NaN, spans past int64).
    int64_t n;
    if constexpr (std::is_floating_point_v<T>) {
      const double count = std::max(std::ceil((static_cast<double>(limit) - start) / delta), 0.0);
      if (!(count < 9223372036854775808.0))
        fail(node, fmt::format("start {}, limit {} and delta {} give {} elements, more than fit in a 64-bit count",
                               start, limit, delta, count));
      n = static_cast<int64_t>(count);
    } else {
      const __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
      const __int128 st = static_cast<__int128>(delta);
      const __int128 count = (span > 0) == (st > 0) && span != 0 ? (span + st + (st > 0 ? -1 : 1)) / st : 0;
      if (count > std::numeric_limits<int64_t>::max())
        fail(node, fmt::format("start {}, limit {} and delta {} give more elements than fit in a 64-bit count", start,
                               limit, delta));
      n = static_cast<int64_t>(count);
    }
    Tensor& y = ctx.output(0, s.dtype(), {n});
    T* out = y.mutable_data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    } else {  // modulo 2^64: i * delta may pass int64 while start + i * delta stays in range
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
    }
  };
  switch (s.dtype()) {
    case DataType::kFloat32: run(float{}); break;
    case DataType::kFloat64: run(double{}); break;
    case DataType::kInt16: run(int16_t{}); break;
    case DataType::kInt32: run(int32_t{}); break;
    case DataType::kInt64: run(int64_t{}); break;
    default: fail(node, fmt::format("input start is {}, expected float, double, int16, int32 or int64", s.describe()));
  }
}

// ---------------------------------------------------------------- NonZero

// Opsets 9..12, 13..17: int64 [rank, count] coordinates of the nonzero
// elements in row-major order (a scalar counts as rank 1).
void nonzero(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t n = x.numel();
  std::vector<int64_t> hits;
  auto scan = [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(x.raw_data());
    for (int64_t i = 0; i < n; ++i)
      if (p[i] != T(0)) hits.push_back(i);
  };
  switch (x.dtype()) {
    case DataType::kFloat32: scan(float{}); break;
    case DataType::kFloat64: scan(double{}); break;
    case DataType::kBool: case DataType::kUInt8: scan(uint8_t{}); break;
    case DataType::kInt8: scan(int8_t{}); break;
    case DataType::kInt16: scan(int16_t{}); break;
    case DataType::kUInt16: scan(uint16_t{}); break;
    case DataType::kInt32: scan(int32_t{}); break;
    case DataType::kUInt32: scan(uint32_t{}); break;
    case DataType::kInt64: scan(int64_t{}); break;
    case DataType::kUInt64: scan(uint64_t{}); break;
    case DataType::kFloat16: {  // +0 and -0 are zero
      const uint16_t* p = static_cast<const uint16_t*>(x.raw_data());
      for (int64_t i = 0; i < n; ++i)
        if ((p[i] & 0x7FFFu) != 0) hits.push_back(i);
      break;
    }
    default: fail_unsupported(node, fmt::format("input X is {}, which is not supported", x.describe()));
  }
  const Shape shape = x.rank() == 0 ? Shape{1} : x.shape();
  const int64_t r = static_cast<int64_t>(shape.size());
  const int64_t count = static_cast<int64_t>(hits.size());
  Tensor& y = ctx.output(0, DataType::kInt64, {r, count});
  int64_t* out = y.mutable_data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rem = hits[static_cast<size_t>(j)];
    for (int64_t k = r; k-- > 0;) {
      out[k * count + j] = rem % shape[static_cast<size_t>(k)];
      rem /= shape[static_cast<size_t>(k)];
    }
  }
}

// ---------------------------------------------------------------- Trilu

// Opsets 14..17: keeps the upper (j - i >= k) or lower (j - i <= k) triangle
// of each of the last two dims; the rest is zero.
class TriluKernel final : public OpKernel {
 public:
  explicit TriluKernel(const NodeInfo& node) : upper_(node.attrs.get_int("upper", 1) != 0) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "input");
    if (x.rank() < 2) fail(node, fmt::format("input is {}, expected rank >= 2", x.describe()));
    const int64_t rows = x.dim(-2), cols = x.dim(-1);
    // Any k outside [-rows, cols] keeps all or nothing: clamp it so that
    // i + k cannot overflow.
    const int64_t k = std::clamp<int64_t>(ctx.has_input(1) ? read_int_scalar(node, ctx.input(1), "k") : 0,
                                          -rows - 1, cols + 1);
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const int64_t all_rows = cols == 0 ? 0 : x.numel() / cols;
    const int64_t esz = static_cast<int64_t>(es);
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    parallel_for(ctx.pool(), all_rows, copy_cost(static_cast<double>(cols * esz)), [&](int64_t r0, int64_t r1) {
      for (int64_t rr = r0; rr < r1; ++rr) {
        const int64_t i = rr % rows;
        // Kept columns: [lo, hi).
        const int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        char* out = dst + rr * cols * esz;
        const char* in = src + rr * cols * esz;
        std::memset(out, 0, static_cast<size_t>(cols * esz));
        if (hi > lo) std::memcpy(out + lo * esz, in + lo * esz, static_cast<size_t>((hi - lo) * esz));
      }
    });
  }

 private:
  bool upper_;
};

// ---------------------------------------------------------------- EyeLike

// Opsets 9..17: a 2-D tensor like the input (or of `dtype`) with ones on the
// diagonal shifted by k.
class EyeLikeKernel final : public OpKernel {
 public:
  explicit EyeLikeKernel(const NodeInfo& node)
      : k_(node.attrs.get_int("k", 0)), dtype_(static_cast<DataType>(node.attrs.get_int("dtype", 0))) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.rank() != 2) fail(node, fmt::format("input is {}, expected rank 2", x.describe()));
    const DataType dt = dtype_ == DataType::kUndefined ? x.dtype() : dtype_;
    const std::vector<unsigned char> one = value_bytes(node, dt, 1.0);
    const size_t es = one.size();
    Tensor& y = ctx.output(0, dt, x.shape());
    char* out = static_cast<char*>(y.raw_mutable_data());
    std::memset(out, 0, y.nbytes());
    const int64_t rows = x.dim(0), cols = x.dim(1);
    const int64_t k = std::clamp<int64_t>(k_, -rows, cols);  // beyond: no ones; i + k cannot overflow
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < cols) std::memcpy(out + (i * cols + j) * static_cast<int64_t>(es), one.data(), es);
    }
  }

 private:
  int64_t k_;
  DataType dtype_;
};

// ---------------------------------------------------------------- OneHot

// Opsets 9..10, 11..17 (negative indices wrap). Output = indices shape with
// a depth dim inserted at `axis`; values = [off, on].
class OneHotKernel final : public OpKernel {
 public:
  explicit OneHotKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", -1)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& ind = ctx.input(0);
    const Tensor& values = ctx.input(2);
    const std::vector<double> dv = read_doubles(node, ctx.input(1), "depth");
    if (dv.size() != 1) fail(node, fmt::format("input depth is {}, expected one value", ctx.input(1).describe()));
    if (!(dv[0] >= 1.0 && dv[0] < 9223372036854775808.0))
      fail(node, fmt::format("depth {} is invalid, expected a positive value that fits in int64", dv[0]));
    const int64_t depth = static_cast<int64_t>(dv[0]);
    if (values.numel() != 2) fail(node, fmt::format("input values is {}, expected 2 values [off, on]", values.describe()));
    const size_t es = elem_size(node, values, "values");
    const int64_t r = ind.rank();
    if (axis_ < -(r + 1) || axis_ > r)
      fail(node, fmt::format("axis {} is out of range for a rank-{} output (expected [{}, {}])", axis_, r + 1, -(r + 1), r));
    const int64_t axis = axis_ < 0 ? axis_ + r + 1 : axis_;
    Shape out_shape = ind.shape();
    out_shape.insert(out_shape.begin() + axis, depth);
    const std::vector<double> idx = read_doubles(node, ind, "indices");
    Tensor& y = ctx.output(0, values.dtype(), out_shape);
    const auto* vb = static_cast<const unsigned char*>(values.raw_data());
    char* out = static_cast<char*>(y.raw_mutable_data());
    fill_elements(out, y.numel(), vb, es);  // off everywhere
    const int64_t outer = prod(ind.shape(), 0, static_cast<size_t>(axis));
    const int64_t inner = prod(ind.shape(), static_cast<size_t>(axis), ind.shape().size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // Out of [-depth, depth) (or NaN): all off, as the spec says.
        const double f = idx[static_cast<size_t>(o * inner + i)];
        const double dd = static_cast<double>(depth);
        if (!(f > -dd - 1.0 && f < dd)) continue;
        int64_t v = static_cast<int64_t>(f);
        if (v < 0) v += depth;
        if (v < 0 || v >= depth) continue;
        std::memcpy(out + ((o * depth + v) * inner + i) * static_cast<int64_t>(es), vb + es, es);
      }
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_generate(KernelRegistry& r) {
  r.add("", "ConstantOfShape", 9, 17, factory_of<ConstantOfShapeKernel>());
  r.add("", "Range", 11, 17, simple_kernel(range));
  r.add("", "NonZero", 9, 17, simple_kernel(nonzero));
  r.add("", "Trilu", 14, 17, factory_of<TriluKernel>());
  r.add("", "EyeLike", 9, 17, factory_of<EyeLikeKernel>());
  r.add("", "OneHot", 9, 17, factory_of<OneHotKernel>());
}

}  // namespace spindle::kernels::tensor
