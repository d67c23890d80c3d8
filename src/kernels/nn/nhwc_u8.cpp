// nhwc_u8.cpp — the conversions at the borders of a chain of 8-bit NHWC
// operators and MaxPool in that layout (see nhwc.h):
//
//   spindle.ToNhwc    X [N, C, H, W] -> Y [N, H, W, C]
//   spindle.FromNhwc  X [N, H, W, C] -> Y [N, C, H, W]
//                     (int8 / uint8, or 4-byte elements: float32 and
//                     others, moved as they are)
//   spindle.ChannelShuffleNhwc  X [..., C] (1- or 4-byte elements), group g:
//                     Y[..., j * g + i] = X[..., i * (C / g) + j], the
//                     channel shuffle (Reshape, Transpose, Reshape) of an
//                     NCHW tensor done on its NHWC form
//   spindle.ChannelShuffleSplitNhwc  X [..., C], group g, then four inputs
//                     per output k (a Slice's starts, ends, axes and
//                     optional steps): output k is Slice(ChannelShuffleNhwc(X),
//                     those four) (NhwcTransformer's fusion of the split that
//                     starts ShuffleNet's next unit); bytes sliced on the
//                     channels at multiples of g with step 1 are written
//                     straight from X (each output channel's source is
//                     known), anything else runs the two ops
//   spindle.MaxPoolNhwc  MaxPool (kernel_shape, strides, pads, dilations,
//                     ceil_mode, auto_pad) of a 2-D int8 / uint8 NHWC X: one
//                     output pixel is the element-wise max of its window's
//                     pixel vectors (all C channels at once). The max of
//                     integers does not depend on the order of the taps, so
//                     the values are MaxPool's in NCHW, transposed.
//   spindle.QLinearLookup  X int8 / uint8 (any shape, any layout), table
//                     [256] int8 / uint8 -> Y[i] = table[byte of X[i]]: the
//                     quantized unary ops (QLinearLookupFusion), element-wise.
#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/nn/nhwc.h"
#include "kernels/nn/nhwc_bytes.h"
#include "kernels/nn/nn_util.h"
#include "primitives/pool/pool_u8.h"
#include "primitives/quant/lookup.h"

namespace spindle::kernels::nn {

namespace {

// n bytes, exactly (nothing past dst + n written, nothing past src + n
// read): fixed-size moves for the short runs of few-channel inputs (a
// 7x7 stem over 3 channels copies 21 bytes per tap row), memcpy past 32.
inline void copy_run(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n > 32) {
    std::memcpy(dst, src, static_cast<size_t>(n));
  } else if (n >= 16) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

inline void fill_run(uint8_t* dst, uint8_t v, int64_t n) {
  if (n > 32) std::memset(dst, v, static_cast<size_t>(n));
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
}

}  // namespace

void im2col_u8(const uint8_t* x, int64_t C, int64_t cg, int64_t grp, const Window3& g, int64_t p0, int64_t rows,
               uint8_t pad, uint8_t* col) {
  const int64_t K = g.k_size() * cg;
  // One group with adjacent taps: a row of taps inside the input is one
  // run of bytes.
  const bool runs = cg == C && g.d[2] == 1;
  // The output pixel's coordinates, stepped from row to row (no divisions per row).
  int64_t o2 = p0 % g.out[2], o1 = (p0 / g.out[2]) % g.out[1], o0 = p0 / (g.out[2] * g.out[1]);
  // A 2-D window (one plane) of runs: per output row, the input rows of its
  // kernel rows when all are inside, and the output columns [lo, hi) whose
  // taps are all inside the row: those pixels copy their kernel rows' runs
  // without the checks below.
  constexpr int64_t kMaxRows = 16;
  const bool planar = runs && g.k[0] == 1 && g.in[0] == 1 && g.k[1] <= kMaxRows;
  const int64_t run_bytes = g.k[2] * C;
  const uint8_t* row_at[kMaxRows];
  bool rows_in = false;
  int64_t lo = 0, hi = 0;
  auto row_state = [&] {
    rows_in = true;
    for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
      const int64_t ii1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
      rows_in = rows_in && ii1 >= 0 && ii1 < g.in[1];
      row_at[k1] = rows_in ? x + ii1 * g.in[2] * C : x;
    }
    const int64_t last = g.in[2] - g.k[2] + g.pb[2];  // the last inside column's base, times s, plus pb
    lo = std::min(g.out[2], ceil_div(g.pb[2], g.s[2]));
    hi = last < 0 ? lo : std::max(lo, std::min(g.out[2], last / g.s[2] + 1));
  };
  if (planar) row_state();
  for (int64_t i = 0; i < rows; ++i, ++o2) {
    if (o2 == g.out[2]) {
      o2 = 0;
      if (++o1 == g.out[1]) o1 = 0, ++o0;
      if (planar) row_state();
    }
    uint8_t* dst = col + i * K;
    if (planar && rows_in && o2 >= lo && o2 < hi) {
      const int64_t at = (o2 * g.s[2] - g.pb[2]) * C;
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1, dst += run_bytes) copy_run(dst, row_at[k1] + at, run_bytes);
      continue;
    }
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t ii0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
      const bool in0 = ii0 >= 0 && ii0 < g.in[0];
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
        const int64_t ii1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
        const bool in1 = in0 && ii1 >= 0 && ii1 < g.in[1];
        const uint8_t* xrow = in1 ? x + (ii0 * g.in[1] + ii1) * g.in[2] * C : x;
        if (runs) {
          const int64_t base = o2 * g.s[2] - g.pb[2];
          const int64_t t0 = in1 ? std::clamp<int64_t>(-base, 0, g.k[2]) : g.k[2];
          const int64_t t1 = in1 ? std::clamp<int64_t>(g.in[2] - base, t0, g.k[2]) : g.k[2];
          fill_run(dst, pad, t0 * C);
          if (t1 > t0) copy_run(dst + t0 * C, xrow + (base + t0) * C, (t1 - t0) * C);
          fill_run(dst + t1 * C, pad, (g.k[2] - t1) * C);
          dst += g.k[2] * C;
          continue;
        }
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2, dst += cg) {
          const int64_t ii2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
          if (in1 && ii2 >= 0 && ii2 < g.in[2]) copy_run(dst, xrow + ii2 * C + grp * cg, cg);
          else fill_run(dst, pad, cg);
        }
      }
    }
  }
}

void im2col_rows_u8(const uint8_t* x, int64_t C, int64_t cg, int64_t grp, const Window3& g, int64_t p0, int64_t rows,
                    const uint8_t* pad, const uint8_t** out) {
  // A window wholly inside the input: its taps at fixed offsets from its first pixel.
  constexpr int64_t kMaxTaps = 64;
  const int64_t taps = g.k_size();
  int64_t off[kMaxTaps];
  if (taps <= kMaxTaps)
    for (int64_t k0 = 0, t = 0; k0 < g.k[0]; ++k0)
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2, ++t)
          off[t] = ((k0 * g.d[0] * g.in[1] + k1 * g.d[1]) * g.in[2] + k2 * g.d[2]) * C;
  auto inside = [&](int dim, int64_t first) {
    return first >= 0 && first + (g.k[dim] - 1) * g.d[dim] < g.in[dim];
  };
  int64_t o2 = p0 % g.out[2], o1 = (p0 / g.out[2]) % g.out[1], o0 = p0 / (g.out[2] * g.out[1]);
  const uint8_t* xg = x + grp * cg;
  for (int64_t i = 0; i < rows; ++i, ++o2) {
    if (o2 == g.out[2]) {
      o2 = 0;
      if (++o1 == g.out[1]) o1 = 0, ++o0;
    }
    const int64_t f0 = o0 * g.s[0] - g.pb[0], f1 = o1 * g.s[1] - g.pb[1], f2 = o2 * g.s[2] - g.pb[2];
    if (taps <= kMaxTaps && inside(0, f0) && inside(1, f1) && inside(2, f2)) {
      const uint8_t* first = xg + ((f0 * g.in[1] + f1) * g.in[2] + f2) * C;
      for (int64_t t = 0; t < taps; ++t) out[t] = first + off[t];
      out += taps;
      continue;
    }
    for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
      const int64_t ii0 = f0 + k0 * g.d[0];
      const bool in0 = ii0 >= 0 && ii0 < g.in[0];
      for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
        const int64_t ii1 = f1 + k1 * g.d[1];
        const bool in1 = in0 && ii1 >= 0 && ii1 < g.in[1];
        const uint8_t* xrow = in1 ? xg + (ii0 * g.in[1] + ii1) * g.in[2] * C : nullptr;
        for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
          const int64_t ii2 = f2 + k2 * g.d[2];
          *out++ = in1 && ii2 >= 0 && ii2 < g.in[2] ? xrow + ii2 * C : pad;
        }
      }
    }
  }
}

void im2col_chunk_u8(ThreadPool* pool, const uint8_t* x, int64_t C, int64_t G, const Window3& g, int64_t q0,
                     int64_t rows, const uint8_t* pad, const uint8_t** tab, uint8_t* col) {
  const int64_t cg = C / G, taps = g.k_size(), K = taps * cg;
  parallel_for(pool, 0, G * rows, grain_for_cost(ops_cost(tab ? static_cast<double>(taps) : K / 8.0)),
               [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1;) {
      const int64_t grp = r / rows, i0 = r % rows, i1 = std::min(rows, i0 + (r1 - r));
      const int64_t at = grp * rows + i0;
      if (tab) im2col_rows_u8(x, C, cg, grp, g, q0 + i0, i1 - i0, pad, tab + at * taps);
      else im2col_u8(x, C, cg, grp, g, q0 + i0, i1 - i0, pad[0], col + at * K);
      r += i1 - i0;
    }
  });
}

namespace {

// dst[n][j][i] = src[n][i][j] for elements of type T.
template <class T>
void transpose_elems(ThreadPool* pool, const T* src, T* dst, int64_t N, int64_t rows, int64_t cols) {
  // Tiles of 64 columns x all rows: each reads `rows` short runs and writes
  // 64 runs of `rows` elements.
  constexpr int64_t kTile = 64;
  const int64_t tiles = ceil_div(cols, kTile);
  if (N <= 0 || rows <= 0 || cols <= 0) return;
  const double bytes = static_cast<double>(kTile * rows * static_cast<int64_t>(sizeof(T)));
  parallel_for(pool, 0, N * tiles, grain_for_cost(ops_cost(bytes / 4)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / tiles, j0 = (b % tiles) * kTile, j1 = std::min(cols, j0 + kTile);
      const T* s = src + n * rows * cols;
      T* d = dst + n * rows * cols;
      for (int64_t i = 0; i < rows; ++i) {
        const T* sr = s + i * cols;
        for (int64_t j = j0; j < j1; ++j) d[j * rows + i] = sr[j];
      }
    }
  });
}

}  // namespace

void transpose_bytes(ThreadPool* pool, const uint8_t* src, uint8_t* dst, int64_t N, int64_t rows, int64_t cols) {
  // 2 to 4 rows (an image's channels to NHWC): interleaved with vector
  // shuffles, blocks of columns in parallel.
  if (rows >= 2 && rows <= 4 && N > 0 && cols > 0) {
    static const auto fn = SPINDLE_ISA_SELECT(interleave_planes_u8);
    constexpr int64_t kBlock = 4096;
    const int64_t blocks = ceil_div(cols, kBlock);
    parallel_for(pool, 0, N * blocks, grain_for_cost(ops_cost(static_cast<double>(kBlock * rows) / 16)),
                 [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t n = b / blocks, j0 = (b % blocks) * kBlock;
        fn(src + n * rows * cols, dst + n * rows * cols, rows, cols, j0, std::min(cols, j0 + kBlock));
      }
    });
    return;
  }
  // 16 x 16 tiles transposed in registers, strips of 16 columns (16
  // destination rows) in parallel; the rows and columns past the last
  // whole tile by the loop below.
  if (rows >= 16 && cols >= 16 && N > 0) {
    static const auto tile = SPINDLE_ISA_SELECT(transpose_tile16_u8);
    const int64_t strips = cols / 16, rows16 = rows / 16 * 16;
    parallel_for(pool, 0, N * strips, grain_for_cost(ops_cost(static_cast<double>(rows) * 4)), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t n = b / strips, j0 = (b % strips) * 16;
        const uint8_t* s = src + n * rows * cols;
        uint8_t* d = dst + n * rows * cols;
        for (int64_t i0 = 0; i0 < rows16; i0 += 16) tile(s + i0 * cols + j0, cols, d + j0 * rows + i0, rows);
        for (int64_t i = rows16; i < rows; ++i)
          for (int64_t j = j0; j < j0 + 16; ++j) d[j * rows + i] = s[i * cols + j];
      }
    });
    const int64_t j_done = strips * 16;
    if (j_done == cols) return;
    // The last columns (fewer than 16): every row.
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = j_done; j < cols; ++j) dst[n * rows * cols + j * rows + i] = src[n * rows * cols + i * cols + j];
    return;
  }
  transpose_elems(pool, src, dst, N, rows, cols);
}

namespace {

void require_rank4_q8(const NodeInfo& node, const Tensor& x) {
  if ((x.dtype() != DataType::kUInt8 && x.dtype() != DataType::kInt8) || x.rank() != 4)
    fail(node, fmt::format("input X is {}, expected a rank-4 int8 or uint8 tensor", x.describe()));
}

template <bool kToNhwc>
class NhwcReorderKernel final : public OpKernel {
 public:
  explicit NhwcReorderKernel(const NodeInfo&) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const size_t esize = dtype_size(X.dtype());
    if (X.rank() != 4 || (esize != 1 && esize != 4))
      fail(ctx.node(), fmt::format("input X is {}, expected a rank-4 tensor of 1- or 4-byte elements", X.describe()));
    const int64_t N = X.dim(0);
    Shape ys = kToNhwc ? Shape{N, X.dim(2), X.dim(3), X.dim(1)} : Shape{N, X.dim(3), X.dim(1), X.dim(2)};
    Tensor& Y = ctx.output(0, X.dtype(), ys);
    if (Y.numel() == 0) return;
    const int64_t C = kToNhwc ? X.dim(1) : X.dim(3);
    const int64_t P = X.numel() / (N * C);
    const int64_t rows = kToNhwc ? C : P, cols = kToNhwc ? P : C;
    if (esize == 4)
      transpose_elems(ctx.pool(), static_cast<const uint32_t*>(X.raw_data()), static_cast<uint32_t*>(Y.raw_mutable_data()),
                      N, rows, cols);
    else
      transpose_bytes(ctx.pool(), static_cast<const uint8_t*>(X.raw_data()), static_cast<uint8_t*>(Y.raw_mutable_data()),
                      N, rows, cols);
  }
};

class MaxPoolNhwcKernel final : public OpKernel {
 public:
  explicit MaxPoolNhwcKernel(const NodeInfo& node) : a_(WindowAttrs::parse(node, true, true)) {
    a_.clipped_windows = true;
    if (a_.kernel_shape.size() != 2)
      fail(node, fmt::format("attribute kernel_shape has {} values, expected 2 (a 2-D pool)", a_.kernel_shape.size()));
  }
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_rank4_q8(node, X);
    const int64_t N = X.dim(0), H = X.dim(1), W = X.dim(2), C = X.dim(3);
    const Window3 w = forward_window(node, a_, Shape{N, C, H, W}, a_.kernel_shape);
    const int64_t OH = w.out[1], OW = w.out[2];
    Tensor& Y = ctx.output(0, X.dtype(), Shape{N, OH, OW, C});
    if (Y.numel() == 0) return;
    run(ctx, X, Y, w);
  }

 private:
  // One output row (image, output row) a call of max_pool_nhwc_row.
  void run(KernelContext& ctx, const Tensor& X, Tensor& Y, const Window3& w) const {
    const int64_t H = X.dim(1), W = X.dim(2), C = X.dim(3), OH = w.out[1], OW = w.out[2];
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    auto* y = static_cast<uint8_t*>(Y.raw_mutable_data());
    const bool sign = X.dtype() == DataType::kInt8;
    static const auto row_fn = SPINDLE_ISA_SELECT(max_pool_nhwc_row);
    const double taps = static_cast<double>(std::min(w.k[1], H) * std::min(w.k[2], W));
    parallel_for(ctx.pool(), 0, X.dim(0) * OH, grain_for_cost(ops_cost(static_cast<double>(OW * C) * taps)),
                 [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        ::spindle::kernels::MaxPoolNhwcRow row;
        row.x = x + r / OH * H * W * C;
        row.y = y + r * OW * C;
        row.sign = sign;
        row.H = H, row.W = W, row.C = C, row.oh = r % OH, row.OW = OW;
        row.kh = w.k[1], row.kw = w.k[2], row.sh = w.s[1], row.sw = w.s[2];
        row.dh = w.d[1], row.dw = w.d[2], row.ph = w.pb[1], row.pw = w.pb[2];
        row_fn(row);
      }
    });
  }

  WindowAttrs a_;
};

// Y[..., j * group + i] = X[..., i * (C / group) + j] over the last axis C.
class ChannelShuffleNhwcKernel final : public OpKernel {
 public:
  explicit ChannelShuffleNhwcKernel(const NodeInfo& node) : group_(node.attrs.get_int("group", 0)) {
    if (group_ < 1) fail(node, fmt::format("attribute group is {}, expected at least 1", group_));
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    const size_t esize = dtype_size(X.dtype());
    if (X.rank() < 1 || (esize != 1 && esize != 4) || X.dim(-1) % group_ != 0)
      fail(ctx.node(), fmt::format("input X is {}, expected 1- or 4-byte elements, the last dimension a multiple of "
                                   "group {}", X.describe(), group_));
    Tensor& Y = ctx.output(0, X.dtype(), X.shape());
    if (Y.numel() == 0) return;
    // Each row [group][C / group] transposed to [C / group][group].
    const int64_t C = X.dim(-1), rows = X.numel() / C;
    if (group_ == 2 && esize == 4) return interleave<uint32_t>(ctx, X, Y, rows, C / 2);
    if (group_ == 2) return interleave_bytes(ctx, X, Y, rows, C / 2);
    if (esize == 4)
      transpose_elems(ctx.pool(), static_cast<const uint32_t*>(X.raw_data()), static_cast<uint32_t*>(Y.raw_mutable_data()),
                      rows, group_, C / group_);
    else
      transpose_bytes(ctx.pool(), static_cast<const uint8_t*>(X.raw_data()), static_cast<uint8_t*>(Y.raw_mutable_data()),
                      rows, group_, C / group_);
  }

 private:
  // Two groups: y = (a0, b0, a1, b1, ...) for a row x = (a, b) of 2 x h.
  template <class T>
  static void interleave(KernelContext& ctx, const Tensor& X, Tensor& Y, int64_t rows, int64_t h) {
    const T* x = static_cast<const T*>(X.raw_data());
    T* y = static_cast<T*>(Y.raw_mutable_data());
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(static_cast<double>(2 * h))), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const T* __restrict a = x + r * 2 * h;
        const T* __restrict b = a + h;
        T* __restrict d = y + r * 2 * h;
        for (int64_t j = 0; j < h; ++j) {
          d[2 * j] = a[j];
          d[2 * j + 1] = b[j];
        }
      }
    });
  }

  // The same for bytes: each row's two planes interleaved by the level's
  // vector loop (nhwc_bytes.h).
  static void interleave_bytes(KernelContext& ctx, const Tensor& X, Tensor& Y, int64_t rows, int64_t h) {
    static const auto fn = SPINDLE_ISA_SELECT(interleave_planes_u8);
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    auto* y = static_cast<uint8_t*>(Y.raw_mutable_data());
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(static_cast<double>(h) / 4)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) fn(x + r * 2 * h, y + r * 2 * h, 2, h, 0, h);
    });
  }

  int64_t group_;
};

// A Slice's one start / end / axis / step from a 1-element int32 / int64
// input, or nothing (absent input: `absent`; another form: nullopt).
std::optional<int64_t> one_int(const KernelContext& ctx, int i, std::optional<int64_t> absent = std::nullopt) {
  if (!ctx.has_input(i)) return absent;
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1) return std::nullopt;
  if (t.dtype() == DataType::kInt64) return t.data<int64_t>()[0];
  if (t.dtype() == DataType::kInt32) return t.data<int32_t>()[0];
  return std::nullopt;
}

// Outputs k = Slice(ChannelShuffleNhwc(X, group), inputs 1 + 4k .. 4 + 4k).
class ChannelShuffleSplitNhwcKernel final : public OpKernel {
 public:
  explicit ChannelShuffleSplitNhwcKernel(const NodeInfo& node) : group_(node.attrs.get_int("group", 0)) {
    if (group_ < 1) fail(node, fmt::format("attribute group is {}, expected at least 1", group_));
    if (node.num_outputs < 1 || node.num_inputs != 1 + 4 * node.num_outputs)
      fail(node, fmt::format("has {} inputs and {} outputs, expected X and four Slice inputs per output",
                             node.num_inputs, node.num_outputs));
  }
  void compute(KernelContext& ctx) const override {
    const Tensor& X = ctx.input(0);
    std::vector<std::pair<int64_t, int64_t>> runs;  // per output, its channels [s, e) of the shuffled X
    if (direct_runs(ctx, X, runs)) return write_runs(ctx, X, runs);
    // The two ops, with their own checks and messages.
    NodeInfo shuffle;
    shuffle.op_type = "ChannelShuffleNhwc";
    shuffle.domain = "spindle";
    shuffle.opset = 1;
    shuffle.attrs.set("group", group_);
    shuffle.num_inputs = 1;
    const Tensor shuffled = run_kernel_once(shuffle, {X}, ctx.pool())[0];
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      std::vector<Tensor> in{shuffled};
      for (int j = 1; j <= 4; ++j)
        if (ctx.has_input(4 * k + j)) in.push_back(ctx.input(4 * k + j));
        else if (j < 4) fail(ctx.node(), fmt::format("input {} (a Slice's {}) is required", 4 * k + j, j == 1 ? "starts" : j == 2 ? "ends" : "axes"));
      ctx.set_output(k, std::move(run_kernel_once("Slice", 13, {}, std::move(in), 1, ctx.pool())[0]));
    }
  }

 private:
  // Whether every output is a run of whole groups of X's bytes' shuffled
  // channels (one axis, the last; step 1; bounds at multiples of group
  // after Slice's clamping), and those runs.
  bool direct_runs(const KernelContext& ctx, const Tensor& X, std::vector<std::pair<int64_t, int64_t>>& runs) const {
    if (dtype_size(X.dtype()) != 1 || X.rank() < 1 || group_ < 2 || group_ > 4 || X.dim(-1) % group_ != 0) return false;
    const int64_t C = X.dim(-1), rank = X.rank();
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      const auto start = one_int(ctx, 4 * k + 1), end = one_int(ctx, 4 * k + 2), axis = one_int(ctx, 4 * k + 3),
                 step = one_int(ctx, 4 * k + 4, 1);
      if (!start || !end || !axis || step != 1 || (*axis != rank - 1 && *axis != -1)) return false;
      const auto clamp = [C](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + C : v, 0, C); };
      const int64_t s = clamp(*start), e = std::max(s, clamp(*end));
      if (s % group_ != 0 || e % group_ != 0) return false;
      runs.emplace_back(s, e);
    }
    return true;
  }

  // Shuffled channel s + j * g + i is X's channel i * (C / g) + s / g + j:
  // each output row interleaves g runs of X's row.
  void write_runs(KernelContext& ctx, const Tensor& X, const std::vector<std::pair<int64_t, int64_t>>& runs) const {
    static const auto fn = SPINDLE_ISA_SELECT(interleave_planes_u8);
    const int64_t C = X.dim(-1), rows = C > 0 ? X.numel() / C : 0;
    std::vector<uint8_t*> ys;
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      Shape shape = X.shape();
      shape.back() = runs[static_cast<size_t>(k)].second - runs[static_cast<size_t>(k)].first;
      ys.push_back(static_cast<uint8_t*>(ctx.output(k, X.dtype(), shape).raw_mutable_data()));
    }
    if (rows == 0) return;
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    const int64_t g = group_, cols = C / g;
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(static_cast<double>(C) / 4)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (size_t k = 0; k < runs.size(); ++k) {
          const auto [s, e] = runs[k];
          if (e > s) fn(x + r * C + s / g, ys[k] + r * (e - s), g, cols, 0, (e - s) / g);
        }
    });
  }

  int64_t group_;
};

class LookupKernel final : public OpKernel {
 public:
  explicit LookupKernel(const NodeInfo&) {}
  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const Tensor& table = ctx.input(1);
    if (X.dtype() != DataType::kUInt8 && X.dtype() != DataType::kInt8)
      fail(node, fmt::format("input X is {}, expected an int8 or uint8 tensor", X.describe()));
    if ((table.dtype() != DataType::kUInt8 && table.dtype() != DataType::kInt8) || table.numel() != 256)
      fail(node, fmt::format("input table is {}, expected 256 int8 or uint8 values", table.describe()));
    Tensor& Y = ctx.output(0, table.dtype(), X.shape());
    const int64_t n = X.numel();
    if (n == 0) return;
    const auto* x = static_cast<const uint8_t*>(X.raw_data());
    const auto* t = static_cast<const uint8_t*>(table.raw_data());
    auto* y = static_cast<uint8_t*>(Y.raw_mutable_data());
    static const auto lookup_fn = SPINDLE_ISA_SELECT(lookup_bytes);
    parallel_for(ctx.pool(), 0, n, grain_for_cost(ops_cost(1.0)),
                 [&](int64_t i0, int64_t i1) { lookup_fn(x + i0, y + i0, i1 - i0, t); });
  }
};

}  // namespace

void register_nhwc(KernelRegistry& r) {
  r.add("spindle", "ToNhwc", 1, 1, factory_of<NhwcReorderKernel<true>>());
  r.add("spindle", "FromNhwc", 1, 1, factory_of<NhwcReorderKernel<false>>());
  r.add("spindle", "MaxPoolNhwc", 1, 1, factory_of<MaxPoolNhwcKernel>());
  r.add("spindle", "ChannelShuffleNhwc", 1, 1, factory_of<ChannelShuffleNhwcKernel>());
  r.add("spindle", "ChannelShuffleSplitNhwc", 1, 1, factory_of<ChannelShuffleSplitNhwcKernel>());
  r.add("spindle", "QLinearLookup", 1, 1, factory_of<LookupKernel>());
  register_qlinear_gate(r);
}

}  // namespace spindle::kernels::nn
