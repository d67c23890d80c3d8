// nms.cpp — NonMaxSuppression (10, 11).
//
// For every (batch, class): the boxes whose score is above score_threshold
// (all boxes when it is not given) are visited by descending score, ties by
// the lower box index; a box is selected unless its IOU with a box already
// selected for this class exceeds iou_threshold, until
// max_output_boxes_per_class boxes are selected (0 or absent: none).
// selected_indices lists [batch, class, box] by batch, then class, then
// selection order. Boxes are [y1, x1, y2, x2] with either diagonal pair of
// corners (center_point_box 0) or [x_center, y_center, width, height]
// (center_point_box 1). A box of zero area never suppresses.
//
// The (batch, class) pairs run in parallel; each writes its own list and the
// lists are concatenated in order, so the output does not depend on the
// thread count.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/detection/detection_ops.h"
#include "kernels/nn/nn_util.h"
#include "kernels/tensor/tensor_util.h"

namespace spindle::kernels::detection {
namespace {

// A box as [x_min, y_min, x_max, y_max].
struct Box {
  double x0, y0, x1, y1;
};

Box corners(const double* b, bool center_point) {
  if (center_point) {
    const double hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// True when the IOU of a and b exceeds `threshold`.
bool suppresses(const Box& a, const Box& b, double threshold) {
  const double ix0 = std::max(a.x0, b.x0), ix1 = std::min(a.x1, b.x1);
  if (ix1 <= ix0) return false;
  const double iy0 = std::max(a.y0, b.y0), iy1 = std::min(a.y1, b.y1);
  if (iy1 <= iy0) return false;
  const double inter = (ix1 - ix0) * (iy1 - iy0);
  const double area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const double uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

// A scalar (or 1-element) float input as double; `def` when absent or empty.
double optional_float(const NodeInfo& node, KernelContext& ctx, int i, const char* name, double def, bool* given) {
  *given = false;
  if (!ctx.has_input(i) || ctx.input(i).numel() == 0) return def;
  const Tensor& t = ctx.input(i);
  if (t.numel() != 1 || (t.dtype() != DataType::kFloat32 && t.dtype() != DataType::kFloat64))
    fail(node, fmt::format("input {} is {}, expected a single float", name, t.describe()));
  *given = true;
  return tensor::read_doubles(node, t, name)[0];
}

class NonMaxSuppressionKernel final : public OpKernel {
 public:
  explicit NonMaxSuppressionKernel(const NodeInfo& node) {
    const int64_t c = node.attrs.get_int("center_point_box", 0);
    if (c != 0 && c != 1) fail(node, fmt::format("attribute center_point_box is {}, expected 0 or 1", c));
    center_point_ = c == 1;
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& boxes = ctx.input(0);
    const Tensor& scores = ctx.input(1);
    require_float(node, boxes, "boxes", /*allow_float64=*/true);
    require_float(node, scores, "scores", /*allow_float64=*/true);
    require_rank(node, boxes, "boxes", 3, "num_batches x spatial_dimension x 4");
    require_rank(node, scores, "scores", 3, "num_batches x num_classes x spatial_dimension");
    const int64_t batches = boxes.dim(0), num_boxes = boxes.dim(1), classes = scores.dim(1);
    if (boxes.dim(2) != 4) fail(node, fmt::format("input boxes is {}, expected 4 coordinates per box", boxes.describe()));
    if (scores.dim(0) != batches || scores.dim(2) != num_boxes)
      fail(node, fmt::format("input scores is {}, expected {}x<classes>x{} to match boxes {}", scores.describe(), batches,
                             num_boxes, boxes.describe()));
    int64_t max_out = 0;
    if (ctx.has_input(2) && ctx.input(2).numel() != 0) {
      const Tensor& m = ctx.input(2);
      if (m.dtype() != DataType::kInt64 || m.numel() != 1)
        fail(node, fmt::format("input max_output_boxes_per_class is {}, expected a single int64", m.describe()));
      max_out = std::max<int64_t>(0, m.data<int64_t>()[0]);
    }
    bool has_iou = false, has_score = false;
    const double iou = optional_float(node, ctx, 3, "iou_threshold", 0.0, &has_iou);
    const double score_min = optional_float(node, ctx, 4, "score_threshold", 0.0, &has_score);
    if (iou < 0 || iou > 1) fail(node, fmt::format("input iou_threshold is {}, expected a value in [0, 1]", iou));

    const std::vector<double> box_v = tensor::read_doubles(node, boxes, "boxes");
    const std::vector<double> score_v = tensor::read_doubles(node, scores, "scores");
    const int64_t pairs = batches * classes;
    std::vector<std::vector<int64_t>> selected(static_cast<size_t>(pairs));
    if (max_out > 0 && num_boxes > 0) {
      // A (batch, class) list: filter and sort its boxes, then compare each
      // kept box with the boxes already kept (up to max_out of them).
      const double nb = static_cast<double>(num_boxes);
      const double list_work =
          nb * std::log2(nb + 1.0) + nb * static_cast<double>(std::min<int64_t>(max_out, num_boxes)) * 8.0;
      parallel_for(ctx.pool(), 0, pairs, grain_for_cost(nn::ops_cost(list_work)), [&](int64_t p0, int64_t p1) {
        std::vector<int64_t> cand;
        std::vector<Box> kept;
        for (int64_t p = p0; p < p1; ++p) {
          const int64_t b = p / classes;
          const double* s = score_v.data() + p * num_boxes;
          cand.clear();
          for (int64_t i = 0; i < num_boxes; ++i)
            if (!has_score || s[i] > score_min) cand.push_back(i);
          // NaN scores (possible without a score_threshold) go last.
          auto key = [&](int64_t i) { return std::isnan(s[i]) ? -HUGE_VAL : s[i]; };
          std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
          kept.clear();
          std::vector<int64_t>& out = selected[static_cast<size_t>(p)];
          for (int64_t i : cand) {
            if (static_cast<int64_t>(out.size()) >= max_out) break;
            const Box box = corners(box_v.data() + (b * num_boxes + i) * 4, center_point_);
            bool keep = true;
            for (const Box& k : kept)
              if (suppresses(box, k, iou)) {
                keep = false;
                break;
              }
            if (!keep) continue;
            kept.push_back(box);
            out.push_back(i);
          }
        }
      });
    }
    int64_t total = 0;
    for (const auto& v : selected) total += static_cast<int64_t>(v.size());
    int64_t* y = ctx.output(0, DataType::kInt64, {total, 3}).mutable_data<int64_t>();
    for (int64_t p = 0; p < pairs; ++p)
      for (int64_t i : selected[static_cast<size_t>(p)]) {
        *y++ = p / classes;
        *y++ = p % classes;
        *y++ = i;
      }
  }

 private:
  bool center_point_ = false;
};

}  // namespace

void register_nms(KernelRegistry& r) {
  r.add("", "NonMaxSuppression", 10, 17, factory_of<NonMaxSuppressionKernel>());
}

}  // namespace spindle::kernels::detection
