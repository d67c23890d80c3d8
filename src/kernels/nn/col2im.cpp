// col2im.cpp — Col2Im (ai.onnx 18..23): the inverse of im2col, N-d (at least
// two spatial dims), with dilations, pads and strides.
//
// input [N, C * prod(block_shape), L] holds, for each of the L block
// positions, the C * prod(block_shape) values of one sliding block;
// output [N, C, image_shape...] is the sum of every block's values at the
// image positions they cover (positions falling in the pads are dropped).
// L must equal the product over the spatial dims of
// (image + pad_begin + pad_end - dilation * (block - 1) - 1) / stride + 1.
//
// The (n, c) planes are the parallel_for items: each plane is summed by one
// block in a fixed order (block element, then block position), so results
// do not depend on the thread count.
#include <cstring>

#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"

namespace spindle::kernels::nn {

namespace {

std::string dims_text(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

class Col2ImKernel final : public OpKernel {
 public:
  explicit Col2ImKernel(const NodeInfo& node)
      : dilations_(node.attrs.get_ints("dilations", {})),
        pads_(node.attrs.get_ints("pads", {})),
        strides_(node.attrs.get_ints("strides", {})) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "input");
    if (X.rank() != 3) fail(node, fmt::format("input is {}, expected rank 3 [N, C * prod(block_shape), L]", X.describe()));
    const std::vector<int64_t> image = int64_input(ctx, 1, "image_shape");
    const std::vector<int64_t> block = int64_input(ctx, 2, "block_shape");
    const size_t nd = image.size();
    if (nd < 2) fail(node, fmt::format("input image_shape has {} values, expected at least 2 spatial dims", nd));
    if (block.size() != nd)
      fail(node, fmt::format("input block_shape {} has {} values, expected {} (as many as image_shape {})",
                             dims_text(block), block.size(), nd, dims_text(image)));
    const std::vector<int64_t> dil = attr_or(node, dilations_, "dilations", nd, 1);
    const std::vector<int64_t> str = attr_or(node, strides_, "strides", nd, 1);
    const std::vector<int64_t> pads = attr_or(node, pads_, "pads", 2 * nd, 0);
    std::vector<int64_t> counts(nd);
    int64_t L = 1, K = 1, P = 1;
    for (size_t i = 0; i < nd; ++i) {
      if (image[i] <= 0) fail(node, fmt::format("input image_shape {} has the non-positive value {}", dims_text(image), image[i]));
      if (block[i] <= 0) fail(node, fmt::format("input block_shape {} has the non-positive value {}", dims_text(block), block[i]));
      if (dil[i] <= 0) fail(node, fmt::format("attribute dilations {} has the non-positive value {}", dims_text(dil), dil[i]));
      if (str[i] <= 0) fail(node, fmt::format("attribute strides {} has the non-positive value {}", dims_text(str), str[i]));
      if (pads[i] < 0 || pads[nd + i] < 0)
        fail(node, fmt::format("attribute pads {} has a negative value", dims_text(pads)));
      // Every term below 2^62 so the sums cannot overflow.
      constexpr int64_t kMax = int64_t{1} << 60;
      if (image[i] > kMax || block[i] > kMax || dil[i] > kMax || pads[i] > kMax || pads[nd + i] > kMax)
        fail(node, fmt::format("image_shape {}, block_shape {}, dilations or pads are too large", dims_text(image),
                               dims_text(block)));
      const auto extent = checked_mul(dil[i], block[i] - 1);
      const int64_t span = image[i] + pads[i] + pads[nd + i];
      if (!extent || *extent >= span)
        fail(node, fmt::format("on spatial dim {}, the dilated block ({} with dilation {}) does not fit in the "
                               "padded image ({} + pads {} and {})", i, block[i], dil[i], image[i], pads[i],
                               pads[nd + i]));
      counts[i] = (span - *extent - 1) / str[i] + 1;
      const auto l = checked_mul(L, counts[i]);
      const auto k = checked_mul(K, block[i]);
      const auto p = checked_mul(P, image[i]);
      if (!l || !k || !p) fail(node, fmt::format("image_shape {} and block_shape {} are too large", dims_text(image), dims_text(block)));
      L = *l, K = *k, P = *p;
    }
    const int64_t N = X.dim(0), CK = X.dim(1);
    if (CK % K != 0)
      fail(node, fmt::format("input {} has {} on dim 1, expected a multiple of prod(block_shape {}) = {}", X.describe(),
                             CK, dims_text(block), K));
    if (X.dim(2) != L)
      fail(node, fmt::format("input {} has {} block positions on dim 2, expected {} (the blocks counted per spatial "
                             "dim: {})", X.describe(), X.dim(2), L, dims_text(counts)));
    const int64_t C = CK / K;
    Shape ys{N, C};
    ys.insert(ys.end(), image.begin(), image.end());
    if (!checked_numel(ys)) fail(node, fmt::format("output shape {} is too large", shape_to_string(ys)));
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    // Per spatial dim and block element: the image offset of each block
    // position (times the image stride), or -1 when it falls in the pads.
    std::vector<std::vector<int64_t>> pos(nd);
    int64_t img_stride = 1;
    std::vector<int64_t> image_strides(nd);
    for (size_t i = nd; i-- > 0;) {
      image_strides[i] = img_stride;
      img_stride *= image[i];
    }
    for (size_t i = 0; i < nd; ++i) {
      pos[i].resize(static_cast<size_t>(block[i] * counts[i]));
      for (int64_t k = 0; k < block[i]; ++k)
        for (int64_t b = 0; b < counts[i]; ++b) {
          const int64_t p = b * str[i] - pads[i] + k * dil[i];
          pos[i][static_cast<size_t>(k * counts[i] + b)] = p >= 0 && p < image[i] ? p * image_strides[i] : -1;
        }
    }
    const double plane_work = static_cast<double>(K) * static_cast<double>(L) + static_cast<double>(P);
    parallel_for(ctx.pool(), 0, N * C, grain_for_cost(ops_cost(plane_work)), [&](int64_t p0, int64_t p1) {
      std::vector<int64_t> kidx(nd), bidx(nd);
      for (int64_t plane = p0; plane < p1; ++plane) {
        float* out = y + plane * P;
        std::fill(out, out + P, 0.0f);
        const float* col = x + plane * K * L;
        std::fill(kidx.begin(), kidx.end(), 0);
        for (int64_t k = 0; k < K; ++k, col += L) {
          // Block positions in row-major order; the last dim is the inner loop.
          std::fill(bidx.begin(), bidx.end(), 0);
          const std::vector<int64_t>& last = pos[nd - 1];
          const int64_t* last_pos = last.data() + kidx[nd - 1] * counts[nd - 1];
          const int64_t cw = counts[nd - 1];
          for (int64_t l = 0; l < L; l += cw) {
            int64_t base = 0;
            bool inside = true;
            for (size_t i = 0; i + 1 < nd; ++i) {
              const int64_t q = pos[i][static_cast<size_t>(kidx[i] * counts[i] + bidx[i])];
              if (q < 0) inside = false;
              base += q;
            }
            if (inside) {
              const float* src = col + l;
              for (int64_t b = 0; b < cw; ++b)
                if (last_pos[b] >= 0) out[base + last_pos[b]] += src[b];
            }
            for (size_t i = nd - 1; i-- > 0;) {
              if (++bidx[i] < counts[i]) break;
              bidx[i] = 0;
            }
          }
          for (size_t i = nd; i-- > 0;) {
            if (++kidx[i] < block[i]) break;
            kidx[i] = 0;
          }
        }
      }
    });
  }

 private:
  static std::vector<int64_t> int64_input(KernelContext& ctx, int index, const char* name) {
    const Tensor& t = ctx.input(index);
    if (t.dtype() != DataType::kInt64 || t.rank() != 1)
      fail(ctx.node(), fmt::format("input {} is {}, expected a 1-D int64 tensor", name, t.describe()));
    return t.to_int64_vector();
  }

  static std::vector<int64_t> attr_or(const NodeInfo& node, const std::vector<int64_t>& v, const char* name,
                                      size_t n, int64_t fill) {
    if (v.empty()) return std::vector<int64_t>(n, fill);
    if (v.size() != n)
      fail(node, fmt::format("attribute {} {} has {} values, expected {}", name, dims_text(v), v.size(), n));
    return v;
  }

  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

void register_col2im(KernelRegistry& r) {
  r.add("", "Col2Im", 18, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<Col2ImKernel>(node);
  });
}

}  // namespace spindle::kernels::nn
