// grid_sample.cpp — GridSample (16): X (N, C, H, W) sampled at the
// normalized positions of grid (N, Ho, Wo, 2) → Y (N, C, Ho, Wo).
//
// grid[n, h, w] = (x, y) in [-1, 1] (x along W, y along H) is mapped to
// pixel coordinates: align_corners=1 maps -1 and 1 to the centers of the
// corner pixels, ((v + 1) / 2) * (size - 1); align_corners=0 to their outer
// edges, ((v + 1) * size - 1) / 2. mode bilinear interpolates the 2x2
// neighbours, nearest rounds half to even, bicubic uses the 4x4 neighbours
// with the cubic convolution kernel (A = -0.75). A coordinate outside the
// borders ([0, size-1] with align_corners, else [-0.5, size-0.5]) is first
// clamped into [0, size-1] (padding_mode border) or reflected at the
// borders (reflection); neighbour pixels outside the image then read 0
// (zeros), the nearest edge pixel (border) or their reflection
// (reflection). This is the ONNX reference behaviour.
//
// Coordinates and weights are computed in double; rows of (n, output row)
// run in parallel, each writing its own output elements.
#include <cmath>

#include "kernels/detection/detection_ops.h"
#include "kernels/math/elementwise.h"
#include "kernels/op_schema.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::detection {
namespace {

enum class Mode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

// Reflects x at lo and hi until it lies in [lo, hi].
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const double n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double n = std::floor(dx / range), r = dx - n * range;
    return std::fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

// Cubic convolution weights of the neighbours at -1, 0, 1, 2 for a fraction t.
void cubic_weights(double t, double w[4]) {
  constexpr double A = -0.75;
  auto near = [](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 < |d| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// One spatial axis: size and borders.
struct Axis {
  int64_t size;
  double lo, hi;
};

class GridSampleKernel final : public OpKernel {
 public:
  explicit GridSampleKernel(const NodeInfo& node) : align_corners_(node.attrs.get_int("align_corners", 0) != 0) {
    const std::string mode = node.attrs.get_string("mode", "bilinear");
    if (mode == "bilinear" || mode == "linear") mode_ = Mode::kBilinear;
    else if (mode == "nearest") mode_ = Mode::kNearest;
    else if (mode == "bicubic" || mode == "cubic") mode_ = Mode::kBicubic;
    else fail(node, fmt::format("attribute mode is '{}', expected 'bilinear', 'nearest' or 'bicubic'", mode));
    const std::string pad = node.attrs.get_string("padding_mode", "zeros");
    if (pad == "zeros") padding_ = Padding::kZeros;
    else if (pad == "border") padding_ = Padding::kBorder;
    else if (pad == "reflection") padding_ = Padding::kReflection;
    else fail(node, fmt::format("attribute padding_mode is '{}', expected 'zeros', 'border' or 'reflection'", pad));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& grid = ctx.input(1);
    require_float(node, x, "X", /*allow_float64=*/true);
    require_float(node, grid, "grid", /*allow_float64=*/true);
    require_rank(node, x, "X", 4, "N x C x H x W");
    require_rank(node, grid, "grid", 4, "N x H_out x W_out x 2");
    if (grid.dim(0) != x.dim(0) || grid.dim(3) != 2)
      fail(node, fmt::format("input grid is {}, expected {}xH_outxW_outx2 for X {}", grid.describe(), x.dim(0),
                             x.describe()));
    const int64_t n = x.dim(0), channels = x.dim(1), ho = grid.dim(1), wo = grid.dim(2);
    const Axis ay = make_axis(x.dim(2)), ax = make_axis(x.dim(3));
    const std::vector<double> g = tensor::read_doubles(node, grid, "grid");
    math::dispatch<float, double>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* y = ctx.output(0, x.dtype(), {n, channels, ho, wo}).template mutable_data<T>();
      if (n * channels * ho * wo == 0) return;
      const int64_t plane_in = ay.size * ax.size, plane_out = ho * wo;
      const Cost cost{static_cast<double>(wo * channels) * 16 * sizeof(T), static_cast<double>(wo * channels * sizeof(T)),
                      static_cast<double>(wo * channels) * 30};
      parallel_for(ctx.pool(), n * ho, cost, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / ho, oh = r % ho;
          for (int64_t ow = 0; ow < wo; ++ow) {
            const double* gp = g.data() + ((b * ho + oh) * wo + ow) * 2;
            const double px = denormalize(gp[0], ax), py = denormalize(gp[1], ay);
            for (int64_t c = 0; c < channels; ++c) {
              const T* img = src + (b * channels + c) * plane_in;
              y[(b * channels + c) * plane_out + oh * wo + ow] = static_cast<T>(sample(img, px, py, ax, ay));
            }
          }
        }
      });
    });
  }

 private:
  Axis make_axis(int64_t size) const {
    const double s = static_cast<double>(size);
    return align_corners_ ? Axis{size, 0.0, s - 1} : Axis{size, -0.5, s - 0.5};
  }

  double denormalize(double v, const Axis& a) const {
    const double s = static_cast<double>(a.size);
    return align_corners_ ? (v + 1) / 2 * (s - 1) : ((v + 1) * s - 1) / 2;
  }

  // The padding of a coordinate outside the borders.
  double pad_coordinate(double v, const Axis& a) const {
    if (v >= a.lo && v <= a.hi) return v;
    if (padding_ == Padding::kBorder) return std::clamp(v, 0.0, static_cast<double>(a.size - 1));
    if (padding_ == Padding::kReflection) return reflect(v, a.lo, a.hi);
    return v;
  }

  // The in-image index a pixel index reads, or -1 for a zero.
  int64_t pixel_index(int64_t i, const Axis& a) const {
    if (i >= 0 && i < a.size) return i;
    switch (padding_) {
      case Padding::kZeros: return -1;
      case Padding::kBorder: return std::clamp<int64_t>(i, 0, a.size - 1);
      case Padding::kReflection:
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), a.lo, a.hi)), 0, a.size - 1);
    }
    return -1;
  }

  template <class T>
  double pixel(const T* img, int64_t ix, int64_t iy, const Axis& ax, const Axis& ay) const {
    const int64_t px = pixel_index(ix, ax), py = pixel_index(iy, ay);
    return px < 0 || py < 0 ? 0.0 : static_cast<double>(img[py * ax.size + px]);
  }

  template <class T>
  double sample(const T* img, double px, double py, const Axis& ax, const Axis& ay) const {
    if (ax.size == 0 || ay.size == 0) return 0.0;
    if (std::isnan(px) || std::isnan(py)) return NAN;
    // Far outside (every neighbour reads a zero, or the coordinate is
    // clamped / reflected anyway): keeps the integer conversions in range.
    auto far_out = [](double v, const Axis& a) { return v < -4.0 || v > static_cast<double>(a.size) + 4.0; };
    if (padding_ == Padding::kZeros && (far_out(px, ax) || far_out(py, ay))) return 0.0;
    if (padding_ == Padding::kReflection && (std::isinf(px) || std::isinf(py))) return NAN;
    if (mode_ == Mode::kNearest) {
      px = pad_coordinate(std::nearbyint(px), ax);
      py = pad_coordinate(std::nearbyint(py), ay);
      return pixel(img, static_cast<int64_t>(px), static_cast<int64_t>(py), ax, ay);
    }
    px = pad_coordinate(px, ax);
    py = pad_coordinate(py, ay);
    const double fx = std::floor(px), fy = std::floor(py);
    const int64_t x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
    if (mode_ == Mode::kBilinear) {
      const double tx = px - fx, ty = py - fy;
      const double top = (1 - tx) * pixel(img, x0, y0, ax, ay) + tx * pixel(img, x0 + 1, y0, ax, ay);
      const double bottom = (1 - tx) * pixel(img, x0, y0 + 1, ax, ay) + tx * pixel(img, x0 + 1, y0 + 1, ax, ay);
      return (1 - ty) * top + ty * bottom;
    }
    double wx[4], wy[4];
    cubic_weights(px - fx, wx);
    cubic_weights(py - fy, wy);
    double acc = 0;
    for (int64_t j = 0; j < 4; ++j) {
      double row = 0;
      for (int64_t i = 0; i < 4; ++i) row += wx[i] * pixel(img, x0 - 1 + i, y0 - 1 + j, ax, ay);
      acc += wy[j] * row;
    }
    return acc;
  }

  bool align_corners_;
  Mode mode_ = Mode::kBilinear;
  Padding padding_ = Padding::kZeros;
};

}  // namespace

void register_grid_sample(KernelRegistry& r) {
  r.add("", "GridSample", 16, kMaxOpset, factory_of<GridSampleKernel>());  // 20: linear / cubic, 2-D only here
}

}  // namespace spindle::kernels::detection
