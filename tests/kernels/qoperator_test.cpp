// qoperator_test.cpp — the com.microsoft operators of QOperator-format models
// (src/kernels/nn/qoperator.cpp) beyond tests/opsets' ONNX Runtime cases:
// bad input (each message names the input or attribute and what was
// expected), a few values worked by hand, and bits independent of the
// thread count (no pool, a pool of 1 and of 2 threads, on inputs large
// enough to be split into several blocks).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"
#include "random_ints.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using ::testing::HasSubstr;

using testing::random_ints;

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor q8(bool sign, const Shape& s, uint32_t seed) {
  const size_t n = static_cast<size_t>(numel_of(s));
  return sign ? Tensor::from_vector<int8_t>(s, random_ints<int8_t>(n, seed, -128, 127))
              : Tensor::from_vector<uint8_t>(s, random_ints<uint8_t>(n, seed, 0, 255));
}

Tensor zp(bool sign, int v) {
  return sign ? Tensor::from_vector<int8_t>({}, {static_cast<int8_t>(v)})
              : Tensor::from_vector<uint8_t>({}, {static_cast<uint8_t>(v)});
}

Tensor scale(float v) { return Tensor::from_vector<float>({}, {v}); }

kernels::NodeInfo ms_node(const std::string& op, int num_inputs, Attributes attrs = {}) {
  kernels::NodeInfo node;
  node.op_type = op;
  node.domain = "com.microsoft";
  node.opset = 1;
  node.num_inputs = num_inputs;
  node.attrs = std::move(attrs);
  return node;
}

Attributes ints_attr(const std::string& name, int64_t v) {
  Attributes a;
  a.set(name, v);
  return a;
}

std::string error_running(const kernels::NodeInfo& node, const std::vector<Tensor>& inputs) {
  return testing::error_of([&] { run_kernel_once(node, inputs); });
}

// Y_scale, Y_zero_point, then a triple per tensor.
// (zero points of X0's type).
std::vector<Tensor> concat_inputs(const std::vector<Tensor>& xs) {
  const bool sign = xs[0].dtype() == DataType::kInt8;
  std::vector<Tensor> in = {scale(0.05f), zp(sign, 128)};
  float s = 0.02f;
  for (const Tensor& x : xs) {
    in.push_back(x);
    in.push_back(scale(s));
    in.push_back(zp(sign, 120));
    s += 0.03f;
  }
  return in;
}

TEST(QOperatorErrors, QLinearConcatNamesTheBadInput) {
  const Tensor a = q8(false, {2, 3, 4}, 1), b = q8(false, {2, 5, 4}, 2);
  const auto node = ms_node("QLinearConcat", 8, ints_attr("axis", 3));
  std::string msg = error_running(node, concat_inputs({a, b}));
  EXPECT_THAT(msg, HasSubstr("axis 3 is out of range for a rank-3 tensor"));

  const auto node1 = ms_node("QLinearConcat", 8, ints_attr("axis", 1));
  msg = error_running(node1, concat_inputs({a, q8(false, {2, 5}, 3)}));
  EXPECT_THAT(msg, HasSubstr("input X1 is"));
  EXPECT_THAT(msg, HasSubstr("expected rank 3"));

  msg = error_running(node1, concat_inputs({a, q8(false, {2, 5, 3}, 3)}));
  EXPECT_THAT(msg, HasSubstr("input X1 is"));
  EXPECT_THAT(msg, HasSubstr("except along axis 1"));

  std::vector<Tensor> in = concat_inputs({a, b});
  in[6] = Tensor::from_vector<float>({2}, {0.1f, 0.2f});  // X1_scale
  msg = error_running(node1, in);
  EXPECT_THAT(msg, HasSubstr("input X1_scale is"));
  EXPECT_THAT(msg, HasSubstr("expected one float32 value"));

  in = concat_inputs({a, b});
  in[7] = zp(true, 3);  // X1_zero_point int8 beside uint8 data
  EXPECT_THAT(error_running(node1, in), HasSubstr("input X1_zero_point is"));

  in = concat_inputs({a, q8(true, {2, 5, 4}, 4)});
  EXPECT_THAT(error_running(node1, in), HasSubstr("input X1 is"));

  in = concat_inputs({a, b});
  in.pop_back();
  EXPECT_THAT(error_running(ms_node("QLinearConcat", 7, ints_attr("axis", 1)), in),
              HasSubstr("expected Y_scale, Y_zero_point and then one (X, X_scale, X_zero_point) triple"));

  EXPECT_THAT(testing::error_of([&] { run_kernel_once(ms_node("QLinearConcat", 5), concat_inputs({a})); }),
              HasSubstr("attribute axis is missing"));
}

std::vector<Tensor> pool_inputs(const Tensor& x) {
  const bool sign = x.dtype() == DataType::kInt8;
  return {x, scale(0.07f), zp(sign, 3), scale(0.05f), zp(sign, 5)};
}

Attributes pool_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                      int64_t count_include_pad, int64_t channels_last) {
  Attributes a;
  a.set("kernel_shape", std::move(kernel));
  a.set("strides", std::move(strides));
  a.set("pads", std::move(pads));
  a.set("count_include_pad", count_include_pad);
  a.set("channels_last", channels_last);
  return a;
}

TEST(QOperatorErrors, QLinearAveragePoolNamesTheBadInput) {
  const auto node = ms_node("QLinearAveragePool", 5, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0}, 0, 0));
  std::vector<Tensor> in = pool_inputs(q8(false, {1, 2, 4, 4}, 5));
  in[3] = Tensor::from_vector<float>({1, 2}, {0.1f, 0.2f});
  std::string msg = error_running(node, in);
  EXPECT_THAT(msg, HasSubstr("input y_scale is"));
  EXPECT_THAT(msg, HasSubstr("expected one float32 value"));

  msg = error_running(node, pool_inputs(q8(false, {2, 4}, 6)));
  EXPECT_THAT(msg, HasSubstr("input X is"));
  EXPECT_THAT(msg, HasSubstr("expected rank >= 3"));

  in = pool_inputs(q8(false, {1, 2, 4, 4}, 5));
  in[0] = Tensor::from_vector<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_THAT(error_running(node, in), HasSubstr("input X is float32"));

  msg = error_running(node, pool_inputs(q8(false, {1, 2, 4, 4, 4}, 7)));
  EXPECT_THAT(msg, HasSubstr("kernel has 2 spatial dims"));

  msg = testing::error_of([&] {
    run_kernel_once(ms_node("QLinearAveragePool", 5, pool_attrs({2, 2}, {1, 1}, {0, 2, 0, 0}, 0, 0)),
                    pool_inputs(q8(false, {1, 2, 4, 4}, 5)));
  });
  EXPECT_THAT(msg, HasSubstr("attribute pads is [0, 2, 0, 0], expected each pad smaller than its kernel_shape"));
}

TEST(QOperatorErrors, QLinearSoftmaxNamesTheBadInput) {
  const Tensor x = q8(false, {2, 3, 4}, 8);
  Attributes a = ints_attr("opset", 13);
  a.set("axis", int64_t{-4});
  std::string msg = error_running(ms_node("QLinearSoftmax", 5, a),
                                  {x, scale(0.1f), zp(false, 0), scale(1.0f / 256), zp(false, 0)});
  EXPECT_THAT(msg, HasSubstr("axis -4 is out of range for a rank-3 tensor"));

  msg = error_running(ms_node("QLinearSoftmax", 5, ints_attr("opset", 13)),
                      {x, Tensor::from_vector<float>({3}, {1, 2, 3}), zp(false, 0), scale(1.0f / 256), zp(false, 0)});
  EXPECT_THAT(msg, HasSubstr("input X_scale is"));

  msg = error_running(ms_node("QLinearSoftmax", 5, ints_attr("opset", 13)),
                      {x, scale(0.1f), zp(false, 0), scale(1.0f / 256), zp(true, 0)});
  EXPECT_THAT(msg, HasSubstr("input y_zero_point is int8"));
  EXPECT_THAT(msg, HasSubstr("expected one uint8 value"));

  msg = testing::error_of([&] {
    run_kernel_once(ms_node("QLinearSoftmax", 5), {x, scale(0.1f), zp(false, 0), scale(1.0f / 256), zp(false, 0)});
  });
  EXPECT_THAT(msg, HasSubstr("attribute opset is missing"));
}

std::vector<Tensor> where_inputs(const Tensor& c, const Tensor& x, const Tensor& y) {
  const bool sign = x.dtype() == DataType::kInt8;
  return {c, x, scale(0.03f), zp(sign, 10), y, scale(0.09f), zp(sign, 20), scale(0.05f), zp(sign, 0)};
}

TEST(QOperatorErrors, QLinearWhereNamesTheBadInput) {
  const auto node = ms_node("QLinearWhere", 9);
  const Tensor c = Tensor::from_vector<bool>({2, 3}, {true, false, true, false, false, true});
  const Tensor x = q8(false, {2, 3}, 9), y = q8(false, {3}, 10);
  std::vector<Tensor> in = where_inputs(Tensor::from_vector<uint8_t>({2, 3}, {1, 0, 1, 0, 0, 1}), x, y);
  EXPECT_THAT(error_running(node, in), HasSubstr("input condition is uint8"));

  in = where_inputs(c, x, q8(true, {3}, 11));
  EXPECT_THAT(error_running(node, in), HasSubstr("differ in type"));

  in = where_inputs(c, x, q8(false, {4}, 11));
  EXPECT_THAT(error_running(node, in), HasSubstr("cannot be broadcast together"));

  in = where_inputs(c, x, y);
  in[8] = zp(true, 0);
  EXPECT_THAT(error_running(node, in), HasSubstr("input z_zero_point is int8"));

  in = where_inputs(c, x, y);
  in[7] = Tensor::from_vector<float>({2}, {0.1f, 0.2f});
  EXPECT_THAT(error_running(node, in), HasSubstr("input z_scale is"));
}

// Values worked by hand.
TEST(QOperator, QLinearConcatRequantizesEachInputAndCopiesMatchingOnes) {
  // Y: scale 1, zp 0. X0 (scale 0.5, zp 2): 2 -> 0, 5 -> round(1.5) = 2,
  // 7 -> round(2.5) = 2 (half to even), 255 -> 127 (253 * 0.5 = 126.5 -> 126).
  // X1 has Y's parameters: copied. Along axis -1 of [1, 2, k].
  const Tensor x0 = Tensor::from_vector<uint8_t>({1, 2, 2}, {2, 5, 7, 255});
  const Tensor x1 = Tensor::from_vector<uint8_t>({1, 2, 1}, {9, 200});
  const auto got = run_kernel_once(ms_node("QLinearConcat", 8, ints_attr("axis", -1)),
                                   {scale(1.0f), zp(false, 0), x0, scale(0.5f), zp(false, 2), x1, scale(1.0f),
                                    zp(false, 0)});
  EXPECT_EQ(got[0].shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(got[0].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 2, 9, 2, 126, 200}));
}

TEST(QOperator, QLinearAveragePoolCountIncludePad) {
  // One 2x2 plane of 1..4 (scale 1, zp 0), kernel 2x2, pads 1 at the start:
  // the first window holds only the value 1; count_include_pad 0 divides by
  // 1, count_include_pad 1 by 4 (0.25 -> 0).
  const Tensor x = Tensor::from_vector<uint8_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  const std::vector<Tensor> in = {x, scale(1.0f), zp(false, 0), scale(1.0f), zp(false, 0)};
  const auto excl =
      run_kernel_once(ms_node("QLinearAveragePool", 5, pool_attrs({2, 2}, {1, 1}, {1, 1, 0, 0}, 0, 0)), in);
  EXPECT_EQ(excl[0].to_vector<uint8_t>(), (std::vector<uint8_t>{1, 2, 2, 2}));  // 1, 1.5, 2, 2.5 rounded to even
  const auto incl =
      run_kernel_once(ms_node("QLinearAveragePool", 5, pool_attrs({2, 2}, {1, 1}, {1, 1, 0, 0}, 1, 0)), in);
  EXPECT_EQ(incl[0].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 2}));  // 0.25, 0.75, 1, 2.5
}

TEST(QOperator, QLinearSoftmaxSaturatesAOneHotShare) {
  // A row whose largest value dominates: its share rounds to 1 * 256, which
  // int8 with zero point -128 saturates at 127 (ONNX Runtime 1.30's bits).
  const Tensor x = Tensor::from_vector<int8_t>({1, 3}, {127, -128, -128});
  const auto got = run_kernel_once(ms_node("QLinearSoftmax", 5, ints_attr("opset", 13)),
                                   {x, scale(1.0f), zp(true, 0), scale(1.0f / 256), zp(true, -128)});
  EXPECT_EQ(got[0].to_vector<int8_t>(), (std::vector<int8_t>{127, -128, -128}));
}

// One image's channels concatenated (a single row of Y, split into several
// blocks of bytes): each input's part of Y is that input requantized alone
// (a one-input QLinearConcat with the same parameters), on 2 threads.
TEST(QOperator, QLinearConcatOfOneImageEqualsItsInputsRequantizedAlone) {
  auto two = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (bool sign : {false, true}) {
    const std::vector<Tensor> xs = {q8(sign, {1, 150, 33, 33}, 30), q8(sign, {1, 1, 33, 33}, 31),
                                    q8(sign, {1, 0, 33, 33}, 32), q8(sign, {1, 120, 33, 33}, 33)};
    std::vector<Tensor> in = concat_inputs(xs);
    in[2 + 3 * 3 + 1] = in[0];  // X3 with Y's scale and zero point: copied
    in[2 + 3 * 3 + 2] = in[1];
    const Tensor got = run_kernel_once(ms_node("QLinearConcat", 14, ints_attr("axis", 1)), in, two.get())[0];
    ASSERT_EQ(got.shape(), (Shape{1, 271, 33, 33}));
    const auto* g = static_cast<const uint8_t*>(got.raw_data());
    size_t at = 0;
    for (int i = 0; i < 4; ++i) {
      const size_t k = static_cast<size_t>(2 + 3 * i);
      const Tensor alone = run_kernel_once(ms_node("QLinearConcat", 5, ints_attr("axis", 1)),
                                           {in[0], in[1], in[k], in[k + 1], in[k + 2]})[0];
      const size_t n = static_cast<size_t>(alone.numel());
      EXPECT_EQ(std::memcmp(g + at, alone.raw_data(), n), 0) << "X" << i << (sign ? " int8" : " uint8");
      at += n;
    }
  }
}

// Pixel-major pieces (channels last, many rows of a few vectors each: the
// inputs' pieces of a block of rows per call): each pixel's part from input
// k is that input's pixel requantized alone (a one-input QLinearConcat of
// the input as one row), including an input of no channels and one copied,
// on 2 threads.
TEST(QOperator, QLinearConcatOfManyPixelsEqualsItsInputsRequantizedAlone) {
  auto two = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (bool sign : {false, true}) {
    const std::vector<int64_t> channels = {32, 16, 0, 64, 24};
    std::vector<Tensor> xs;
    for (size_t i = 0; i < channels.size(); ++i) xs.push_back(q8(sign, {1, 9, 11, channels[i]}, 40 + static_cast<uint32_t>(i)));
    std::vector<Tensor> in = concat_inputs(xs);
    in[2 + 3 * 3 + 1] = in[0];  // X3 with Y's scale and zero point: copied
    in[2 + 3 * 3 + 2] = in[1];
    const int num = static_cast<int>(in.size());
    const Tensor got = run_kernel_once(ms_node("QLinearConcat", num, ints_attr("axis", 3)), in, two.get())[0];
    ASSERT_EQ(got.shape(), (Shape{1, 9, 11, 136}));
    const auto* g = static_cast<const uint8_t*>(got.raw_data());
    int64_t at = 0;
    for (size_t i = 0; i < channels.size(); ++i) {
      const size_t k = 2 + 3 * i;
      const Tensor row = xs[i].reshaped(Shape{1, 99 * channels[i]});
      const Tensor alone = run_kernel_once(ms_node("QLinearConcat", 5, ints_attr("axis", 1)),
                                           {in[0], in[1], row, in[k + 1], in[k + 2]})[0];
      const auto* a = static_cast<const uint8_t*>(alone.raw_data());
      for (int64_t px = 0; px < 99; ++px)
        ASSERT_EQ(std::memcmp(g + px * 136 + at, a + px * channels[i], static_cast<size_t>(channels[i])), 0)
            << "X" << i << " pixel " << px << (sign ? " int8" : " uint8");
      at += channels[i];
    }
  }
}

// Runs `node` without a pool and on pools of 1 and 2 threads: the same bits.
void expect_thread_independent(const kernels::NodeInfo& node, const std::vector<Tensor>& in, const char* what) {
  auto one = ThreadPool::create(ThreadingOptions{.num_threads = 1}).value();
  auto two = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const Tensor want = run_kernel_once(node, in)[0];
  const size_t bytes = static_cast<size_t>(want.numel());
  for (ThreadPool* p : {one.get(), two.get()}) {
    const Tensor got = run_kernel_once(node, in, p)[0];
    ASSERT_EQ(got.shape(), want.shape()) << what;
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), bytes), 0) << what << " on " << p->dop() << " threads";
  }
}

TEST(QOperator, ResultsDoNotDependOnTheThreadCount) {
  for (bool sign : {false, true}) {
    const auto cat = ms_node("QLinearConcat", 11, ints_attr("axis", 1));
    expect_thread_independent(cat,
                              concat_inputs({q8(sign, {64, 3, 32, 32}, 20), q8(sign, {64, 5, 32, 32}, 21),
                                             q8(sign, {64, 2, 32, 32}, 22)}),
                              "QLinearConcat");

    Attributes sa = ints_attr("opset", 13);
    sa.set("axis", int64_t{1});
    expect_thread_independent(ms_node("QLinearSoftmax", 5, sa),
                              {q8(sign, {8, 300, 40}, 23), scale(0.1f), zp(sign, 0), scale(1.0f / 256), zp(sign, 0)},
                              "QLinearSoftmax");

    const Tensor x = q8(sign, {2, 32, 40, 40}, 24);
    expect_thread_independent(ms_node("QLinearAveragePool", 5, pool_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 0)),
                              pool_inputs(x), "QLinearAveragePool NCHW");
    expect_thread_independent(ms_node("QLinearAveragePool", 5, pool_attrs({3, 3}, {2, 2}, {1, 0, 1, 0}, 1, 1)),
                              pool_inputs(x), "QLinearAveragePool NHWC");
    expect_thread_independent(ms_node("QLinearAveragePool", 5, pool_attrs({40, 40}, {1, 1}, {0, 0, 0, 0}, 0, 0)),
                              pool_inputs(x), "QLinearAveragePool whole plane");

    std::vector<bool> cv(64 * 64);
    std::mt19937 rng(25);
    for (size_t i = 0; i < cv.size(); ++i) cv[i] = (rng() & 1) != 0;
    expect_thread_independent(ms_node("QLinearWhere", 9),
                              where_inputs(Tensor::from_vector<bool>({64, 1, 64}, cv), q8(sign, {64, 64, 64}, 26),
                                           q8(sign, {64, 1}, 27)),
                              "QLinearWhere");
  }
}

}  // namespace
}  // namespace spindle
