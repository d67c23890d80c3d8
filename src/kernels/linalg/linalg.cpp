// linalg.cpp — small numeric ops that fit no other family:
//   Det (11): determinant of (..., M, M) float / double matrices, LU with
//     partial pivoting per matrix;
//   MeanVarianceNormalization (9, 13): (X - E[X]) / (sqrt(E[X^2] - E[X]^2)
//     + 1e-9) over `axes` (default [0, 2, 3]), as the ONNX function body;
//   HannWindow, HammingWindow, BlackmanWindow (17): generalized cosine
//     windows of `size` points, periodic or symmetric, output_datatype;
//   QuantizeLinear (10, 13: per tensor or per `axis`), DequantizeLinear
//     (10, 13), DynamicQuantizeLinear (11): uint8 / int8 with round half to
//     even and saturation (DynamicQuantizeLinear's two vectorized passes are
//     primitives/gemm/qgemm.h's dynamic_quantize_u8).
// Matrices, reduction lanes and quantization blocks are independent, so
// results do not depend on the thread count.
#include <cmath>
#include <limits>
#include <numbers>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "kernels/linalg/linalg_ops.h"
#include "kernels/math/elementwise.h"
#include "kernels/nn/nn_util.h"
#include "primitives/gemm/qgemm.h"
#include "primitives/quant/requant.h"

namespace spindle::kernels::linalg {
namespace {

int64_t norm_axis(const NodeInfo& node, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    fail(node, fmt::format("axis {} is out of range for a rank-{} tensor (expected [{}, {}])", axis, rank, -rank,
                           rank - 1));
  return axis < 0 ? axis + rank : axis;
}

// ---------------------------------------------------------------- Det

template <class T>
T determinant(const T* a, int64_t n, std::vector<T>& lu) {
  lu.assign(a, a + n * n);
  T det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(lu[r * n + c]) > std::abs(lu[p * n + c])) p = r;
    if (lu[p * n + c] == T(0)) return T(0);
    if (p != c) {
      for (int64_t k = 0; k < n; ++k) std::swap(lu[c * n + k], lu[p * n + k]);
      det = -det;
    }
    det *= lu[c * n + c];
    for (int64_t r = c + 1; r < n; ++r) {
      const T f = lu[r * n + c] / lu[c * n + c];
      for (int64_t k = c; k < n; ++k) lu[r * n + k] -= f * lu[c * n + k];
    }
  }
  return det;
}

void det_kernel(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2 || x.dim(-1) != x.dim(-2))
    fail(node, fmt::format("input X is {}, expected (..., M, M) square matrices", x.describe()));
  const Shape ys(x.shape().begin(), x.shape().end() - 2);
  Tensor& y = ctx.output(0, x.dtype(), ys);
  const int64_t n = x.dim(-1), count = shape_numel(ys);
  math::dispatch<float, double>(x.dtype(), node, "input X", [&](auto tag) {
    using T = decltype(tag);
    const T* a = x.data<T>();
    T* out = y.mutable_data<T>();
    // LU elimination: about n^3 / 3 multiply-subtracts per matrix.
    const double dn = static_cast<double>(n);
    const int64_t grain = grain_for_cost(nn::ops_cost(dn * dn * dn / 3.0 + dn));
    parallel_for(ctx.pool(), 0, count, grain, [&](int64_t b0, int64_t b1) {
      std::vector<T> lu;
      for (int64_t b = b0; b < b1; ++b) out[b] = determinant(a + b * n * n, n, lu);
    });
  });
}

// ---------------------------------------------------------------- MVN

class MvnKernel final : public OpKernel {
 public:
  explicit MvnKernel(const NodeInfo& node) : axes_(node.attrs.get_ints("axes", {0, 2, 3})) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    std::vector<bool> reduced(static_cast<size_t>(x.rank()), false);
    for (int64_t a : axes_) reduced[static_cast<size_t>(norm_axis(node, a, x.rank()))] = true;
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    // Lanes: every combination of the kept dims; members: the reduced dims.
    Shape kept_shape, red_shape;
    std::vector<int64_t> kept_strides, red_strides;
    for (int64_t d = 0; d < x.rank(); ++d) {
      (reduced[static_cast<size_t>(d)] ? red_shape : kept_shape).push_back(x.dim(static_cast<int>(d)));
      (reduced[static_cast<size_t>(d)] ? red_strides : kept_strides).push_back(x.strides()[static_cast<size_t>(d)]);
    }
    auto offsets = [](const Shape& shape, const std::vector<int64_t>& strides) {
      std::vector<int64_t> out(static_cast<size_t>(shape_numel(shape)));
      std::vector<int64_t> pos(shape.size(), 0);
      for (auto& o : out) {
        o = 0;
        for (size_t d = 0; d < shape.size(); ++d) o += pos[d] * strides[d];
        for (size_t d = shape.size(); d-- > 0;) {
          if (++pos[d] < shape[d]) break;
          pos[d] = 0;
        }
      }
      return out;
    };
    const auto lanes = offsets(kept_shape, kept_strides), members = offsets(red_shape, red_strides);
    math::dispatch<float, double>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* dst = y.mutable_data<T>();
      // A lane reads its members twice (sums, then normalizes): ~4 ops each.
      const double lane_work = 4.0 * static_cast<double>(members.size());
      parallel_for(ctx.pool(), 0, static_cast<int64_t>(lanes.size()), grain_for_cost(nn::ops_cost(lane_work)),
                   [&](int64_t l0, int64_t l1) {
        for (int64_t l = l0; l < l1; ++l) {
          const int64_t base = lanes[static_cast<size_t>(l)];
          double s = 0, s2 = 0;
          for (int64_t m : members) {
            const double v = src[base + m];
            s += v;
            s2 += v * v;
          }
          const double n = static_cast<double>(members.size());
          const double mean = s / n, var = s2 / n - mean * mean;
          const double denom = std::sqrt(std::max(var, 0.0)) + 1e-9;
          for (int64_t m : members) dst[base + m] = static_cast<T>((src[base + m] - mean) / denom);
        }
      });
    });
  }

 private:
  std::vector<int64_t> axes_;
};

// ---------------------------------------------------------------- windows

// a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'), N' = size (periodic) or
// size - 1 (symmetric).
class WindowKernel final : public OpKernel {
 public:
  WindowKernel(const NodeInfo& node, double a0, double a1, double a2)
      : a0_(a0), a1_(a1), a2_(a2), periodic_(node.attrs.get_int("periodic", 1) != 0),
        out_(static_cast<DataType>(node.attrs.get_int("output_datatype", 1))) {
    if (out_ != DataType::kFloat32 && out_ != DataType::kFloat64)
      fail_unsupported(node, fmt::format("output_datatype {} is not supported (expected float32 or float64)",
                                         static_cast<int>(out_)));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& size_t_ = ctx.input(0);
    if (size_t_.numel() != 1 || (size_t_.dtype() != DataType::kInt32 && size_t_.dtype() != DataType::kInt64))
      fail(node, fmt::format("input size is {}, expected an int32 or int64 scalar", size_t_.describe()));
    const int64_t n = size_t_.to_int64_vector()[0];
    if (n < 0) fail(node, fmt::format("input size is {}, expected >= 0", n));
    Tensor& y = ctx.output(0, out_, {n});
    const double denom = periodic_ ? static_cast<double>(n) : static_cast<double>(n - 1);
    for (int64_t i = 0; i < n; ++i) {
      const double t = denom > 0 ? 2.0 * std::numbers::pi * static_cast<double>(i) / denom : 0.0;
      const double v = a0_ - a1_ * std::cos(t) + a2_ * std::cos(2.0 * t);
      if (out_ == DataType::kFloat32) y.mutable_data<float>()[i] = static_cast<float>(v);
      else y.mutable_data<double>()[i] = v;
    }
  }

 private:
  double a0_, a1_, a2_;
  bool periodic_;
  DataType out_;
};

// ---------------------------------------------------------------- quantization

// Scale / zero point of element i: per tensor, or per index along `axis`.
struct QuantParams {
  int64_t inner = 1, channels = 1;  // element i uses channel (i / inner) % channels
  const float* scale = nullptr;
  std::vector<int64_t> zero;  // one per channel (0 when absent)
};

QuantParams quant_params(const NodeInfo& node, const Tensor& x, const Tensor& scale, const Tensor* zp,
                         int64_t axis_attr) {
  if (scale.dtype() != DataType::kFloat32)
    fail_unsupported(node, fmt::format("scale is {}, expected float32", scale.describe()));
  QuantParams p;
  p.scale = scale.data<float>();
  if (scale.numel() != 1) {  // per axis
    const int64_t axis = x.rank() > 0 ? norm_axis(node, axis_attr, x.rank()) : 0;
    if (scale.rank() != 1 || x.rank() == 0 || x.dim(static_cast<int>(axis)) != scale.numel())
      fail(node, fmt::format("scale is {}, expected a scalar or one value per index of axis {} of the input {}",
                             scale.describe(), axis, x.describe()));
    p.channels = scale.numel();
    for (int64_t d = axis + 1; d < x.rank(); ++d) p.inner *= x.dim(static_cast<int>(d));
  }
  p.zero.assign(static_cast<size_t>(p.channels), 0);
  if (zp) {
    if (zp->numel() != scale.numel())
      fail(node, fmt::format("zero_point is {}, expected the shape of scale ({})", zp->describe(),
                             shape_to_string(scale.shape())));
    const auto z = zp->to_int64_vector();
    for (int64_t c = 0; c < p.channels; ++c) p.zero[static_cast<size_t>(c)] = z[static_cast<size_t>(c % zp->numel())];
  }
  return p;
}

// NaN (a NaN input, or 0 / 0 with a zero scale) becomes 0: ONNX leaves it
// open, and ONNX Runtime's scalar path gives 0 on x86 (its cast of NaN).
// Converting NaN to the integer type would be undefined behaviour.
template <class Q>
Q saturate_round(double v) {
  if (std::isnan(v)) return Q{0};
  const double r = std::nearbyint(v);  // round half to even (default rounding mode)
  return static_cast<Q>(std::clamp(r, static_cast<double>(std::numeric_limits<Q>::min()),
                                    static_cast<double>(std::numeric_limits<Q>::max())));
}

// Opsets 21 and 23 add block quantization (block_size), output_dtype and
// precision; spindle quantizes per tensor or per axis, to the zero point's
// type.
void refuse_block_quantization(const NodeInfo& node) {
  for (const char* name : {"block_size", "output_dtype", "precision"})
    if (const int64_t v = node.attrs.get_int(name, 0); v != 0)
      fail_unsupported(node, fmt::format("attribute {}={} is not supported (spindle quantizes per tensor or per axis, "
                                         "to the type of the zero point)", name, v));
}

class QuantizeKernel final : public OpKernel {
 public:
  explicit QuantizeKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", 1)) {
    refuse_block_quantization(node);
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    require_float(node, x, "x");
    const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const DataType qt = zp ? zp->dtype() : DataType::kUInt8;
    if (qt != DataType::kUInt8 && qt != DataType::kInt8)
      fail_unsupported(node, fmt::format("zero_point is {}, expected uint8 or int8", zp->describe()));
    const QuantParams p = quant_params(node, x, ctx.input(1), zp, axis_);
    Tensor& y = ctx.output(0, qt, x.shape());
    const float* src = x.data<float>();
    math::dispatch<uint8_t, int8_t>(qt, node, "zero_point", [&](auto tag) {
      using Q = decltype(tag);
      Q* dst = y.mutable_data<Q>();
      if (p.channels == 1) {
        // Per tensor: the same operations in a loop the compiler vectorizes
        // (round half to even by adding and subtracting 1.5 * 2^23 after a
        // clamp to +-2^22, which saturates the same way; NaN gives 0).
        static const auto row_fn = SPINDLE_ISA_SELECT(quantize_row);
        QuantRow q;
        q.n = x.numel();
        q.sign = std::is_same_v<Q, int8_t>;
        q.a = src;
        q.y = dst;
        q.y_scale = p.scale[0];
        q.y_zero = static_cast<float>(p.zero[0]);
        q.lo = static_cast<float>(std::numeric_limits<Q>::min());
        q.hi = static_cast<float>(std::numeric_limits<Q>::max());
        row_fn(q);
        return;
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = (i / p.inner) % p.channels;
        // The division is in float32, as the ONNX reference computes it.
        const double q = std::nearbyint(src[i] / p.scale[c]) + static_cast<double>(p.zero[static_cast<size_t>(c)]);
        dst[i] = saturate_round<Q>(q);
      }
    });
  }

 private:
  int64_t axis_;
};

class DequantizeKernel final : public OpKernel {
 public:
  explicit DequantizeKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", 1)) {
    refuse_block_quantization(node);
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (zp && zp->dtype() != x.dtype())
      fail(node, fmt::format("zero_point is {}, expected the dtype of x ({})", zp->describe(), dtype_name(x.dtype())));
    const QuantParams p = quant_params(node, x, ctx.input(1), zp, axis_);
    Tensor& y = ctx.output(0, DataType::kFloat32, x.shape());
    float* dst = y.mutable_data<float>();
    math::dispatch<uint8_t, int8_t, int32_t>(x.dtype(), node, "input x", [&](auto tag) {
      using Q = decltype(tag);
      const Q* src = x.data<Q>();
      if (p.channels == 1 && sizeof(Q) == 1) {
        // Per tensor, 8-bit: a difference exact in float, then the product.
        static const auto row_fn = SPINDLE_ISA_SELECT(dequantize_row);
        QuantRow q;
        q.n = x.numel();
        q.sign = std::is_same_v<Q, int8_t>;
        q.a = src;
        q.y = dst;
        q.a_scale = p.scale[0];
        q.a_zero = static_cast<float>(p.zero[0]);
        row_fn(q);
        return;
      }
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t c = (i / p.inner) % p.channels;
        dst[i] = static_cast<float>(static_cast<int64_t>(src[i]) - p.zero[static_cast<size_t>(c)]) * p.scale[c];
      }
    });
  }

 private:
  int64_t axis_;
};

void dynamic_quantize(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  require_float(node, x, "x");
  Tensor& y = ctx.output(0, DataType::kUInt8, x.shape());
  const nn::DynamicQuantization q = nn::dynamic_quantize_u8(x.data<float>(), x.numel(), y.mutable_data<uint8_t>(), ctx.pool());
  ctx.output(1, DataType::kFloat32, {}).mutable_data<float>()[0] = q.scale;
  ctx.output(2, DataType::kUInt8, {}).mutable_data<uint8_t>()[0] = q.zero_point;
}

}  // namespace

void register_numeric(KernelRegistry& r) {
  r.add("", "Det", 11, 17, simple_kernel(det_kernel));
  r.add("", "MeanVarianceNormalization", 9, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<MvnKernel>(node);
  });
  auto window = [](double a0, double a1, double a2) {
    return [=](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
      return std::make_unique<WindowKernel>(node, a0, a1, a2);
    };
  };
  r.add("", "HannWindow", 17, 17, window(0.5, 0.5, 0.0));
  r.add("", "HammingWindow", 17, 17, window(25.0 / 46.0, 21.0 / 46.0, 0.0));
  r.add("", "BlackmanWindow", 17, 17, window(0.42, 0.5, 0.08));
  r.add("", "QuantizeLinear", 10, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<QuantizeKernel>(node);
  });
  r.add("", "DequantizeLinear", 10, 17, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<DequantizeKernel>(node);
  });
  r.add("", "DynamicQuantizeLinear", 11, 17, simple_kernel(dynamic_quantize));
}

}  // namespace spindle::kernels::linalg
