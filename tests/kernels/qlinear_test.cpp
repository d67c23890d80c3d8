// qlinear_test.cpp — MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
// beyond the ONNX node tests (uint8, scalar zero points, 2-D): int8 data,
// per-row / per-column / per-channel zero points and scales, batch
// broadcasting, groups, strides, dilations and pads, saturation, bad input.
// Integer results are checked against the float kernels (MatMul, Conv) run on
// the zero-point-corrected values, which are exact in float at these sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"
#include "random_ints.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;

using testing::random_ints;

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

// The packed path (constant weights, qgemm / the direct depthwise loop)
// against the reference path (weights given at run time), bitwise, over
// geometries and types, at 1 and 3 threads.
struct QConvCase {
  int64_t C, M, group, kh, kw, stride, dilation, pad, H, W;
  bool x_signed, w_signed, y_signed, relu;
  bool w_symmetric = false;  // every weight zero point 0 (int8 weights as quantizers write them)
};

class QLinearConvPacked : public ::testing::TestWithParam<QConvCase> {};

template <class T>
Tensor random_tensor(const Shape& s, uint32_t seed, int lo, int hi) {
  return Tensor::from_vector<T>(s, random_ints<T>(static_cast<size_t>(shape_numel(s)), seed, lo, hi));
}

TEST_P(QLinearConvPacked, MatchesTheReferenceBitwise) {
  const QConvCase c = GetParam();
  const int64_t N = 2;
  const Shape xs = {N, c.C, c.H, c.W}, ws = {c.M, c.C / c.group, c.kh, c.kw};
  const Tensor x = c.x_signed ? random_tensor<int8_t>(xs, 11, -128, 127) : random_tensor<uint8_t>(xs, 11, 0, 255);
  const Tensor w = c.w_signed ? random_tensor<int8_t>(ws, 12, -128, 127) : random_tensor<uint8_t>(ws, 12, 0, 255);
  const Tensor xzp = c.x_signed ? Tensor::from_vector<int8_t>({}, {-3}) : Tensor::from_vector<uint8_t>({}, {131});
  const Tensor wzp = c.w_symmetric ? Tensor::from_vector<int8_t>({c.M}, std::vector<int8_t>(static_cast<size_t>(c.M), 0))
                     : c.w_signed  ? random_tensor<int8_t>({c.M}, 13, -5, 5)
                                   : random_tensor<uint8_t>({c.M}, 13, 120, 135);
  const Tensor yzp = c.y_signed ? Tensor::from_vector<int8_t>({}, {7}) : Tensor::from_vector<uint8_t>({}, {100});
  std::vector<float> wsc(static_cast<size_t>(c.M));
  for (int64_t m = 0; m < c.M; ++m) wsc[static_cast<size_t>(m)] = 0.001f * static_cast<float>(m + 1) + 0.0003f;
  std::vector<Tensor> inputs = {x, Tensor::from_vector<float>({}, {0.05f}), xzp, w, Tensor::from_vector<float>({c.M}, wsc), wzp,
                                Tensor::from_vector<float>({}, {0.7f}), yzp, random_tensor<int32_t>({c.M}, 14, -20000, 20000)};
  kernels::NodeInfo node;
  node.op_type = "QLinearConv";
  node.opset = 10;
  node.num_inputs = 9;
  node.attrs.set("group", c.group);
  node.attrs.set("strides", std::vector<int64_t>{c.stride, c.stride});
  node.attrs.set("dilations", std::vector<int64_t>{c.dilation, c.dilation});
  node.attrs.set("pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  if (c.relu) node.attrs.set("activation", std::string("Relu"));
  const auto reference = run_kernel_once(node, inputs);
  node.const_inputs = {nullptr, nullptr, nullptr, &w};
  for (int threads : {1, 3}) {
    auto pool = ThreadPool::create(ThreadingOptions{.num_threads = threads}).value();
    const auto packed = run_kernel_once(node, inputs, pool.get());
    ASSERT_EQ(packed[0].shape(), reference[0].shape());
    ASSERT_EQ(packed[0].dtype(), reference[0].dtype());
    ASSERT_EQ(0, std::memcmp(packed[0].raw_data(), reference[0].raw_data(), static_cast<size_t>(packed[0].numel())))
        << "threads " << threads;
  }
  // The reference output is not constant (the case exercises requantization).
  const uint8_t* r = static_cast<const uint8_t*>(reference[0].raw_data());
  const auto [lo, hi] = std::minmax_element(r, r + reference[0].numel());
  EXPECT_NE(*lo, *hi);
}

INSTANTIATE_TEST_SUITE_P(
    Geometry, QLinearConvPacked,
    ::testing::Values(QConvCase{16, 24, 1, 3, 3, 1, 1, 1, 9, 11, false, true, false, false},
                      QConvCase{8, 40, 1, 1, 1, 1, 1, 0, 17, 13, false, true, false, true},
                      QConvCase{8, 16, 1, 1, 1, 2, 1, 0, 10, 10, true, true, true, false},
                      QConvCase{3, 32, 1, 7, 7, 2, 1, 3, 23, 23, false, true, false, true},
                      QConvCase{12, 18, 3, 3, 3, 2, 2, 2, 12, 9, false, false, true, false},
                      QConvCase{16, 16, 16, 3, 3, 1, 1, 1, 13, 14, false, true, false, false},
                      QConvCase{24, 24, 24, 5, 5, 2, 1, 2, 15, 15, true, true, false, true},
                      QConvCase{8, 8, 8, 3, 3, 2, 2, 0, 11, 12, false, false, true, false},
                      QConvCase{64, 70, 1, 3, 3, 1, 1, 1, 30, 30, false, true, false, true},
                      // Symmetric int8 weights (no row sums); a 7x7 stem over 3 channels;
                      // an image whose im2col (more than 4 MB) is built in chunks.
                      QConvCase{3, 64, 1, 7, 7, 2, 1, 3, 41, 40, false, true, false, true, true},
                      QConvCase{32, 48, 2, 3, 3, 1, 1, 1, 20, 21, true, true, true, false, true},
                      QConvCase{64, 80, 1, 3, 3, 1, 1, 1, 124, 123, false, true, false, true, true},
                      // Deep layers' few pixels: the output channels split in column blocks
                      // (outermost) sharing one table of im2col row pointers (AVX512-VNNI), a
                      // last block of one row; weight zero points 0 and not (copied rows).
                      QConvCase{256, 256, 1, 3, 3, 1, 1, 1, 7, 7, false, true, false, true, true},
                      QConvCase{128, 192, 1, 3, 3, 2, 1, 1, 13, 13, true, true, true, false},
                      // Few channels (im2col rows of runs; the interior pixels of a row
                      // copied without checks): a 3x3 stride-2 stem, no padding, a kernel
                      // wider than the image, stride 3.
                      QConvCase{3, 24, 1, 3, 3, 2, 1, 1, 31, 29, false, true, false, true, true},
                      QConvCase{5, 12, 1, 3, 3, 1, 1, 0, 9, 10, true, true, true, false},
                      QConvCase{3, 8, 1, 3, 3, 1, 1, 1, 6, 1, false, false, false, false},
                      QConvCase{6, 10, 1, 5, 5, 3, 1, 2, 14, 13, false, true, true, true, true}),
    [](const ::testing::TestParamInfo<QConvCase>& i) { return "case" + std::to_string(i.index); });

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
  // QLinearConv whose weights are absent (an empty input name) and were
  // never packed: input 3's error, not a read of weights that do not exist.
  const Tensor x = Tensor::from_vector<uint8_t>({1, 1, 3, 3}, std::vector<uint8_t>(9, 1));
  const Tensor one = Tensor::from_vector<float>({}, {1.0f});
  const Tensor zero = Tensor::from_vector<uint8_t>({}, {0});
  testing::expect_error("QLinearConv", 10, {}, {x, one, zero, Tensor(), one, zero, one, zero},
                        {"QLinearConv", "input 3", "required but was not given"});
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// com.microsoft element-wise quantized ops against DequantizeLinear, the
// float op and QuantizeLinear run one after the other: the same bits
// (QLinearAdd computes ONNX Runtime's arithmetic instead:
// QLinearAddIsOnnxRuntimesArithmetic below).
std::vector<uint8_t> composed(const std::string& op, const std::vector<Tensor>& xs, const std::vector<float>& scales,
                              const std::vector<uint8_t>& zps, float ys, uint8_t yz, Attributes attrs = {}) {
  std::vector<Tensor> floats;
  for (size_t i = 0; i < xs.size(); ++i)
    floats.push_back(run_kernel_once("DequantizeLinear", 13, {},
                                     {xs[i], Tensor::from_vector<float>({}, {scales[i]}),
                                      Tensor::from_vector<uint8_t>({}, {zps[i]})})[0]);
  const Tensor v = run_kernel_once(op, 13, std::move(attrs), floats)[0];
  return run_kernel_once("QuantizeLinear", 13, {},
                         {v, Tensor::from_vector<float>({}, {ys}), Tensor::from_vector<uint8_t>({}, {yz})})[0]
      .to_vector<uint8_t>();
}

TEST(QLinearContrib, MulSigmoidLeakyReluMatchTheComposedOps) {
  const Tensor a = Tensor::from_vector<uint8_t>({2, 3, 4}, random_ints<uint8_t>(24, 21, 0, 255));
  const Tensor b = Tensor::from_vector<uint8_t>({2, 3, 4}, random_ints<uint8_t>(24, 22, 0, 255));
  const Tensor row = Tensor::from_vector<uint8_t>({3, 1}, random_ints<uint8_t>(3, 23, 0, 255));
  auto f = [](float v) { return Tensor::from_vector<float>({}, {v}); };
  auto u = [](uint8_t v) { return Tensor::from_vector<uint8_t>({}, {v}); };
  kernels::NodeInfo node;
  node.domain = "com.microsoft";
  node.opset = 1;
  for (const char* op : {"QLinearMul"}) {
    node.op_type = op;
    node.num_inputs = 8;
    for (const Tensor& other : {b, row}) {
      const auto got = run_kernel_once(node, {a, f(0.03f), u(120), other, f(0.02f), u(131), f(0.05f), u(100)});
      const auto want = composed(std::string(op).substr(7), {a, other}, {0.03f, 0.02f}, {120, 131}, 0.05f, 100);
      EXPECT_EQ(got[0].to_vector<uint8_t>(), want) << op << " " << shape_to_string(other.shape());
    }
  }
  node.op_type = "QLinearSigmoid";
  node.num_inputs = 5;
  EXPECT_EQ(run_kernel_once(node, {a, f(0.05f), u(128), f(1.0f / 256), u(0)})[0].to_vector<uint8_t>(),
            composed("Sigmoid", {a}, {0.05f}, {128}, 1.0f / 256, 0));
  node.op_type = "QLinearLeakyRelu";
  node.attrs.set("alpha", 0.1f);
  Attributes alpha;
  alpha.set("alpha", 0.1f);
  EXPECT_EQ(run_kernel_once(node, {a, f(0.05f), u(128), f(0.04f), u(30)})[0].to_vector<uint8_t>(),
            composed("LeakyRelu", {a}, {0.05f}, {128}, 0.04f, 30, alpha));
}

// ONNX Runtime's QLinearAdd on x86 written out for one value: the scales'
// ratios, k = zc - fma(ra, za, rb zb), then fma(a, ra, fma(b, rb, k)) rounded
// half to even and saturated.
uint8_t onnx_runtime_add(uint8_t a, float sa, int za, uint8_t b, float sb, int zb, float sc, int zc) {
  const float ra = sa / sc, rb = sb / sc;
  const float k = static_cast<float>(zc) - std::fma(ra, static_cast<float>(za), rb * static_cast<float>(zb));
  const float r = std::nearbyint(std::fma(static_cast<float>(a), ra, std::fma(static_cast<float>(b), rb, k)));
  return static_cast<uint8_t>(std::clamp(r, 0.0f, 255.0f));
}

// QLinearAdd gives ONNX Runtime's bits: operands of one shape, B one value
// per row (broadcast along the last axis), A one value (the operands
// swapped, as ONNX Runtime swaps them). Scales in the ratio 1 : 1 : 2 make
// half the sums ties, some of which the unfused float ops round the other
// way: the test tells the two apart.
TEST(QLinearContrib, QLinearAddIsOnnxRuntimesArithmetic) {
  const Tensor a = Tensor::from_vector<uint8_t>({2, 3, 40}, random_ints<uint8_t>(240, 31, 0, 255));
  const Tensor b = Tensor::from_vector<uint8_t>({2, 3, 40}, random_ints<uint8_t>(240, 32, 0, 255));
  const Tensor row = Tensor::from_vector<uint8_t>({3, 1}, random_ints<uint8_t>(3, 33, 0, 255));
  const Tensor one = Tensor::from_vector<uint8_t>({1}, {77});
  auto f = [](float v) { return Tensor::from_vector<float>({}, {v}); };
  auto u = [](uint8_t v) { return Tensor::from_vector<uint8_t>({}, {v}); };
  kernels::NodeInfo node;
  node.domain = "com.microsoft";
  node.opset = 1;
  node.op_type = "QLinearAdd";
  node.num_inputs = 8;
  const float sa = 0.03f, sb = 0.03f, sc = 0.06f;
  const int za = 119, zb = 128, zc = 131;
  size_t differ_from_unfused = 0;
  for (const auto& [x, y] : std::vector<std::pair<Tensor, Tensor>>{{a, b}, {a, row}, {one, b}}) {
    const auto got = run_kernel_once(node, {x, f(sa), u(za), y, f(sb), u(zb), f(sc), u(zc)})[0].to_vector<uint8_t>();
    const Shape out = x.numel() == 1 ? y.shape() : x.shape();
    ASSERT_EQ(got.size(), static_cast<size_t>(shape_numel(out)));
    const std::vector<uint8_t> xv = x.to_vector<uint8_t>(), yv = y.to_vector<uint8_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      const uint8_t xi = xv[x.numel() == 1 ? 0 : i];
      const uint8_t yi = yv[y.numel() == 3 ? (i / 40) % 3 : y.numel() == 1 ? 0 : i];
      // A one value: ONNX Runtime runs B as the row, A as the one value.
      const uint8_t want = x.numel() == 1 ? onnx_runtime_add(yi, sb, zb, xi, sa, za, sc, zc)
                                          : onnx_runtime_add(xi, sa, za, yi, sb, zb, sc, zc);
      EXPECT_EQ(got[i], want) << "element " << i << " of " << shape_to_string(out);
    }
    const auto unfused = composed("Add", {x, y}, {sa, sb}, {static_cast<uint8_t>(za), static_cast<uint8_t>(zb)}, sc,
                                  static_cast<uint8_t>(zc));
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(std::abs(static_cast<int>(got[i]) - static_cast<int>(unfused[i])), 1) << "element " << i;
      differ_from_unfused += got[i] != unfused[i];
    }
  }
  EXPECT_GT(differ_from_unfused, 0u) << "no tie rounded differently: the test does not tell the arithmetics apart";
}

// com.microsoft QGemm (transB) on A 2x3 uint8 (zp 10, scale 0.5), B^T 2x3
// int8 (scales 1 and 0.25, zero points 0 and 1) and bias (3, -4), plus
// `more` inputs (y_scale, y_zero_point).
std::vector<Tensor> run_qgemm(std::vector<Tensor> more) {
  kernels::NodeInfo node;
  node.domain = "com.microsoft";
  node.op_type = "QGemm";
  node.opset = 1;
  node.num_inputs = 7 + static_cast<int>(more.size());
  node.attrs.set("transB", int64_t{1});
  std::vector<Tensor> inputs = {Tensor::from_vector<uint8_t>({2, 3}, {10, 12, 20, 11, 10, 9}),
                                Tensor::from_vector<float>({}, {0.5f}),
                                Tensor::from_vector<uint8_t>({}, {10}),
                                Tensor::from_vector<int8_t>({2, 3}, {1, -2, 3, 4, 5, -6}),
                                Tensor::from_vector<float>({2}, {1.0f, 0.25f}),
                                Tensor::from_vector<int8_t>({2}, {0, 1}),
                                Tensor::from_vector<int32_t>({2}, {3, -4})};
  for (Tensor& t : more) inputs.push_back(std::move(t));
  return run_kernel_once(node, inputs);
}

TEST(QLinearContrib, QGemmMatchesIntegerProductAndBias) {
  // Float output without y_scale.
  const auto got = run_qgemm({});
  // A - 10 = [[0, 2, 10], [1, 0, -1]]; B^T - zp = [[1, -2, 3], [3, 4, -7]].
  const std::vector<int32_t> acc = {26, -62, -2, 10};
  const std::vector<float> want = {(26 + 3) * 0.5f, (-62 - 4) * 0.125f, (acc[2] + 3) * 0.5f, (acc[3] - 4) * 0.125f};
  EXPECT_EQ(got[0].to_vector<float>(), want);
}

TEST(QLinearContrib, QGemmQuantizedOutputRoundsAsOnnxRuntime) {
  // The same product with y_scale 0.5 and y_zero_point 100: column scales
  // 0.5 * 1 / 0.5 = 1 and 0.5 * 0.25 / 0.5 = 0.25 on acc + bias = 29, -66, 1,
  // 6; -16.5 and 1.5 round half to even.
  const auto got = run_qgemm({Tensor::from_vector<float>({}, {0.5f}), Tensor::from_vector<uint8_t>({}, {100})});
  EXPECT_EQ(got[0].to_vector<uint8_t>(), (std::vector<uint8_t>{129, 84, 101, 102}));
}

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

namespace spindle {
namespace {

TEST(QuantizeLinearPerTensor, TiesSaturationNaNAndInfinity) {
  // zero point 3, scale 0.5: 0.25 -> 0.5 -> 0 (tie to even), 0.75 -> 1.5 -> 2, -0.25 -> -0.5 -> -0,
  // 1000 saturates, NaN -> 0.
  const std::vector<float> x = {0.25f, 0.75f, -0.25f, 1000.0f, -1000.0f, NAN, INFINITY, -INFINITY, 1.25f, 3e38f};
  std::vector<float> many;
  for (int r = 0; r < 7; ++r) many.insert(many.end(), x.begin(), x.end());  // past one vector
  const auto got = run_kernel_once("QuantizeLinear", 13, {},
                                   {Tensor::from_vector<float>({static_cast<int64_t>(many.size())}, many),
                                    Tensor::from_vector<float>({}, {0.5f}), Tensor::from_vector<int8_t>({}, {3})})[0]
                       .to_vector<int8_t>();
  const std::vector<int8_t> want = {3, 5, 3, 127, -128, 0, 127, -128, 5, 127};  // 2.5 -> 2
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i % want.size()]) << i;
}

}  // namespace
}  // namespace spindle

namespace spindle {
namespace {

// ---------------------------------------------------------------- NHWC 8-bit kernels


Tensor run_nhwc(const std::string& op, const Tensor& x, Attributes attrs = {}, ThreadPool* pool = nullptr) {
  return kernels::run_kernel_once(testing::spindle_node(op, std::move(attrs), 1), {x}, pool)[0];
}

// ToNhwc of x [2, 5, 3, 7] (values v) has each element where NHWC puts it,
// and FromNhwc gives x back.
template <class T>
void expect_to_nhwc_and_back(const std::vector<T>& v, ThreadPool* pool, const Shape& s = {2, 5, 3, 7}) {
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const Tensor y = run_nhwc("ToNhwc", Tensor::from_vector<T>(s, v), {}, pool);
  ASSERT_EQ(y.shape(), (Shape{N, H, W, C}));
  const T* p = y.data<T>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          ASSERT_EQ(p[((n * H + h) * W + w) * C + c], v[static_cast<size_t>(((n * C + c) * H + h) * W + w)])
              << shape_to_string(s);
  const Tensor back = run_nhwc("FromNhwc", y, {}, pool);
  EXPECT_EQ(back.shape(), s);
  EXPECT_EQ(back.to_vector<T>(), v) << shape_to_string(s);
}

// uint8, and float32 (a float island's tensors) on 2 threads; bytes with 16
// and more channels and pixels move in 16 x 16 tiles (whole tiles only,
// and partial ones at the pixel and channel ends).
TEST(NhwcKernels, ToNhwcMovesEachElementAndFromNhwcUndoesIt) {
  const auto v = random_ints<uint8_t>(210, 41, 0, 255);
  expect_to_nhwc_and_back(v, nullptr);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  std::vector<float> f(v.size());
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(v[i]) * 0.37f - 20.0f;
  expect_to_nhwc_and_back(f, pool.get());
  for (const Shape& s : {Shape{1, 32, 4, 8}, Shape{2, 19, 5, 7}, Shape{1, 130, 7, 7}, Shape{3, 48, 3, 11}, Shape{1, 16, 1, 16}}) {
    const auto b = random_ints<uint8_t>(static_cast<size_t>(shape_numel(s)), 43, 0, 255);
    expect_to_nhwc_and_back(b, nullptr, s);
    expect_to_nhwc_and_back(b, pool.get(), s);
  }
}

// ChannelShuffleNhwc: Y[..., j * g + i] = X[..., i * (C / g) + j], groups 2
// (the interleave: rows of 6, 37 and 48 bytes a group, below 16, past it
// unaligned and a multiple of it) and 3, uint8 and float, 1 and 2 threads;
// a last dimension not a multiple of the groups is named.
TEST(NhwcKernels, ChannelShufflePermutesEachPixelsChannels) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (int64_t C : {12, 74, 96}) {
    const Shape s = {2, 3, 7, C};
    const auto v = random_ints<uint8_t>(static_cast<size_t>(shape_numel(s)), 44, 0, 255);
    std::vector<float> f(v.begin(), v.end());
    for (int64_t g : {2, 3}) {
      if (C % g) continue;
      Attributes a;
      a.set("group", g);
      const int64_t cg = C / g;
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
        const std::vector<uint8_t> y = run_nhwc("ChannelShuffleNhwc", Tensor::from_vector<uint8_t>(s, v), a, p).to_vector<uint8_t>();
        const std::vector<float> yf = run_nhwc("ChannelShuffleNhwc", Tensor::from_vector<float>(s, f), a, p).to_vector<float>();
        ASSERT_EQ(y.size(), v.size());
        for (size_t px = 0; px < 42; ++px)
          for (int64_t i = 0; i < g; ++i)
            for (int64_t j = 0; j < cg; ++j) {
              const size_t out = px * C + static_cast<size_t>(j * g + i), in = px * C + static_cast<size_t>(i * cg + j);
              ASSERT_EQ(y[out], v[in]) << C << " channels, group " << g;
              ASSERT_EQ(yf[out], f[in]) << C << " channels, group " << g;
            }
      }
    }
  }
  const Shape s = {2, 3, 7, 12};
  const auto v = random_ints<uint8_t>(504, 44, 0, 255);
  Attributes a5;
  a5.set("group", int64_t{5});
  EXPECT_THAT(testing::error_of([&] { run_nhwc("ChannelShuffleNhwc", Tensor::from_vector<uint8_t>(s, v), a5); }),
              ::testing::HasSubstr("the last dimension a multiple of group 5"));
}

// ChannelShuffleSplitNhwc: output k equals Slice(ChannelShuffleNhwc(X),
// starts, ends, axes, steps) for bytes at groups 2, 3 and 4 and channel
// counts whose halves are shorter and longer than 16 (the two-plane
// interleave's steps and its overlapping last one), with negative, clamped
// and empty bounds, int32 bounds, 1 and 2 threads; bounds off the group,
// steps of 2, another axis and float X take the two ops (same result).
TEST(NhwcKernels, ChannelShuffleSplitEqualsShuffleThenSlice) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const auto i64 = [](int64_t v) { return Tensor::from_vector<int64_t>({1}, {v}); };
  struct Part {
    int64_t start, end, axis, step;
  };
  const std::vector<std::vector<Part>> cases = {
      {{0, 6, 3, 1}, {6, 12, 3, 1}},       // halves
      {{0, 4, -1, 1}, {-8, 100, 3, 0}},    // negative start, clamped end, step absent (0 here)
      {{6, 2, 3, 1}, {-100, 12, 3, 1}},    // empty, clamped start
      {{0, 5, 3, 1}, {5, 12, 3, 1}},       // off the group: the two ops
      {{0, 12, 3, 2}},                     // step 2: the two ops
      {{0, 2, 1, 1}, {1, 3, 2, 1}},        // other axes: the two ops
  };
  for (int64_t C : {12, 24, 74, 120})
    for (int64_t g : {2, 3, 4}) {
      if (C % g) continue;
      const Shape shape = {1, 3, 5, C};
      const auto v = random_ints<uint8_t>(static_cast<size_t>(shape_numel(shape)), 45, 0, 255);
      std::vector<float> f(v.begin(), v.end());
      Attributes a;
      a.set("group", g);
      for (bool as_float : {false, true})
        for (const auto& parts : cases)
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
            const Tensor x = as_float ? Tensor::from_vector<float>(shape, f) : Tensor::from_vector<uint8_t>(shape, v);
            const Tensor shuffled = run_nhwc("ChannelShuffleNhwc", x, a, p);
            std::vector<Tensor> in{x};
            for (const Part& q : parts) {
              const int64_t scale = q.end >= 12 && q.end < 100 ? C / 12 : 1;  // bounds of 12 channels scaled to C
              in.push_back(C == 24 ? Tensor::from_vector<int32_t>({1}, {static_cast<int32_t>(q.start * scale)})
                                   : i64(q.start * scale));
              in.push_back(i64(q.end * scale));
              in.push_back(i64(q.axis));
              in.push_back(q.step ? i64(q.step) : Tensor());
            }
            kernels::NodeInfo node = testing::spindle_node("ChannelShuffleSplitNhwc", a, static_cast<int>(in.size()));
            node.num_outputs = static_cast<int>(parts.size());
            const std::vector<Tensor> got = run_kernel_once(node, in, p);
            ASSERT_EQ(got.size(), parts.size());
            for (size_t k = 0; k < parts.size(); ++k) {
              std::vector<Tensor> sin{shuffled};
              for (int j = 1; j <= 4; ++j)
                if (in[4 * k + static_cast<size_t>(j)].defined()) sin.push_back(in[4 * k + static_cast<size_t>(j)]);
              const Tensor want = run_kernel_once("Slice", 13, {}, sin, 1, nullptr)[0];
              const std::string where = fmt::format("C {} group {} part {} of case {}{}", C, g, k, &parts - cases.data(),
                                                    as_float ? " float" : "");
              ASSERT_EQ(got[k].shape(), want.shape()) << where;
              if (as_float) ASSERT_EQ(got[k].to_vector<float>(), want.to_vector<float>()) << where;
              else ASSERT_EQ(got[k].to_vector<uint8_t>(), want.to_vector<uint8_t>()) << where;
            }
          }
    }
}

// BatchNormalizationNhwc of ToNhwc(X) = ToNhwc(BatchNormalization(X)),
// bitwise, plain and with a fused Relu, with a QuantizeLinear folded in, and
// with a DequantizeLinear too (8-bit in and out: one pass at AVX-512), 1 and
// 2 threads; bad shapes are named.
TEST(NhwcKernels, BatchNormalizationNhwcEqualsBatchNormalizationTransposed) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const Shape xs = {2, 19, 5, 7};
  std::vector<float> xv(2 * 19 * 5 * 7);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(static_cast<int>(i * 7919 % 1000) - 500) * 0.0137f;
  const Tensor x = Tensor::from_vector<float>(xs, xv);
  std::vector<Tensor> prm;
  for (int k = 0; k < 4; ++k) {
    std::vector<float> v(19);
    for (size_t c = 0; c < 19; ++c) v[c] = k == 3 ? 0.3f + 0.11f * static_cast<float>(c) : 0.9f - 0.07f * static_cast<float>(c + k);
    prm.push_back(Tensor::from_vector<float>({19}, v));
  }
  for (const char* act : {"", "Relu"}) {
    Attributes a;
    a.set("epsilon", 1e-3f);
    if (*act) a.set("activation", std::string(act));
    const Tensor want = run_nhwc("ToNhwc", run_kernel_once("BatchNormalization", 15, a, {x, prm[0], prm[1], prm[2], prm[3]})[0]);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      const Tensor xn = run_nhwc("ToNhwc", x);
      const Tensor got = kernels::run_kernel_once(testing::spindle_node("BatchNormalizationNhwc", a, 1),
                                                  {xn, prm[0], prm[1], prm[2], prm[3]}, p)[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>()) << act;
      // With a QuantizeLinear folded in: QuantizeLinear's bytes, uint8 and int8.
      const Tensor ys = Tensor::from_vector<float>({}, {0.013f});
      for (const Tensor& yz : {Tensor::from_vector<uint8_t>({}, {100}), Tensor::from_vector<int8_t>({}, {-7})}) {
        const Tensor wq = run_kernel_once("QuantizeLinear", 13, {}, {want, ys, yz})[0];
        const Tensor gq = kernels::run_kernel_once(testing::spindle_node("BatchNormalizationNhwc", a, 1),
                                                   {xn, prm[0], prm[1], prm[2], prm[3], ys, yz}, p)[0];
        ASSERT_EQ(gq.dtype(), wq.dtype());
        const auto bytes = [](const Tensor& t) {
          const auto* b = static_cast<const uint8_t*>(t.raw_data());
          return std::vector<uint8_t>(b, b + t.numel());
        };
        EXPECT_EQ(bytes(gq), bytes(wq)) << act;
        // And a DequantizeLinear before it (X 8-bit, uint8 and int8): the
        // bytes of DequantizeLinear -> BatchNormalization -> QuantizeLinear.
        const Tensor xsc = Tensor::from_vector<float>({}, {0.021f});
        for (const Tensor& xz : {Tensor::from_vector<uint8_t>({}, {131}), Tensor::from_vector<int8_t>({}, {5})}) {
          const Tensor x8 = run_kernel_once("QuantizeLinear", 13, {}, {x, xsc, xz})[0];
          const Tensor dx = run_kernel_once("DequantizeLinear", 13, {}, {x8, xsc, xz})[0];
          const Tensor w8 = run_kernel_once(
              "QuantizeLinear", 13, {},
              {run_kernel_once("BatchNormalization", 15, a, {dx, prm[0], prm[1], prm[2], prm[3]})[0], ys, yz})[0];
          const Tensor g8 =
              kernels::run_kernel_once(testing::spindle_node("BatchNormalizationNhwc", a, 1),
                                       {run_nhwc("ToNhwc", x8), prm[0], prm[1], prm[2], prm[3], ys, yz, xsc, xz}, p)[0];
          EXPECT_EQ(bytes(g8), bytes(run_nhwc("ToNhwc", w8))) << act << " 8-bit X " << dtype_name(xz.dtype());
        }
      }
    }
  }
  const auto bn = [&](const Tensor& in) {
    kernels::run_kernel_once(testing::spindle_node("BatchNormalizationNhwc", {}, 1), {in, prm[0], prm[1], prm[2], prm[3]});
  };
  EXPECT_THAT(testing::error_of([&] { bn(Tensor::from_vector<float>({19, 2}, std::vector<float>(38, 1))); }),
              ::testing::HasSubstr("expected rank 4 (N x H x W x C)"));
  EXPECT_THAT(testing::error_of([&] { bn(x); }), ::testing::HasSubstr("expected 7 values for input X of shape"));
}

// ToNhwc of 2, 3 and 4 channels (interleave_planes_u8) over pixels in
// several blocks of 4096 and a partial one, two images, 1 and 2 threads.
TEST(NhwcKernels, ToNhwcInterleavesFewChannels) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (const int64_t C : {2, 3, 4}) {
    const Shape s = {2, C, 67, 151};
    const int64_t P = 67 * 151;
    const auto v = random_ints<uint8_t>(static_cast<size_t>(2 * C * P), 47, 0, 255);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      const Tensor y = run_nhwc("ToNhwc", Tensor::from_vector<uint8_t>(s, v), {}, p);
      ASSERT_EQ(y.shape(), (Shape{2, 67, 151, C}));
      const uint8_t* got = y.data<uint8_t>();
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t i = 0; i < P; ++i)
            ASSERT_EQ(got[(n * P + i) * C + c], v[static_cast<size_t>((n * C + c) * P + i)]) << C << " " << i;
    }
  }
}

// MaxPoolNhwc of ToNhwc(X) = ToNhwc(MaxPool(X)), uint8 and int8, odd
// channels, 64 (one AVX-512 vector) and 130 (two and a masked tail),
// strides, pads, dilations, ceil_mode; 1 and 2 threads.
TEST(NhwcKernels, MaxPoolNhwcEqualsMaxPoolTransposed) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  struct Case {
    std::vector<int64_t> k, s, pads, d;
    int64_t ceil;
  };
  const Case cases[] = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0},
                        {{2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 1}, 0},
                        {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
                        {{3, 3}, {1, 1}, {2, 2, 1, 2}, {2, 2}, 0},
                        {{1, 4}, {3, 1}, {0, 3, 0, 1}, {1, 1}, 1}};
  for (const int64_t C : {7, 64, 130})
  for (bool sign : {false, true}) {
    const Shape xs = {2, C, 9, 10};
    const int64_t n = 2 * C * 90;
    const Tensor x = sign ? Tensor::from_vector<int8_t>(xs, random_ints<int8_t>(n, 42, -128, 127))
                          : Tensor::from_vector<uint8_t>(xs, random_ints<uint8_t>(n, 43, 0, 255));
    for (const Case& c : cases) {
      Attributes a;
      a.set("kernel_shape", c.k);
      a.set("strides", c.s);
      a.set("pads", c.pads);
      a.set("dilations", c.d);
      a.set("ceil_mode", c.ceil);
      const Tensor want = run_nhwc("ToNhwc", run_kernel_once("MaxPool", 12, a, {x})[0]);
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
        const Tensor got = run_nhwc("MaxPoolNhwc", run_nhwc("ToNhwc", x), a, p);
        ASSERT_EQ(got.shape(), want.shape());
        if (sign) EXPECT_EQ(got.to_vector<int8_t>(), want.to_vector<int8_t>());
        else EXPECT_EQ(got.to_vector<uint8_t>(), want.to_vector<uint8_t>());
      }
    }
  }
}

TEST(NhwcKernels, ErrorsNameTheInputAndWhatWasExpected) {
  const Tensor r3 = Tensor::from_vector<uint8_t>({1, 2, 3}, std::vector<uint8_t>(6, 1));
  const Tensor i4 = Tensor::from_vector<int64_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  for (const char* op : {"ToNhwc", "FromNhwc"})
    for (const Tensor& bad : {r3, i4})
      EXPECT_THAT(testing::error_of([&] { run_nhwc(op, bad); }),
                  ::testing::HasSubstr("expected a rank-4 tensor of 1- or 4-byte elements"));
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  EXPECT_THAT(testing::error_of([&] { run_nhwc("MaxPoolNhwc", r3, a); }), ::testing::HasSubstr("input X"));
}

// QLinearLookup: Y[i] = table[byte of X[i]], the output typed as the table,
// any shape (odd sizes spanning several blocks), 1 and 2 threads; bad inputs
// name what was expected.
TEST(NhwcKernels, QLinearLookupMapsEachByteThroughTheTable) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const auto tv = random_ints<uint8_t>(256, 51, 0, 255);
  std::vector<int8_t> signed_table(256);
  for (size_t i = 0; i < 256; ++i) signed_table[i] = static_cast<int8_t>(tv[i]);
  const Tensor tu = Tensor::from_vector<uint8_t>({256}, tv);
  const Tensor ts = Tensor::from_vector<int8_t>({256}, signed_table);
  for (int64_t n : {int64_t{1}, int64_t{255}, int64_t{70001}}) {
    const auto xv = random_ints<int8_t>(static_cast<size_t>(n), 52, -128, 127);
    const Tensor x = Tensor::from_vector<int8_t>({n}, xv);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      const Tensor yu = kernels::run_kernel_once(testing::spindle_node("QLinearLookup", {}, 2), {x, tu}, p)[0];
      const Tensor ys = kernels::run_kernel_once(testing::spindle_node("QLinearLookup", {}, 2), {x, ts}, p)[0];
      ASSERT_EQ(yu.dtype(), DataType::kUInt8);
      ASSERT_EQ(ys.dtype(), DataType::kInt8);
      ASSERT_EQ(yu.shape(), x.shape());
      const uint8_t* a = yu.data<uint8_t>();
      const int8_t* b = ys.data<int8_t>();
      for (int64_t i = 0; i < n; ++i) {
        const size_t byte = static_cast<uint8_t>(xv[static_cast<size_t>(i)]);
        ASSERT_EQ(a[i], tv[byte]) << i;
        ASSERT_EQ(b[i], signed_table[byte]) << i;
      }
    }
  }
  const Tensor x = Tensor::from_vector<uint8_t>({3}, {1, 2, 3});
  const Tensor short_table = Tensor::from_vector<uint8_t>({255}, std::vector<uint8_t>(255, 0));
  const Tensor f = Tensor::from_vector<float>({3}, {1, 2, 3});
  EXPECT_THAT(testing::error_of([&] {
                kernels::run_kernel_once(testing::spindle_node("QLinearLookup", {}, 2), {x, short_table});
              }),
              ::testing::HasSubstr("expected 256 int8 or uint8 values"));
  EXPECT_THAT(testing::error_of([&] { kernels::run_kernel_once(testing::spindle_node("QLinearLookup", {}, 2), {f, tu}); }),
              ::testing::HasSubstr("input X is"));
}

// QLinearGlobalAveragePool channels_last on ToNhwc(X) equals the NCHW
// pool: channel counts past one block of the NHWC sums (and ragged), one
// pixel, uint8 and int8, 1 and 2 threads.
TEST(NhwcKernels, QLinearGlobalAveragePoolChannelsLastEqualsNchw) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  for (const Shape& s : {Shape{2, 130, 7, 9}, Shape{1, 64, 1, 1}, Shape{3, 5, 4, 6}})
    for (bool sign : {false, true}) {
      const size_t n = static_cast<size_t>(s[0] * s[1] * s[2] * s[3]);
      const Tensor x = sign ? Tensor::from_vector<int8_t>(s, random_ints<int8_t>(n, 53, -128, 127))
                            : Tensor::from_vector<uint8_t>(s, random_ints<uint8_t>(n, 54, 0, 255));
      auto zp = [&](int v) {
        return sign ? Tensor::from_vector<int8_t>({}, {static_cast<int8_t>(v)})
                    : Tensor::from_vector<uint8_t>({}, {static_cast<uint8_t>(v)});
      };
      const std::vector<Tensor> params = {Tensor::from_vector<float>({}, {0.05f}), zp(3),
                                          Tensor::from_vector<float>({}, {0.04f}), zp(sign ? -2 : 9)};
      kernels::NodeInfo node;
      node.op_type = "QLinearGlobalAveragePool";
      node.domain = "com.microsoft";
      node.opset = 1;
      node.num_inputs = 5;
      const Tensor want = run_kernel_once(node, {x, params[0], params[1], params[2], params[3]})[0];
      node.attrs.set("channels_last", int64_t{1});
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
        const Tensor got = run_kernel_once(node, {run_nhwc("ToNhwc", x), params[0], params[1], params[2], params[3]}, p)[0];
        EXPECT_EQ(got.shape(), (Shape{s[0], 1, 1, s[1]}));
        EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), static_cast<size_t>(s[0] * s[1])), 0)
            << shape_to_string(s) << (sign ? " int8" : " uint8");
      }
      const std::vector<int64_t> wv = want.to_int64_vector();
      if (wv.size() > 1) {
        EXPECT_NE(*std::min_element(wv.begin(), wv.end()), *std::max_element(wv.begin(), wv.end()));
      }
    }
}

}  // namespace
}  // namespace spindle
