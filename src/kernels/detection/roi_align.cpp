// roi_align.cpp — RoiAlign (10, 16): X (N, C, H, W), rois (R, 4) as
// [x1, y1, x2, y2] in input coordinates before spatial_scale, batch_indices
// (R) int64 → Y (R, C, output_height, output_width).
//
// Each output bin is split into sampling_ratio x sampling_ratio sample
// points (ceil(roi size / output size) per dim when sampling_ratio is 0),
// each bilinearly interpolated; mode avg averages them, mode max takes the
// largest of the weighted corner values (w * x) over all samples. A sample
// outside [-1, size] contributes 0; otherwise it is clamped into the
// image. coordinate_transformation_mode (16) half_pixel shifts the ROI by
// -0.5 pixel; output_half_pixel (and opset 10) does not, and forces ROIs to
// be at least 1x1.
//
// Positions and weights are computed in double. (roi, channel) pairs run in
// parallel, each output element written by one block.
#include <cmath>

#include "kernels/detection/detection_ops.h"
#include "kernels/math/elementwise.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::detection {
namespace {

// The four corner offsets and weights of one sample point in an H x W plane.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

class RoiAlignKernel final : public OpKernel {
 public:
  explicit RoiAlignKernel(const NodeInfo& node)
      : out_h_(node.attrs.get_int("output_height", 1)),
        out_w_(node.attrs.get_int("output_width", 1)),
        sampling_ratio_(node.attrs.get_int("sampling_ratio", 0)),
        spatial_scale_(node.attrs.get_float("spatial_scale", 1.0f)) {
    const std::string mode = node.attrs.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") fail(node, fmt::format("attribute mode is '{}', expected 'avg' or 'max'", mode));
    max_ = mode == "max";
    const std::string ctm =
        node.opset >= 16 ? node.attrs.get_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
    if (ctm != "half_pixel" && ctm != "output_half_pixel")
      fail(node, fmt::format("attribute coordinate_transformation_mode is '{}', expected 'half_pixel' or "
                             "'output_half_pixel'",
                             ctm));
    half_pixel_ = ctm == "half_pixel";
    if (out_h_ < 1 || out_w_ < 1)
      fail(node, fmt::format("attributes output_height {} and output_width {} must be >= 1", out_h_, out_w_));
    if (sampling_ratio_ < 0) fail(node, fmt::format("attribute sampling_ratio is {}, expected >= 0", sampling_ratio_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const Tensor& rois = ctx.input(1);
    const Tensor& bi = ctx.input(2);
    require_float(node, x, "X", /*allow_float64=*/true);
    require_rank(node, x, "X", 4, "N x C x H x W");
    require_rank(node, rois, "rois", 2, "num_rois x 4");
    if (rois.dtype() != x.dtype() || rois.dim(1) != 4)
      fail(node, fmt::format("input rois is {}, expected {} num_rois x 4", rois.describe(), dtype_name(x.dtype())));
    if (bi.dtype() != DataType::kInt64 || bi.rank() != 1 || bi.dim(0) != rois.dim(0))
      fail(node, fmt::format("input batch_indices is {}, expected int64 {} (one per roi)", bi.describe(), rois.dim(0)));
    const int64_t n = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3), num_rois = rois.dim(0);
    if (height == 0 || width == 0)
      fail(node, fmt::format("input X is {}, expected a non-empty H x W plane", x.describe()));
    const int64_t* batch = bi.data<int64_t>();
    for (int64_t r = 0; r < num_rois; ++r)
      if (batch[r] < 0 || batch[r] >= n)
        fail(node, fmt::format("batch_indices[{}] is {}, expected 0..{} (the batch size of X {})", r, batch[r], n - 1,
                               x.describe()));
    const std::vector<double> roi_v = tensor::read_doubles(node, rois, "rois");
    // The sample grid of each roi comes from sampling_ratio or the roi's
    // size (both from the model): check the per-roi sample table before
    // any is built.
    const int64_t plane = size_mul(node, out_h_, out_w_, "output_height x output_width");
    std::vector<std::pair<int64_t, int64_t>> grids(static_cast<size_t>(num_rois));
    for (int64_t r = 0; r < num_rois; ++r) {
      const Geometry g = geometry(roi_v.data() + r * 4);
      const double samples = static_cast<double>(plane) * g.grid_h * g.grid_w;
      if (samples > static_cast<double>(kMaxSamplesPerRoi))
        throw Error(StatusCode::kResourceExhausted,
                    fmt::format("{}: roi {} needs {} x {} sample points per bin of its {} x {} output ({:g} in all, "
                                "more than the {} spindle allows per roi); check sampling_ratio and the roi size",
                                node.label(), r, g.grid_h, g.grid_w, out_h_, out_w_, samples, kMaxSamplesPerRoi));
      grids[static_cast<size_t>(r)] = {static_cast<int64_t>(g.grid_h), static_cast<int64_t>(g.grid_w)};
    }
    math::dispatch<float, double>(x.dtype(), node, "input X", [&](auto tag) {
      using T = decltype(tag);
      const T* src = x.data<T>();
      T* y = ctx.output(0, x.dtype(), {num_rois, channels, out_h_, out_w_}).template mutable_data<T>();
      const Cost cost{static_cast<double>(plane) * 16 * sizeof(T), static_cast<double>(plane * sizeof(T)),
                      static_cast<double>(plane) * 40};
      parallel_for(ctx.pool(), num_rois * channels, cost, [&](int64_t u0, int64_t u1) {
        std::vector<Sample> samples;
        int64_t grid_h = 0, grid_w = 0, cached_roi = -1;
        for (int64_t u = u0; u < u1; ++u) {
          const int64_t r = u / channels, c = u % channels;
          if (r != cached_roi) {
            grid_h = grids[static_cast<size_t>(r)].first;
            grid_w = grids[static_cast<size_t>(r)].second;
            prepare(roi_v.data() + r * 4, height, width, grid_h, grid_w, samples);
            cached_roi = r;
          }
          const T* img = src + (batch[r] * channels + c) * height * width;
          T* out = y + u * plane;
          const int64_t count = std::max<int64_t>(grid_h * grid_w, 1);
          const Sample* s = samples.data();
          for (int64_t b = 0; b < plane; ++b) {
            double acc = 0;
            bool first = true;
            for (int64_t k = 0; k < grid_h * grid_w; ++k, ++s) {
              if (!max_) {
                acc += s->w[0] * img[s->pos[0]] + s->w[1] * img[s->pos[1]] + s->w[2] * img[s->pos[2]] +
                       s->w[3] * img[s->pos[3]];
                continue;
              }
              const double v = std::max(std::max(s->w[0] * img[s->pos[0]], s->w[1] * img[s->pos[1]]),
                                        std::max(s->w[2] * img[s->pos[2]], s->w[3] * img[s->pos[3]]));
              acc = first ? v : std::max(acc, v);
              first = false;
            }
            out[b] = static_cast<T>(max_ ? acc : acc / static_cast<double>(count));
          }
        }
      });
    });
  }

 private:
  // Where a roi starts, its bin size and its sample grid per bin. A NaN or
  // negative grid size (from a NaN or inverted roi) is 0 samples.
  struct Geometry {
    double x0, y0, bin_h, bin_w, grid_h, grid_w;
  };
  Geometry geometry(const double* roi) const {
    const double offset = half_pixel_ ? 0.5 : 0.0;
    Geometry g;
    g.x0 = roi[0] * spatial_scale_ - offset;
    g.y0 = roi[1] * spatial_scale_ - offset;
    double roi_w = roi[2] * spatial_scale_ - offset - g.x0, roi_h = roi[3] * spatial_scale_ - offset - g.y0;
    if (!half_pixel_) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    g.bin_h = roi_h / static_cast<double>(out_h_);
    g.bin_w = roi_w / static_cast<double>(out_w_);
    g.grid_h = sampling_ratio_ > 0 ? static_cast<double>(sampling_ratio_) : std::ceil(g.bin_h);
    g.grid_w = sampling_ratio_ > 0 ? static_cast<double>(sampling_ratio_) : std::ceil(g.bin_w);
    if (!(g.grid_h > 0)) g.grid_h = 0;
    if (!(g.grid_w > 0)) g.grid_w = 0;
    return g;
  }

  // The sample points of every output bin of one roi, bin-major (grid_h x
  // grid_w per bin, sizes checked by compute()).
  void prepare(const double* roi, int64_t height, int64_t width, int64_t grid_h, int64_t grid_w,
               std::vector<Sample>& samples) const {
    const Geometry g = geometry(roi);
    const double x0 = g.x0, y0 = g.y0, bin_h = g.bin_h, bin_w = g.bin_w;
    samples.assign(static_cast<size_t>(out_h_ * out_w_ * grid_h * grid_w), Sample{});
    size_t k = 0;
    for (int64_t ph = 0; ph < out_h_; ++ph)
      for (int64_t pw = 0; pw < out_w_; ++pw)
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double yy = y0 + static_cast<double>(ph) * bin_h +
                            (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
          for (int64_t ix = 0; ix < grid_w; ++ix, ++k) {
            double xx = x0 + static_cast<double>(pw) * bin_w +
                        (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
            double yv = yy;
            if (!(yv >= -1.0 && yv <= static_cast<double>(height) && xx >= -1.0 && xx <= static_cast<double>(width)))
              continue;  // outside (or NaN): zero weights
            yv = std::max(yv, 0.0);
            xx = std::max(xx, 0.0);
            int64_t ylo = static_cast<int64_t>(yv), xlo = static_cast<int64_t>(xx), yhi, xhi;
            if (ylo >= height - 1) {
              yhi = ylo = height - 1;
              yv = static_cast<double>(ylo);
            } else {
              yhi = ylo + 1;
            }
            if (xlo >= width - 1) {
              xhi = xlo = width - 1;
              xx = static_cast<double>(xlo);
            } else {
              xhi = xlo + 1;
            }
            const double ly = yv - static_cast<double>(ylo), lx = xx - static_cast<double>(xlo);
            const double hy = 1.0 - ly, hx = 1.0 - lx;
            Sample& s = samples[k];
            s.pos[0] = ylo * width + xlo;
            s.pos[1] = ylo * width + xhi;
            s.pos[2] = yhi * width + xlo;
            s.pos[3] = yhi * width + xhi;
            s.w[0] = hy * hx;
            s.w[1] = hy * lx;
            s.w[2] = ly * hx;
            s.w[3] = ly * lx;
          }
        }
  }

  // Sample points of one roi's table (out_h x out_w x grid_h x grid_w,
  // 48 bytes each: 768 MiB).
  static constexpr int64_t kMaxSamplesPerRoi = int64_t{1} << 24;
  int64_t out_h_, out_w_, sampling_ratio_;
  double spatial_scale_;
  bool max_ = false, half_pixel_ = true;
};

}  // namespace

void register_roi_align(KernelRegistry& r) {
  r.add("", "RoiAlign", 10, 15, factory_of<RoiAlignKernel>());
  r.add("", "RoiAlign", 16, 17, factory_of<RoiAlignKernel>());
}

}  // namespace spindle::kernels::detection
