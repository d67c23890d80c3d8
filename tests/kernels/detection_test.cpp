// detection_test.cpp — the kernels of src/kernels/detection
// (NonMaxSuppression, RoiAlign, MaxUnpool, GridSample): every matching ONNX
// backend node test (single-threaded and with a 3-thread pool), naive
// reference loops on random inputs, thread-count independence and error
// messages for bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernel_errors.h"
#include "onnx_node_runner.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using testing::expect_error;

// ---------------------------------------------------------------- ONNX node tests

const char* const kNodeTests[] = {
    "test_nonmaxsuppression_center_point_box_format",
    "test_nonmaxsuppression_flipped_coordinates",
    "test_nonmaxsuppression_identical_boxes",
    "test_nonmaxsuppression_limit_output_size",
    "test_nonmaxsuppression_single_box",
    "test_nonmaxsuppression_suppress_by_IOU",
    "test_nonmaxsuppression_suppress_by_IOU_and_scores",
    "test_nonmaxsuppression_two_batches",
    "test_nonmaxsuppression_two_classes",
    "test_roialign_aligned_false",
    "test_roialign_aligned_true",
    "test_maxunpool_export_with_output_shape",
    "test_maxunpool_export_without_output_shape",
    "test_gridsample",
    "test_gridsample_aligncorners_true",
    "test_gridsample_bicubic",
    "test_gridsample_bilinear",
    "test_gridsample_border_padding",
    "test_gridsample_nearest",
    "test_gridsample_reflection_padding",
    "test_gridsample_zeros_padding",
};

SPINDLE_ONNX_NODE_TEST_SUITE(DetectionOnnx, DetectionNodeTest, kNodeTests);

// ---------------------------------------------------------------- helpers

Tensor uniform_f32(Shape shape, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& e : v) e = dist(rng);
  return Tensor::from_vector<float>(std::move(shape), v);
}

Tensor f32(Shape shape, std::vector<float> v) { return Tensor::from_vector<float>(std::move(shape), v); }
Tensor i64(Shape shape, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(std::move(shape), v); }

// Same result with no pool and with a 3-thread pool (bit-exact).
void expect_thread_independent(const std::string& op, int opset, const Attributes& attrs,
                               const std::vector<Tensor>& inputs) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  auto a = run_kernel_once(op, opset, attrs, inputs);
  auto b = run_kernel_once(op, opset, attrs, inputs, 1, pool.get());
  ASSERT_EQ(a[0].shape(), b[0].shape());
  ASSERT_EQ(a[0].nbytes(), b[0].nbytes());
  EXPECT_EQ(std::memcmp(a[0].raw_data(), b[0].raw_data(), a[0].nbytes()), 0) << op;
}

// ---------------------------------------------------------------- NonMaxSuppression

// Greedy NMS by repeated arg-max over the remaining candidates.
std::vector<int64_t> nms_reference(const std::vector<float>& boxes, const std::vector<float>& scores, int64_t batches,
                                   int64_t classes, int64_t n, int64_t max_out, float iou_thr, const float* score_thr,
                                   bool center) {
  auto corners = [&](int64_t b, int64_t i) {
    const float* p = boxes.data() + (b * n + i) * 4;
    std::array<float, 4> c;  // y0, x0, y1, x1
    if (center) c = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    else c = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    return c;
  };
  auto iou = [](const std::array<float, 4>& a, const std::array<float, 4>& b) {
    const double h = std::min(a[2], b[2]) - std::max(a[0], b[0]);
    const double w = std::min(a[3], b[3]) - std::max(a[1], b[1]);
    if (h <= 0 || w <= 0) return 0.0;
    const double inter = h * w;
    const double area_a = (a[2] - a[0]) * static_cast<double>(a[3] - a[1]);
    const double area_b = (b[2] - b[0]) * static_cast<double>(b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return 0.0;
    return inter / (area_a + area_b - inter);
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = scores.data() + (b * classes + c) * n;
      std::vector<bool> done(static_cast<size_t>(n), false);
      std::vector<int64_t> kept;
      while (static_cast<int64_t>(kept.size()) < max_out) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; ++i)
          if (!done[static_cast<size_t>(i)] && (!score_thr || s[i] > *score_thr) && (best < 0 || s[i] > s[best]))
            best = i;
        if (best < 0) break;
        done[static_cast<size_t>(best)] = true;
        bool ok = true;
        for (int64_t k : kept)
          if (iou(corners(b, best), corners(b, k)) > iou_thr) ok = false;
        if (!ok) continue;
        kept.push_back(best);
        out.insert(out.end(), {b, c, best});
      }
    }
  return out;
}

TEST(DetectionNms, MatchesGreedyReferenceOnRandomBoxes) {
  const int64_t batches = 2, classes = 3, n = 40;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pos(0.0f, 10.0f), size(0.5f, 4.0f);
  std::uniform_int_distribution<int> score_q(0, 9);
  for (int center : {0, 1}) {
    std::vector<float> boxes;
    for (int64_t i = 0; i < batches * n; ++i) {
      const float a = pos(rng), b = pos(rng), h = size(rng), w = size(rng);
      if (center) boxes.insert(boxes.end(), {a, b, w, h});
      else if (i % 2) boxes.insert(boxes.end(), {a + h, b + w, a, b});  // flipped corners
      else boxes.insert(boxes.end(), {a, b, a + h, b + w});
    }
    std::vector<float> scores;
    for (int64_t i = 0; i < batches * classes * n; ++i) scores.push_back(static_cast<float>(score_q(rng)) / 10);
    const Tensor tb = f32({batches, n, 4}, boxes), ts = f32({batches, classes, n}, scores);
    for (int64_t max_out : {int64_t{1}, int64_t{5}, int64_t{100}})
      for (float thr : {0.0f, 0.3f, 0.7f}) {
        const float score_thr = 0.25f;
        const Attributes attrs{{"center_point_box", int64_t{center}}};
        auto got = run_kernel_once("NonMaxSuppression", 11, attrs,
                                   {tb, ts, i64({1}, {max_out}), f32({1}, {thr}), f32({1}, {score_thr})});
        const auto want = nms_reference(boxes, scores, batches, classes, n, max_out, thr, &score_thr, center != 0);
        EXPECT_EQ(got[0].shape(), (Shape{static_cast<int64_t>(want.size() / 3), 3}));
        EXPECT_EQ(got[0].to_vector<int64_t>(), want) << "center " << center << " max " << max_out << " iou " << thr;
        expect_thread_independent("NonMaxSuppression", 11, attrs,
                                  {tb, ts, i64({1}, {max_out}), f32({1}, {thr}), f32({1}, {score_thr})});
        // Without score_threshold every box is a candidate.
        auto all = run_kernel_once("NonMaxSuppression", 10, attrs, {tb, ts, i64({1}, {max_out}), f32({1}, {thr})});
        EXPECT_EQ(all[0].to_vector<int64_t>(),
                  nms_reference(boxes, scores, batches, classes, n, max_out, thr, nullptr, center != 0));
      }
  }
}

TEST(DetectionNms, OptionalInputsDefaultToNoOutput) {
  const Tensor boxes = f32({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  const Tensor scores = f32({1, 1, 2}, {0.5f, 0.9f});
  auto a = run_kernel_once("NonMaxSuppression", 11, {}, {boxes, scores});
  EXPECT_EQ(a[0].shape(), (Shape{0, 3}));
  auto b = run_kernel_once("NonMaxSuppression", 11, {}, {boxes, scores, i64({1}, {5})});
  // iou_threshold defaults to 0: the identical second box is suppressed.
  EXPECT_EQ(b[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
}

TEST(DetectionNms, BadInputsFail) {
  const Tensor scores = f32({1, 1, 2}, {0.5f, 0.9f});
  expect_error("NonMaxSuppression", 11, {}, {f32({1, 2, 3}, {0, 0, 1, 0, 0, 1}), scores},
               {"NonMaxSuppression", "boxes", "4 coordinates"});
  const Tensor boxes = f32({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  expect_error("NonMaxSuppression", 11, {}, {boxes, f32({1, 1, 3}, {1, 2, 3})},
               {"NonMaxSuppression", "scores", "1x<classes>x2"});
  expect_error("NonMaxSuppression", 11, {{"center_point_box", int64_t{2}}}, {boxes, scores},
               {"NonMaxSuppression", "center_point_box is 2"});
  expect_error("NonMaxSuppression", 11, {}, {boxes, scores, f32({1}, {3})},
               {"NonMaxSuppression", "max_output_boxes_per_class", "int64"});
  expect_error("NonMaxSuppression", 11, {}, {boxes, scores, i64({1}, {3}), f32({1}, {1.5f})},
               {"NonMaxSuppression", "iou_threshold is 1.5"});
  expect_error("NonMaxSuppression", 11, {},
               {Tensor::from_vector<int64_t>({1, 1, 4}, {0, 0, 1, 1}), f32({1, 1, 1}, {1})},
               {"NonMaxSuppression", "input boxes", "float32 or float64"});
}

// ---------------------------------------------------------------- RoiAlign

// RoiAlign by direct per-sample bilinear interpolation.
std::vector<float> roi_align_reference(const Tensor& x, const std::vector<float>& rois, const std::vector<int64_t>& bi,
                                       int64_t oh, int64_t ow, int64_t ratio, float scale, bool max_mode,
                                       bool half_pixel) {
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const std::vector<float> xv = x.to_vector<float>();
  const int64_t R = static_cast<int64_t>(bi.size());
  std::vector<float> out(static_cast<size_t>(R * C * oh * ow));
  for (int64_t r = 0; r < R; ++r) {
    const double off = half_pixel ? 0.5 : 0.0;
    const double x0 = rois[static_cast<size_t>(r * 4)] * scale - off, y0 = rois[static_cast<size_t>(r * 4 + 1)] * scale - off;
    double rw = rois[static_cast<size_t>(r * 4 + 2)] * scale - off - x0;
    double rh = rois[static_cast<size_t>(r * 4 + 3)] * scale - off - y0;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
    const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bh));
    const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bw));
    for (int64_t c = 0; c < C; ++c) {
      const float* img = xv.data() + (bi[static_cast<size_t>(r)] * C + c) * H * W;
      auto at = [&](int64_t yy, int64_t xx) { return static_cast<double>(img[yy * W + xx]); };
      for (int64_t py = 0; py < oh; ++py)
        for (int64_t px = 0; px < ow; ++px) {
          double acc = 0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              double y = y0 + py * bh + (iy + 0.5) * bh / gh, xx = x0 + px * bw + (ix + 0.5) * bw / gw;
              double v[4] = {0, 0, 0, 0};
              if (!(y < -1 || y > H || xx < -1 || xx > W)) {
                y = std::min(std::max(y, 0.0), static_cast<double>(H - 1));
                xx = std::min(std::max(xx, 0.0), static_cast<double>(W - 1));
                const int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(xx);
                const int64_t yh = std::min(yl + 1, H - 1), xh = std::min(xl + 1, W - 1);
                const double ly = y - yl, lx = xx - xl;
                v[0] = (1 - ly) * (1 - lx) * at(yl, xl);
                v[1] = (1 - ly) * lx * at(yl, xh);
                v[2] = ly * (1 - lx) * at(yh, xl);
                v[3] = ly * lx * at(yh, xh);
              }
              if (!max_mode) {
                acc += v[0] + v[1] + v[2] + v[3];
              } else {
                const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                acc = any ? std::max(acc, m) : m;
                any = true;
              }
            }
          if (!max_mode) acc /= static_cast<double>(std::max<int64_t>(gh * gw, 1));
          out[static_cast<size_t>(((r * C + c) * oh + py) * ow + px)] = static_cast<float>(acc);
        }
    }
  }
  return out;
}

TEST(DetectionRoiAlign, MatchesSampleReferenceForModesAndTransforms) {
  const Tensor x = uniform_f32({2, 3, 9, 11}, -1.0f, 1.0f, 3);
  const std::vector<float> rois = {0.5f, 1.0f, 7.5f, 6.0f,  2.0f, 2.0f, 2.3f, 2.2f,
                                   -3.0f, -2.0f, 4.0f, 12.0f, 8.0f, 1.0f, 30.0f, 20.0f};
  const std::vector<int64_t> bi = {0, 1, 1, 0};
  const Tensor tr = f32({4, 4}, rois), tb = i64({4}, bi);
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {int64_t{0}, int64_t{2}})
        for (float scale : {1.0f, 0.5f}) {
          const Attributes attrs{{"mode", std::string(mode)},         {"coordinate_transformation_mode", std::string(ctm)},
                                 {"output_height", int64_t{3}},       {"output_width", int64_t{4}},
                                 {"sampling_ratio", ratio},           {"spatial_scale", scale}};
          auto got = run_kernel_once("RoiAlign", 16, attrs, {x, tr, tb});
          ASSERT_EQ(got[0].shape(), (Shape{4, 3, 3, 4}));
          const auto want = roi_align_reference(x, rois, bi, 3, 4, ratio, scale, std::string(mode) == "max",
                                                std::string(ctm) == "half_pixel");
          EXPECT_TRUE(testing::tensors_close(got[0], f32({4, 3, 3, 4}, want), 1e-5, 1e-6))
              << mode << " " << ctm << " ratio " << ratio << " scale " << scale;
          expect_thread_independent("RoiAlign", 16, attrs, {x, tr, tb});
        }
  // Opset 10 has no coordinate_transformation_mode: output_half_pixel.
  auto old = run_kernel_once("RoiAlign", 10, {{"output_height", int64_t{2}}, {"output_width", int64_t{2}}}, {x, tr, tb});
  EXPECT_TRUE(testing::tensors_close(old[0], f32({4, 3, 2, 2}, roi_align_reference(x, rois, bi, 2, 2, 0, 1.0f, false, false)),
                                     1e-5, 1e-6));
}

TEST(DetectionRoiAlign, BadInputsFail) {
  const Tensor x = uniform_f32({1, 1, 4, 4}, 0, 1, 1);
  const Tensor rois = f32({1, 4}, {0, 0, 2, 2});
  expect_error("RoiAlign", 16, {}, {x, rois, i64({1}, {1})}, {"RoiAlign", "batch_indices[0] is 1", "0..0"});
  expect_error("RoiAlign", 16, {}, {x, rois, i64({2}, {0, 0})}, {"RoiAlign", "batch_indices", "one per roi"});
  expect_error("RoiAlign", 16, {}, {x, f32({1, 3}, {0, 0, 2}), i64({1}, {0})}, {"RoiAlign", "input rois", "x 4"});
  expect_error("RoiAlign", 16, {{"mode", std::string("sum")}}, {x, rois, i64({1}, {0})}, {"RoiAlign", "mode is 'sum'"});
  expect_error("RoiAlign", 16, {{"coordinate_transformation_mode", std::string("asymmetric")}}, {x, rois, i64({1}, {0})},
               {"RoiAlign", "coordinate_transformation_mode is 'asymmetric'"});
  expect_error("RoiAlign", 16, {}, {uniform_f32({1, 4, 4}, 0, 1, 1), rois, i64({1}, {0})}, {"RoiAlign", "input X", "rank 4"});
}

// ---------------------------------------------------------------- MaxUnpool

TEST(DetectionMaxUnpool, InvertsMaxPoolIndices) {
  const Tensor x = uniform_f32({2, 3, 6, 8}, -1.0f, 1.0f, 5);
  const Attributes pool_attrs{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  auto pooled = run_kernel_once("MaxPool", 12, pool_attrs, {x}, 2);
  ASSERT_EQ(pooled[1].dtype(), DataType::kInt64);
  auto y = run_kernel_once("MaxUnpool", 11, pool_attrs, {pooled[0], pooled[1]});
  ASSERT_EQ(y[0].shape(), x.shape());
  std::vector<float> want(static_cast<size_t>(x.numel()), 0.0f);
  const auto pv = pooled[0].to_vector<float>();
  const auto iv = pooled[1].to_vector<int64_t>();
  for (size_t i = 0; i < pv.size(); ++i) want[static_cast<size_t>(iv[i])] = pv[i];
  EXPECT_EQ(y[0].to_vector<float>(), want);
  // A larger output_shape puts the result at the leading corner.
  auto big = run_kernel_once("MaxUnpool", 9, pool_attrs, {pooled[0], pooled[1], i64({4}, {2, 3, 7, 9})});
  ASSERT_EQ(big[0].shape(), (Shape{2, 3, 7, 9}));
  const auto bv = big[0].to_vector<float>();
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t h = 0; h < 7; ++h)
      for (int64_t w = 0; w < 9; ++w) {
        const float e = h < 6 && w < 8 ? want[static_cast<size_t>((p * 6 + h) * 8 + w)] : 0.0f;
        EXPECT_EQ(bv[static_cast<size_t>((p * 7 + h) * 9 + w)], e);
      }
}

TEST(DetectionMaxUnpool, PadsStridesAndIntegerData) {
  // 1-D, kernel 3, stride 2, pads 1/1: output length (3 - 1) * 2 - 2 + 3 = 5.
  const Tensor x = Tensor::from_vector<int32_t>({1, 1, 3}, {7, 8, 9});
  auto y = run_kernel_once("MaxUnpool", 11,
                           {{"kernel_shape", std::vector<int64_t>{3}},
                            {"strides", std::vector<int64_t>{2}},
                            {"pads", std::vector<int64_t>{1, 1}}},
                           {x, i64({1, 1, 3}, {0, 2, 4})});
  EXPECT_EQ(y[0].to_vector<int32_t>(), (std::vector<int32_t>{7, 0, 8, 0, 9}));
}

TEST(DetectionMaxUnpool, BadInputsFail) {
  const Attributes attrs{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
  const Tensor x = f32({1, 1, 1, 2}, {1, 2});
  expect_error("MaxUnpool", 11, attrs, {x, i64({1, 1, 1, 2}, {0, 8})}, {"MaxUnpool", "I[1] is 8", "0..7"});
  expect_error("MaxUnpool", 11, attrs, {x, i64({1, 1, 1, 2}, {0, 1}), i64({4}, {1, 1, 1, 4})},
               {"MaxUnpool", "output_shape is [1, 1, 1, 4]", "at least [1, 1, 2, 4]"});
  expect_error("MaxUnpool", 11, attrs, {x, Tensor::from_vector<int32_t>({1, 1, 1, 2}, {0, 1})},
               {"MaxUnpool", "input I", "int64"});
  expect_error("MaxUnpool", 11, {}, {x, i64({1, 1, 1, 2}, {0, 1})}, {"MaxUnpool", "kernel_shape is required"});
  expect_error("MaxUnpool", 11, attrs, {f32({1, 2}, {1, 2}), i64({1, 2}, {0, 1})}, {"MaxUnpool", "input X", "rank 4"});
}

// ---------------------------------------------------------------- GridSample

// grid (1, H, W, 2) whose points are the pixel centers of an H x W image.
Tensor identity_grid(int64_t h, int64_t w, bool align_corners) {
  std::vector<float> g;
  auto norm = [&](int64_t i, int64_t n) {
    return align_corners ? -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(n - 1)
                         : (2.0f * static_cast<float>(i) + 1.0f) / static_cast<float>(n) - 1.0f;
  };
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) g.insert(g.end(), {norm(x, w), norm(y, h)});
  return f32({1, h, w, 2}, g);
}

TEST(DetectionGridSample, IdentityGridReproducesTheInput) {
  const Tensor x = uniform_f32({1, 2, 5, 7}, -1.0f, 1.0f, 9);
  for (int align : {0, 1})
    for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
      auto y = run_kernel_once("GridSample", 16, {{"mode", std::string(mode)}, {"align_corners", int64_t{align}}},
                               {x, identity_grid(5, 7, align != 0)});
      EXPECT_TRUE(testing::tensors_close(y[0], x, 1e-5, 1e-5)) << mode << " align_corners " << align;
    }
}

// Bilinear sampling with zero padding, computed per point.
std::vector<float> bilinear_zeros_reference(const Tensor& x, const Tensor& grid, bool align) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), Ho = grid.dim(1), Wo = grid.dim(2);
  const auto xv = x.to_vector<float>();
  const auto gv = grid.to_vector<float>();
  std::vector<float> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < Ho * Wo; ++i) {
        const double gx = gv[static_cast<size_t>((n * Ho * Wo + i) * 2)], gy = gv[static_cast<size_t>((n * Ho * Wo + i) * 2 + 1)];
        const double px = align ? (gx + 1) / 2 * (W - 1) : ((gx + 1) * W - 1) / 2;
        const double py = align ? (gy + 1) / 2 * (H - 1) : ((gy + 1) * H - 1) / 2;
        double acc = 0;
        for (int64_t yy = static_cast<int64_t>(std::floor(py)); yy <= static_cast<int64_t>(std::floor(py)) + 1; ++yy)
          for (int64_t xx = static_cast<int64_t>(std::floor(px)); xx <= static_cast<int64_t>(std::floor(px)) + 1; ++xx) {
            if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
            const double w = (1 - std::fabs(px - static_cast<double>(xx))) * (1 - std::fabs(py - static_cast<double>(yy)));
            acc += w * xv[static_cast<size_t>(((n * C + c) * H + yy) * W + xx)];
          }
        out.push_back(static_cast<float>(acc));
      }
  return out;
}

TEST(DetectionGridSample, BilinearZerosMatchesPointReference) {
  const Tensor x = uniform_f32({2, 3, 6, 5}, -1.0f, 1.0f, 13);
  const Tensor grid = uniform_f32({2, 4, 7, 2}, -1.3f, 1.3f, 14);
  for (int align : {0, 1}) {
    const Attributes attrs{{"align_corners", int64_t{align}}};
    auto y = run_kernel_once("GridSample", 16, attrs, {x, grid});
    ASSERT_EQ(y[0].shape(), (Shape{2, 3, 4, 7}));
    EXPECT_TRUE(testing::tensors_close(y[0], f32({2, 3, 4, 7}, bilinear_zeros_reference(x, grid, align != 0)), 1e-5, 1e-6));
    for (const char* mode : {"bilinear", "nearest", "bicubic"})
      for (const char* pad : {"zeros", "border", "reflection"})
        expect_thread_independent("GridSample", 16,
                                  {{"align_corners", int64_t{align}}, {"mode", std::string(mode)},
                                   {"padding_mode", std::string(pad)}},
                                  {x, grid});
  }
}

TEST(DetectionGridSample, BorderClampsAndReflectionMirrors) {
  // 1 x 1 x 2 x 4 image; with align_corners the pixel centers are at -1, -1/3, 1/3, 1.
  const Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor grid = f32({1, 1, 3, 2}, {5.0f, -1.0f, -3.0f, 1.0f, 1.0f + 2.0f / 3.0f, 1.0f});
  const Attributes base{{"align_corners", int64_t{1}}};
  auto zeros = run_kernel_once("GridSample", 16, base, {x, grid});
  EXPECT_TRUE(testing::tensors_close(zeros[0], f32({1, 1, 1, 3}, {0, 0, 0}), 0, 1e-6));
  auto border = run_kernel_once("GridSample", 16, {{"align_corners", int64_t{1}}, {"padding_mode", std::string("border")}},
                                {x, grid});
  EXPECT_TRUE(testing::tensors_close(border[0], f32({1, 1, 1, 3}, {4, 5, 8}), 0, 1e-5));
  // x = 1 + 2/3 is one pixel past the right edge: reflects to column 2.
  auto refl = run_kernel_once("GridSample", 16,
                              {{"align_corners", int64_t{1}}, {"padding_mode", std::string("reflection")},
                               {"mode", std::string("nearest")}},
                              {x, grid});
  EXPECT_EQ(refl[0].to_vector<float>()[2], 7.0f);
}

TEST(DetectionGridSample, BadInputsFail) {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  expect_error("GridSample", 16, {}, {x, f32({1, 1, 1, 3}, {0, 0, 0})}, {"GridSample", "input grid", "x2"});
  expect_error("GridSample", 16, {}, {x, f32({2, 1, 1, 2}, {0, 0, 0, 0})}, {"GridSample", "input grid"});
  expect_error("GridSample", 16, {{"mode", std::string("area")}}, {x, f32({1, 1, 1, 2}, {0, 0})},
               {"GridSample", "mode is 'area'"});
  expect_error("GridSample", 16, {{"padding_mode", std::string("wrap")}}, {x, f32({1, 1, 1, 2}, {0, 0})},
               {"GridSample", "padding_mode is 'wrap'"});
  expect_error("GridSample", 16, {}, {Tensor::from_vector<int32_t>({1, 1, 1, 1}, {1}), f32({1, 1, 1, 2}, {0, 0})},
               {"GridSample", "input X", "float32 or float64"});
  expect_error("GridSample", 16, {}, {f32({1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 2}, {0, 0})},
               {"GridSample", "input X", "rank 4"});
}

}  // namespace
}  // namespace spindle
