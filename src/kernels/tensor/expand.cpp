// expand.cpp — ops that replicate data: Expand (broadcast), Tile, Pad (with
// 18's axes and 19's wrap mode) and CenterCropPad (18).
// Expand and Tile are strided views with zero strides copied by
// strided_copy; Pad maps every output coordinate to a source coordinate per
// dim (or to the constant) and copies rows, the unpadded middle of each row
// with one memcpy.
#include <cstring>
#include <memory>

#include "kernels/broadcast.h"
#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::tensor {
namespace {

// ---------------------------------------------------------------- Expand

// Opsets 8..12, 13..17: output = broadcast(input shape, shape).
void expand(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const size_t es = elem_size(node, x, "input");
  const std::vector<int64_t> want = read_int_list(node, ctx.input(1), "shape");
  for (int64_t d : want)
    if (d < 0) fail(node, fmt::format("shape {} has a negative dimension", dims_string(want)));
  const Shape shapes[2] = {x.shape(), want};
  const Shape out_shape = broadcast_shapes(node, shapes);
  if (out_shape == x.shape()) {
    ctx.set_output(0, x);
    return;
  }
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  strided_copy(ctx.pool(), x.raw_data(), out_shape, broadcast_strides(x.shape(), out_shape), es, y.raw_mutable_data());
}

// ---------------------------------------------------------------- Tile

// Copies x repeated `reps[i]` times along each dim i: the view has dims
// (reps[0], d[0], reps[1], d[1], ...) with zero strides on the repeats.
void tile_copy(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& reps) {
  const NodeInfo& node = ctx.node();
  const size_t es = elem_size(node, x, "input");
  const size_t r = static_cast<size_t>(x.rank());
  const Shape st = contiguous_strides(x.shape());
  Shape out_shape(r), dims;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < r; ++i) {
    if (reps[i] < 0) fail(node, fmt::format("repeats {} has a negative entry", dims_string(reps)));
    out_shape[i] = size_mul(node, x.shape()[i], reps[i], "a tiled dimension");
    dims.insert(dims.end(), {reps[i], x.shape()[i]});
    strides.insert(strides.end(), {0, st[i]});
  }
  Tensor& y = ctx.output(0, x.dtype(), out_shape);
  strided_copy(ctx.pool(), x.raw_data(), dims, strides, es, y.raw_mutable_data());
}

// Tile: opset 1..5 (inputs tiles and axis: one axis repeated), 6..12 and
// 13..17 (input repeats, one entry per dim).
void tile(KernelContext& ctx) {
  const NodeInfo& node = ctx.node();
  const Tensor& x = ctx.input(0);
  const int64_t r = x.rank();
  std::vector<int64_t> reps;
  if (node.opset < 6) {
    const int64_t tiles = read_int_scalar(node, ctx.input(1), "tiles");
    const int64_t axis = normalize_axis(node, read_int_scalar(node, ctx.input(2), "axis"), r);
    reps.assign(static_cast<size_t>(r), 1);
    reps[static_cast<size_t>(axis)] = tiles;
  } else {
    reps = read_int_list(node, ctx.input(1), "repeats");
    if (static_cast<int64_t>(reps.size()) != r)
      fail(node, fmt::format("repeats {} has {} entries, expected {} for input {}", dims_string(reps), reps.size(), r,
                             x.describe()));
  }
  tile_copy(ctx, x, reps);
}

// ---------------------------------------------------------------- Pad

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// Opset 1: paddings / mode / value attributes; 2..10: pads / mode / value;
// 11..: pads and optional constant_value inputs; 18..: optional axes input
// (pads then hold begin and end for those axes only); 19..: wrap mode.
// Negative pads crop.
class PadKernel final : public OpKernel {
 public:
  explicit PadKernel(const NodeInfo& node) : opset_(node.opset) {
    const std::string mode = node.attrs.get_string("mode", "constant");
    if (mode == "constant") mode_ = PadMode::kConstant;
    else if (mode == "reflect") mode_ = PadMode::kReflect;
    else if (mode == "edge") mode_ = PadMode::kEdge;
    else if (mode == "wrap" && opset_ >= 19) mode_ = PadMode::kWrap;
    else
      fail_unsupported(node, fmt::format("mode '{}' is not supported at opset {} (expected constant, reflect, edge{})",
                                         mode, opset_, opset_ >= 19 ? " or wrap" : ""));
    if (opset_ < 11) {
      pads_ = node.attrs.get_ints(opset_ < 2 ? "paddings" : "pads");
      value_ = node.attrs.get_float("value", 0.0f);
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "data");
    const std::vector<int64_t> pads = resolve_pads(ctx, x);
    const std::vector<unsigned char> value = pad_value(ctx, x, es);
    const Shape out_shape = padded_shape(node, x, pads);
    // The source maps below are as long as the output dims: allocate the
    // output (a clean error when it cannot exist) before building them.
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    const int64_t total = size_numel(node, out_shape, "the padded output");
    if (total == 0) return;
    const std::vector<std::vector<int64_t>> map = source_maps(node, x, pads, out_shape);
    if (x.rank() == 0) {
      std::memcpy(y.raw_mutable_data(), x.raw_data(), es);
      return;
    }
    copy_rows(ctx, x, pads, map, value, y);
  }

 private:
  // pads as 2 * rank entries (begins, then ends), from the attribute or the
  // input, with 18's axes input spread over every dim.
  std::vector<int64_t> resolve_pads(KernelContext& ctx, const Tensor& x) const {
    const NodeInfo& node = ctx.node();
    const size_t r = static_cast<size_t>(x.rank());
    std::vector<int64_t> pads = opset_ < 11 ? pads_ : read_int_list(node, ctx.input(1), "pads");
    if (opset_ >= 18 && ctx.has_input(3)) {
      const std::vector<int64_t> axes = read_int_list(node, ctx.input(3), "axes");
      if (pads.size() != 2 * axes.size())
        fail(node, fmt::format("pads {} has {} entries, expected {} (begin and end for each of the axes {})",
                               dims_string(pads), pads.size(), 2 * axes.size(), dims_string(axes)));
      std::vector<int64_t> full(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        const size_t a = static_cast<size_t>(normalize_axis(node, axes[i], static_cast<int64_t>(r)));
        full[a] = pads[i];
        full[a + r] = pads[i + axes.size()];
      }
      pads = std::move(full);
    }
    if (pads.size() != 2 * r)
      fail(node, fmt::format("pads {} has {} entries, expected {} (begin and end for each dim of {})",
                             dims_string(pads), pads.size(), 2 * r, x.describe()));
    return pads;
  }

  // The bytes of one padding element: constant_value input, value attribute or 0.
  std::vector<unsigned char> pad_value(KernelContext& ctx, const Tensor& x, size_t es) const {
    const NodeInfo& node = ctx.node();
    if (opset_ >= 11 && ctx.has_input(2)) {
      const Tensor& v = ctx.input(2);
      if (v.dtype() != x.dtype() || v.numel() != 1)
        fail(node, fmt::format("input constant_value is {}, expected one {} value", v.describe(),
                               dtype_name(x.dtype())));
      const auto* p = static_cast<const unsigned char*>(v.raw_data());
      return {p, p + es};
    }
    return value_bytes(node, x.dtype(), opset_ < 11 ? value_ : 0.0);
  }

  static Shape padded_shape(const NodeInfo& node, const Tensor& x, const std::vector<int64_t>& pads) {
    const size_t r = static_cast<size_t>(x.rank());
    Shape out_shape(r);
    for (size_t i = 0; i < r; ++i) {
      const int64_t d = x.shape()[i], b = pads[i], e = pads[i + r];
      int64_t o = 0;
      if (__builtin_add_overflow(d, b, &o) || __builtin_add_overflow(o, e, &o))
        fail(node, fmt::format("pads {} make dim {} of {} larger than a 64-bit size", dims_string(pads), i,
                               x.describe()));
      if (o < 0)
        fail(node, fmt::format("pads {} remove more than the {} elements of dim {} of {}", dims_string(pads), d, i,
                               x.describe()));
      int64_t last_source = 0;  // source index of the last output coordinate
      if (o > 0 && __builtin_sub_overflow(o - 1, b, &last_source))
        fail(node, fmt::format("pads {} are out of the 64-bit range", dims_string(pads)));
      out_shape[i] = o;
    }
    return out_shape;
  }

  // map[i][o] = source index of output coordinate o along dim i, -1 = constant.
  std::vector<std::vector<int64_t>> source_maps(const NodeInfo& node, const Tensor& x, const std::vector<int64_t>& pads,
                                                const Shape& out_shape) const {
    const size_t r = static_cast<size_t>(x.rank());
    std::vector<std::vector<int64_t>> map(r);
    for (size_t i = 0; i < r; ++i) {
      const int64_t d = x.shape()[i], b = pads[i], o = out_shape[i];
      if (mode_ != PadMode::kConstant && d == 0 && o > 0)
        fail(node, fmt::format("cannot {} pad the empty dim {} of {}",
                               mode_ == PadMode::kEdge ? "edge" : mode_ == PadMode::kWrap ? "wrap" : "reflect", i,
                               x.describe()));
      map[i].resize(static_cast<size_t>(o));
      for (int64_t j = 0; j < o; ++j) map[i][static_cast<size_t>(j)] = source_index(j - b, d);
    }
    return map;
  }

  // The source coordinate of s (a coordinate of the unpadded dim of size d,
  // possibly outside it) under the mode, -1 for the constant.
  int64_t source_index(int64_t s, int64_t d) const {
    if (s >= 0 && s < d) return s;
    switch (mode_) {
      case PadMode::kConstant: return -1;
      case PadMode::kEdge: return std::clamp<int64_t>(s, 0, d - 1);
      case PadMode::kWrap: return ((s % d) + d) % d;
      case PadMode::kReflect: break;
    }
    if (d == 1) return 0;
    // reflect without repeating the edge, folding as often as needed
    const int64_t period = 2 * (d - 1);
    s %= period;
    if (s < 0) s += period;
    return s >= d ? period - s : s;
  }

  // Fills y row by row (rows along the last dim) in parallel.
  static void copy_rows(KernelContext& ctx, const Tensor& x, const std::vector<int64_t>& pads,
                        const std::vector<std::vector<int64_t>>& map, const std::vector<unsigned char>& pad_value,
                        Tensor& y) {
    const size_t r = static_cast<size_t>(x.rank());
    const size_t es = dtype_size(x.dtype());
    const Shape& out_shape = y.shape();
    const Shape xs = contiguous_strides(x.shape());
    const int64_t L = out_shape[r - 1];
    const int64_t rows = y.numel() / L;
    const std::vector<int64_t>& last = map[r - 1];
    // The middle of each row copied with one memcpy: output [m0, m1) <- source [m0 - b, ...).
    const int64_t b_last = pads[r - 1];
    const int64_t m0 = std::clamp<int64_t>(b_last, 0, L);
    const int64_t m1 = std::max(m0, std::min(L, b_last + x.shape()[r - 1]));
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    const int64_t esz = static_cast<int64_t>(es);
    const auto copy_edge = [&](char* out, const char* in, int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t s = last[static_cast<size_t>(j)];
        std::memcpy(out + j * esz, s < 0 ? static_cast<const void*>(pad_value.data()) : in + s * esz, es);
      }
    };
    parallel_for(ctx.pool(), rows, copy_cost(static_cast<double>(L * esz)), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> idx(r, 0);
      int64_t rem = r0;
      for (size_t k = r - 1; k-- > 0;) {
        idx[k] = rem % out_shape[k];
        rem /= out_shape[k];
      }
      for (int64_t row = r0; row < r1; ++row) {
        char* out = dst + row * L * esz;
        int64_t off = 0;
        bool constant_row = false;
        for (size_t k = 0; k + 1 < r; ++k) {
          const int64_t s = map[k][static_cast<size_t>(idx[k])];
          if (s < 0) constant_row = true;
          off += s * xs[k];
        }
        if (constant_row) {
          fill_elements(out, L, pad_value.data(), es);
        } else {
          const char* in = src + off * esz;
          copy_edge(out, in, 0, m0);
          if (m1 > m0) std::memcpy(out + m0 * esz, in + (m0 - b_last) * esz, static_cast<size_t>((m1 - m0) * esz));
          copy_edge(out, in, m1, L);
        }
        for (size_t k = r - 1; k-- > 0;) {  // next row
          if (++idx[k] < out_shape[k]) break;
          idx[k] = 0;
        }
      }
    });
  }

  int opset_;
  PadMode mode_ = PadMode::kConstant;
  std::vector<int64_t> pads_;
  float value_ = 0.0f;
};

// ---------------------------------------------------------------- CenterCropPad

// CenterCropPad (18): each of `axes` (default all) is cropped or zero-padded
// to the size in input 1, centered (the odd element goes to the end).
class CenterCropPadKernel final : public OpKernel {
 public:
  explicit CenterCropPadKernel(const NodeInfo& node) : axes_(node.attrs.get_ints("axes", {})) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const size_t es = elem_size(node, x, "input_data");
    const int64_t r = x.rank();
    const std::vector<int64_t> sizes = read_int_list(node, ctx.input(1), "shape");
    std::vector<int64_t> axes = axes_;
    if (axes.empty())
      for (int64_t i = 0; i < r; ++i) axes.push_back(i);
    if (sizes.size() != axes.size())
      fail(node, fmt::format("input shape {} has {} values, expected one per axis ({})", dims_string(sizes),
                             sizes.size(), axes.size()));
    Shape out_shape = x.shape();
    std::vector<int64_t> shift(static_cast<size_t>(r), 0);  // source = output + shift
    for (size_t i = 0; i < axes.size(); ++i) {
      const size_t a = static_cast<size_t>(normalize_axis(node, axes[i], r));
      if (sizes[i] < 0) fail(node, fmt::format("input shape {} has a negative size", dims_string(sizes)));
      const int64_t d = x.shape()[a], want = sizes[i];
      shift[a] = want <= d ? (d - want) / 2 : -((want - d) / 2);
      out_shape[a] = want;
    }
    Tensor& y = ctx.output(0, x.dtype(), out_shape);
    const int64_t total = y.numel();
    if (total == 0) return;
    const Shape xs = contiguous_strides(x.shape());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(y.raw_mutable_data());
    std::vector<int64_t> idx(static_cast<size_t>(r), 0);
    for (int64_t o = 0; o < total; ++o) {
      int64_t off = 0;
      bool inside = true;
      for (size_t k = 0; k < static_cast<size_t>(r); ++k) {
        const int64_t s = idx[k] + shift[k];
        inside = inside && s >= 0 && s < x.shape()[k];
        off += s * xs[k];
      }
      if (inside) std::memcpy(dst + o * static_cast<int64_t>(es), src + off * static_cast<int64_t>(es), es);
      else std::memset(dst + o * static_cast<int64_t>(es), 0, es);
      for (size_t k = static_cast<size_t>(r); k-- > 0;) {
        if (++idx[k] < out_shape[k]) break;
        idx[k] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

void register_expand(KernelRegistry& r) {
  r.add("", "Expand", 8, 17, simple_kernel(expand));
  r.add("", "Tile", 1, 17, simple_kernel(tile));
  r.add("", "Pad", 1, kMaxOpset, factory_of<PadKernel>());
  r.add("", "CenterCropPad", 18, kMaxOpset, factory_of<CenterCropPadKernel>());
}

}  // namespace spindle::kernels::tensor
