// select.cpp — selection and scatter ops: TopK (1, 10, 11), ScatterElements
// (11, 13, 16 with reduction none / add / mul, 18's max / min accepted too),
// Scatter (9, 10: ScatterElements without reduction), Compress (9, 11) and
// ReverseSequence (10).
//
// TopK orders by value (descending for largest, ascending otherwise) and
// breaks ties by the lower index, as ONNX specifies; its outputs are always
// sorted. NaN ranks above every number. The scatters apply updates in
// index order on a copy of the data. Compress and ReverseSequence move
// elements by byte size, so they take every dtype.
#include <cmath>
#include <numeric>
#include <optional>

#include "kernels/math/elementwise.h"
#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// Outer x axis x inner view of a tensor around `axis`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) {
    outer = prod(s, 0, static_cast<size_t>(axis));
    n = s[static_cast<size_t>(axis)];
    inner = prod(s, static_cast<size_t>(axis) + 1, s.size());
  }
};

// ---------------------------------------------------------------- TopK

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const NodeInfo& node)
      : axis_(node.attrs.get_int("axis", -1)),
        largest_(node.opset < 11 || node.attrs.get_int("largest", 1) != 0),
        k_attr_(node.opset < 10 ? node.attrs.get_int("k", -1) : -1) {
    if (node.opset < 10 && k_attr_ < 0)
      fail(node, fmt::format("attribute k is {} at opset {}, expected k >= 0",
                             node.attrs.has("k") ? std::to_string(k_attr_) : "missing", node.opset));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const int64_t k = k_attr_ >= 0 ? k_attr_ : read_int_scalar(node, ctx.input(1), "K");
    if (x.rank() == 0) fail(node, fmt::format("input X is {}, expected rank >= 1", x.describe()));
    const int64_t axis = normalize_axis(node, axis_, x.rank());
    const AxisView v(x.shape(), axis);
    if (k < 0 || k > v.n)
      fail(node, fmt::format("K is {}, expected 0..{} (the size of axis {} of X {})", k, v.n, axis,
                             shape_to_string(x.shape())));
    Shape ys = x.shape();
    ys[static_cast<size_t>(axis)] = k;
    Tensor& values = ctx.output(0, x.dtype(), ys);
    Tensor& indices = ctx.output(1, DataType::kInt64, ys);
    math::dispatch<SPINDLE_NUMERIC_TYPES>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* vals = values.mutable_data<T>();
      int64_t* idx = indices.mutable_data<int64_t>();
      const int64_t lines = v.outer * v.inner;
      parallel_for(ctx.pool(), 0, lines, std::max<int64_t>(1, 4096 / std::max<int64_t>(v.n, 1)),
                   [&](int64_t l0, int64_t l1) {
                     std::vector<int64_t> order(static_cast<size_t>(v.n));
                     for (int64_t l = l0; l < l1; ++l) {
                       const int64_t o = l / v.inner, i = l % v.inner;
                       const T* line = src + o * v.n * v.inner + i;
                       auto at = [&](int64_t j) { return line[j * v.inner]; };
                       std::iota(order.begin(), order.end(), int64_t{0});
                       // NaN ranks above every number (and equals NaN), so the
                       // order stays a strict weak ordering.
                       auto greater = [](T va, T vb) {
                         if constexpr (std::is_floating_point_v<T>) {
                           if (std::isnan(va)) return !std::isnan(vb);
                           if (std::isnan(vb)) return false;
                         }
                         return va > vb;
                       };
                       auto before = [&](int64_t a, int64_t b) {
                         const T va = at(a), vb = at(b);
                         if (greater(va, vb)) return largest_;
                         if (greater(vb, va)) return !largest_;
                         return a < b;
                       };
                       std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
                       for (int64_t j = 0; j < k; ++j) {
                         const int64_t out = o * k * v.inner + j * v.inner + i;
                         vals[out] = at(order[static_cast<size_t>(j)]);
                         idx[out] = order[static_cast<size_t>(j)];
                       }
                     }
                   });
    });
  }

 private:
  int64_t axis_;
  bool largest_;
  int64_t k_attr_;  // opset < 10: the attribute; otherwise read from input K
};

// ---------------------------------------------------------------- ScatterElements

enum class Reduce { kNone, kAdd, kMul, kMax, kMin };

class ScatterElementsKernel final : public OpKernel {
 public:
  explicit ScatterElementsKernel(const NodeInfo& node) : axis_(node.attrs.get_int("axis", 0)) {
    const std::string r = node.op_type == "ScatterElements" && node.opset >= 16
                              ? node.attrs.get_string("reduction", "none")
                              : "none";
    if (r == "none") reduce_ = Reduce::kNone;
    else if (r == "add") reduce_ = Reduce::kAdd;
    else if (r == "mul") reduce_ = Reduce::kMul;
    else if (r == "max") reduce_ = Reduce::kMax;
    else if (r == "min") reduce_ = Reduce::kMin;
    else fail(node, fmt::format("reduction '{}' is invalid, expected none, add, mul, max or min", r));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const Tensor& upd = ctx.input(2);
    const size_t es = elem_size(node, x, "data");
    if (x.rank() == 0) fail(node, fmt::format("input data is {}, expected rank >= 1", x.describe()));
    const int64_t axis = normalize_axis(node, axis_, x.rank());
    if (ind.rank() != x.rank())
      fail(node, fmt::format("input indices is {}, expected rank {} like data {}", ind.describe(), x.rank(),
                             shape_to_string(x.shape())));
    if (upd.shape() != ind.shape() || upd.dtype() != x.dtype())
      fail(node, fmt::format("input updates is {}, expected {} {} (the dtype of data, the shape of indices)",
                             upd.describe(), dtype_name(x.dtype()), shape_to_string(ind.shape())));
    for (int64_t d = 0; d < x.rank(); ++d)
      if (ind.dim(static_cast<int>(d)) > x.dim(static_cast<int>(d)) && d != axis)
        fail(node, fmt::format("input indices {} is larger than data {} in dimension {}",
                               shape_to_string(ind.shape()), shape_to_string(x.shape()), d));
    const std::vector<int64_t> index = read_ints(node, ind, "indices");
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    if (x.nbytes()) std::memcpy(y.raw_mutable_data(), x.raw_data(), x.nbytes());
    // Destination element of each update (row-major over indices' shape).
    const Shape& is = ind.shape();
    const Shape xstr = x.strides();
    const int64_t n = ind.numel(), dim = x.dim(static_cast<int>(axis));
    std::vector<int64_t> dest(static_cast<size_t>(n));
    std::vector<int64_t> pos(is.size(), 0);
    for (int64_t t = 0; t < n; ++t) {
      int64_t off = 0;
      for (size_t d = 0; d < is.size(); ++d) {
        int64_t c = pos[d];
        if (static_cast<int64_t>(d) == axis) {
          c = index[static_cast<size_t>(t)];
          if (c < -dim || c >= dim)
            fail(node, fmt::format("indices[{}] is {}, expected [{}, {}] (axis {} of data has size {})", t, c, -dim,
                                   dim - 1, axis, dim));
          if (c < 0) c += dim;
        }
        off += c * xstr[d];
      }
      dest[static_cast<size_t>(t)] = off;
      for (size_t d = is.size(); d-- > 0;) {
        if (++pos[d] < is[d]) break;
        pos[d] = 0;
      }
    }
    char* out = static_cast<char*>(y.raw_mutable_data());
    const char* src = static_cast<const char*>(upd.raw_data());
    if (reduce_ == Reduce::kNone) {
      for (int64_t t = 0; t < n; ++t)
        std::memcpy(out + dest[static_cast<size_t>(t)] * static_cast<int64_t>(es), src + t * static_cast<int64_t>(es),
                    es);
      return;
    }
    math::dispatch<SPINDLE_NUMERIC_TYPES>(x.dtype(), node, "input data", [&](auto tag) {
      using T = decltype(tag);
      T* o = y.mutable_data<T>();
      const T* u = upd.data<T>();
      for (int64_t t = 0; t < n; ++t) {
        T& d = o[dest[static_cast<size_t>(t)]];
        switch (reduce_) {
          case Reduce::kAdd: d = static_cast<T>(d + u[t]); break;
          case Reduce::kMul: d = static_cast<T>(d * u[t]); break;
          case Reduce::kMax: d = std::max(d, u[t]); break;
          case Reduce::kMin: d = std::min(d, u[t]); break;
          case Reduce::kNone: break;
        }
      }
    });
  }

 private:
  int64_t axis_;
  Reduce reduce_ = Reduce::kNone;
};

// ---------------------------------------------------------------- Compress

class CompressKernel final : public OpKernel {
 public:
  explicit CompressKernel(const NodeInfo& node) {
    if (node.attrs.has("axis")) axis_ = node.attrs.get_int("axis");
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& cond = ctx.input(1);
    const size_t es = elem_size(node, x, "input");
    if (cond.dtype() != DataType::kBool || cond.rank() != 1)
      fail(node, fmt::format("input condition is {}, expected a 1-D bool tensor", cond.describe()));
    const bool* c = cond.data<bool>();
    const char* src = static_cast<const char*>(x.raw_data());
    if (!axis_) {
      const int64_t n = std::min(cond.numel(), x.numel());
      std::vector<int64_t> keep;
      for (int64_t i = 0; i < n; ++i)
        if (c[i]) keep.push_back(i);
      Tensor& y = ctx.output(0, x.dtype(), {static_cast<int64_t>(keep.size())});
      char* dst = static_cast<char*>(y.raw_mutable_data());
      for (size_t j = 0; j < keep.size(); ++j) std::memcpy(dst + j * es, src + keep[j] * static_cast<int64_t>(es), es);
      return;
    }
    if (x.rank() == 0) fail(node, fmt::format("input is {}, expected rank >= 1 with an axis", x.describe()));
    const int64_t axis = normalize_axis(node, *axis_, x.rank());
    const AxisView v(x.shape(), axis);
    if (cond.numel() > v.n)
      fail(node, fmt::format("input condition has {} entries, expected at most {} (axis {} of input {})", cond.numel(),
                             v.n, axis, shape_to_string(x.shape())));
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.numel(); ++i)
      if (c[i]) keep.push_back(i);
    Shape ys = x.shape();
    ys[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
    Tensor& y = ctx.output(0, x.dtype(), ys);
    char* dst = static_cast<char*>(y.raw_mutable_data());
    const int64_t slice = v.inner * static_cast<int64_t>(es);
    const int64_t kept = static_cast<int64_t>(keep.size());
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t j = 0; j < kept; ++j)
        std::memcpy(dst + (o * kept + j) * slice, src + (o * v.n + keep[static_cast<size_t>(j)]) * slice,
                    static_cast<size_t>(slice));
  }

 private:
  std::optional<int64_t> axis_;
};

// ---------------------------------------------------------------- ReverseSequence

class ReverseSequenceKernel final : public OpKernel {
 public:
  explicit ReverseSequenceKernel(const NodeInfo& node)
      : time_axis_(node.attrs.get_int("time_axis", 0)), batch_axis_(node.attrs.get_int("batch_axis", 1)) {
    if (!((time_axis_ == 0 && batch_axis_ == 1) || (time_axis_ == 1 && batch_axis_ == 0)))
      fail(node, fmt::format("time_axis {} and batch_axis {} must be 0 and 1 (or 1 and 0)", time_axis_, batch_axis_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "input");
    if (x.rank() < 2) fail(node, fmt::format("input is {}, expected rank >= 2", x.describe()));
    const int64_t T = x.dim(static_cast<int>(time_axis_)), B = x.dim(static_cast<int>(batch_axis_));
    const std::vector<int64_t> lens = read_int_list(node, ctx.input(1), "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != B)
      fail(node, fmt::format("input sequence_lens has {} entries, expected {} (the batch size)", lens.size(), B));
    for (size_t b = 0; b < lens.size(); ++b)
      if (lens[b] < 0 || lens[b] > T)
        fail(node, fmt::format("sequence_lens[{}] is {}, expected 0..{}", b, lens[b], T));
    Tensor& y = ctx.output(0, x.dtype(), x.shape());
    const int64_t slice = prod(x.shape(), 2, x.shape().size()) * static_cast<int64_t>(es);
    const int64_t ts = time_axis_ == 0 ? B * slice : slice, bs = time_axis_ == 0 ? slice : T * slice;
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t from = t < lens[static_cast<size_t>(b)] ? lens[static_cast<size_t>(b)] - 1 - t : t;
        std::memcpy(dst + b * bs + t * ts, src + b * bs + from * ts, static_cast<size_t>(slice));
      }
  }

 private:
  int64_t time_axis_, batch_axis_;
};

}  // namespace

void register_select(KernelRegistry& r) {
  r.add("", "TopK", 1, 17, factory_of<TopKKernel>());
  r.add("", "ScatterElements", 11, kMaxOpset, factory_of<ScatterElementsKernel>());
  r.add("", "Scatter", 9, 10, factory_of<ScatterElementsKernel>());
  r.add("", "Compress", 9, 17, factory_of<CompressKernel>());
  r.add("", "ReverseSequence", 10, 17, factory_of<ReverseSequenceKernel>());
}

}  // namespace spindle::kernels::tensor
