// qlinear_test.cpp — MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
// beyond the ONNX node tests (uint8, scalar zero points, 2-D): int8 data,
// per-row / per-column / per-channel zero points and scales, batch
// broadcasting, groups, strides, dilations and pads, saturation, bad input.
// Integer results are checked against the float kernels (MatMul, Conv) run on
// the zero-point-corrected values, which are exact in float at these sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;

template <class T>
std::vector<T> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

std::vector<float> as_float(const std::vector<int32_t>& v) { return std::vector<float>(v.begin(), v.end()); }

TEST(MatMulInteger, Int8BatchBroadcastAndPerRowColumnZeroPointsMatchFloatMatMul) {
  // A [2, 1, 3, 5] int8 with a per-row zero point; B [4, 5, 2] int8 with a per-column one.
  const Shape as = {2, 1, 3, 5}, bs = {4, 5, 2};
  const auto a = random_ints<int8_t>(30, 1, -128, 127);
  const auto b = random_ints<int8_t>(40, 2, -128, 127);
  const std::vector<int8_t> azp = {3, -7, 0}, bzp = {-2, 5};
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  const auto got = run_kernel_once("MatMulInteger", 10, {},
                                   {Tensor::from_vector<int8_t>(as, a), Tensor::from_vector<int8_t>(bs, b),
                                    Tensor::from_vector<int8_t>({3}, azp), Tensor::from_vector<int8_t>({2}, bzp)},
                                   1, pool.get());
  ASSERT_EQ(got[0].dtype(), DataType::kInt32);
  ASSERT_EQ(got[0].shape(), (Shape{2, 4, 3, 2}));
  std::vector<float> af(a.size()), bf(b.size());
  for (size_t i = 0; i < a.size(); ++i) af[i] = static_cast<float>(a[i] - azp[(i / 5) % 3]);
  for (size_t i = 0; i < b.size(); ++i) bf[i] = static_cast<float>(b[i] - bzp[i % 2]);
  const auto want = run_kernel_once("MatMul", 13, {}, {Tensor::from_vector<float>(as, af), Tensor::from_vector<float>(bs, bf)});
  EXPECT_EQ(as_float(got[0].to_vector<int32_t>()), want[0].to_vector<float>());
}

TEST(QLinearMatMul, RequantizesRoundingHalfToEvenAndSaturates) {
  // 1x2 x 2x3 uint8, zero points 0: acc = [1, 5, 800]; scale 0.5 -> 0 (0.5
  // rounds to even), 2 (2.5 too), 255 (400 saturates); y_zp 0.
  const auto got = run_kernel_once(
      "QLinearMatMul", 10, {},
      {Tensor::from_vector<uint8_t>({1, 2}, {1, 3}), Tensor::from_vector<float>({}, {1.0f}),
       Tensor::from_vector<uint8_t>({}, {0}), Tensor::from_vector<uint8_t>({2, 3}, {1, 2, 200, 0, 1, 200}),
       Tensor::from_vector<float>({}, {0.5f}), Tensor::from_vector<uint8_t>({}, {0}),
       Tensor::from_vector<float>({}, {1.0f}), Tensor::from_vector<uint8_t>({}, {0})});
  ASSERT_EQ(got[0].dtype(), DataType::kUInt8);
  EXPECT_EQ(got[0].to_vector<uint8_t>(), (std::vector<uint8_t>{0, 2, 255}));
  // int8 output: -500 * 0.5 saturates at -128; y_zp 10 shifts the others.
  const auto neg = run_kernel_once(
      "QLinearMatMul", 10, {},
      {Tensor::from_vector<int8_t>({1, 1}, {-100}), Tensor::from_vector<float>({}, {1.0f}),
       Tensor::from_vector<int8_t>({}, {0}), Tensor::from_vector<int8_t>({1, 3}, {5, 1, -3}),
       Tensor::from_vector<float>({}, {0.5f}), Tensor::from_vector<int8_t>({}, {0}),
       Tensor::from_vector<float>({}, {1.0f}), Tensor::from_vector<int8_t>({}, {10})});
  EXPECT_EQ(neg[0].to_vector<int8_t>(), (std::vector<int8_t>{-128, -40, 127}));
}

struct ConvCase {
  int64_t group, stride, dilation, pad;
};

class ConvIntegerCase : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvIntegerCase, MatchesFloatConvOnCorrectedValues) {
  const ConvCase c = GetParam();
  const int64_t N = 2, C = 4, M = 8, Hh = 7, Ww = 6, K = 3;
  const Shape xs = {N, C, Hh, Ww}, ws = {M, C / c.group, K, K};
  const auto x = random_ints<uint8_t>(static_cast<size_t>(shape_numel(xs)), 3, 0, 255);
  const auto w = random_ints<int8_t>(static_cast<size_t>(shape_numel(ws)), 4, -128, 127);
  const uint8_t xzp = 128;
  const auto wzp = random_ints<int8_t>(static_cast<size_t>(M), 5, -10, 10);
  Attributes a;
  a.set("group", c.group);
  a.set("strides", std::vector<int64_t>{c.stride, c.stride});
  a.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
  a.set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  const auto got = run_kernel_once("ConvInteger", 10, a,
                                   {Tensor::from_vector<uint8_t>(xs, x), Tensor::from_vector<int8_t>(ws, w),
                                    Tensor::from_vector<uint8_t>({}, {xzp}), Tensor::from_vector<int8_t>({M}, wzp)},
                                   1, pool.get());
  std::vector<float> xf(x.size()), wf(w.size());
  for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i] - xzp);
  const size_t per_m = w.size() / static_cast<size_t>(M);
  for (size_t i = 0; i < w.size(); ++i) wf[i] = static_cast<float>(w[i] - wzp[i / per_m]);
  const auto want = run_kernel_once("Conv", 11, a, {Tensor::from_vector<float>(xs, xf), Tensor::from_vector<float>(ws, wf)});
  ASSERT_EQ(got[0].shape(), want[0].shape());
  EXPECT_EQ(as_float(got[0].to_vector<int32_t>()), want[0].to_vector<float>());
}

INSTANTIATE_TEST_SUITE_P(Geometry, ConvIntegerCase,
                         ::testing::Values(ConvCase{1, 1, 1, 0}, ConvCase{2, 1, 1, 1}, ConvCase{4, 2, 1, 1},
                                           ConvCase{1, 1, 2, 2}, ConvCase{2, 2, 2, 0}),
                         [](const ::testing::TestParamInfo<ConvCase>& i) {
                           return "g" + std::to_string(i.param.group) + "_s" + std::to_string(i.param.stride) + "_d" +
                                  std::to_string(i.param.dilation) + "_p" + std::to_string(i.param.pad);
                         });

TEST(QLinearConv, PerChannelScalesAndBias) {
  // 1x1 kernel, 2 output channels: y[m] = round((x * w[m] + B[m]) * xs * ws[m] / ys) + yzp.
  const auto got = run_kernel_once(
      "QLinearConv", 10, {},
      {Tensor::from_vector<uint8_t>({1, 1, 1, 3}, {10, 20, 30}), Tensor::from_vector<float>({}, {0.5f}),
       Tensor::from_vector<uint8_t>({}, {0}), Tensor::from_vector<int8_t>({2, 1, 1, 1}, {2, -1}),
       Tensor::from_vector<float>({2}, {1.0f, 0.25f}), Tensor::from_vector<int8_t>({2}, {0, 0}),
       Tensor::from_vector<float>({}, {1.0f}), Tensor::from_vector<int8_t>({}, {-5}),
       Tensor::from_vector<int32_t>({2}, {4, 0})});
  ASSERT_EQ(got[0].dtype(), DataType::kInt8);
  // m0: (20+4, 40+4, 60+4) * 0.5 = 12, 22, 32 -> 7, 17, 27; m1: (-10, -20, -30) * 0.125 = -1.25, -2.5, -3.75
  // -> -1, -2 (half to even), -4 -> -6, -7, -9.
  EXPECT_EQ(got[0].to_vector<int8_t>(), (std::vector<int8_t>{7, 17, 27, -6, -7, -9}));
}

TEST(QLinearBadInput, ErrorsNameTheInputAndWhatWasExpected) {
  const Tensor a = Tensor::from_vector<uint8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_vector<uint8_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  testing::expect_error("MatMulInteger", 10, {}, {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6}), b},
                        {"MatMulInteger", "input A", "expected uint8 or int8"});
  testing::expect_error("MatMulInteger", 10, {}, {a, b, Tensor::from_vector<int8_t>({}, {1})},
                        {"a_zero_point", "expected uint8 like its data"});
  testing::expect_error("MatMulInteger", 10, {}, {a, b, Tensor::from_vector<uint8_t>({3}, {1, 2, 3})},
                        {"a_zero_point", "expected one value or 2 (one per row of A)"});
  testing::expect_error("MatMulInteger", 10, {}, {a, a}, {"inner dimensions 3 and 2 differ"});
  testing::expect_error("ConvInteger", 10, {}, {Tensor::from_vector<uint8_t>({1, 2, 3, 3}, std::vector<uint8_t>(18, 1)),
                                               Tensor::from_vector<uint8_t>({1, 3, 2, 2}, std::vector<uint8_t>(12, 1))},
                        {"ConvInteger", "group 1"});
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// The 8-bit GEMM path (2-D B, one A zero point): every signedness, per-tensor
// and per-column B zero points, B as a run-time input and as a constant
// packed when the kernel is created, one and three threads: each element is
// the scalar formula's.
TEST(MatMulInteger, GemmPathMatchesTheFormulaForEverySignednessAndConstantB) {
  const int64_t M = 37, K = 70, N = 45;
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  for (int t = 0; t < 16; ++t) {
    const bool as = t & 1, bs = t & 2, per_column = t & 4, constant = t & 8;
    auto make = [](bool is_signed, const Shape& shape, const std::vector<int>& v) {
      if (is_signed) {
        std::vector<int8_t> x(v.begin(), v.end());
        return Tensor::from_vector<int8_t>(shape, x);
      }
      std::vector<uint8_t> x(v.begin(), v.end());
      return Tensor::from_vector<uint8_t>(shape, x);
    };
    const int lo_a = as ? -128 : 0, lo_b = bs ? -128 : 0;
    const auto a = random_ints<int>(static_cast<size_t>(2 * M * K), 10 + t, lo_a, lo_a + 255);
    const auto b = random_ints<int>(static_cast<size_t>(K * N), 20 + t, lo_b, lo_b + 255);
    const auto azp = random_ints<int>(1, 30 + t, lo_a, lo_a + 255);
    const auto bzp = random_ints<int>(per_column ? N : 1, 40 + t, lo_b, lo_b + 255);
    std::vector<Tensor> inputs = {make(as, {2, M, K}, a), make(bs, {K, N}, b), make(as, {}, azp),
                                  make(bs, per_column ? Shape{N} : Shape{}, bzp)};
    kernels::NodeInfo node;
    node.op_type = "MatMulInteger";
    node.opset = 10;
    node.num_inputs = 4;
    node.num_outputs = 1;
    if (constant) node.const_inputs = {nullptr, &inputs[1]};
    const auto one = kernels::run_kernel_once(node, inputs);
    const auto three = kernels::run_kernel_once(node, inputs, pool.get());
    ASSERT_EQ(one[0].shape(), (Shape{2, M, N}));
    const std::vector<int32_t> got = one[0].to_vector<int32_t>();
    EXPECT_EQ(got, three[0].to_vector<int32_t>());
    for (int64_t r = 0; r < 2 * M; ++r)
      for (int64_t j = 0; j < N; ++j) {
        int32_t want = 0;
        for (int64_t p = 0; p < K; ++p)
          want += (a[static_cast<size_t>(r * K + p)] - azp[0]) *
                  (b[static_cast<size_t>(p * N + j)] - bzp[per_column ? static_cast<size_t>(j) : 0]);
        ASSERT_EQ(got[static_cast<size_t>(r * N + j)], want) << "case " << t << " at (" << r << ", " << j << ")";
      }
  }
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

kernels::NodeInfo contrib_node(const char* op, int num_inputs) {
  kernels::NodeInfo node;
  node.op_type = op;
  node.domain = "com.microsoft";
  node.opset = 1;
  node.num_inputs = num_inputs;
  node.num_outputs = 1;
  return node;
}

// com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul: the bits of
// MatMulInteger, Cast, Mul by (a_scale * b_scale) and Add of the bias run one
// after the other (int8 A here, per-column B zero points and scales, a
// constant B packed at creation), at one and three threads.
TEST(MatMulIntegerToFloat, EqualsTheUnfusedChainBitwise) {
  const int64_t M = 19, K = 75, N = 37;
  const auto a = random_ints<int8_t>(static_cast<size_t>(M * K), 51, -128, 127);
  const auto b = random_ints<uint8_t>(static_cast<size_t>(K * N), 52, 0, 255);
  const auto bzp = random_ints<uint8_t>(static_cast<size_t>(N), 53, 0, 255);
  std::vector<float> bscale(static_cast<size_t>(N)), bias(static_cast<size_t>(N));
  for (int64_t j = 0; j < N; ++j) bscale[j] = 0.0007f * static_cast<float>(j + 3), bias[j] = 0.37f * static_cast<float>(j) - 5.0f;
  const float ascale = 0.0213f;
  const Tensor A = Tensor::from_vector<int8_t>({M, K}, a), B = Tensor::from_vector<uint8_t>({K, N}, b);
  const Tensor azp = Tensor::from_vector<int8_t>({}, {-9}), Bzp = Tensor::from_vector<uint8_t>({N}, bzp);
  const Tensor As = Tensor::from_vector<float>({}, {ascale}), Bs = Tensor::from_vector<float>({N}, bscale);
  const Tensor bias_t = Tensor::from_vector<float>({N}, bias);
  const auto acc = run_kernel_once("MatMulInteger", 10, {}, {A, B, azp, Bzp})[0].to_vector<int32_t>();
  std::vector<float> want(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const float s = ascale * bscale[i % static_cast<size_t>(N)];
    const float prod = static_cast<float>(acc[i]) * s;
    want[i] = prod + bias[i % static_cast<size_t>(N)];
  }
  std::vector<Tensor> inputs = {A, B, As, Bs, azp, Bzp, bias_t};
  kernels::NodeInfo node = contrib_node("MatMulIntegerToFloat", 7);
  node.const_inputs = {nullptr, &inputs[1]};
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  EXPECT_EQ(kernels::run_kernel_once(node, inputs)[0].to_vector<float>(), want);
  EXPECT_EQ(kernels::run_kernel_once(node, inputs, pool.get())[0].to_vector<float>(), want);

  // Bad input: B's zero points of the wrong type, a bias of the wrong length.
  std::vector<Tensor> bad = inputs;
  bad[5] = Tensor::from_vector<int8_t>({N}, std::vector<int8_t>(static_cast<size_t>(N), 0));
  try {
    kernels::run_kernel_once(node, bad);
    ADD_FAILURE() << "an int8 b_zero_point for uint8 B was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("b_zero_point"), std::string::npos) << e.what();
  }
  bad = inputs;
  bad[6] = Tensor::from_vector<float>({3}, {1, 2, 3});
  try {
    kernels::run_kernel_once(node, bad);
    ADD_FAILURE() << "a bias of 3 values was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected [37]"), std::string::npos) << e.what();
  }
}

TEST(DynamicQuantizeMatMul, EqualsTheUnfusedChainBitwise) {
  const int64_t K = 64, N = 20;
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> d(-2.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(2 * 5 * K));
  for (float& v : x) v = d(rng);
  const auto b = random_ints<int8_t>(static_cast<size_t>(K * N), 62, -127, 127);
  const Tensor X = Tensor::from_vector<float>({2, 5, K}, x), B = Tensor::from_vector<int8_t>({K, N}, b);
  const Tensor Bs = Tensor::from_vector<float>({}, {0.0131f}), Bzp = Tensor::from_vector<int8_t>({}, {2});
  const auto dq = run_kernel_once("DynamicQuantizeLinear", 11, {}, {X}, 3);
  const auto acc = run_kernel_once("MatMulInteger", 10, {}, {dq[0], B, dq[2], Bzp})[0].to_vector<int32_t>();
  const float s = dq[1].to_vector<float>()[0] * 0.0131f;
  std::vector<float> want(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) want[i] = static_cast<float>(acc[i]) * s;
  const auto got = kernels::run_kernel_once(contrib_node("DynamicQuantizeMatMul", 4), {X, B, Bs, Bzp});
  EXPECT_EQ(got[0].shape(), (Shape{2, 5, N}));
  EXPECT_EQ(got[0].to_vector<float>(), want);
}

}  // namespace
}  // namespace spindle
