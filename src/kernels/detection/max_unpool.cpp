// max_unpool.cpp — MaxUnpool (9, 11): the partial inverse of MaxPool.
//
// X (N, C, D1, ..., Dn) and I (same shape, int64) from MaxPool; the default
// output size per spatial dim is (Di - 1) * stride - pad_begin - pad_end +
// kernel. Y is zeros of that inferred shape with Y.flat[I[i]] = X[i] (I
// indexes the whole flattened tensor, as MaxPool's Indices do). With the
// optional output_shape input, the inferred result is placed at the leading
// corner of a zero tensor of that shape (every dim at least the inferred
// one). Elements are moved by byte size, so every dtype is supported;
// duplicate indices keep the last value.
#include <limits>

#include "kernels/detection/detection_ops.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::detection {
namespace {

class MaxUnpoolKernel final : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const NodeInfo& node) {
    if (!node.attrs.has("kernel_shape")) fail(node, "attribute kernel_shape is required");
    kernel_ = node.attrs.get_ints("kernel_shape");
    const size_t k = kernel_.size();
    strides_ = node.attrs.get_ints("strides", std::vector<int64_t>(k, 1));
    pads_ = node.attrs.get_ints("pads", std::vector<int64_t>(2 * k, 0));
    if (k == 0 || strides_.size() != k || pads_.size() != 2 * k)
      fail(node, fmt::format("attributes kernel_shape {}, strides {} and pads {} must have n, n and 2n values (n >= 1)",
                             tensor::dims_string(kernel_), tensor::dims_string(strides_), tensor::dims_string(pads_)));
    for (size_t i = 0; i < k; ++i)
      if (kernel_[i] < 1 || strides_[i] < 1 || pads_[i] < 0 || pads_[i + k] < 0)
        fail(node, fmt::format("attributes kernel_shape {}, strides {} and pads {} must be positive (pads >= 0)",
                               tensor::dims_string(kernel_), tensor::dims_string(strides_), tensor::dims_string(pads_)));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& ind = ctx.input(1);
    const size_t es = tensor::elem_size(node, x, "X");
    const size_t k = kernel_.size();
    if (x.rank() != static_cast<int64_t>(k) + 2)
      fail(node, fmt::format("input X is {}, expected rank {} (N x C x {} spatial dims of kernel_shape {})", x.describe(),
                             k + 2, k, tensor::dims_string(kernel_)));
    if (ind.dtype() != DataType::kInt64 || ind.shape() != x.shape())
      fail(node, fmt::format("input I is {}, expected int64 {} (the shape of X)", ind.describe(),
                             shape_to_string(x.shape())));
    Shape inferred = x.shape();
    // Attributes come from the model: computed wide, then range-checked.
    for (size_t i = 0; i < k; ++i) {
      const __int128 d = static_cast<__int128>(x.shape()[i + 2] - 1) * strides_[i] - pads_[i] - pads_[i + k] + kernel_[i];
      if (d < 0 || d > std::numeric_limits<int64_t>::max())
        fail(node, fmt::format("the inferred output dim {} of X {} (kernel_shape {}, strides {}, pads {}) is negative "
                               "or does not fit in a 64-bit size",
                               i + 2, x.describe(), tensor::dims_string(kernel_), tensor::dims_string(strides_),
                               tensor::dims_string(pads_)));
      inferred[i + 2] = static_cast<int64_t>(d);
    }
    Shape out_shape = inferred;
    if (ctx.has_input(2)) {
      out_shape = tensor::read_int_list(node, ctx.input(2), "output_shape");
      bool ok = out_shape.size() == inferred.size();
      for (size_t i = 0; ok && i < inferred.size(); ++i) ok = out_shape[i] >= inferred[i];
      if (!ok || out_shape[0] != inferred[0] || out_shape[1] != inferred[1])
        fail(node, fmt::format("input output_shape is {}, expected rank {} with N, C = {}, {} and spatial dims at "
                               "least {}",
                               tensor::dims_string(out_shape), inferred.size(), inferred[0], inferred[1],
                               tensor::dims_string(inferred)));
    }
    const int64_t total = size_numel(node, inferred, "the inferred output");
    const int64_t* iv = ind.data<int64_t>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i)
      if (iv[i] < 0 || iv[i] >= total)
        fail(node, fmt::format("I[{}] is {}, expected 0..{} (an offset into the output of shape {})", i, iv[i],
                               total - 1, tensor::dims_string(inferred)));
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    if (y.nbytes()) std::memset(y.raw_mutable_data(), 0, y.nbytes());
    // Strides of the output for the inferred shape's coordinates.
    const Shape in_str = contiguous_strides(inferred), out_str = contiguous_strides(out_shape);
    const bool same = out_shape == inferred;
    tensor::with_elem_type(es, [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(x.raw_data());
      T* dst = static_cast<T*>(y.raw_mutable_data());
      for (int64_t i = 0; i < n; ++i) {
        int64_t off = iv[i];
        if (!same) {
          int64_t rem = off;
          off = 0;
          for (size_t d = 0; d < inferred.size(); ++d) {
            off += rem / in_str[d] * out_str[d];
            rem %= in_str[d];
          }
        }
        dst[off] = src[i];
      }
    });
  }

 private:
  std::vector<int64_t> kernel_, strides_, pads_;
};

}  // namespace

void register_max_unpool(KernelRegistry& r) {
  r.add("", "MaxUnpool", 9, 10, factory_of<MaxUnpoolKernel>());
  r.add("", "MaxUnpool", 11, 17, factory_of<MaxUnpoolKernel>());
}

}  // namespace spindle::kernels::detection
