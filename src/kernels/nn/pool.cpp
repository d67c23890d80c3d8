// pool.cpp — MaxPool (1..17, optional Indices output, float32 / int8 /
// uint8), AveragePool (1..23, count_include_pad, ceil_mode, dilations), LpPool (1..23),
// GlobalAveragePool, GlobalMaxPool, GlobalLpPool (1..17).
//
// Windows are described per spatial dim and output coordinate by the range of
// kernel taps that fall inside the input ([klo, khi)) and, for
// count_include_pad, inside the padded input. Planes (n, c) are independent
// blocks for parallel_for; each output is computed by one block.
//
// NaN: MaxPool and GlobalMaxPool skip NaN taps and give NaN only when every
// tap of the window is NaN (C's fmax). ONNX Runtime gives NaN for all-NaN
// windows too; for mixed windows its result depends on where the NaN sits
// (MLAS's SIMD max), which spindle does not imitate (docs/nan-and-overflow.md).
//
// Float MaxPool (without Indices) and AveragePool over 2-D planes without
// dilations, every window holding at least one input element, take a fast
// path: output row by output row, vectors of output columns with each
// window's taps folded in registers (pool_row.isa.cpp; stride 2 picks the
// even elements of contiguous loads).
// The taps are combined in the same order as the generic path (rows in order,
// columns in order within a row, a strict > keeping the first of equal
// values), so the results are bitwise the same, NaN and signed zeros
// included. Columns whose window is clipped by the padding fold their taps
// one at a time by the same rule.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"
#include "primitives/isa/dispatch.h"
#include "primitives/pool/pool_row.h"

namespace spindle::kernels::nn {

namespace {

enum class PoolKind { kMax, kAverage, kLp };

// Tap ranges of one spatial dim, for each output coordinate.
struct DimTaps {
  std::vector<int64_t> start;  // input index of tap 0 (may be negative)
  std::vector<int64_t> lo, hi;  // taps [lo, hi) land inside the input
  std::vector<int64_t> pad_count;  // taps inside the padded input
};

DimTaps dim_taps(const Window3& w, int j) {
  DimTaps t;
  const int64_t n = w.out[j];
  t.start.resize(static_cast<size_t>(n));
  t.lo.resize(static_cast<size_t>(n));
  t.hi.resize(static_cast<size_t>(n));
  t.pad_count.resize(static_cast<size_t>(n));
  // Taps [lo, hi): the k in [0, K) with lo_bound <= s + k * d <= hi_bound,
  // computed from the bounds (a model's kernel may be 2^30 taps long).
  const int64_t K = w.k[j], d = w.d[j];
  auto taps_in = [K, d](int64_t s, int64_t lo_bound, int64_t hi_bound, int64_t& lo, int64_t& hi) {
    lo = s >= lo_bound ? 0 : std::min(K, ceil_div(lo_bound - s, d));
    hi = hi_bound < s ? 0 : std::min(K, (hi_bound - s) / d + 1);
    hi = std::max(hi, lo);
  };
  for (int64_t o = 0; o < n; ++o) {
    const int64_t s = o * w.s[j] - w.pb[j];
    int64_t lo, hi, plo, phi;
    taps_in(s, 0, w.in[j] - 1, lo, hi);
    taps_in(s, -w.pb[j], w.in[j] + w.pe[j] - 1, plo, phi);
    const size_t i = static_cast<size_t>(o);
    t.start[i] = s;
    t.lo[i] = lo;
    t.hi[i] = hi;
    t.pad_count[i] = phi - plo;
  }
  return t;
}

struct PoolAttrs {
  PoolKind kind;
  WindowAttrs window;
  bool count_include_pad = false;
  float p = 2.0f;
  int64_t storage_order = 0;
};

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const NodeInfo& node, PoolKind kind) {
    a_.kind = kind;
    // dilations: MaxPool 10, AveragePool 19, LpPool 18; ceil_mode: MaxPool and
    // AveragePool 10, LpPool 18.
    const bool dil = (kind == PoolKind::kMax && node.opset >= 10) || (kind == PoolKind::kAverage && node.opset >= 19) ||
                     (kind == PoolKind::kLp && node.opset >= 18);
    const bool ceil_mode = kind != PoolKind::kLp ? node.opset >= 10 : node.opset >= 18;
    a_.window = WindowAttrs::parse(node, dil, ceil_mode);
    a_.window.clipped_windows = true;
    if (a_.window.kernel_shape.empty()) fail(node, "attribute kernel_shape is required");
    a_.count_include_pad = kind == PoolKind::kAverage && node.attrs.get_int("count_include_pad", 0) != 0;
    if (kind == PoolKind::kLp) a_.p = node.attrs.get_float("p", 2.0f);
    if (kind == PoolKind::kMax) {
      a_.storage_order = node.attrs.get_int("storage_order", 0);
      if (a_.storage_order != 0 && a_.storage_order != 1)
        fail(node, fmt::format("attribute storage_order is {}, expected 0 or 1", a_.storage_order));
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    const bool want_indices = ctx.num_outputs() > 1;
    if (a_.kind != PoolKind::kMax || X.dtype() == DataType::kFloat32) require_float(node, X, "X");
    else if (X.dtype() != DataType::kInt8 && X.dtype() != DataType::kUInt8)
      fail(node, fmt::format("input X is {}, expected float32, int8 or uint8", X.describe()));
    const Window3 w = forward_window(node, a_.window, X.shape(), a_.window.kernel_shape);
    Shape ys = {X.dim(0), X.dim(1)};
    for (int i = 0; i < w.nd; ++i) ys.push_back(w.out[3 - w.nd + i]);
    Tensor& Y = ctx.output(0, X.dtype(), ys);
    int64_t* idx = nullptr;
    if (want_indices) idx = ctx.output(1, DataType::kInt64, ys).mutable_data<int64_t>();
    if (Y.numel() == 0) return;
    const DimTaps t[3] = {dim_taps(w, 0), dim_taps(w, 1), dim_taps(w, 2)};
    const int64_t planes = X.dim(0) * X.dim(1);
    // Work per plane: at most the taps that land in the input, per output
    // (in doubles: a model's kernel_shape may multiply past int64).
    double taps = 1;
    for (int j = 0; j < 3; ++j) taps *= static_cast<double>(std::min(w.k[j], w.in[j]));
    const int64_t grain = grain_for_cost(ops_cost(static_cast<double>(w.out_size()) * taps));
    switch (X.dtype()) {
      case DataType::kInt8: run<int8_t>(ctx, X, Y, idx, w, t, planes, grain); break;
      case DataType::kUInt8: run<uint8_t>(ctx, X, Y, idx, w, t, planes, grain); break;
      default: run<float>(ctx, X, Y, idx, w, t, planes, grain); break;
    }
  }

 private:
  template <class T>
  void run(KernelContext& ctx, const Tensor& X, Tensor& Y, int64_t* idx, const Window3& w, const DimTaps* t,
           int64_t planes, int64_t grain) const {
    const T* x = X.data<T>();
    T* y = Y.mutable_data<T>();
    const bool fast = std::is_same_v<T, float> && !idx && fast_2d(w, t);
    parallel_for(ctx.pool(), 0, planes, grain, [&](int64_t p0, int64_t p1) {
      float* acc = fast ? nullptr : scratch_floats(0, static_cast<size_t>(w.out[2]));
      for (int64_t p = p0; p < p1; ++p) {
        if constexpr (std::is_same_v<T, float>) {
          if (fast) {
            fast_plane_2d(x + p * w.in_size(), y + p * w.out_size(), w, t);
            continue;
          }
        }
        if (idx) plane_with_indices<T>(x + p * w.in_size(), y + p * w.out_size(), idx + p * w.out_size(),
                                       p * w.in_size(), w, t);
        else plane<T>(x + p * w.in_size(), y + p * w.out_size(), acc, w, t);
      }
    });
  }

  // MaxPool's tap combination: the first number replaces a NaN, later NaNs
  // are skipped, a later value replaces the maximum only when greater.
  static float max_tap(float acc, float v) { return (v > acc || acc != acc) ? v : acc; }

  // Whether the fast float path applies: MaxPool or AveragePool over 2-D (or
  // 1-D) windows without dilation, each holding at least one input element.
  bool fast_2d(const Window3& w, const DimTaps* t) const {
    if (a_.kind == PoolKind::kLp || w.in[0] != 1 || w.k[0] != 1 || w.out[0] != 1 || w.d[1] != 1 || w.d[2] != 1)
      return false;
    for (int j = 1; j < 3; ++j)
      for (size_t o = 0; o < t[j].lo.size(); ++o)
        if (t[j].hi[o] <= t[j].lo[o]) return false;
    return true;
  }

  // One plane on the fast path (see the file comment): output row by output
  // row, the columns whose taps all lie inside the row by pool_row
  // (pool_row.isa.cpp), the clipped ones one tap at a time by the same rule.
  void fast_plane_2d(const float* x, float* y, const Window3& w, const DimTaps* t) const {
    const int64_t W = w.in[2], OW = w.out[2], KW = w.k[2], sw = w.s[2], pl = w.pb[2];
    const bool avg = a_.kind == PoolKind::kAverage;
    // Output columns [c0, c1) have every horizontal tap inside the row.
    int64_t c0 = 0, c1 = OW;
    while (c0 < OW && (t[2].lo[static_cast<size_t>(c0)] != 0 || t[2].hi[static_cast<size_t>(c0)] != KW)) ++c0;
    while (c1 > c0 && (t[2].lo[static_cast<size_t>(c1 - 1)] != 0 || t[2].hi[static_cast<size_t>(c1 - 1)] != KW)) --c1;
    static const auto row_fn = SPINDLE_ISA_SELECT(pool_row);
    for (int64_t oh = 0; oh < w.out[1]; ++oh, y += OW) {
      const size_t b = static_cast<size_t>(oh);
      const int64_t r0 = t[1].start[b] + t[1].lo[b], r1 = t[1].start[b] + t[1].hi[b];
      // The divisor of an average: taps inside the input, or inside the
      // padded input with count_include_pad (0: maximum).
      const int64_t rows = a_.count_include_pad ? t[1].pad_count[b] : r1 - r0;
      if (c0 < c1)
        row_fn({.y = y, .x = x, .W = W, .r0 = r0, .r1 = r1, .c0 = c0, .c1 = c1, .KW = KW, .sw = sw, .pl = pl,
                .divisor = avg ? static_cast<float>(rows * KW) : 0.0f});
      for (int64_t ow = 0; ow < OW; ++ow) {
        if (ow == c0) ow = c1;
        if (ow >= OW) break;
        const size_t c = static_cast<size_t>(ow);
        // Columns [k0, k1) of the window start at x[start + k0]; start alone
        // may be far outside the row (a model's padding of 2^62), so the
        // index is formed before the pointer.
        const int64_t start = t[2].start[c], k0 = start + t[2].lo[c], k1 = start + t[2].hi[c];
        float m = avg ? 0.0f : -std::numeric_limits<float>::infinity();
        // A maximum folds with v > m ? v : m from -inf: one max instruction
        // per tap, where max_tap's branches mispredict on about every other
        // tap of real data (ResNet-50's 3x3 / 2 MaxPool spent a third of its
        // 0.31 ms in its first column). It skips NaN taps and keeps the
        // first of equal values as max_tap does; a window that stays at -inf
        // (every tap NaN or -inf) is folded again by max_tap for its bits.
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t k = k0; k < k1; ++k) {
            const float v = x[r * W + k];
            m = avg ? m + v : v > m ? v : m;
          }
        if (!avg && m == -std::numeric_limits<float>::infinity()) {
          m = std::numeric_limits<float>::quiet_NaN();
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t k = k0; k < k1; ++k) m = max_tap(m, x[r * W + k]);
        }
        const int64_t cols = a_.count_include_pad ? t[2].pad_count[c] : t[2].hi[c] - t[2].lo[c];
        y[ow] = avg ? m / static_cast<float>(rows * cols) : m;
      }
    }
  }

  // acc[ow] op= row[ow * S + off] for ow in [a, b); S is 1, 2 or 0 (= s).
  template <int S, class T>
  void accumulate_row(float* acc, const T* row, int64_t off, int64_t s, int64_t a, int64_t b) const {
    const int64_t st = S > 0 ? S : s;
    switch (a_.kind) {
      case PoolKind::kMax:
        // acc starts as NaN: the first number replaces it, later NaNs are
        // skipped; a window of NaNs only stays NaN (see the file comment).
        for (int64_t o = a; o < b; ++o) {
          const float v = static_cast<float>(row[o * st + off]);
          acc[o] = (v > acc[o] || acc[o] != acc[o]) ? v : acc[o];
        }
        break;
      case PoolKind::kAverage:
        for (int64_t o = a; o < b; ++o) acc[o] += static_cast<float>(row[o * st + off]);
        break;
      case PoolKind::kLp:
        if (a_.p == 2.0f) {
          for (int64_t o = a; o < b; ++o) {
            const float v = static_cast<float>(row[o * st + off]);
            acc[o] += v * v;
          }
        } else if (a_.p == 1.0f) {
          for (int64_t o = a; o < b; ++o) acc[o] += std::fabs(static_cast<float>(row[o * st + off]));
        } else {
          for (int64_t o = a; o < b; ++o) acc[o] += std::pow(std::fabs(static_cast<float>(row[o * st + off])), a_.p);
        }
        break;
    }
  }

  // One plane, output row by output row: every valid tap row of the window
  // is folded into a row accumulator with a contiguous (stride 1) or
  // regularly strided loop over the output columns. (Max over int8 / uint8
  // is exact in float.)
  template <class T>
  void plane(const T* x, T* y, float* acc, const Window3& w, const DimTaps* t) const {
    const int64_t H = w.in[1], W = w.in[2], OW = w.out[2], s2 = w.s[2];
    const float init = a_.kind == PoolKind::kMax ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
    // Taps k2 that land inside the row for some output column: k2 * d2 - pb
    // <= W - 1 and (OW - 1) * s2 + k2 * d2 - pb >= 0 (the rest add nothing).
    const int64_t d2 = w.d[2], k2_hi = std::clamp<int64_t>((W - 1 + w.pb[2]) / d2 + 1, 0, w.k[2]);
    const int64_t first = w.pb[2] - (OW - 1) * s2;
    const int64_t k2_lo = std::min(k2_hi, first <= 0 ? int64_t{0} : ceil_div(first, d2));
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh, y += OW) {
        const size_t a = static_cast<size_t>(od), b = static_cast<size_t>(oh);
        std::fill(acc, acc + OW, init);
        for (int64_t k0 = t[0].lo[a]; k0 < t[0].hi[a]; ++k0) {
          const int64_t id = t[0].start[a] + k0 * w.d[0];
          for (int64_t k1 = t[1].lo[b]; k1 < t[1].hi[b]; ++k1) {
            const int64_t ih = t[1].start[b] + k1 * w.d[1];
            const T* row = x + (id * H + ih) * W;
            for (int64_t k2 = k2_lo; k2 < k2_hi; ++k2) {
              // Output columns whose tap k2 lands inside [0, W).
              const int64_t off = k2 * w.d[2] - w.pb[2];
              const int64_t lo = off >= 0 ? 0 : ceil_div(-off, s2);
              const int64_t hi = W - 1 - off < 0 ? 0 : std::min(OW, (W - 1 - off) / s2 + 1);
              if (s2 == 1) accumulate_row<1>(acc, row, off, s2, lo, hi);
              else if (s2 == 2) accumulate_row<2>(acc, row, off, s2, lo, hi);
              else accumulate_row<0>(acc, row, off, s2, lo, hi);
            }
          }
        }
        const int64_t rows = (t[0].hi[a] - t[0].lo[a]) * (t[1].hi[b] - t[1].lo[b]);
        switch (a_.kind) {
          case PoolKind::kMax:
            for (int64_t ow = 0; ow < OW; ++ow)
              y[ow] = rows * (t[2].hi[static_cast<size_t>(ow)] - t[2].lo[static_cast<size_t>(ow)]) == 0
                          ? std::numeric_limits<T>::lowest()
                          : static_cast<T>(acc[ow]);
            break;
          case PoolKind::kAverage:
            for (int64_t ow = 0; ow < OW; ++ow) {
              const size_t c = static_cast<size_t>(ow);
              const int64_t count = a_.count_include_pad ? t[0].pad_count[a] * t[1].pad_count[b] * t[2].pad_count[c]
                                                         : rows * (t[2].hi[c] - t[2].lo[c]);
              y[ow] = static_cast<T>(count > 0 ? acc[ow] / static_cast<float>(count) : 0.0f);
            }
            break;
          case PoolKind::kLp:
            for (int64_t ow = 0; ow < OW; ++ow)
              y[ow] = static_cast<T>(a_.p == 2.0f ? std::sqrt(acc[ow]) : std::pow(acc[ow], 1.0f / a_.p));
            break;
        }
      }
  }

  // MaxPool with the Indices output: one window at a time, first maximum wins.
  template <class T>
  void plane_with_indices(const T* x, T* y, int64_t* idx, int64_t base, const Window3& w, const DimTaps* t) const {
    const int64_t D = w.in[0], H = w.in[1], W = w.in[2];
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        for (int64_t ow = 0; ow < w.out[2]; ++ow, ++y, ++idx) {
          const size_t a = static_cast<size_t>(od), b = static_cast<size_t>(oh), c = static_cast<size_t>(ow);
          T best = std::numeric_limits<T>::lowest();
          int64_t best_at = -1;
          for (int64_t k0 = t[0].lo[a]; k0 < t[0].hi[a]; ++k0) {
            const int64_t id = t[0].start[a] + k0 * w.d[0];
            for (int64_t k1 = t[1].lo[b]; k1 < t[1].hi[b]; ++k1) {
              const int64_t ih = t[1].start[b] + k1 * w.d[1];
              const T* row = x + (id * H + ih) * W;
              for (int64_t k2 = t[2].lo[c]; k2 < t[2].hi[c]; ++k2) {
                const int64_t iw = t[2].start[c] + k2 * w.d[2];
                if (row[iw] > best || best_at < 0 || (best != best && row[iw] == row[iw])) {
                  best = row[iw];
                  best_at = a_.storage_order == 0 ? (id * H + ih) * W + iw : (iw * H + ih) * D + id;
                }
              }
            }
          }
          *y = best;
          *idx = base + std::max<int64_t>(best_at, 0);
        }
  }

  PoolAttrs a_;
};

class GlobalPoolKernel final : public OpKernel {
 public:
  GlobalPoolKernel(const NodeInfo& node, PoolKind kind) : kind_(kind) {
    if (kind == PoolKind::kLp) p_ = node.attrs.get_float("p", 2.0f);
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    if (X.rank() < 3)
      fail(node, fmt::format("input X has shape {}, expected rank >= 3 (N x C x spatial...)", shape_to_string(X.shape())));
    Shape ys(X.shape().size(), 1);
    ys[0] = X.dim(0);
    ys[1] = X.dim(1);
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    const int64_t planes = X.dim(0) * X.dim(1);
    const int64_t n = planes == 0 ? 0 : X.numel() / planes;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    if (planes == 0) return;
    if (n == 0) fail(node, fmt::format("input X has shape {} with an empty spatial extent", shape_to_string(X.shape())));
    parallel_for(ctx.pool(), 0, planes, grain_for_cost(ops_cost(static_cast<double>(n))), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const float* v = x + p * n;
        if (kind_ == PoolKind::kMax) {
          float m = v[0];
          for (int64_t i = 1; i < n; ++i) m = (v[i] > m || m != m) ? v[i] : m;  // NaN only if all are
          y[p] = m;
        } else if (kind_ == PoolKind::kAverage) {
          // Eight partial sums (a fixed order) let the loop vectorize.
          float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          int64_t i = 0;
          for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) acc[k] += v[i + k];
          float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
          for (; i < n; ++i) s += v[i];
          y[p] = s / static_cast<float>(n);
        } else {
          float s = 0.0f;
          for (int64_t i = 0; i < n; ++i) s += std::pow(std::fabs(v[i]), p_);
          y[p] = std::pow(s, 1.0f / p_);
        }
      }
    });
  }

 private:
  PoolKind kind_;
  float p_ = 2.0f;
};

template <PoolKind K>
std::unique_ptr<OpKernel> make_pool(const NodeInfo& node) {
  return std::make_unique<PoolKernel>(node, K);
}
template <PoolKind K>
std::unique_ptr<OpKernel> make_global_pool(const NodeInfo& node) {
  return std::make_unique<GlobalPoolKernel>(node, K);
}

}  // namespace

void register_pool(KernelRegistry& r) {
  // MaxPool: 1, 8 (storage_order, Indices), 10 (dilations, ceil_mode), 11, 12 (int8/uint8).
  r.add("", "MaxPool", 1, 17, make_pool<PoolKind::kMax>);
  // AveragePool: 1, 7 (count_include_pad), 10 (ceil_mode), 11, 19 (dilations).
  r.add("", "AveragePool", 1, kMaxOpset, make_pool<PoolKind::kAverage>);
  // LpPool: 1 (float p), 2 (int p), 11 (pads semantics), 18 (ceil_mode, dilations).
  r.add("", "LpPool", 1, kMaxOpset, make_pool<PoolKind::kLp>);
  r.add("", "GlobalAveragePool", 1, 17, make_global_pool<PoolKind::kAverage>);
  r.add("", "GlobalMaxPool", 1, 17, make_global_pool<PoolKind::kMax>);
  r.add("", "GlobalLpPool", 1, 17, make_global_pool<PoolKind::kLp>);
}

}  // namespace spindle::kernels::nn
