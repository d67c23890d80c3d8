// reduce_test.cpp — src/kernels/reduce: ONNX backend node tests, reductions
// and softmax against naive references, determinism across thread counts,
// error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernel_errors.h"
#include "onnx_node_runner.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using testing::error_of;
using ::testing::HasSubstr;

// Every non-expanded ONNX backend node test of the reduce ops, listed
// explicitly (a missing kernel shows up as a failure). Nothing in this
// family is skipped: all use float32 / int32 / int64 (the *_expanded
// variants are multi-node function expansions, run elsewhere).
const std::vector<std::string> kReduceNodeTests = {
    "test_argmax_default_axis_example", "test_argmax_default_axis_example_select_last_index",
    "test_argmax_default_axis_random", "test_argmax_default_axis_random_select_last_index",
    "test_argmax_keepdims_example", "test_argmax_keepdims_example_select_last_index",
    "test_argmax_keepdims_random", "test_argmax_keepdims_random_select_last_index",
    "test_argmax_negative_axis_keepdims_example",
    "test_argmax_negative_axis_keepdims_example_select_last_index", "test_argmax_negative_axis_keepdims_random",
    "test_argmax_negative_axis_keepdims_random_select_last_index", "test_argmax_no_keepdims_example",
    "test_argmax_no_keepdims_example_select_last_index", "test_argmax_no_keepdims_random",
    "test_argmax_no_keepdims_random_select_last_index", "test_argmin_default_axis_example",
    "test_argmin_default_axis_example_select_last_index", "test_argmin_default_axis_random",
    "test_argmin_default_axis_random_select_last_index", "test_argmin_keepdims_example",
    "test_argmin_keepdims_example_select_last_index", "test_argmin_keepdims_random",
    "test_argmin_keepdims_random_select_last_index", "test_argmin_negative_axis_keepdims_example",
    "test_argmin_negative_axis_keepdims_example_select_last_index", "test_argmin_negative_axis_keepdims_random",
    "test_argmin_negative_axis_keepdims_random_select_last_index", "test_argmin_no_keepdims_example",
    "test_argmin_no_keepdims_example_select_last_index", "test_argmin_no_keepdims_random",
    "test_argmin_no_keepdims_random_select_last_index", "test_cumsum_1d", "test_cumsum_1d_exclusive",
    "test_cumsum_1d_reverse", "test_cumsum_1d_reverse_exclusive", "test_cumsum_2d_axis_0",
    "test_cumsum_2d_axis_1", "test_cumsum_2d_negative_axis", "test_hardmax_axis_0", "test_hardmax_axis_1",
    "test_hardmax_axis_2", "test_hardmax_default_axis", "test_hardmax_example", "test_hardmax_negative_axis",
    "test_hardmax_one_hot", "test_logsoftmax_axis_0", "test_logsoftmax_axis_1", "test_logsoftmax_axis_2",
    "test_logsoftmax_default_axis", "test_logsoftmax_example_1", "test_logsoftmax_large_number",
    "test_logsoftmax_negative_axis", "test_reduce_l1_default_axes_keepdims_example",
    "test_reduce_l1_default_axes_keepdims_random", "test_reduce_l1_do_not_keepdims_example",
    "test_reduce_l1_do_not_keepdims_random", "test_reduce_l1_keep_dims_example",
    "test_reduce_l1_keep_dims_random", "test_reduce_l1_negative_axes_keep_dims_example",
    "test_reduce_l1_negative_axes_keep_dims_random", "test_reduce_l2_default_axes_keepdims_example",
    "test_reduce_l2_default_axes_keepdims_random", "test_reduce_l2_do_not_keepdims_example",
    "test_reduce_l2_do_not_keepdims_random", "test_reduce_l2_keep_dims_example",
    "test_reduce_l2_keep_dims_random", "test_reduce_l2_negative_axes_keep_dims_example",
    "test_reduce_l2_negative_axes_keep_dims_random", "test_reduce_log_sum", "test_reduce_log_sum_asc_axes",
    "test_reduce_log_sum_default", "test_reduce_log_sum_desc_axes",
    "test_reduce_log_sum_exp_default_axes_keepdims_example",
    "test_reduce_log_sum_exp_default_axes_keepdims_random", "test_reduce_log_sum_exp_do_not_keepdims_example",
    "test_reduce_log_sum_exp_do_not_keepdims_random", "test_reduce_log_sum_exp_keepdims_example",
    "test_reduce_log_sum_exp_keepdims_random", "test_reduce_log_sum_exp_negative_axes_keepdims_example",
    "test_reduce_log_sum_exp_negative_axes_keepdims_random", "test_reduce_log_sum_negative_axes",
    "test_reduce_max_default_axes_keepdim_example", "test_reduce_max_default_axes_keepdims_random",
    "test_reduce_max_do_not_keepdims_example", "test_reduce_max_do_not_keepdims_random",
    "test_reduce_max_keepdims_example", "test_reduce_max_keepdims_random",
    "test_reduce_max_negative_axes_keepdims_example", "test_reduce_max_negative_axes_keepdims_random",
    "test_reduce_mean_default_axes_keepdims_example", "test_reduce_mean_default_axes_keepdims_random",
    "test_reduce_mean_do_not_keepdims_example", "test_reduce_mean_do_not_keepdims_random",
    "test_reduce_mean_keepdims_example", "test_reduce_mean_keepdims_random",
    "test_reduce_mean_negative_axes_keepdims_example", "test_reduce_mean_negative_axes_keepdims_random",
    "test_reduce_min_default_axes_keepdims_example", "test_reduce_min_default_axes_keepdims_random",
    "test_reduce_min_do_not_keepdims_example", "test_reduce_min_do_not_keepdims_random",
    "test_reduce_min_keepdims_example", "test_reduce_min_keepdims_random",
    "test_reduce_min_negative_axes_keepdims_example", "test_reduce_min_negative_axes_keepdims_random",
    "test_reduce_prod_default_axes_keepdims_example", "test_reduce_prod_default_axes_keepdims_random",
    "test_reduce_prod_do_not_keepdims_example", "test_reduce_prod_do_not_keepdims_random",
    "test_reduce_prod_keepdims_example", "test_reduce_prod_keepdims_random",
    "test_reduce_prod_negative_axes_keepdims_example", "test_reduce_prod_negative_axes_keepdims_random",
    "test_reduce_sum_default_axes_keepdims_example", "test_reduce_sum_default_axes_keepdims_random",
    "test_reduce_sum_do_not_keepdims_example", "test_reduce_sum_do_not_keepdims_random",
    "test_reduce_sum_empty_axes_input_noop_example", "test_reduce_sum_empty_axes_input_noop_random",
    "test_reduce_sum_keepdims_example", "test_reduce_sum_keepdims_random",
    "test_reduce_sum_negative_axes_keepdims_example", "test_reduce_sum_negative_axes_keepdims_random",
    "test_reduce_sum_square_default_axes_keepdims_example",
    "test_reduce_sum_square_default_axes_keepdims_random", "test_reduce_sum_square_do_not_keepdims_example",
    "test_reduce_sum_square_do_not_keepdims_random", "test_reduce_sum_square_keepdims_example",
    "test_reduce_sum_square_keepdims_random", "test_reduce_sum_square_negative_axes_keepdims_example",
    "test_reduce_sum_square_negative_axes_keepdims_random", "test_softmax_axis_0", "test_softmax_axis_1",
    "test_softmax_axis_2", "test_softmax_default_axis", "test_softmax_example", "test_softmax_large_number",
    "test_softmax_negative_axis",
};

class ReduceNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReduceNodeTest, MatchesOnnxReference) { EXPECT_TRUE(testing::run_onnx_node_test(GetParam())); }

INSTANTIATE_TEST_SUITE_P(ReduceOnnx, ReduceNodeTest, ::testing::ValuesIn(kReduceNodeTests),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ------------------------------------------------------------------ helpers

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// Naive reduction in double over `axes` (sorted, non-negative), keepdims=1.
// kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 l1, 6 l2, 7 logsum, 8 logsumexp, 9 sumsquare.
std::vector<double> naive_reduce(const std::vector<float>& x, const Shape& shape, const std::vector<int64_t>& axes,
                                 int kind) {
  const size_t r = shape.size();
  std::vector<bool> red(r, false);
  for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
  Shape out_shape = shape;
  for (size_t d = 0; d < r; ++d)
    if (red[d]) out_shape[d] = 1;
  const int64_t n_out = shape_numel(out_shape);
  std::vector<std::vector<double>> groups(static_cast<size_t>(n_out));
  const Shape in_strides = contiguous_strides(shape), out_strides = contiguous_strides(out_shape);
  for (int64_t i = 0; i < shape_numel(shape); ++i) {
    int64_t rem = i, o = 0;
    for (size_t d = 0; d < r; ++d) {
      const int64_t c = rem / in_strides[d];
      rem %= in_strides[d];
      if (!red[d]) o += c * out_strides[d];
    }
    groups[static_cast<size_t>(o)].push_back(x[static_cast<size_t>(i)]);
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    double acc = kind == 2 ? -INFINITY : kind == 3 ? INFINITY : kind == 4 ? 1 : 0;
    double mx = -INFINITY;
    for (double v : g) mx = std::max(mx, v);
    for (double v : g) {
      switch (kind) {
        case 2: acc = std::max(acc, v); break;
        case 3: acc = std::min(acc, v); break;
        case 4: acc *= v; break;
        case 5: acc += std::fabs(v); break;
        case 6: case 9: acc += v * v; break;
        case 8: acc += std::exp(v - mx); break;
        default: acc += v;
      }
    }
    if (kind == 1) acc /= static_cast<double>(g.size());
    if (kind == 6) acc = std::sqrt(acc);
    if (kind == 7) acc = std::log(acc);
    if (kind == 8) acc = mx + std::log(acc);
    out.push_back(acc);
  }
  return out;
}

const char* const kReduceOps[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                  "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

// ------------------------------------------------------------------ reductions

struct AxesCase {
  Shape shape;
  std::vector<int64_t> axes;
};
void PrintTo(const AxesCase& c, std::ostream* os) {
  *os << shape_to_string(c.shape) << " axes";
  for (int64_t a : c.axes) *os << " " << a;
}

class ReduceAxes : public ::testing::TestWithParam<AxesCase> {};

TEST_P(ReduceAxes, EveryOpMatchesNaiveReference) {
  const AxesCase& c = GetParam();
  // Positive values keep LogSum / Prod well defined.
  auto v = random_floats(shape_numel(c.shape), 11, 0.5f, 1.5f);
  auto x = Tensor::from_vector<float>(c.shape, v);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (int kind = 0; kind < 10; ++kind) {
    const auto want = naive_reduce(v, c.shape, c.axes, kind);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      Tensor got;
      if (kind == 0) {  // ReduceSum 13: axes as an input
        got = run_kernel_once(kReduceOps[kind], 13, {},
                              {x, Tensor::from_vector<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)}, 1,
                              p)[0];
      } else {
        got = run_kernel_once(kReduceOps[kind], 13, Attributes{{"axes", c.axes}}, {x}, 1, p)[0];
      }
      ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << kReduceOps[kind];
      const float* g = got.data<float>();
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(g[i], want[i], 2e-5 * std::fabs(want[i]) + 1e-5) << kReduceOps[kind] << " output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ReduceShapes, ReduceAxes,
                         ::testing::Values(AxesCase{{1, 40, 120}, {2}},        // last axis (LayerNorm-style)
                                           AxesCase{{3, 1000}, {1}},           // long rows: lanes + tail
                                           AxesCase{{6, 7, 5}, {0}},           // leading axis, kept inner
                                           AxesCase{{6, 7, 5}, {1}},           // middle axis
                                           AxesCase{{4, 6, 7, 5}, {0, 2}},     // two separated axes, inner kept
                                           AxesCase{{4, 6, 7, 5}, {1, 3}},     // two separated axes, inner reduced
                                           AxesCase{{2, 3, 4}, {0, 1, 2}},     // everything
                                           AxesCase{{300, 40}, {0}},           // columns, pool splits rows
                                           AxesCase{{2, 1, 33}, {1}}));        // size-1 axis

TEST(ReduceOps, KeepdimsDefaultAxesNegativeAxesAndNoop) {
  auto x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto s = run_kernel_once("ReduceSum", 11, Attributes{{"keepdims", int64_t{0}}, {"axes", std::vector<int64_t>{-1}}},
                           {x})[0];
  EXPECT_EQ(s.shape(), (Shape{2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{6, 15}));
  auto all = run_kernel_once("ReduceMax", 13, {}, {x})[0];
  EXPECT_EQ(all.shape(), (Shape{1, 1}));
  EXPECT_EQ(all.to_vector<float>(), (std::vector<float>{6}));
  // ReduceSum 13: absent axes = all; empty axes + noop_with_empty_axes = identity.
  EXPECT_EQ(run_kernel_once("ReduceSum", 13, {}, {x})[0].to_vector<float>(), (std::vector<float>{21}));
  auto noop = run_kernel_once("ReduceSum", 13, Attributes{{"noop_with_empty_axes", int64_t{1}}},
                              {x, Tensor::from_vector<int64_t>({0}, {})})[0];
  EXPECT_EQ(noop.shape(), x.shape());
  EXPECT_EQ(noop.to_vector<float>(), x.to_vector<float>());
  // int64 sums (shape arithmetic) and an empty reduction.
  auto xi = Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(run_kernel_once("ReduceProd", 13, Attributes{{"axes", std::vector<int64_t>{0}}}, {xi})[0]
                .to_vector<int64_t>(),
            (std::vector<int64_t>{3, 8}));
  auto empty = Tensor(DataType::kFloat32, Shape{2, 0});
  EXPECT_EQ(run_kernel_once("ReduceSum", 11, Attributes{{"axes", std::vector<int64_t>{1}}}, {empty})[0]
                .to_vector<float>(),
            (std::vector<float>{0, 0}));
}

TEST(ReduceArg, MaxMinSelectLastAndColumns) {
  auto x = Tensor::from_vector<float>({2, 4}, {1, 3, 3, 0, 5, 5, 2, 5});
  EXPECT_EQ(run_kernel_once("ArgMax", 13, Attributes{{"axis", int64_t{1}}}, {x})[0].to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(run_kernel_once("ArgMax", 13, Attributes{{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}, {x})[0]
                .to_vector<int64_t>(),
            (std::vector<int64_t>{2, 3}));
  auto m0 = run_kernel_once("ArgMin", 13, Attributes{{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}, {x})[0];
  EXPECT_EQ(m0.shape(), (Shape{4}));
  EXPECT_EQ(m0.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0}));
}

TEST(ReduceCumSum, AxisExclusiveReverse) {
  auto x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto ax1 = Tensor::scalar<int64_t>(1);
  EXPECT_EQ(run_kernel_once("CumSum", 14, {}, {x, ax1})[0].to_vector<float>(),
            (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(run_kernel_once("CumSum", 14, Attributes{{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}, {x, ax1})[0]
                .to_vector<float>(),
            (std::vector<float>{5, 3, 0, 11, 6, 0}));
  auto ax0 = Tensor::scalar<int32_t>(0);
  EXPECT_EQ(run_kernel_once("CumSum", 14, {}, {x, ax0})[0].to_vector<float>(),
            (std::vector<float>{1, 2, 3, 5, 7, 9}));
}

// ------------------------------------------------------------------ softmax

TEST(ReduceSoftmax, MatchesReferenceAlongEveryAxisAndOpset) {
  const Shape shape{3, 5, 70};
  auto v = random_floats(shape_numel(shape), 21, -20.0f, 20.0f);
  auto x = Tensor::from_vector<float>(shape, v);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (int opset : {11, 13}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      // Reference: opset 11 normalizes [prod(:axis), prod(axis:)] rows;
      // opset 13 along the axis only.
      const int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t outer = 1, D = 1, inner = 1;
      for (int64_t d = 0; d < a; ++d) outer *= shape[static_cast<size_t>(d)];
      if (opset < 13) {
        for (int64_t d = a; d < 3; ++d) D *= shape[static_cast<size_t>(d)];
      } else {
        D = shape[static_cast<size_t>(a)];
        for (int64_t d = a + 1; d < 3; ++d) inner *= shape[static_cast<size_t>(d)];
      }
      std::vector<double> sm(v.size()), lsm(v.size());
      std::vector<float> hm(v.size(), 0.0f);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          auto at = [&](int64_t d) { return static_cast<size_t>((o * D + d) * inner + j); };
          double mx = -INFINITY, s = 0;
          int64_t arg = 0;
          for (int64_t d = 0; d < D; ++d)
            if (v[at(d)] > mx) {
              mx = v[at(d)];
              arg = d;
            }
          for (int64_t d = 0; d < D; ++d) s += std::exp(v[at(d)] - mx);
          for (int64_t d = 0; d < D; ++d) {
            sm[at(d)] = std::exp(v[at(d)] - mx) / s;
            lsm[at(d)] = v[at(d)] - mx - std::log(s);
          }
          hm[at(arg)] = 1.0f;
        }
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
        const Attributes attrs{{"axis", axis}};
        auto y = run_kernel_once("Softmax", opset, attrs, {x}, 1, p)[0].to_vector<float>();
        auto ly = run_kernel_once("LogSoftmax", opset, attrs, {x}, 1, p)[0].to_vector<float>();
        auto hy = run_kernel_once("Hardmax", opset, attrs, {x}, 1, p)[0].to_vector<float>();
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_NEAR(y[i], sm[i], 2e-6 * sm[i] + 1e-12) << "opset " << opset << " axis " << axis << " at " << i;
          ASSERT_NEAR(ly[i], lsm[i], 1e-5 * std::fabs(lsm[i]) + 1e-5) << "opset " << opset << " axis " << axis;
          ASSERT_EQ(hy[i], hm[i]) << "opset " << opset << " axis " << axis << " at " << i;
        }
      }
    }
  }
}

// Rows longer than the 32 lanes (vectors, then a tail) keep the special
// values' rules wherever they sit: a NaN anywhere makes the row NaN, -inf
// entries give 0 (LogSoftmax: -inf) and leave the rest normalized, +inf or a
// row of only -inf makes the row NaN (inf - inf).
TEST(ReduceSoftmax, SpecialValuesInRowsLongerThanTheLanes) {
  constexpr int64_t kRows = 6, kD = 100;
  auto v = random_floats(kRows * kD, 23, -30.0f, 30.0f);
  const float inf = std::numeric_limits<float>::infinity();
  v[1 * kD + 98] = NAN;                             // in the tail (96 = 3 x 32)
  v[2 * kD + 3] = -inf, v[2 * kD + 40] = -inf;      // in the vectors
  v[3 * kD + 9] = inf;
  for (int64_t d = 0; d < kD; ++d) v[4 * kD + d] = -inf;
  v[5 * kD + 10] = NAN;                             // in the vectors
  const Tensor x = Tensor::from_vector<float>({kRows, kD}, v);
  const Attributes attrs{{"axis", int64_t{-1}}};
  const auto y = run_kernel_once("Softmax", 13, attrs, {x})[0].to_vector<float>();
  const auto ly = run_kernel_once("LogSoftmax", 13, attrs, {x})[0].to_vector<float>();
  for (int64_t r : {int64_t{0}, int64_t{2}}) {
    double mx = -INFINITY, s = 0;
    for (int64_t d = 0; d < kD; ++d) mx = std::max(mx, static_cast<double>(v[r * kD + d]));
    for (int64_t d = 0; d < kD; ++d) s += std::exp(v[r * kD + d] - mx);
    for (int64_t d = 0; d < kD; ++d) {
      const size_t i = static_cast<size_t>(r * kD + d);
      const double want = std::exp(v[i] - mx) / s;
      ASSERT_NEAR(y[i], want, 2e-6 * want + 1e-12) << "row " << r << " at " << d;
      if (std::isinf(v[i])) EXPECT_TRUE(y[i] == 0.0f && std::isinf(ly[i]) && ly[i] < 0) << "row " << r << " at " << d;
      else EXPECT_NEAR(ly[i], v[i] - mx - std::log(s), 1e-5 * std::fabs(v[i] - mx - std::log(s)) + 1e-5);
    }
  }
  for (int64_t r : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{5}})
    for (int64_t d = 0; d < kD; ++d) {
      const size_t i = static_cast<size_t>(r * kD + d);
      ASSERT_TRUE(std::isnan(y[i]) && std::isnan(ly[i])) << "row " << r << " at " << d;
    }
}

// ------------------------------------------------------------------ determinism

TEST(ReduceDeterminism, BitwiseIdenticalForAnyThreadCount) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  // Large enough that the pool really splits the work.
  const Shape shape{64, 96, 257};
  auto x = Tensor::from_vector<float>(shape, random_floats(shape_numel(shape), 31, -10.0f, 10.0f));
  struct Case {
    const char* op;
    int opset;
    Attributes attrs;
  };
  const Case cases[] = {
      {"ReduceMean", 13, Attributes{{"axes", std::vector<int64_t>{-1}}}},
      {"ReduceSum", 11, Attributes{{"axes", std::vector<int64_t>{0}}}},
      {"ReduceLogSumExp", 13, Attributes{{"axes", std::vector<int64_t>{1}}}},
      {"ReduceL2", 13, Attributes{{"axes", std::vector<int64_t>{0, 2}}}},
      {"Softmax", 13, Attributes{{"axis", int64_t{-1}}}},
      {"Softmax", 13, Attributes{{"axis", int64_t{1}}}},
      {"LogSoftmax", 11, Attributes{{"axis", int64_t{1}}}},
      {"CumSum", 14, Attributes{}},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in{x};
    if (std::string(c.op) == "CumSum") in.push_back(Tensor::scalar<int64_t>(1));
    auto serial = run_kernel_once(c.op, c.opset, c.attrs, in, 1, nullptr)[0];
    auto threaded = run_kernel_once(c.op, c.opset, c.attrs, in, 1, pool.get())[0];
    auto again = run_kernel_once(c.op, c.opset, c.attrs, in, 1, pool.get())[0];
    EXPECT_TRUE(bitwise_equal(serial, threaded)) << c.op;
    EXPECT_TRUE(bitwise_equal(threaded, again)) << c.op;
  }
}

// ------------------------------------------------------------------ errors

TEST(ReduceErrors, AxisOutOfRangeNamesOpAndAxis) {
  auto x = Tensor::from_vector<float>({2, 3, 4}, std::vector<float>(24, 1.0f));
  std::string msg = error_of([&] { run_kernel_once("ReduceSum", 11, Attributes{{"axes", std::vector<int64_t>{5}}}, {x}); });
  EXPECT_THAT(msg, HasSubstr("ReduceSum"));
  EXPECT_THAT(msg, HasSubstr("axis 5 is out of range"));
  EXPECT_THAT(msg, HasSubstr("rank-3 tensor (expected [-3, 2])"));
  msg = error_of([&] { run_kernel_once("ReduceSum", 13, {}, {x, Tensor::from_vector<int64_t>({1}, {-4})}); });
  EXPECT_THAT(msg, HasSubstr("ReduceSum"));
  EXPECT_THAT(msg, HasSubstr("-4"));
  msg = error_of([&] { run_kernel_once("Softmax", 13, Attributes{{"axis", int64_t{3}}}, {x}); });
  EXPECT_THAT(msg, HasSubstr("Softmax"));
  EXPECT_THAT(msg, HasSubstr("out of range"));
  msg = error_of([&] { run_kernel_once("ArgMax", 13, Attributes{{"axis", int64_t{-4}}}, {x}); });
  EXPECT_THAT(msg, HasSubstr("ArgMax"));
  EXPECT_THAT(msg, HasSubstr("out of range"));
}

TEST(ReduceErrors, UnsupportedDtypeNamesOpAndDtype) {
  auto b = Tensor::from_vector<bool>({2}, {true, false});
  std::string msg = error_of([&] { run_kernel_once("ReduceMean", 13, {}, {b}); });
  EXPECT_THAT(msg, HasSubstr("ReduceMean"));
  EXPECT_THAT(msg, HasSubstr("bool"));
  auto i = Tensor::from_vector<int64_t>({2}, {1, 2});
  msg = error_of([&] { run_kernel_once("Softmax", 13, {}, {i}); });
  EXPECT_THAT(msg, HasSubstr("Softmax"));
  EXPECT_THAT(msg, HasSubstr("int64"));
}

}  // namespace
}  // namespace spindle
