// resize.cpp — Resize (ai.onnx 10, 11, 13, 18, 19; registered for 10..23) and
// Upsample (7..9), N-d, modes nearest / linear / cubic, every
// coordinate_transformation_mode of opset 19 (half_pixel_symmetric), scales
// or sizes, roi for tf_crop_and_resize, exclude_outside
// and extrapolation_value; from 18, `axes`, keep_aspect_ratio_policy and
// antialias (linear and cubic filters widened by 1 / scale on shrinking axes).
//
// Each axis gets a table: for every output coordinate, T input taps (offset
// already multiplied by the axis stride) and their weights (T = 1 for
// nearest and for axes that map exactly onto input samples, 2 for linear, 4
// for cubic, 2 * ceil(support) + 1 for antialias). An output row (all axes but the last fixed) combines the outer
// axes' taps once, then runs over the last axis. Rows are the parallel_for
// items; each output is computed by one block in a fixed order.
//
// Opset 10 Resize and Upsample use the asymmetric transform; their nearest
// rounding is floor when enlarging and ceil when shrinking (ONNX Runtime's
// "simple" mode).
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"

namespace spindle::kernels::nn {

namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Coord { kHalfPixel, kHalfPixelSymmetric, kAsymmetric, kAlignCorners, kPytorchHalfPixel, kTfHalfPixelForNearest, kTfCropAndResize };
enum class Rounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

struct AxisTable {
  int taps = 1;
  std::vector<int64_t> off;   // out * taps input offsets (times the axis stride)
  std::vector<float> weight;  // out * taps
  std::vector<uint8_t> extrapolate;  // out: 1 when the coordinate is outside the roi'd input
  bool any_extrapolate = false;
};

std::array<float, 4> cubic_coeffs(double r, double A) {
  const double a = 1 + r, b = r, c = 1 - r, d = 2 - r;
  return {static_cast<float>(((A * a - 5 * A) * a + 8 * A) * a - 4 * A),
          static_cast<float>(((A + 2) * b - (A + 3)) * b * b + 1),
          static_cast<float>(((A + 2) * c - (A + 3)) * c * c + 1),
          static_cast<float>(((A * d - 5 * A) * d + 8 * A) * d - 4 * A)};
}

class ResizeKernel final : public OpKernel {
 public:
  ResizeKernel(const NodeInfo& node, bool upsample) : upsample_(upsample), opset_(node.opset) {
    const std::string mode = node.attrs.get_string("mode", "nearest");
    if (mode == "nearest") mode_ = Mode::kNearest;
    else if (mode == "linear" || mode == "bilinear") mode_ = Mode::kLinear;
    else if (mode == "cubic" && !upsample) mode_ = Mode::kCubic;
    else fail(node, fmt::format("attribute mode is '{}', expected nearest, linear{}", mode, upsample ? "" : " or cubic"));
    const bool legacy = upsample || node.opset < 11;
    if (legacy) {
      coord_ = Coord::kAsymmetric;
      rounding_ = Rounding::kSimple;
    } else {
      const std::string c = node.attrs.get_string("coordinate_transformation_mode", "half_pixel");
      if (c == "half_pixel") coord_ = Coord::kHalfPixel;
      else if (c == "half_pixel_symmetric" && node.opset >= 19) coord_ = Coord::kHalfPixelSymmetric;
      else if (c == "asymmetric") coord_ = Coord::kAsymmetric;
      else if (c == "align_corners") coord_ = Coord::kAlignCorners;
      else if (c == "pytorch_half_pixel") coord_ = Coord::kPytorchHalfPixel;
      // "tf_half_pixel_for_nn" is the spelling of early opset-11 models.
      else if (c == "tf_half_pixel_for_nearest" || c == "tf_half_pixel_for_nn") coord_ = Coord::kTfHalfPixelForNearest;
      else if (c == "tf_crop_and_resize") coord_ = Coord::kTfCropAndResize;
      else fail(node, fmt::format("attribute coordinate_transformation_mode '{}' is not supported", c));
      const std::string n = node.attrs.get_string("nearest_mode", "round_prefer_floor");
      if (n == "round_prefer_floor") rounding_ = Rounding::kRoundPreferFloor;
      else if (n == "round_prefer_ceil") rounding_ = Rounding::kRoundPreferCeil;
      else if (n == "floor") rounding_ = Rounding::kFloor;
      else if (n == "ceil") rounding_ = Rounding::kCeil;
      else fail(node, fmt::format("attribute nearest_mode '{}' is not supported", n));
      cubic_a_ = node.attrs.get_float("cubic_coeff_a", -0.75f);
      exclude_outside_ = node.attrs.get_int("exclude_outside", 0) != 0;
      extrapolation_ = node.attrs.get_float("extrapolation_value", 0.0f);
    }
    if (upsample && node.opset < 9) {
      scales_attr_ = node.attrs.get_floats("scales");
    }
    if (!upsample && node.opset >= 18) {
      const int64_t antialias = node.attrs.get_int("antialias", 0);
      if (antialias != 0 && antialias != 1)
        fail(node, fmt::format("attribute antialias is {}, expected 0 or 1", antialias));
      antialias_ = antialias == 1 && mode_ != Mode::kNearest;
      axes_ = node.attrs.get_ints("axes", {});
      const std::string policy = node.attrs.get_string("keep_aspect_ratio_policy", "stretch");
      if (policy == "stretch") policy_ = Policy::kStretch;
      else if (policy == "not_larger") policy_ = Policy::kNotLarger;
      else if (policy == "not_smaller") policy_ = Policy::kNotSmaller;
      else
        fail(node, fmt::format("attribute keep_aspect_ratio_policy is '{}', expected stretch, not_larger or "
                               "not_smaller", policy));
    }
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& X = ctx.input(0);
    require_float(node, X, "X");
    const size_t rank = static_cast<size_t>(X.rank());
    const Shape& xs = X.shape();
    std::vector<double> scales(rank, 1.0);
    Shape ys(rank);
    std::vector<float> roi;
    const bool from_sizes = resolve_output(ctx, xs, scales, ys, roi);
    Tensor& Y = ctx.output(0, DataType::kFloat32, ys);
    if (Y.numel() == 0) return;
    if (X.numel() == 0) fail(node, fmt::format("input X {} is empty but the output {} is not", X.describe(), shape_to_string(ys)));
    if (rank == 0) {
      Y.mutable_data<float>()[0] = X.data<float>()[0];
      return;
    }
    const Shape strides = contiguous_strides(xs);
    std::vector<AxisTable> tables(rank);
    for (size_t i = 0; i < rank; ++i)
      tables[i] = axis_table(node, i, xs[i], ys[i],
                             // antialias=1 maps onto the integer output size, as ONNX Runtime does.
                             from_sizes || antialias_ ? static_cast<double>(ys[i])
                                                      : static_cast<double>(xs[i]) * scales[i],
                             scales[i], strides[i], roi.empty() ? 0.0f : roi[i], roi.empty() ? 1.0f : roi[rank + i]);
    run(ctx, X, Y, tables);
  }

 private:
  // Fills scales, the output shape and roi; returns true when sizes were given.
  bool resolve_output(KernelContext& ctx, const Shape& xs, std::vector<double>& scales, Shape& ys,
                      std::vector<float>& roi) const {
    const NodeInfo& node = ctx.node();
    const size_t rank = xs.size();
    std::vector<float> sc;
    std::vector<int64_t> sizes;
    if (upsample_ && opset_ < 9) {
      sc = scales_attr_;
    } else if (upsample_ || opset_ < 11) {
      const Tensor& s = ctx.input(1);
      require_float(node, s, "scales");
      sc = s.to_vector<float>();
    } else {
      if (ctx.has_input(1) && ctx.input(1).numel() > 0) {
        require_float(node, ctx.input(1), "roi");
        roi = ctx.input(1).to_vector<float>();
      }
      if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
        require_float(node, ctx.input(2), "scales");
        sc = ctx.input(2).to_vector<float>();
      }
      if (ctx.has_input(3) && ctx.input(3).numel() > 0) {
        if (!sc.empty()) fail(node, "only one of the inputs scales and sizes may be given");
        if (ctx.input(3).dtype() != DataType::kInt64)
          fail(node, fmt::format("input sizes is {}, expected int64", ctx.input(3).describe()));
        sizes = ctx.input(3).to_int64_vector();
      }
      if (sc.empty() && sizes.empty()) fail(node, "one of the inputs scales and sizes is required");
      if (!axes_.empty()) expand_to_axes(node, xs, sc, sizes, roi);
      if (coord_ != Coord::kTfCropAndResize) roi.clear();
      if (!roi.empty() && roi.size() != 2 * rank)
        fail(node, fmt::format("input roi has {} values, expected {} for input X of shape {}", roi.size(), 2 * rank,
                               shape_to_string(xs)));
    }
    if (!sizes.empty()) {
      if (sizes.size() != rank)
        fail(node, fmt::format("input sizes has {} values, expected {} for input X of shape {}", sizes.size(), rank,
                               shape_to_string(xs)));
      for (size_t i = 0; i < rank; ++i) {
        if (sizes[i] < 0) fail(node, fmt::format("input sizes has the negative value {}", sizes[i]));
        ys[i] = sizes[i];
        scales[i] = xs[i] == 0 ? 1.0 : static_cast<double>(static_cast<float>(sizes[i]) / static_cast<float>(xs[i]));
      }
      if (policy_ != Policy::kStretch) {
        // One scale for the resized axes, the smallest (not_larger) or the
        // largest (not_smaller) of sizes / input; sizes become round(scale * input).
        float scale = policy_ == Policy::kNotLarger ? std::numeric_limits<float>::max() : 0.0f;
        for (size_t i = 0; i < rank; ++i) {
          if (!resized_axis(i, rank)) continue;
          const float s = static_cast<float>(sizes[i]) / static_cast<float>(xs[i]);
          scale = policy_ == Policy::kNotLarger ? std::min(scale, s) : std::max(scale, s);
        }
        for (size_t i = 0; i < rank; ++i) {
          if (!resized_axis(i, rank)) continue;
          scales[i] = scale;
          ys[i] = static_cast<int64_t>(std::round(scale * static_cast<float>(xs[i])));
        }
      }
      return true;
    }
    if (sc.size() != rank)
      fail(node, fmt::format("scales has {} values, expected {} for input X of shape {}", sc.size(), rank,
                             shape_to_string(xs)));
    for (size_t i = 0; i < rank; ++i) {
      if (!(sc[i] > 0)) fail(node, fmt::format("scales has the non-positive value {}", sc[i]));
      scales[i] = sc[i];
      const double y = std::floor(static_cast<double>(xs[i]) * scales[i]);
      if (!(y < 9223372036854775808.0))
        fail(node, fmt::format("scales value {} makes dim {} of input X {} larger than a 64-bit size", sc[i], i,
                               shape_to_string(xs)));
      ys[i] = static_cast<int64_t>(y);
    }
    return false;
  }

  // `out` is the resized length as ONNX's reference uses it: in * scale when
  // scales are given (not floored), the size when sizes are given.
  double original_coordinate(int64_t o, int64_t in, double out, double scale, double roi_start, double roi_end) const {
    const double x = static_cast<double>(o);
    switch (coord_) {
      case Coord::kHalfPixel: return (x + 0.5) / scale - 0.5;
      case Coord::kHalfPixelSymmetric: {
        // Half-pixel about the center of the input, adjusted for the output
        // size having been rounded to an integer.
        const double target = static_cast<double>(in) * scale;
        const double adjustment = target > 0 ? std::floor(target) == target ? 1.0 : std::floor(target) / target : 1.0;
        const double offset = static_cast<double>(in) / 2 * (1 - adjustment);
        return offset + (x + 0.5) / scale - 0.5;
      }
      case Coord::kPytorchHalfPixel: return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
      case Coord::kAlignCorners: return out > 1 ? x * static_cast<double>(in - 1) / (out - 1) : 0.0;
      case Coord::kAsymmetric: return x / scale;
      case Coord::kTfHalfPixelForNearest: return (x + 0.5) / scale;
      case Coord::kTfCropAndResize:
        return out > 1 ? roi_start * static_cast<double>(in - 1) +
                             x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out - 1)
                       : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
    }
    return x;
  }

  static constexpr double kMaxCoordinate = 4.0e18;  // below 2^62, so every index conversion is defined

  int64_t round_nearest(double x, double scale) const {
    const double f = std::floor(x);
    switch (rounding_) {
      case Rounding::kFloor: return static_cast<int64_t>(f);
      case Rounding::kCeil: return static_cast<int64_t>(std::ceil(x));
      case Rounding::kSimple: return static_cast<int64_t>(scale < 1.0 ? std::ceil(x) : f);
      case Rounding::kRoundPreferFloor: return static_cast<int64_t>(x - f <= 0.5 ? f : f + 1);
      case Rounding::kRoundPreferCeil: return static_cast<int64_t>(x - f < 0.5 ? f : f + 1);
    }
    return static_cast<int64_t>(f);
  }

  AxisTable axis_table(const NodeInfo& node, size_t axis, int64_t in, int64_t out, double out_len, double scale,
                       int64_t stride, float roi_start, float roi_end) const {
    AxisTable t;
    const size_t n = static_cast<size_t>(out);
    t.extrapolate.assign(n, 0);
    std::vector<double> xo(n);
    bool exact = true;
    for (size_t o = 0; o < n; ++o) {
      xo[o] = original_coordinate(static_cast<int64_t>(o), in, out_len, scale, roi_start, roi_end);
      // Scales and roi come from the model: a NaN or huge coordinate would
      // be converted to an index below (fuzz_graph: NaN).
      if (!(std::fabs(xo[o]) <= kMaxCoordinate))
        fail(node, fmt::format("output {} on axis {} maps to input coordinate {}: scales and roi must give finite "
                               "coordinates", o, axis, xo[o]));
      if (coord_ == Coord::kTfCropAndResize && (xo[o] < 0 || xo[o] > static_cast<double>(in - 1))) {
        t.extrapolate[o] = 1;
        t.any_extrapolate = true;
      }
      if (xo[o] != std::floor(xo[o])) exact = false;
    }
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (antialias_) return antialias_table(t, xo, in, scale, stride);
    if (mode_ == Mode::kNearest || exact) {
      t.taps = 1;
      t.off.resize(n);
      t.weight.assign(n, 1.0f);
      for (size_t o = 0; o < n; ++o) {
        const int64_t i = mode_ == Mode::kNearest ? round_nearest(xo[o], scale) : static_cast<int64_t>(xo[o]);
        t.off[o] = clamp(i) * stride;
      }
      return t;
    }
    t.taps = mode_ == Mode::kLinear ? 2 : 4;
    const size_t T = static_cast<size_t>(t.taps);
    t.off.resize(n * T);
    t.weight.resize(n * T);
    for (size_t o = 0; o < n; ++o) {
      const double f = std::floor(xo[o]);
      const double r = xo[o] - f;
      const int64_t base = static_cast<int64_t>(f);
      if (mode_ == Mode::kLinear) {
        t.off[o * 2] = clamp(base) * stride;
        t.off[o * 2 + 1] = clamp(base + 1) * stride;
        t.weight[o * 2] = static_cast<float>(1.0 - r);
        t.weight[o * 2 + 1] = static_cast<float>(r);
        continue;
      }
      std::array<float, 4> c = cubic_coeffs(r, cubic_a_);
      if (exclude_outside_) {
        float sum = 0;
        for (int k = 0; k < 4; ++k) {
          const int64_t i = base - 1 + k;
          if (i < 0 || i >= in) c[static_cast<size_t>(k)] = 0.0f;
          sum += c[static_cast<size_t>(k)];
        }
        if (sum != 0.0f)
          for (float& v : c) v /= sum;
      }
      for (size_t k = 0; k < 4; ++k) {
        t.off[o * 4 + k] = clamp(base - 1 + static_cast<int64_t>(k)) * stride;
        t.weight[o * 4 + k] = c[k];
      }
    }
    return t;
  }

  // The filter of antialias=1: the triangle (linear) or the cubic
  // convolution kernel (cubic_coeff_a) as a function of the distance in
  // input samples.
  double filter(double x) const {
    x = std::fabs(x);
    if (mode_ == Mode::kLinear) return x < 1.0 ? 1.0 - x : 0.0;
    const double A = cubic_a_;
    if (x <= 1.0) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2.0) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0.0;
  }

  // antialias=1 (opset 18): when an axis shrinks (scale < 1), the filter is
  // stretched by 1 / scale so every input sample within its support
  // contributes; the support is 1 (linear) or 2 (cubic) input samples each
  // side when the axis does not shrink. For output o, centered at input
  // coordinate c (the coordinate transform; o itself when scale is 1), the
  // taps are the samples j with |j - c| < support, weighted
  // filter((j - c) * min(scale, 1)) and normalized to sum 1. Samples outside
  // the input are dropped with exclude_outside, otherwise their weight goes to
  // the nearest edge sample. Every output of the axis gets the same tap count
  // (unused taps weigh 0).
  AxisTable& antialias_table(AxisTable& t, const std::vector<double>& xo, int64_t in, double scale,
                             int64_t stride) const {
    const size_t n = xo.size();
    const double half = mode_ == Mode::kLinear ? 1.0 : 2.0;
    const double shrink = std::min(scale, 1.0);
    const double support = half / shrink;
    // A window of 2 * ceil(support) + 1 samples holds every tap.
    const size_t T = static_cast<size_t>(2 * std::ceil(support) + 1);
    t.taps = static_cast<int>(T);
    t.off.assign(n * T, 0);
    t.weight.assign(n * T, 0.0f);
    std::vector<double> w(T);
    for (size_t o = 0; o < n; ++o) {
      const double c = scale == 1.0 ? static_cast<double>(o) : xo[o];
      int64_t lo = static_cast<int64_t>(std::floor(c - support + 1.0));
      int64_t hi = static_cast<int64_t>(std::floor(c + support + 1.0));  // exclusive
      if (exclude_outside_) {
        lo = std::max<int64_t>(lo, 0);
        hi = std::min<int64_t>(hi, in);
      }
      hi = std::min<int64_t>(hi, lo + static_cast<int64_t>(T));
      double sum = 0.0;
      for (int64_t j = lo; j < hi; ++j) {
        w[static_cast<size_t>(j - lo)] = filter((static_cast<double>(j) - c) * shrink);
        sum += w[static_cast<size_t>(j - lo)];
      }
      const double inv = sum == 0.0 ? 1.0 : 1.0 / sum;
      for (int64_t j = lo; j < hi; ++j) {
        const size_t k = o * T + static_cast<size_t>(j - lo);
        t.off[k] = std::clamp<int64_t>(j, 0, in - 1) * stride;
        t.weight[k] = static_cast<float>(w[static_cast<size_t>(j - lo)] * inv);
      }
      // Unused taps read a used one (weight 0), never a sample of no tap.
      for (size_t k = static_cast<size_t>(std::max<int64_t>(hi - lo, 1)); k < T; ++k)
        t.off[o * T + k] = t.off[o * T];
    }
    return t;
  }

  // out[i * R + k] = src[i] for k < R.
  template <int R>
  static void replicate(const float* src, float* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      for (int k = 0; k < R; ++k) out[i * R + k] = src[i];
  }

  // out[j] = sum_c cw[c] * sum_k w[j, k] * x[coff[c] + off[j, k]]: the outer
  // axes' tap combinations c, then the last axis' T taps (kT when it is
  // fixed at compile time, 1, 2 or 4; else last.taps, for antialias=1).
  template <int kT>
  static void interpolate_row(const float* x, const int64_t* coff, const float* cw, size_t nc, const AxisTable& last,
                              float* out, int64_t inner) {
    const int64_t T = kT > 0 ? kT : last.taps;
    const int64_t* off = last.off.data();
    const float* wt = last.weight.data();
    for (int64_t j = 0; j < inner; ++j) {
      float acc = 0.0f;
      for (size_t c = 0; c < nc; ++c) {
        const float* src = x + coff[c];
        float s = 0.0f;
        for (int64_t k = 0; k < T; ++k) s += wt[j * T + k] * src[off[j * T + k]];
        acc += cw[c] * s;
      }
      out[j] = acc;
    }
  }

  // Taps between two checks of the run's cancel flag and deadline (a few ms).
  static constexpr double kTapsPerCheck = 1 << 20;

  void run(KernelContext& ctx, const Tensor& X, Tensor& Y, const std::vector<AxisTable>& tables) const {
    const size_t rank = tables.size();
    const Shape& ys = Y.shape();
    const int64_t inner = ys[rank - 1];
    const int64_t rows = Y.numel() / inner;
    const float* x = X.data<float>();
    float* y = Y.mutable_data<float>();
    const AxisTable& last = tables[rank - 1];
    int64_t outer_taps = 1;
    for (size_t i = 0; i + 1 < rank; ++i) outer_taps *= tables[i].taps;
    const double row_work = static_cast<double>(inner * last.taps * outer_taps) + 8.0;
    // Nearest upsampling of the last axis by an integer factor (out[j] =
    // in[j / repeat], the OCR detector's case): a replicating copy.
    int64_t repeat = 0;
    if (last.taps == 1 && !last.any_extrapolate && X.dim(-1) > 0 && inner % X.dim(-1) == 0 && inner > X.dim(-1)) {
      repeat = inner / X.dim(-1);
      for (int64_t j = 0; j < inner && repeat > 0; ++j)
        if (last.off[static_cast<size_t>(j)] != j / repeat) repeat = 0;
    }
    parallel_for(ctx.pool(), 0, rows, grain_for_cost(ops_cost(row_work)), [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> pos(rank > 0 ? rank - 1 : 0);
      std::vector<int64_t> coff(static_cast<size_t>(outer_taps));
      std::vector<float> cw(static_cast<size_t>(outer_taps));
      int64_t prev_off = -1;  // input offset of the previous all-nearest row
      // Position of row r0 in the outer axes.
      int64_t rem = r0;
      for (size_t i = rank - 1; i-- > 0;) {
        pos[i] = rem % ys[i];
        rem /= ys[i];
      }
      double work_since_check = 0.0;
      for (int64_t r = r0; r < r1; ++r) {
        // A resize of many interpolated axes costs 4^axes taps per output:
        // the run's cancel flag and deadline are checked every ~1M taps, so
        // RunOptions::terminate / timeout_ms stop it inside this node.
        work_since_check += row_work;
        if (work_since_check > kTapsPerCheck) {
          ctx.check_terminate();
          work_since_check = 0.0;
        }
        float* out = y + r * inner;
        // Combine the outer axes' taps.
        bool extrap = false;
        size_t nc = 1;
        coff[0] = 0;
        cw[0] = 1.0f;
        for (size_t i = 0; i + 1 < rank; ++i) {
          const AxisTable& t = tables[i];
          const size_t o = static_cast<size_t>(pos[i]);
          if (t.extrapolate[o]) extrap = true;
          const size_t T = static_cast<size_t>(t.taps);
          if (T == 1) {
            for (size_t c = 0; c < nc; ++c) coff[c] += t.off[o];
            continue;
          }
          for (size_t c = nc; c-- > 0;)
            for (size_t k = T; k-- > 0;) {
              coff[c * T + k] = coff[c] + t.off[o * T + k];
              cw[c * T + k] = cw[c] * t.weight[o * T + k];
            }
          nc *= T;
        }
        if (extrap) {
          std::fill(out, out + inner, extrapolation_);
        } else if (nc == 1 && last.taps == 1) {
          if (coff[0] == prev_off && r > r0) {
            std::memcpy(out, out - inner, static_cast<size_t>(inner) * sizeof(float));
          } else {
            const float* src = x + coff[0];
            if (repeat == 2) {
              replicate<2>(src, out, inner / 2);
            } else if (repeat == 4) {
              replicate<4>(src, out, inner / 4);
            } else if (repeat == 8) {
              replicate<8>(src, out, inner / 8);
            } else if (repeat > 0) {
              for (int64_t i = 0; i < inner / repeat; ++i)
                for (int64_t k = 0; k < repeat; ++k) out[i * repeat + k] = src[i];
            } else {
              for (int64_t j = 0; j < inner; ++j) out[j] = src[last.off[static_cast<size_t>(j)]];
            }
            if (last.any_extrapolate)
              for (int64_t j = 0; j < inner; ++j)
                if (last.extrapolate[static_cast<size_t>(j)]) out[j] = extrapolation_;
          }
          prev_off = coff[0];
        } else {
          switch (last.taps) {
            case 1: interpolate_row<1>(x, coff.data(), cw.data(), nc, last, out, inner); break;
            case 2: interpolate_row<2>(x, coff.data(), cw.data(), nc, last, out, inner); break;
            case 4: interpolate_row<4>(x, coff.data(), cw.data(), nc, last, out, inner); break;
            default: interpolate_row<0>(x, coff.data(), cw.data(), nc, last, out, inner); break;
          }
          if (last.any_extrapolate)
            for (int64_t j = 0; j < inner; ++j)
              if (last.extrapolate[static_cast<size_t>(j)]) out[j] = extrapolation_;
          prev_off = -1;
        }
        for (size_t i = rank - 1; i-- > 0;) {
          if (++pos[i] < ys[i]) break;
          pos[i] = 0;
        }
      }
    });
  }

  // Opset 18: scales / sizes / roi given for `axes` only become full-rank.
  void expand_to_axes(const NodeInfo& node, const Shape& xs, std::vector<float>& sc, std::vector<int64_t>& sizes,
                      std::vector<float>& roi) const {
    const size_t rank = xs.size(), n = axes_.size();
    std::vector<size_t> at;
    for (int64_t a : axes_) {
      if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank))
        fail(node, fmt::format("attribute axes {} has {}, out of range for input X of shape {}", fmt::format("[{}]", fmt::join(axes_, ", ")), a,
                               shape_to_string(xs)));
      at.push_back(static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(rank) : a));
    }
    auto check = [&](size_t got, size_t want, const char* what) {
      if (got != want)
        fail(node, fmt::format("input {} has {} values, expected {} for axes {}", what, got, want, fmt::format("[{}]", fmt::join(axes_, ", "))));
    };
    if (!sc.empty()) {
      check(sc.size(), n, "scales");
      std::vector<float> full(rank, 1.0f);
      for (size_t i = 0; i < n; ++i) full[at[i]] = sc[i];
      sc = std::move(full);
    }
    if (!sizes.empty()) {
      check(sizes.size(), n, "sizes");
      std::vector<int64_t> full(xs.begin(), xs.end());
      for (size_t i = 0; i < n; ++i) full[at[i]] = sizes[i];
      sizes = std::move(full);
    }
    if (!roi.empty()) {
      check(roi.size(), 2 * n, "roi");
      std::vector<float> full(2 * rank, 0.0f);
      for (size_t i = 0; i < rank; ++i) full[rank + i] = 1.0f;
      for (size_t i = 0; i < n; ++i) {
        full[at[i]] = roi[i];
        full[rank + at[i]] = roi[n + i];
      }
      roi = std::move(full);
    }
  }

  bool resized_axis(size_t i, size_t rank) const {
    if (axes_.empty()) return true;
    for (int64_t a : axes_)
      if (static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(rank) : a) == i) return true;
    return false;
  }

  enum class Policy { kStretch, kNotLarger, kNotSmaller };

  bool upsample_;
  int opset_;
  std::vector<int64_t> axes_;
  Policy policy_ = Policy::kStretch;
  Mode mode_ = Mode::kNearest;
  Coord coord_ = Coord::kHalfPixel;
  Rounding rounding_ = Rounding::kRoundPreferFloor;
  float cubic_a_ = -0.75f;
  bool exclude_outside_ = false;
  float extrapolation_ = 0.0f;
  bool antialias_ = false;
  std::vector<float> scales_attr_;
};

}  // namespace

void register_resize(KernelRegistry& r) {
  r.add("", "Resize", 10, kMaxOpset, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ResizeKernel>(node, false);
  });
  r.add("", "Upsample", 7, 9, [](const NodeInfo& node) -> std::unique_ptr<OpKernel> {
    return std::make_unique<ResizeKernel>(node, true);
  });
}

}  // namespace spindle::kernels::nn
