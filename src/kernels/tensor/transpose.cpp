// transpose.cpp — Transpose and the two block rearrangements built on it,
// DepthToSpace and SpaceToDepth. The copies go through permute_copy /
// strided_copy (contiguous runs when the last dim stays last, cache tiles
// otherwise, parallel over rows).
#include <memory>

#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// ---------------------------------------------------------------- Transpose

// Opsets 1..12, 13..17 (same semantics). perm defaults to the reversed axes.
class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const NodeInfo& node) {
    has_perm_ = node.attrs.has("perm");
    if (has_perm_) perm_ = node.attrs.get_ints("perm");
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    elem_size(node, x, "data");
    const int64_t r = x.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_) {
      perm.resize(static_cast<size_t>(r));
      for (int64_t i = 0; i < r; ++i) perm[static_cast<size_t>(i)] = r - 1 - i;
    }
    if (static_cast<int64_t>(perm.size()) != r)
      fail(node, fmt::format("perm {} has {} entries, expected {} for input {}", dims_string(perm), perm.size(), r,
                             x.describe()));
    std::vector<bool> seen(static_cast<size_t>(r), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= r || seen[static_cast<size_t>(p)])
        fail(node, fmt::format("perm {} is not a permutation of 0..{}", dims_string(perm), r - 1));
      seen[static_cast<size_t>(p)] = true;
    }
    Shape out_shape(static_cast<size_t>(r));
    for (size_t i = 0; i < out_shape.size(); ++i) out_shape[i] = x.shape()[static_cast<size_t>(perm[i])];
    // When the non-unit dims keep their order, the data does not move.
    int64_t last = -1;
    bool moves = false;
    for (int64_t p : perm) {
      if (x.shape()[static_cast<size_t>(p)] == 1) continue;
      if (p < last) moves = true;
      last = p;
    }
    if (!moves) {
      ctx.set_output(0, x.reshaped(out_shape));
      return;
    }
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    permute_copy(ctx.pool(), x, x.shape(), perm, y.raw_mutable_data());
  }

 private:
  bool has_perm_ = false;
  std::vector<int64_t> perm_;
};

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

int64_t blocksize_of(const NodeInfo& node) {
  const int64_t b = node.attrs.get_int("blocksize");
  if (b <= 0) fail(node, fmt::format("blocksize {} is invalid, expected a positive value", b));
  return b;
}

void require_rank4(const NodeInfo& node, const Tensor& x) {
  if (x.rank() != 4) fail(node, fmt::format("input is {}, expected rank 4 (N, C, H, W)", x.describe()));
}

// DepthToSpace: opsets 1..10 (DCR), 11..12 and 13..17 (mode DCR / CRD).
class DepthToSpaceKernel final : public OpKernel {
 public:
  explicit DepthToSpaceKernel(const NodeInfo& node) : b_(blocksize_of(node)) {
    const std::string mode = node.opset >= 11 ? node.attrs.get_string("mode", "DCR") : "DCR";
    if (mode != "DCR" && mode != "CRD") fail(node, fmt::format("mode '{}' is invalid, expected DCR or CRD", mode));
    crd_ = mode == "CRD";
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    elem_size(node, x, "input");
    require_rank4(node, x);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    // blocksize comes from the model: its square and the output dims are
    // checked sizes (2^32 overflowed, fuzz_graph).
    const int64_t bb = size_mul(node, b_, b_, "blocksize^2");
    if (c % bb != 0)
      fail(node, fmt::format("input {} has {} channels, expected a multiple of blocksize^2 = {}", x.describe(), c, bb));
    const int64_t oc = c / bb;
    Tensor& y = ctx.output(0, x.dtype(), {n, oc, size_mul(node, h, b_, "H x blocksize"), size_mul(node, w, b_, "W x blocksize")});
    if (crd_) permute_copy(ctx.pool(), x, {n, oc, b_, b_, h, w}, {0, 1, 4, 2, 5, 3}, y.raw_mutable_data());
    else permute_copy(ctx.pool(), x, {n, b_, b_, oc, h, w}, {0, 3, 4, 1, 5, 2}, y.raw_mutable_data());
  }

 private:
  int64_t b_;
  bool crd_ = false;
};

// SpaceToDepth: opsets 1..12, 13..17.
class SpaceToDepthKernel final : public OpKernel {
 public:
  explicit SpaceToDepthKernel(const NodeInfo& node) : b_(blocksize_of(node)) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    elem_size(node, x, "input");
    require_rank4(node, x);
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (h % b_ != 0 || w % b_ != 0)
      fail(node, fmt::format("input {} has spatial size {}x{}, expected multiples of blocksize {}", x.describe(), h, w,
                             b_));
    Tensor& y = ctx.output(0, x.dtype(), {n, size_mul(node, c, size_mul(node, b_, b_, "blocksize^2"), "C x blocksize^2"),
                                          h / b_, w / b_});
    permute_copy(ctx.pool(), x, {n, c, h / b_, b_, w / b_, b_}, {0, 3, 5, 1, 2, 4}, y.raw_mutable_data());
  }

 private:
  int64_t b_;
};

}  // namespace

void register_transpose(KernelRegistry& r) {
  r.add("", "Transpose", 1, 17, factory_of<TransposeKernel>());
  r.add("", "DepthToSpace", 1, 17, factory_of<DepthToSpaceKernel>());
  r.add("", "SpaceToDepth", 1, 17, factory_of<SpaceToDepthKernel>());
}

}  // namespace spindle::kernels::tensor
