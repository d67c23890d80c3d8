// gather.cpp — index-driven data movement: Gather, GatherElements, GatherND
// and ScatterND. Index values are checked (and negative ones wrapped) before
// any data moves, so an out-of-range index fails cleanly with the op name,
// the value and the valid range.
#include <memory>

#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// Index values of input `name` as int64, negative ones wrapped by `dim`;
// throws for a non-integer tensor or a value outside [-dim, dim-1].
std::vector<int64_t> checked_indices(const NodeInfo& node, const Tensor& t, const char* name, int64_t dim,
                                     int64_t axis) {
  if (t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32)
    fail(node, fmt::format("input {} is {}, expected int32 or int64", name, t.describe()));
  std::vector<int64_t> v = t.to_int64_vector();
  for (int64_t& i : v) {
    if (i < -dim || i >= dim)
      fail(node, fmt::format("{} value {} is out of range for axis {} of size {} (expected [{}, {}])", name, i, axis,
                             dim, -dim, dim - 1));
    if (i < 0) i += dim;
  }
  return v;
}

// ---------------------------------------------------------------- Gather

// Opsets 1..10, 11..12 (negative axis and indices), 13..17.
class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const size_t es = elem_size(node, x, "data");
    if (x.rank() == 0) fail(node, fmt::format("input data is {}, expected rank >= 1", x.describe()));
    const int64_t axis = normalize_axis(node, axis_, x.rank());
    const size_t ax = static_cast<size_t>(axis);
    const int64_t dim = x.shape()[ax];
    const std::vector<int64_t> idx = checked_indices(node, ind, "indices", dim, axis);
    Shape out_shape(x.shape().begin(), x.shape().begin() + axis);
    out_shape.insert(out_shape.end(), ind.shape().begin(), ind.shape().end());
    out_shape.insert(out_shape.end(), x.shape().begin() + axis + 1, x.shape().end());
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    const int64_t outer = prod(x.shape(), 0, ax);
    const int64_t inner = prod(x.shape(), ax + 1, x.shape().size()) * static_cast<int64_t>(es);
    const int64_t n = static_cast<int64_t>(idx.size());
    if (outer * n * inner == 0) return;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    parallel_for(ctx.pool(), outer * n, copy_cost(static_cast<double>(inner)), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t o = u / n, j = u % n;
        std::memcpy(dst + u * inner, src + (o * dim + idx[static_cast<size_t>(j)]) * inner, static_cast<size_t>(inner));
      }
    });
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- GatherElements

// Opsets 11..12, 13..17. out[i] = data[i with i[axis] = indices[i]].
class GatherElementsKernel final : public OpKernel {
 public:
  explicit GatherElementsKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", 0)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const size_t es = elem_size(node, x, "data");
    const int64_t r = x.rank();
    if (r == 0 || ind.rank() != r)
      fail(node, fmt::format("inputs data {} and indices {} must have the same rank >= 1", x.describe(),
                             ind.describe()));
    const int64_t axis = normalize_axis(node, axis_, r);
    const size_t ax = static_cast<size_t>(axis);
    for (size_t d = 0; d < static_cast<size_t>(r); ++d)
      if (d != ax && ind.shape()[d] > x.shape()[d])
        fail(node, fmt::format("indices {} is larger than data {} on axis {}", ind.describe(), x.describe(), d));
    const std::vector<int64_t> idx = checked_indices(node, ind, "indices", x.shape()[ax], axis);
    Tensor& y = ctx.output(0, x.dtype(), ind.shape());
    const int64_t total = ind.numel();
    if (total == 0) return;
    const Shape xs = contiguous_strides(x.shape());
    const Shape& is = ind.shape();
    const size_t n = is.size();
    with_elem_type(es, [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x.raw_data());
      T* dst = static_cast<T*>(y.raw_mutable_data());
      parallel_for(ctx.pool(), total, copy_cost(static_cast<double>(es) * 3), [&](int64_t u0, int64_t u1) {
        std::vector<int64_t> pos(n, 0);
        int64_t base = 0;  // data offset of pos without the axis term
        int64_t rem = u0;
        for (size_t d = n; d-- > 0;) {
          pos[d] = rem % is[d];
          rem /= is[d];
          if (d != ax) base += pos[d] * xs[d];
        }
        for (int64_t u = u0; u < u1; ++u) {
          dst[u] = src[base + idx[static_cast<size_t>(u)] * xs[ax]];
          for (size_t d = n; d-- > 0;) {
            const int64_t step = d == ax ? 0 : xs[d];
            base += step;
            if (++pos[d] < is[d]) break;
            base -= pos[d] * step;
            pos[d] = 0;
          }
        }
      });
    });
  }

 private:
  int64_t axis_;
};

// ---------------------------------------------------------------- GatherND / ScatterND

// Geometry shared by GatherND and ScatterND: the last indices dim m indexes
// data dims [b, b+m); each index tuple selects a slice of `slice` elements.
struct NdIndex {
  int64_t batches = 1;         // prod(data[:b])
  int64_t tuples = 1;          // index tuples per batch
  int64_t slice = 1;           // elements per selected slice
  int64_t batch_stride = 1;    // data elements per batch
  std::vector<int64_t> offsets;  // data element offset (within its batch) of each tuple, batch-major
};

NdIndex nd_index(const NodeInfo& node, const Tensor& x, const Tensor& ind, int64_t b) {
  if (ind.dtype() != DataType::kInt64)
    fail(node, fmt::format("input indices is {}, expected int64", ind.describe()));
  const int64_t r = x.rank(), q = ind.rank();
  if (q < 1 || r < 1) fail(node, fmt::format("inputs data {} and indices {} must have rank >= 1", x.describe(), ind.describe()));
  if (b < 0 || b >= std::min(r, q))
    fail(node, fmt::format("batch_dims {} is out of range for data {} and indices {}", b, x.describe(), ind.describe()));
  const int64_t m = ind.shape().back();
  if (m < 1 || m > r - b)
    fail(node, fmt::format("the last dim of indices {} is {}, expected 1..{} for data {}", ind.describe(), m, r - b,
                           x.describe()));
  for (size_t d = 0; d < static_cast<size_t>(b); ++d)
    if (x.shape()[d] != ind.shape()[d])
      fail(node, fmt::format("batch dim {} differs between data {} and indices {}", d, x.describe(), ind.describe()));
  NdIndex g;
  g.batches = prod(x.shape(), 0, static_cast<size_t>(b));
  g.slice = prod(x.shape(), static_cast<size_t>(b + m), x.shape().size());
  g.batch_stride = prod(x.shape(), static_cast<size_t>(b), x.shape().size());
  g.tuples = g.batches == 0 ? 0 : ind.numel() / m / g.batches;
  const Shape xs = contiguous_strides(x.shape());
  const int64_t* iv = ind.data<int64_t>();
  const int64_t count = ind.numel() / m;
  g.offsets.resize(static_cast<size_t>(count));
  for (int64_t t = 0; t < count; ++t) {
    int64_t off = 0;
    for (int64_t k = 0; k < m; ++k) {
      const size_t d = static_cast<size_t>(b + k);
      int64_t i = iv[t * m + k];
      const int64_t dim = x.shape()[d];
      if (i < -dim || i >= dim)
        fail(node, fmt::format("indices value {} is out of range for axis {} of size {} (expected [{}, {}])", i, d,
                               dim, -dim, dim - 1));
      if (i < 0) i += dim;
      off += i * xs[d];
    }
    g.offsets[static_cast<size_t>(t)] = off;
  }
  return g;
}

// GatherND: opsets 11, 12..12 and 13..17 (batch_dims from 12).
class GatherNDKernel final : public OpKernel {
 public:
  explicit GatherNDKernel(const NodeInfo& node) : b_(node.opset >= 12 ? node.attrs.get_int("batch_dims", 0) : 0) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const size_t es = elem_size(node, x, "data");
    const NdIndex g = nd_index(node, x, ind, b_);
    Shape out_shape(ind.shape().begin(), ind.shape().end() - 1);
    const int64_t m = ind.shape().back();
    out_shape.insert(out_shape.end(), x.shape().begin() + b_ + m, x.shape().end());
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    const int64_t count = static_cast<int64_t>(g.offsets.size());
    const int64_t bytes = g.slice * static_cast<int64_t>(es);
    if (count * bytes == 0) return;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    parallel_for(ctx.pool(), count, copy_cost(static_cast<double>(bytes)), [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t batch = t / g.tuples;
        std::memcpy(dst + t * bytes, src + (batch * g.batch_stride + g.offsets[static_cast<size_t>(t)]) * es,
                    static_cast<size_t>(bytes));
      }
    });
  }

 private:
  int64_t b_;
};

// ScatterND: opsets 11..12, 13..15, 16..17 (reduction none / add / mul; max
// and min are accepted too). Updates are applied in index order.
class ScatterNDKernel final : public OpKernel {
 public:
  explicit ScatterNDKernel(const NodeInfo& node) {
    reduction_ = node.opset >= 16 ? node.attrs.get_string("reduction", "none") : "none";
    if (reduction_ != "none" && reduction_ != "add" && reduction_ != "mul" && reduction_ != "max" &&
        reduction_ != "min")
      fail(node, fmt::format("reduction '{}' is invalid, expected none, add, mul, max or min", reduction_));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    const size_t es = elem_size(node, x, "data");
    const NdIndex g = nd_index(node, x, ind, 0);
    const int64_t m = ind.shape().back();
    Shape want(ind.shape().begin(), ind.shape().end() - 1);
    want.insert(want.end(), x.shape().begin() + m, x.shape().end());
    if (upd.dtype() != x.dtype() || upd.shape() != want)
      fail(node, fmt::format("input updates is {}, expected {} {}", upd.describe(), dtype_name(x.dtype()),
                             shape_to_string(want)));
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    if (x.nbytes() > 0) std::memcpy(y.raw_mutable_data(), x.raw_data(), x.nbytes());
    const int64_t n = g.slice;
    char* dst = static_cast<char*>(y.raw_mutable_data());
    const char* src = static_cast<const char*>(upd.raw_data());
    if (reduction_ == "none") {
      for (size_t t = 0; t < g.offsets.size(); ++t)
        std::memcpy(dst + g.offsets[t] * static_cast<int64_t>(es), src + static_cast<int64_t>(t) * n * static_cast<int64_t>(es),
                    static_cast<size_t>(n) * es);
      return;
    }
    auto apply = [&](auto tag) {
      using T = decltype(tag);
      T* out = reinterpret_cast<T*>(dst);
      const T* u = reinterpret_cast<const T*>(src);
      for (size_t t = 0; t < g.offsets.size(); ++t) {
        T* o = out + g.offsets[t];
        const T* v = u + static_cast<int64_t>(t) * n;
        for (int64_t k = 0; k < n; ++k) {
          if (reduction_ == "add") o[k] = static_cast<T>(o[k] + v[k]);
          else if (reduction_ == "mul") o[k] = static_cast<T>(o[k] * v[k]);
          else if (reduction_ == "max") o[k] = std::max(o[k], v[k]);
          else o[k] = std::min(o[k], v[k]);
        }
      }
    };
    switch (x.dtype()) {
      case DataType::kFloat32: apply(float{}); break;
      case DataType::kFloat64: apply(double{}); break;
      case DataType::kInt64: apply(int64_t{}); break;
      case DataType::kInt32: apply(int32_t{}); break;
      case DataType::kInt16: apply(int16_t{}); break;
      case DataType::kInt8: apply(int8_t{}); break;
      case DataType::kUInt8: apply(uint8_t{}); break;
      case DataType::kUInt16: apply(uint16_t{}); break;
      case DataType::kUInt32: apply(uint32_t{}); break;
      case DataType::kUInt64: apply(uint64_t{}); break;
      default:
        fail_unsupported(node, fmt::format("reduction '{}' on {} is not supported", reduction_, x.describe()));
    }
  }

 private:
  std::string reduction_;
};

}  // namespace

void register_gather(KernelRegistry& r) {
  r.add("", "Gather", 1, 17, factory_of<GatherKernel>());
  r.add("", "GatherElements", 11, 17, factory_of<GatherElementsKernel>());
  r.add("", "GatherND", 11, 17, factory_of<GatherNDKernel>());
  r.add("", "ScatterND", 11, kMaxOpset, factory_of<ScatterNDKernel>());
}

}  // namespace spindle::kernels::tensor
