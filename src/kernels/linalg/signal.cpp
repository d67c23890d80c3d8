// signal.cpp — spectral ops of opset 17: DFT (forward and inverse, real or
// complex input, dft_length, onesided; 20: axis as an input), STFT (frame_step, window,
// frame_length, onesided) and MelWeightMatrix.
//
// Transforms are direct sums over precomputed twiddles, accumulated in
// double (exact enough for the float32 outputs and independent of the thread
// count); each signal of the batch is one unit of work for the pool. The
// last dimension of a signal is 1 (real) or 2 (complex: real, imaginary);
// outputs are always complex.
#include <cmath>
#include <numbers>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"
#include "kernels/linalg/linalg_ops.h"
#include "kernels/nn/nn_util.h"
#include "kernels/op_schema.h"

namespace spindle::kernels::linalg {

namespace {

int64_t scalar_int(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.numel() != 1 || (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64))
    fail(node, fmt::format("input {} is {}, expected an int32 or int64 scalar", name, t.describe()));
  return t.to_int64_vector()[0];
}

double scalar_float(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.numel() != 1 || (t.dtype() != DataType::kFloat32 && t.dtype() != DataType::kFloat64))
    fail(node, fmt::format("input {} is {}, expected a float32 or float64 scalar", name, t.describe()));
  return t.dtype() == DataType::kFloat32 ? t.data<float>()[0] : t.data<double>()[0];
}

// One-dimensional DFT of `n` complex samples read with stride `in_stride`
// (pairs re, im; im absent for real input), zero-padded or truncated to
// `len`, writing `bins` complex outputs with stride `out_stride`.
struct Dft {
  int64_t len = 0;
  bool inverse = false;
  std::vector<double> cos_, sin_;  // twiddles of k * j mod len

  Dft(int64_t length, bool inv) : len(length), inverse(inv), cos_(static_cast<size_t>(length)), sin_(static_cast<size_t>(length)) {
    for (int64_t i = 0; i < length; ++i) {
      const double a = 2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(length);
      cos_[static_cast<size_t>(i)] = std::cos(a);
      sin_[static_cast<size_t>(i)] = std::sin(a);
    }
  }

  // x(j) gives sample j (j < min(n, len)) as (re, im).
  template <class Sample>
  void run(int64_t n, Sample x, int64_t bins, float* out, int64_t out_stride, const float* window = nullptr) const {
    const int64_t used = std::min(n, len);
    const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0, im = 0;
      for (int64_t j = 0; j < used; ++j) {
        auto [xr, xi] = x(j);
        if (window) xr *= window[j], xi *= window[j];
        const size_t t = static_cast<size_t>((k * j) % len);
        re += xr * cos_[t] - sign * xi * sin_[t];
        im += sign * xr * sin_[t] + xi * cos_[t];
      }
      out[k * out_stride] = static_cast<float>(re * scale);
      out[k * out_stride + 1] = static_cast<float>(im * scale);
    }
  }
};

void require_signal(const NodeInfo& node, const Tensor& x, const char* name) {
  require_float(node, x, name);
  if (x.rank() < 2 || (x.dim(x.rank() - 1) != 1 && x.dim(x.rank() - 1) != 2))
    fail(node, fmt::format("input {} has shape {}, expected [batch, ..., 1] (real) or [batch, ..., 2] (complex)",
                           name, shape_to_string(x.shape())));
}

class DftKernel final : public OpKernel {
 public:
  explicit DftKernel(const NodeInfo& node)
      : axis_(node.opset >= 20 ? -2 : node.attrs.get_int("axis", 1)), inverse_(node.attrs.get_int("inverse", 0) != 0),
        onesided_(node.attrs.get_int("onesided", 0) != 0) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    require_signal(node, x, "input");
    const int64_t rank = x.rank();
    // Opset 20 moves axis from an attribute to the optional input 2 (default -2).
    const int64_t axis_given = ctx.node().opset >= 20 && ctx.has_input(2) ? scalar_int(node, ctx.input(2), "axis") : axis_;
    const int64_t axis = axis_given < 0 ? axis_given + rank : axis_given;
    if (axis < 1 || axis >= rank - 1)
      fail(node, fmt::format("{} axis {} is out of range for input {}: expected 1..{} (not the batch or the "
                             "complex dimension)", ctx.node().opset >= 20 ? "input" : "attribute", axis_given, shape_to_string(x.shape()), rank - 2));
    const int64_t n = x.dim(axis);
    int64_t len = n;
    if (ctx.has_input(1)) {
      len = scalar_int(node, ctx.input(1), "dft_length");
      if (len <= 0) fail(node, fmt::format("input dft_length is {}, expected > 0", len));
    }
    if (onesided_ && x.dim(rank - 1) == 2)
      fail(node, "attribute onesided is 1 with a complex input, expected a real input (last dimension 1)");
    const int64_t bins = onesided_ ? len / 2 + 1 : len;
    Shape ys = x.shape();
    ys[static_cast<size_t>(axis)] = bins;
    ys.back() = 2;
    Tensor& y = ctx.output(0, DataType::kFloat32, ys);
    const int64_t comp = x.dim(rank - 1);
    int64_t inner = 1;  // elements (complex samples) after the axis, before the last dim
    for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= x.dim(d);
    const int64_t outer = shape_numel(Shape(x.shape().begin(), x.shape().begin() + axis));
    const Dft dft(len, inverse_);
    const float* xd = x.data<float>();
    float* yd = y.mutable_data<float>();
    const int64_t signals = outer * inner;
    // A signal costs a complex multiply-add (4 ops) per bin and sample.
    const double signal_work = 4.0 * static_cast<double>(bins) * static_cast<double>(n);
    parallel_for(ctx.pool(), 0, signals, grain_for_cost(nn::ops_cost(signal_work)), [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        const int64_t o = s / inner, i = s % inner;
        const float* src = xd + (o * n * inner + i) * comp;
        auto sample = [&](int64_t j) {
          const float* p = src + j * inner * comp;
          return std::pair<double, double>{p[0], comp == 2 ? p[1] : 0.0};
        };
        dft.run(n, sample, bins, yd + (o * bins * inner + i) * 2, inner * 2);
      }
    });
  }

 private:
  int64_t axis_;
  bool inverse_;
  bool onesided_;
};

class StftKernel final : public OpKernel {
 public:
  explicit StftKernel(const NodeInfo& node) : onesided_(node.attrs.get_int("onesided", 1) != 0) {}

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    require_signal(node, x, "signal");
    if (x.rank() != 3)
      fail(node, fmt::format("input signal has shape {}, expected [batch, signal_length, 1 or 2]",
                             shape_to_string(x.shape())));
    const int64_t batch = x.dim(0), length = x.dim(1), comp = x.dim(2);
    const int64_t step = scalar_int(node, ctx.input(1), "frame_step");
    if (step <= 0) fail(node, fmt::format("input frame_step is {}, expected > 0", step));
    const float* window = nullptr;
    int64_t frame = -1;
    if (ctx.has_input(2)) {
      const Tensor& w = ctx.input(2);
      if (w.dtype() != DataType::kFloat32 || w.rank() != 1)
        fail(node, fmt::format("input window is {}, expected a float32 vector", w.describe()));
      window = w.data<float>();
      frame = w.numel();
    }
    if (ctx.has_input(3)) {
      const int64_t fl = scalar_int(node, ctx.input(3), "frame_length");
      if (frame >= 0 && fl != frame)
        fail(node, fmt::format("input frame_length is {} but the window has {} values", fl, frame));
      frame = fl;
    }
    if (frame <= 0 || frame > length)
      fail(node, fmt::format("frame length {} (from window or frame_length), expected 1..{} (the signal length)",
                             frame, length));
    if (onesided_ && comp == 2)
      fail(node, "attribute onesided is 1 with a complex signal, expected a real signal (last dimension 1)");
    const int64_t frames = (length - frame) / step + 1;
    const int64_t bins = onesided_ ? frame / 2 + 1 : frame;
    Tensor& y = ctx.output(0, DataType::kFloat32, {batch, frames, bins, 2});
    const Dft dft(frame, false);
    const float* xd = x.data<float>();
    float* yd = y.mutable_data<float>();
    // A frame costs a windowed complex multiply-add (5 ops) per bin and sample.
    const double frame_work = 5.0 * static_cast<double>(bins) * static_cast<double>(frame);
    parallel_for(ctx.pool(), 0, batch * frames, grain_for_cost(nn::ops_cost(frame_work)), [&](int64_t f0, int64_t f1) {
      for (int64_t f = f0; f < f1; ++f) {
        const int64_t b = f / frames, fr = f % frames;
        const float* src = xd + (b * length + fr * step) * comp;
        auto sample = [&](int64_t j) {
          const float* p = src + j * comp;
          return std::pair<double, double>{p[0], comp == 2 ? p[1] : 0.0};
        };
        dft.run(frame, sample, bins, yd + f * bins * 2, 2, window);
      }
    });
  }

 private:
  bool onesided_;
};

// Triangular mel filters as the ONNX reference builds them: num_mel_bins + 2
// edges evenly spaced on the mel scale between the two edge frequencies,
// mapped to DFT bins by floor((dft_length + 1) * hz / sample_rate).
class MelWeightMatrixKernel final : public OpKernel {
 public:
  explicit MelWeightMatrixKernel(const NodeInfo& node)
      : out_(static_cast<DataType>(node.attrs.get_int("output_datatype", 1))) {
    if (out_ != DataType::kFloat32 && out_ != DataType::kFloat64)
      fail_unsupported(node, fmt::format("output_datatype {} is not supported (expected float32 or float64)",
                                         static_cast<int>(out_)));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const int64_t mels = scalar_int(node, ctx.input(0), "num_mel_bins");
    const int64_t dft_length = scalar_int(node, ctx.input(1), "dft_length");
    const int64_t rate = scalar_int(node, ctx.input(2), "sample_rate");
    const double lo = scalar_float(node, ctx.input(3), "lower_edge_hertz");
    const double hi = scalar_float(node, ctx.input(4), "upper_edge_hertz");
    if (mels <= 0 || dft_length <= 0 || rate <= 0)
      fail(node, fmt::format("num_mel_bins {}, dft_length {}, sample_rate {}: expected all > 0", mels, dft_length, rate));
    if (!(lo >= 0 && hi > lo))
      fail(node, fmt::format("lower_edge_hertz {} and upper_edge_hertz {}: expected 0 <= lower < upper", lo, hi));
    const int64_t spectrum = dft_length / 2 + 1;
    // The output first: its size (and the session's memory limits) are
    // checked before anything of mels or spectrum entries is allocated.
    Tensor& y = ctx.output(0, out_, {spectrum, mels});
    float* yf = out_ == DataType::kFloat32 ? y.mutable_data<float>() : nullptr;
    double* yd = out_ == DataType::kFloat64 ? y.mutable_data<double>() : nullptr;
    if (yf) std::fill(yf, yf + y.numel(), 0.0f);
    if (yd) std::fill(yd, yd + y.numel(), 0.0);
    auto mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double mlo = mel(lo), step = (mel(hi) - mlo) / static_cast<double>(mels + 2);
    std::vector<int64_t> edge(static_cast<size_t>(mels + 2));
    for (int64_t i = 0; i < mels + 2; ++i) {
      const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + mlo) / 2595.0) - 1.0);
      // A bin past the spectrum (or a NaN) becomes spectrum + 1: the loops
      // below still reach bin `spectrum` and set() refuses it naming the
      // band, as before (a bin of 3.7e21 overflowed the conversion:
      // fuzz_graph).
      const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
      edge[static_cast<size_t>(i)] = bin >= 0.0 && bin <= static_cast<double>(spectrum) ? static_cast<int64_t>(bin)
                                     : bin < 0.0                                           ? -1
                                                                                           : spectrum + 1;
    }
    // Weight (bin, m), computed in double, stored in the output type.
    auto set = [&](int64_t bin, int64_t m, double v) {
      if (bin < 0 || bin >= spectrum)
        fail(node, fmt::format("mel band {} reaches DFT bin {}, outside 0..{}: upper_edge_hertz {} is above what "
                               "dft_length {} at sample_rate {} covers", m, bin, spectrum - 1, hi, dft_length, rate));
      const size_t i = static_cast<size_t>(bin * mels + m);
      if (yf) yf[i] = static_cast<float>(v);
      else yd[i] = v;
    };
    for (int64_t m = 0; m < mels; ++m) {
      const int64_t left = edge[static_cast<size_t>(m)], center = edge[static_cast<size_t>(m + 1)],
                    right = edge[static_cast<size_t>(m + 2)];
      if (center == left) {
        set(center, m, 1.0);
      } else {
        for (int64_t j = left; j <= center; ++j)
          set(j, m, static_cast<double>(j - left) / static_cast<double>(center - left));
      }
      for (int64_t j = center; j < right; ++j)
        set(j, m, static_cast<double>(right - j) / static_cast<double>(right - center));
    }
  }

 private:
  DataType out_;
};

}  // namespace

void register_signal(KernelRegistry& r) {
  r.add("", "DFT", 17, kMaxOpset, factory_of<DftKernel>());  // 20: axis as input 2
  r.add("", "STFT", 17, 17, factory_of<StftKernel>());
  r.add("", "MelWeightMatrix", 17, 17, factory_of<MelWeightMatrixKernel>());
}

}  // namespace spindle::kernels::linalg
