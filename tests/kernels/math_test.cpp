// math_test.cpp — src/kernels/math: ONNX backend node tests, the broadcast
// engine against a naive reference, dtype coverage, error messages, the
// vectorized transcendental functions and the fused Activation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "kernels/math/activation.h"
#include "kernels/math/binary_isa.h"
#include "onnx_node_runner.h"
#include "primitives/math/moments_isa.h"
#include "primitives/math/vec_math.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;
using testing::error_of;
using ::testing::HasSubstr;

// ------------------------------------------------------------------ node tests

// Every non-expanded ONNX backend node test of the math ops, listed
// explicitly (a missing kernel shows up as a failure).
//
// Skipped (not listed):
//  - the float16 / bfloat16 / string casts and float16 ops, run by the
//    conformance runner on whole models (and by the CastFloat16,
//    CastBFloat16, Float16Math and BFloat16Math tests below): test_cast_{BFLOAT16_to_FLOAT,
//    DOUBLE_to_FLOAT16, FLOAT16_to_DOUBLE, FLOAT16_to_FLOAT, FLOAT_to_BFLOAT16,
//    FLOAT_to_FLOAT16, FLOAT_to_STRING, STRING_to_FLOAT}, the same eight
//    test_castlike_*, test_max_float16, test_min_float16,
//    test_mod_mixed_sign_float16;
//  - *_expanded tests (multi-node function expansions, run elsewhere);
//  - BitShift (not in spindle's op list), and test_gelu* (not in this
//    libonnx-testdata, which predates opset 20).
const std::vector<std::string> kMathNodeTests = {
    "test_abs", "test_acos", "test_acos_example", "test_acosh", "test_acosh_example", "test_add", "test_add_bcast",
    "test_add_uint8", "test_and2d", "test_and3d", "test_and4d", "test_and_bcast3v1d", "test_and_bcast3v2d",
    "test_and_bcast4v2d", "test_and_bcast4v3d", "test_and_bcast4v4d", "test_asin", "test_asin_example", "test_asinh",
    "test_asinh_example", "test_atan", "test_atan_example", "test_atanh", "test_atanh_example",
    "test_cast_DOUBLE_to_FLOAT", "test_cast_FLOAT_to_DOUBLE", "test_castlike_DOUBLE_to_FLOAT",
    "test_castlike_FLOAT_to_DOUBLE", "test_ceil", "test_ceil_example", "test_celu", "test_clip",
    "test_clip_default_inbounds", "test_clip_default_int8_inbounds", "test_clip_default_int8_max",
    "test_clip_default_int8_min", "test_clip_default_max", "test_clip_default_min", "test_clip_example",
    "test_clip_inbounds", "test_clip_outbounds", "test_clip_splitbounds", "test_cos", "test_cos_example", "test_cosh",
    "test_cosh_example", "test_div", "test_div_bcast", "test_div_example", "test_div_uint8", "test_elu",
    "test_elu_default", "test_elu_example", "test_equal", "test_equal_bcast", "test_erf", "test_exp",
    "test_exp_example", "test_floor", "test_floor_example", "test_greater", "test_greater_bcast",
    "test_greater_equal", "test_greater_equal_bcast", "test_hardsigmoid", "test_hardsigmoid_default",
    "test_hardsigmoid_example", "test_hardswish", "test_isinf", "test_isinf_negative", "test_isinf_positive",
    "test_isnan", "test_leakyrelu", "test_leakyrelu_default", "test_leakyrelu_example", "test_less",
    "test_less_bcast", "test_less_equal", "test_less_equal_bcast", "test_log", "test_log_example",
    "test_max_example", "test_max_float32", "test_max_float64", "test_max_int16", "test_max_int32",
    "test_max_int64", "test_max_int8", "test_max_one_input", "test_max_two_inputs", "test_max_uint16",
    "test_max_uint32", "test_max_uint64", "test_max_uint8", "test_mean_example", "test_mean_one_input",
    "test_mean_two_inputs", "test_min_example", "test_min_float32", "test_min_float64", "test_min_int16",
    "test_min_int32", "test_min_int64", "test_min_int8", "test_min_one_input", "test_min_two_inputs",
    "test_min_uint16", "test_min_uint32", "test_min_uint64", "test_min_uint8", "test_mod_broadcast",
    "test_mod_int64_fmod", "test_mod_mixed_sign_float32", "test_mod_mixed_sign_float64",
    "test_mod_mixed_sign_int16", "test_mod_mixed_sign_int32", "test_mod_mixed_sign_int64",
    "test_mod_mixed_sign_int8", "test_mod_uint16", "test_mod_uint32", "test_mod_uint64", "test_mod_uint8",
    "test_mul", "test_mul_bcast", "test_mul_example", "test_mul_uint8", "test_neg", "test_neg_example",
    "test_not_2d", "test_not_3d", "test_not_4d", "test_or2d", "test_or3d", "test_or4d", "test_or_bcast3v1d",
    "test_or_bcast3v2d", "test_or_bcast4v2d", "test_or_bcast4v3d", "test_or_bcast4v4d", "test_pow",
    "test_pow_bcast_array", "test_pow_bcast_scalar", "test_pow_example", "test_pow_types_float",
    "test_pow_types_float32_int32", "test_pow_types_float32_int64", "test_pow_types_float32_uint32",
    "test_pow_types_float32_uint64", "test_pow_types_int", "test_pow_types_int32_float32",
    "test_pow_types_int32_int32", "test_pow_types_int64_float32", "test_pow_types_int64_int64",
    "test_prelu_broadcast", "test_prelu_example", "test_reciprocal", "test_reciprocal_example", "test_relu",
    "test_round", "test_selu", "test_selu_default", "test_selu_example", "test_shrink_hard", "test_shrink_soft",
    "test_sigmoid", "test_sigmoid_example", "test_sign", "test_sin", "test_sin_example", "test_sinh",
    "test_sinh_example", "test_softplus", "test_softplus_example", "test_softsign", "test_softsign_example",
    "test_sqrt", "test_sqrt_example", "test_sub", "test_sub_bcast", "test_sub_example", "test_sub_uint8",
    "test_sum_example", "test_sum_one_input", "test_sum_two_inputs", "test_tan", "test_tan_example", "test_tanh",
    "test_tanh_example", "test_thresholdedrelu", "test_thresholdedrelu_default", "test_thresholdedrelu_example",
    "test_where_example", "test_where_long_example", "test_xor2d", "test_xor3d", "test_xor4d",
    "test_xor_bcast3v1d", "test_xor_bcast3v2d", "test_xor_bcast4v2d", "test_xor_bcast4v3d", "test_xor_bcast4v4d",
};

class MathNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MathNodeTest, MatchesOnnxReference) { EXPECT_TRUE(testing::run_onnx_node_test(GetParam())); }

INSTANTIATE_TEST_SUITE_P(MathOnnx, MathNodeTest, ::testing::ValuesIn(kMathNodeTests),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// float16 / bfloat16 binary and variadic ops: each output element is the
// float32 result of the widened inputs, rounded once. A is 2x3, B and C a
// broadcast row of 3.
struct HalfType {
  DataType dtype;
  uint16_t (*to_half)(float);
  float (*to_float)(uint16_t);
};
void check_half_binary_ops(const HalfType& h, std::initializer_list<float> av, std::initializer_list<float> bv,
                           std::initializer_list<float> cv) {
  std::vector<uint16_t> a, b, c;
  for (float v : av) a.push_back(h.to_half(v));
  for (float v : bv) b.push_back(h.to_half(v));
  for (float v : cv) c.push_back(h.to_half(v));
  Tensor A(h.dtype, {2, 3}), B(h.dtype, {3}), C(h.dtype, {3});
  std::memcpy(A.raw_mutable_data(), a.data(), 12);
  std::memcpy(B.raw_mutable_data(), b.data(), 6);
  std::memcpy(C.raw_mutable_data(), c.data(), 6);
  auto expect = [&](const std::string& op, const std::vector<Tensor>& in, auto f) {
    const Tensor y = run_kernel_once(op, 13, {}, in)[0];
    ASSERT_EQ(y.dtype(), h.dtype) << op;
    ASSERT_EQ(y.shape(), (Shape{2, 3})) << op;
    const auto* got = static_cast<const uint16_t*>(y.raw_data());
    for (size_t i = 0; i < 6; ++i) {
      const float want = f(h.to_float(a[i]), h.to_float(b[i % 3]), h.to_float(c[i % 3]));
      EXPECT_EQ(got[i], h.to_half(want)) << op << " element " << i;
    }
  };
  expect("Add", {A, B}, [](float x, float y, float) { return x + y; });
  expect("Sub", {A, B}, [](float x, float y, float) { return x - y; });
  expect("Mul", {A, B}, [](float x, float y, float) { return x * y; });
  expect("Div", {A, B}, [](float x, float y, float) { return x / y; });
  expect("Max", {A, B, C}, [](float x, float y, float z) { return std::max(std::max(x, y), z); });
  expect("Min", {A, B, C}, [](float x, float y, float z) { return std::min(std::min(x, y), z); });
  expect("Sum", {A, B, C}, [](float x, float y, float z) { return (x + y) + z; });
  expect("Mean", {A, B, C}, [](float x, float y, float z) { return ((x + y) + z) / 3.0f; });
}

TEST(Float16Math, BinaryAndVariadicOpsRoundTheFloat32ResultOnce) {
  // Values whose float16 sum and product need rounding.
  check_half_binary_ops({DataType::kFloat16, &float_to_float16, &float16_to_float},
                        {1.0f, 0.1f, 2049.0f, -3.3f, 65000.0f, 1e-4f}, {0.0009765625f, 0.2f, 1.0f}, {-0.5f, 7.0f, 0.3f});
}

TEST(BFloat16Math, BinaryAndVariadicOpsRoundTheFloat32ResultOnce) {
  check_half_binary_ops({DataType::kBFloat16, &float_to_bfloat16, &bfloat16_to_float},
                        {1.0f, 0.1f, 2049.0f, -3.3f, 3e38f, 1e-4f}, {0.0078125f, 0.2f, 1.0f}, {-0.5f, 7.0f, 0.3f});
  // 1 + 1/128 is exact in bfloat16; 1 + 1/256 is not (a tie, to even 1.0).
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 128), 0x3F81);
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 256), 0x3F80);
  EXPECT_EQ(bfloat16_to_float(0x3F81), 1.0f + 1.0f / 128);
}

// The same node tests through a 3-thread pool (tensors are small, so this
// mostly checks that the inline path and the pool path agree).
TEST(MathNodeTestPool, AddBcastAndWhereWithPool) {
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  EXPECT_TRUE(testing::run_onnx_node_test("test_add_bcast", 1e-3, 1e-5, pool.get()));
  EXPECT_TRUE(testing::run_onnx_node_test("test_where_long_example", 1e-3, 1e-5, pool.get()));
}

// ------------------------------------------------------------------ helpers

std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// Naive NumPy broadcast: index of `out_index` (row-major over out) in `in`.
int64_t bcast_index(const Shape& in, const Shape& out, int64_t out_index) {
  int64_t idx = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t coord = out_index % out[d];
    out_index /= out[d];
    if (k < in.size()) {
      const size_t di = in.size() - 1 - k;
      if (in[di] != 1) idx += coord * stride;
      stride *= in[di];
    }
  }
  return idx;
}

Shape bcast_shape(const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t k = 0; k < r; ++k) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[r - 1 - k] = da == 1 ? db : da;
  }
  return out;
}

// ------------------------------------------------------------------ broadcast engine

struct BcastCase {
  Shape a, b;
};
void PrintTo(const BcastCase& c, std::ostream* os) { *os << shape_to_string(c.a) << " op " << shape_to_string(c.b); }

class MathBroadcast : public ::testing::TestWithParam<BcastCase> {};

TEST_P(MathBroadcast, MatchesNaiveReferenceForEveryOp) {
  const BcastCase& c = GetParam();
  const Shape out = bcast_shape(c.a, c.b);
  auto av = random_floats(shape_numel(c.a), 1);
  auto bv = random_floats(shape_numel(c.b), 2, 0.5f, 2.0f);
  auto A = Tensor::from_vector<float>(c.a, av);
  auto B = Tensor::from_vector<float>(c.b, bv);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 3}).value();
  struct Op {
    const char* name;
    float (*ref)(float, float);
  };
  const Op ops[] = {{"Add", [](float x, float y) { return x + y; }},
                    {"Sub", [](float x, float y) { return x - y; }},
                    {"Mul", [](float x, float y) { return x * y; }},
                    {"Div", [](float x, float y) { return x / y; }},
                    {"Max", [](float x, float y) { return std::max(x, y); }},
                    {"Min", [](float x, float y) { return std::min(x, y); }}};
  for (const Op& op : ops) {
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool.get()}) {
      auto got = run_kernel_once(op.name, 14, {}, {A, B}, 1, p)[0];
      ASSERT_EQ(got.shape(), out) << op.name;
      const float* g = got.data<float>();
      int bad = 0;
      for (int64_t i = 0; i < shape_numel(out); ++i) {
        const float want = op.ref(av[static_cast<size_t>(bcast_index(c.a, out, i))],
                                  bv[static_cast<size_t>(bcast_index(c.b, out, i))]);
        if (g[i] != want && bad++ < 3) ADD_FAILURE() << op.name << " element " << i << ": " << g[i] << " vs " << want;
      }
      EXPECT_EQ(bad, 0) << op.name << " " << shape_to_string(c.a) << " op " << shape_to_string(c.b);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    MathShapes, MathBroadcast,
    ::testing::Values(BcastCase{{2, 3, 4}, {2, 3, 4}},            // same shape
                      BcastCase{{2, 3, 4}, {}},                   // scalar
                      BcastCase{{}, {5, 7}},                      // scalar first
                      BcastCase{{1}, {33}},                       // one-element vector
                      BcastCase{{2, 16, 9, 11}, {16, 1, 1}},      // per-channel constant
                      BcastCase{{2, 16, 9, 11}, {1, 16, 1, 1}},   // per-channel, same rank
                      BcastCase{{2, 16, 9, 11}, {11}},            // last-dim vector
                      BcastCase{{3, 1, 5}, {1, 4, 1}},            // both sides broadcast
                      BcastCase{{4, 1}, {1, 300}},                // outer product
                      BcastCase{{2, 3, 1, 5}, {3, 7, 1}},         // mixed
                      BcastCase{{64, 130, 67}, {64, 1, 67}},      // middle broadcast, large (pool splits mid-row)
                      BcastCase{{400, 300}, {400, 300}},          // large flat
                      BcastCase{{2, 1, 2, 1, 2, 1, 2, 1, 2}, {2, 1, 2, 1, 2, 1, 2, 1}},  // collapsed rank 9
                      BcastCase{{0, 3}, {1, 3}}));                // empty

TEST(MathBinary, Int64ShapeArithmetic) {
  auto a = Tensor::from_vector<int64_t>({4}, {7, -7, 9, 1});
  auto b = Tensor::from_vector<int64_t>({}, {2});
  EXPECT_EQ(run_kernel_once("Div", 14, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{3, -3, 4, 0}));
  EXPECT_EQ(run_kernel_once("Mul", 14, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{14, -14, 18, 2}));
  EXPECT_EQ(run_kernel_once("Sub", 14, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{5, -9, 7, -1}));
  EXPECT_EQ(run_kernel_once("Add", 14, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{9, -5, 11, 3}));
  EXPECT_EQ(run_kernel_once("Max", 13, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{7, 2, 9, 2}));
  EXPECT_EQ(run_kernel_once("Min", 13, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{2, -7, 2, 1}));
  EXPECT_EQ(run_kernel_once("Mod", 13, {}, {a, b})[0].to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(run_kernel_once("Mod", 13, Attributes{{"fmod", int64_t{1}}}, {a, b})[0].to_vector<int64_t>(),
            (std::vector<int64_t>{1, -1, 1, 1}));
  EXPECT_EQ(run_kernel_once("Neg", 13, {}, {a})[0].to_vector<int64_t>(), (std::vector<int64_t>{-7, 7, -9, -1}));
  EXPECT_EQ(run_kernel_once("Abs", 13, {}, {a})[0].to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 9, 1}));
  auto zero = Tensor::from_vector<int64_t>({}, {0});
  EXPECT_EQ(run_kernel_once("Div", 14, {}, {a, zero})[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(MathBinary, Int32AndEqualWhere) {
  auto a = Tensor::from_vector<int32_t>({2, 2}, {1, 2, 3, 4});
  auto b = Tensor::from_vector<int32_t>({2}, {1, 4});
  EXPECT_EQ(run_kernel_once("Add", 14, {}, {a, b})[0].to_vector<int32_t>(), (std::vector<int32_t>{2, 6, 4, 8}));
  auto eq = run_kernel_once("Equal", 13, {}, {a, b})[0];
  EXPECT_EQ(eq.dtype(), DataType::kBool);
  EXPECT_EQ(eq.to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  auto less = run_kernel_once("Less", 13, {}, {a, b})[0];
  EXPECT_EQ(less.to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
  auto gt = run_kernel_once("Greater", 13, {}, {a, b})[0];
  EXPECT_EQ(gt.to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  // Equal on bool, Where with an int64 pair and a bool X/Y.
  auto eqb = run_kernel_once("Equal", 13, {}, {eq, less})[0];
  EXPECT_EQ(eqb.to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  auto x = Tensor::from_vector<int64_t>({2, 1}, {10, 20});
  auto y = Tensor::from_vector<int64_t>({}, {-1});
  auto w = run_kernel_once("Where", 16, {}, {eq, x, y})[0];
  EXPECT_EQ(w.shape(), (Shape{2, 2}));
  EXPECT_EQ(w.to_vector<int64_t>(), (std::vector<int64_t>{10, -1, -1, 20}));
  auto wb = run_kernel_once("Where", 16, {}, {eq, less, gt})[0];
  EXPECT_EQ(wb.dtype(), DataType::kBool);
  EXPECT_EQ(wb.to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
}

TEST(MathBinary, VariadicSumMeanWithBroadcastAndThreeInputs) {
  auto a = Tensor::from_vector<float>({2, 1}, {1, 2});
  auto b = Tensor::from_vector<float>({3}, {10, 20, 30});
  auto c = Tensor::from_vector<float>({}, {100});
  auto s = run_kernel_once("Sum", 13, {}, {a, b, c})[0];
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{111, 121, 131, 112, 122, 132}));
  auto m = run_kernel_once("Mean", 13, {}, {a, b, c})[0];
  EXPECT_FLOAT_EQ(m.to_vector<float>()[0], 111.0f / 3);
  auto mx = run_kernel_once("Max", 13, {}, {a, b, c})[0];
  EXPECT_EQ(mx.to_vector<float>(), (std::vector<float>(6, 100.0f)));
}

TEST(MathBinary, PowFastPathsAndLegacyBroadcast) {
  auto x = Tensor::from_vector<float>({3}, {-2, 0.5f, 3});
  EXPECT_EQ(run_kernel_once("Pow", 15, {}, {x, Tensor::scalar<float>(2)})[0].to_vector<float>(),
            (std::vector<float>{4, 0.25f, 9}));
  EXPECT_EQ(run_kernel_once("Pow", 15, {}, {x, Tensor::scalar<int64_t>(3)})[0].to_vector<float>(),
            (std::vector<float>{-8, 0.125f, 27}));
  auto e = Tensor::from_vector<float>({3}, {0.5f, 0.5f, 0.5f});
  auto r = run_kernel_once("Pow", 15, {}, {Tensor::from_vector<float>({3}, {4, 9, 16}), e})[0].to_vector<float>();
  EXPECT_EQ(r, (std::vector<float>{2, 3, 4}));
  // Opset 6 Add with broadcast=1, axis=1: B [3] aligned with A's dim 1.
  auto A = Tensor::from_vector<float>({2, 3, 2}, std::vector<float>(12, 1.0f));
  auto B = Tensor::from_vector<float>({3}, {1, 2, 3});
  auto out = run_kernel_once("Add", 6, Attributes{{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}, {A, B})[0];
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{2, 2, 3, 3, 4, 4, 2, 2, 3, 3, 4, 4}));
}

// ------------------------------------------------------------------ unary, Clip, Cast

TEST(MathUnary, MatchesStdOnRandomInput) {
  auto v = random_floats(1000, 3, -6.0f, 6.0f);
  auto x = Tensor::from_vector<float>({10, 100}, v);
  struct U {
    const char* name;
    double (*ref)(double);
  };
  const U ops[] = {{"Exp", [](double a) { return std::exp(a); }},
                   {"Tanh", [](double a) { return std::tanh(a); }},
                   {"Sigmoid", [](double a) { return 1 / (1 + std::exp(-a)); }},
                   {"Erf", [](double a) { return std::erf(a); }},
                   {"Floor", [](double a) { return std::floor(a); }},
                   {"Ceil", [](double a) { return std::ceil(a); }},
                   {"Round", [](double a) { return std::nearbyint(a); }},
                   {"Softsign", [](double a) { return a / (1 + std::fabs(a)); }},
                   {"Softplus", [](double a) { return std::log1p(std::exp(a)); }},
                   {"Elu", [](double a) { return a < 0 ? std::expm1(a) : a; }},
                   {"Sign", [](double a) { return double((a > 0) - (a < 0)); }},
                   {"Abs", [](double a) { return std::fabs(a); }},
                   {"Relu", [](double a) { return a > 0 ? a : 0.0; }}};
  for (const U& op : ops) {
    auto y = run_kernel_once(op.name, 13, {}, {x})[0].to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      const double want = op.ref(v[i]);
      ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 2e-7) << op.name << "(" << v[i] << ")";
    }
  }
  // Sqrt (SIMD path + tail), Log, Reciprocal on positives, odd length.
  auto p = random_floats(1001, 4, 0.01f, 50.0f);
  auto px = Tensor::from_vector<float>({1001}, p);
  auto sq = run_kernel_once("Sqrt", 13, {}, {px})[0].to_vector<float>();
  auto lg = run_kernel_once("Log", 13, {}, {px})[0].to_vector<float>();
  auto rc = run_kernel_once("Reciprocal", 13, {}, {px})[0].to_vector<float>();
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(sq[i], std::sqrt(p[i]));
    EXPECT_EQ(lg[i], std::log(p[i]));
    EXPECT_EQ(rc[i], 1.0f / p[i]);
  }
  // Floor / Ceil / Round edge cases.
  auto ex = Tensor::from_vector<float>({8}, {-0.5f, 0.5f, 1.5f, 2.5f, -2.5f, -0.0f, 1e10f, -1.25f});
  EXPECT_EQ(run_kernel_once("Floor", 13, {}, {ex})[0].to_vector<float>(),
            (std::vector<float>{-1, 0, 1, 2, -3, -0.0f, 1e10f, -2}));
  EXPECT_EQ(run_kernel_once("Ceil", 13, {}, {ex})[0].to_vector<float>(),
            (std::vector<float>{-0.0f, 1, 2, 3, -2, -0.0f, 1e10f, -1}));
  EXPECT_EQ(run_kernel_once("Round", 13, {}, {ex})[0].to_vector<float>(),
            (std::vector<float>{-0.0f, 0, 2, 2, -2, -0.0f, 1e10f, -1}));
}

TEST(MathUnary, GeluBothDomainsAndForms) {
  auto v = random_floats(200, 5, -5.0f, 5.0f);
  auto x = Tensor::from_vector<float>({200}, v);
  kernels::NodeInfo ms;
  ms.op_type = "Gelu";
  ms.domain = "com.microsoft";
  ms.opset = 1;
  ms.num_inputs = 1;
  auto y = run_kernel_once(ms, {x})[0].to_vector<float>();
  kernels::NodeInfo onnx20 = ms;
  onnx20.domain = "";
  onnx20.opset = 20;
  onnx20.attrs.set("approximate", std::string("tanh"));
  auto yt = run_kernel_once(onnx20, {x})[0].to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    const double a = v[i];
    const double want = 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
    const double want_t = 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)));
    EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-6);
    EXPECT_NEAR(yt[i], want_t, 1e-6 * std::fabs(want_t) + 1e-6);
  }
}

TEST(MathClip, AttributeAndInputForms) {
  auto x = Tensor::from_vector<float>({5}, {-3, -1, 0, 1, 3});
  EXPECT_EQ(run_kernel_once("Clip", 6, Attributes{{"min", -1.5f}, {"max", 2.0f}}, {x})[0].to_vector<float>(),
            (std::vector<float>{-1.5f, -1, 0, 1, 2}));
  EXPECT_EQ(run_kernel_once("Clip", 6, Attributes{{"max", 0.5f}}, {x})[0].to_vector<float>(),
            (std::vector<float>{-3, -1, 0, 0.5f, 0.5f}));
  // Opset 13: min absent (undefined tensor), max given.
  EXPECT_EQ(run_kernel_once("Clip", 13, {}, {x, Tensor(), Tensor::scalar<float>(0.5f)})[0].to_vector<float>(),
            (std::vector<float>{-3, -1, 0, 0.5f, 0.5f}));
  EXPECT_EQ(run_kernel_once("Clip", 13, {}, {x, Tensor::scalar<float>(-2.0f)})[0].to_vector<float>(),
            (std::vector<float>{-2, -1, 0, 1, 3}));
  auto xi = Tensor::from_vector<int64_t>({3}, {-5, 5, 50});
  EXPECT_EQ(run_kernel_once("Clip", 13, {}, {xi, Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(10)})[0]
                .to_vector<int64_t>(),
            (std::vector<int64_t>{0, 5, 10}));
}

TEST(MathCast, NumericAndBoolConversions) {
  auto f = Tensor::from_vector<float>({5}, {-2.7f, -0.5f, 0.0f, 0.5f, 2.7f});
  auto to = [](DataType t) { return Attributes{{"to", static_cast<int64_t>(t)}}; };
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kInt64), {f})[0].to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 0, 0, 2}));
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kInt32), {f})[0].to_vector<int32_t>(),
            (std::vector<int32_t>{-2, 0, 0, 0, 2}));
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kBool), {f})[0].to_vector<bool>(),
            (std::vector<bool>{true, true, false, true, true}));
  auto b = Tensor::from_vector<bool>({3}, {true, false, true});
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kFloat32), {b})[0].to_vector<float>(),
            (std::vector<float>{1, 0, 1}));
  auto i64 = Tensor::from_vector<int64_t>({3}, {-1, 300, 1LL << 40});
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kInt32), {i64})[0].to_vector<int32_t>(),
            (std::vector<int32_t>{-1, 300, 0}));
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kUInt8), {i64})[0].to_vector<uint8_t>(),
            (std::vector<uint8_t>{255, 44, 0}));
  EXPECT_EQ(run_kernel_once("Cast", 13, to(DataType::kFloat64), {i64})[0].to_vector<double>(),
            (std::vector<double>{-1, 300, double(1LL << 40)}));
  // Opset 1 spells `to` as a string.
  EXPECT_EQ(run_kernel_once("Cast", 1, Attributes{{"to", std::string("INT64")}}, {f})[0].dtype(), DataType::kInt64);
  // CastLike takes the dtype of its second input.
  EXPECT_EQ(run_kernel_once("CastLike", 15, {}, {f, i64})[0].to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 0, 0, 2}));
}

TEST(MathUnary, IsNaNIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  auto x = Tensor::from_vector<float>({4}, {1.0f, NAN, inf, -inf});
  EXPECT_EQ(run_kernel_once("IsNaN", 13, {}, {x})[0].to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(run_kernel_once("IsInf", 10, {}, {x})[0].to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(run_kernel_once("IsInf", 10, Attributes{{"detect_negative", int64_t{0}}}, {x})[0].to_vector<bool>(),
            (std::vector<bool>{false, false, true, false}));
}

// ------------------------------------------------------------------ errors

TEST(MathErrors, IncompatibleBroadcastNamesOpAndShapes) {
  auto a = Tensor::from_vector<float>({2, 3}, std::vector<float>(6));
  auto b = Tensor::from_vector<float>({4}, std::vector<float>(4));
  const std::string msg = error_of([&] { run_kernel_once("Add", 14, {}, {a, b}); });
  EXPECT_THAT(msg, HasSubstr("Add"));
  EXPECT_THAT(msg, HasSubstr("cannot be broadcast"));
  EXPECT_THAT(msg, HasSubstr("2x3"));
  const std::string w = error_of([&] {
    run_kernel_once("Where", 16, {}, {Tensor::from_vector<bool>({5}, std::vector<bool>(5)), a, a});
  });
  EXPECT_THAT(w, HasSubstr("Where"));
  EXPECT_THAT(w, HasSubstr("cannot be broadcast"));
}

TEST(MathErrors, UnsupportedDtypeNamesOpAndDtype) {
  auto b = Tensor::from_vector<bool>({2}, {true, false});
  std::string msg = error_of([&] { run_kernel_once("Add", 14, {}, {b, b}); });
  EXPECT_THAT(msg, HasSubstr("Add"));
  EXPECT_THAT(msg, HasSubstr("bool"));
  EXPECT_THAT(msg, HasSubstr("not supported"));
  auto i = Tensor::from_vector<int64_t>({2}, {1, 2});
  msg = error_of([&] { run_kernel_once("Sqrt", 13, {}, {i}); });
  EXPECT_THAT(msg, HasSubstr("Sqrt"));
  EXPECT_THAT(msg, HasSubstr("int64"));
  msg = error_of([&] { run_kernel_once("Cast", 13, Attributes{{"to", int64_t{14}}}, {i}); });
  EXPECT_THAT(msg, HasSubstr("Cast"));
  EXPECT_THAT(msg, HasSubstr("complex64"));
  auto f = Tensor::from_vector<float>({2}, {1, 2});
  msg = error_of([&] { run_kernel_once("Sub", 14, {}, {f, i}); });
  EXPECT_THAT(msg, HasSubstr("Sub"));
  EXPECT_THAT(msg, HasSubstr("same dtype"));
}

// ------------------------------------------------------------------ vec_math accuracy

// Relative error of f against a double-precision reference over a dense
// sweep of float inputs (every 97th bit pattern) within [-hi, hi]; results
// below FLT_MIN (denormals) are compared with an absolute 2-ulp bound.
template <class F, class G>
double worst_rel_error(F f, G ref, float hi) {
  double worst = 0;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 97) {
    float x;
    std::memcpy(&x, &bits, 4);
    if (x > hi) break;
    for (float v : {x, -x}) {
      const double r = ref(static_cast<double>(v));
      const double got = f(v);
      double err;
      if (std::fabs(r) < std::numeric_limits<float>::min()) err = std::fabs(got - r) <= 3e-45 ? 0 : 1;
      else err = std::fabs(got - r) / std::fabs(r);
      worst = std::max(worst, err);
    }
  }
  return worst;
}

// The fused SiLU (Activation kSilu, activation.isa.cpp): within 1e-6 of
// x / (1 + exp(-x)) in double where the result is above 1e-35 (below, for
// x < -88.3, it gives -0), the
// specials of x * sigmoid(x), and the same bits for an element whether it
// is computed in a vector or alone.
TEST(MathVecMath, FusedSiluWithin1e6AndTheSameBitsInVectorsAndTails) {
  kernels::Activation silu;
  silu.kind = kernels::Activation::kSilu;
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 977) {
    float x;
    std::memcpy(&x, &bits, 4);
    if (x > 100.0f) break;
    xs.push_back(x);
    xs.push_back(-x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, NAN, 88.0f, -88.0f, 89.0f, -89.0f, 0.0f, -0.0f}) xs.push_back(v);
  std::vector<float> got = xs;
  silu.apply(got.data(), static_cast<int64_t>(got.size()));
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    float alone = xs[i];
    silu.apply(&alone, 1);
    ASSERT_EQ(0, std::memcmp(&alone, &got[i], sizeof(float))) << "x = " << xs[i];
    const double x = xs[i];
    if (!std::isfinite(x)) continue;
    const double want = x / (1.0 + std::exp(-x));
    if (std::fabs(want) < 1e-35) {
      EXPECT_LT(std::fabs(got[i]), 1e-35) << "x = " << x;
      continue;
    }
    worst = std::max(worst, std::fabs(got[i] - want) / std::fabs(want));
  }
  EXPECT_LT(worst, 1e-6);
  float sp[3] = {inf, -inf, NAN};
  silu.apply(sp, 3);
  EXPECT_EQ(sp[0], inf);
  EXPECT_TRUE(std::isnan(sp[1])) << "-inf * sigmoid(-inf) = -inf * 0";
  EXPECT_TRUE(std::isnan(sp[2]));
}

// Gelu (erf form, float32): within 1e-6 * max(1, x^2 / 2) relative of the
// double reference x * erfc(-x / sqrt(2)) / 2 wherever the result is above
// 1e-35 (for x < 0 the float rounding of -x^2 / 2 inside exp grows with
// x^2; the erf form, 1 + erf(x / sqrt(2)), cancels outright there), the
// specials, and the same bits for an element in a vector or alone.
TEST(MathVecMath, GeluWithin1e6AndTheSameBitsInVectorsAndTails) {
  std::vector<float> xs;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 977) {
    float x;
    std::memcpy(&x, &bits, 4);
    if (x > 20.0f) break;
    xs.push_back(x);
    xs.push_back(-x);
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, NAN, 13.0f, -13.0f, 0.0f, -0.0f}) xs.push_back(v);
  const int64_t n = static_cast<int64_t>(xs.size());
  const Tensor all = kernels::run_kernel_once("Gelu", 20, {}, {Tensor::from_vector<float>({n}, xs)})[0];
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float got = all.data<float>()[i];
    if (i % 97 == 0 || i >= n - 7) {  // alone: the scalar form
      const Tensor one = kernels::run_kernel_once("Gelu", 20, {}, {Tensor::from_vector<float>({1}, {xs[i]})})[0];
      ASSERT_EQ(0, std::memcmp(one.data<float>(), &got, sizeof(float))) << "x = " << xs[i];
    }
    const double x = xs[i];
    if (!std::isfinite(x)) continue;
    const double want = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    if (std::fabs(want) < 1e-35) {
      EXPECT_LT(std::fabs(got), 1e-35) << "x = " << x;
      continue;
    }
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want) / std::max(1.0, x * x / 2));
  }
  EXPECT_LT(worst, 1e-6);
  const float* g = all.data<float>() + n - 7;
  EXPECT_EQ(g[0], inf);
  EXPECT_TRUE(std::isnan(g[1])) << "-inf * (1 + erf(-inf)) / 2 = -inf * 0";
  EXPECT_TRUE(std::isnan(g[2]));
  EXPECT_EQ(g[3], 13.0f);
  EXPECT_EQ(g[5], 0.0f);
}

TEST(MathVecMath, PolynomialsWithin1e6OfStd) {
  using namespace kernels::vm;
  EXPECT_LT(worst_rel_error(fast_exp, [](double x) { return std::exp(x); }, 88.0f), 1e-6);
  EXPECT_LT(worst_rel_error(fast_sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, 80.0f), 1e-6);
  EXPECT_LT(worst_rel_error(fast_tanh, [](double x) { return std::tanh(x); }, 50.0f), 1e-6);
  EXPECT_LT(worst_rel_error(fast_erf, [](double x) { return std::erf(x); }, 10.0f), 1e-6);
  // Specials.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fast_exp(inf), inf);
  EXPECT_EQ(fast_exp(-inf), 0.0f);
  EXPECT_EQ(fast_exp(100.0f), inf);
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fast_exp(NAN)));
  EXPECT_EQ(fast_sigmoid(inf), 1.0f);
  EXPECT_EQ(fast_sigmoid(-inf), 0.0f);
  EXPECT_TRUE(std::isnan(fast_sigmoid(NAN)));
  EXPECT_EQ(fast_tanh(inf), 1.0f);
  EXPECT_EQ(fast_tanh(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_tanh(NAN)));
  EXPECT_EQ(fast_erf(inf), 1.0f);
  EXPECT_EQ(fast_erf(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(fast_erf(NAN)));
}

// ------------------------------------------------------------------ Activation

kernels::NodeInfo act_node(const std::string& kind, std::vector<float> params) {
  kernels::NodeInfo node;
  node.op_type = "Conv";
  if (!kind.empty()) node.attrs.set("activation", kind);
  if (!params.empty()) node.attrs.set("activation_params", std::move(params));
  return node;
}

TEST(Activation, FromAttrsReadsKindAndParams) {
  using A = kernels::Activation;
  EXPECT_EQ(kernels::activation_from_attrs(act_node("", {})).kind, A::kNone);
  auto lr = kernels::activation_from_attrs(act_node("LeakyRelu", {0.2f}));
  EXPECT_EQ(lr.kind, A::kLeakyRelu);
  EXPECT_EQ(lr.a, 0.2f);
  EXPECT_EQ(kernels::activation_from_attrs(act_node("LeakyRelu", {})).a, 0.01f);
  auto clip = kernels::activation_from_attrs(act_node("Clip", {0.0f, 6.0f}));
  EXPECT_EQ(clip.kind, A::kClip);
  EXPECT_EQ(clip.a, 0.0f);
  EXPECT_EQ(clip.b, 6.0f);
  auto hs = kernels::activation_from_attrs(act_node("HardSigmoid", {}));
  EXPECT_EQ(hs.kind, A::kHardSigmoid);
  EXPECT_EQ(hs.a, 0.2f);
  EXPECT_EQ(hs.b, 0.5f);
  EXPECT_EQ(kernels::activation_from_attrs(act_node("Relu", {})).kind, A::kRelu);
  EXPECT_EQ(kernels::activation_from_attrs(act_node("Sigmoid", {})).kind, A::kSigmoid);
  EXPECT_EQ(kernels::activation_from_attrs(act_node("HardSwish", {})).kind, A::kHardSwish);
  EXPECT_EQ(kernels::activation_from_attrs(act_node("Tanh", {})).kind, A::kTanh);
  const std::string msg = error_of([] { kernels::activation_from_attrs(act_node("Swish", {})); });
  EXPECT_THAT(msg, HasSubstr("Conv"));
  EXPECT_THAT(msg, HasSubstr("Swish"));
}

struct ActCase {
  std::string kind;
  std::vector<float> params;
  double (*ref)(double x, double a, double b);
};

void PrintTo(const ActCase& c, std::ostream* os) { *os << (c.kind.empty() ? "None" : c.kind); }

class ActivationApply : public ::testing::TestWithParam<ActCase> {};

TEST_P(ActivationApply, MatchesScalarReference) {
  const ActCase& c = GetParam();
  const auto act = kernels::activation_from_attrs(act_node(c.kind, c.params));
  // Odd length so vector bodies and tails are both exercised; includes the
  // kink points of the piecewise functions.
  auto v = random_floats(1003, 7, -8.0f, 8.0f);
  v[0] = 0.0f;
  v[1] = -3.0f;
  v[2] = 3.0f;
  v[3] = 6.0f;
  v[4] = -2.5f;
  v[5] = 2.5f;
  std::vector<float> y = v;
  act.apply(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    const double want = c.ref(v[i], act.a, act.b);
    ASSERT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-7) << c.kind << "(" << v[i] << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(
    ActivationKinds, ActivationApply,
    ::testing::Values(
        ActCase{"", {}, [](double x, double, double) { return x; }},
        ActCase{"Relu", {}, [](double x, double, double) { return std::max(x, 0.0); }},
        ActCase{"LeakyRelu", {0.1f}, [](double x, double a, double) { return x < 0 ? a * x : x; }},
        ActCase{"Clip", {-1.0f, 6.0f}, [](double x, double a, double b) { return std::min(std::max(x, a), b); }},
        ActCase{"HardSigmoid", {0.2f, 0.5f},
                [](double x, double a, double b) { return std::min(std::max(a * x + b, 0.0), 1.0); }},
        ActCase{"Sigmoid", {}, [](double x, double, double) { return 1 / (1 + std::exp(-x)); }},
        ActCase{"HardSwish", {}, [](double x, double, double) { return x * std::min(std::max(x / 6 + 0.5, 0.0), 1.0); }},
        ActCase{"Tanh", {}, [](double x, double, double) { return std::tanh(x); }}),
    [](const ::testing::TestParamInfo<ActCase>& info) { return info.param.kind.empty() ? "None" : info.param.kind; });

// float16: exact values, rounding to nearest even, overflow to infinity, and
// casts to other types going through float32.
TEST(CastFloat16, RoundTripsAndRounds) {
  auto x = Tensor::from_vector<float>({6}, {1.0f, -2.5f, 65504.0f, 1e6f, 1.0f + 1.0f / 2048.0f, 1.0f + 3.0f / 2048.0f});
  auto h = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{10}}}, {x})[0];
  ASSERT_EQ(h.dtype(), DataType::kFloat16);
  const auto* bits = static_cast<const uint16_t*>(h.raw_data());
  EXPECT_EQ(bits[0], 0x3C00);  // 1.0
  EXPECT_EQ(bits[1], 0xC100);  // -2.5
  EXPECT_EQ(bits[2], 0x7BFF);  // largest finite
  EXPECT_EQ(bits[3], 0x7C00);  // +inf
  // Ties (half an ulp of 2^-10) round to the even mantissa.
  EXPECT_EQ(bits[4], 0x3C00);  // 1 + 2^-11: between 1.0 (even) and 1 + 2^-10
  EXPECT_EQ(bits[5], 0x3C02);  // 1 + 3 * 2^-11: between 1 + 2^-10 and 1 + 2^-9 (even)
  auto back = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{7}}}, {h})[0];  // to int64
  ASSERT_EQ(back.dtype(), DataType::kInt64);
  EXPECT_EQ(back.data<int64_t>()[1], -2);
  EXPECT_EQ(back.data<int64_t>()[2], 65504);
}

// bfloat16: float32 -> bfloat16 rounds to nearest even (ties to the even
// mantissa), overflows to infinity, keeps NaN a NaN and -0 a -0; the way
// back is exact; casts to other types and binary ops go through float32 and
// round once.
TEST(CastBFloat16, RoundsToNearestEvenAndKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // A NaN whose payload sits in the low bits only: truncating would give inf.
  uint32_t low_nan_bits = 0x7f800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  auto x = Tensor::from_vector<float>({9}, {1.0f, -2.5f, 1.0f + 1.0f / 256, 1.0f + 3.0f / 256, 3.4028235e38f, nan,
                                            low_nan, -0.0f, 0.47892547f});
  auto h = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{16}}}, {x})[0];
  ASSERT_EQ(h.dtype(), DataType::kBFloat16);
  const auto* bits = static_cast<const uint16_t*>(h.raw_data());
  EXPECT_EQ(bits[0], 0x3F80);  // 1.0
  EXPECT_EQ(bits[1], 0xC020);  // -2.5
  EXPECT_EQ(bits[2], 0x3F80);  // 1 + 2^-8: between 1.0 (even) and 1 + 2^-7
  EXPECT_EQ(bits[3], 0x3F82);  // 1 + 3 * 2^-8: between 1 + 2^-7 and 1 + 2^-6 (even)
  EXPECT_EQ(bits[4], 0x7F80);  // the largest float rounds up to +inf
  EXPECT_TRUE((bits[5] & 0x7F80) == 0x7F80 && (bits[5] & 0x7F) != 0);
  EXPECT_TRUE((bits[6] & 0x7F80) == 0x7F80 && (bits[6] & 0x7F) != 0) << std::hex << bits[6];
  EXPECT_EQ(bits[7], 0x8000);  // -0
  EXPECT_EQ(bits[8], 0x3EF5);  // 0x3EF53A... rounds down
  auto back = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{1}}}, {h})[0];
  ASSERT_EQ(back.dtype(), DataType::kFloat32);
  EXPECT_EQ(back.data<float>()[1], -2.5f);
  EXPECT_EQ(back.data<float>()[3], 1.0f + 2.0f / 128);
  EXPECT_TRUE(std::isnan(back.data<float>()[6]));
  EXPECT_TRUE(std::signbit(back.data<float>()[7]));
  auto i = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{7}}}, {h})[0];
  EXPECT_EQ(i.data<int64_t>()[1], -2);
  // float16 <-> bfloat16 and CastLike.
  auto f16 = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{10}}}, {h})[0];
  EXPECT_EQ(static_cast<const uint16_t*>(f16.raw_data())[1], 0xC100);  // -2.5 as float16
  auto like = run_kernel_once("CastLike", 15, {}, {f16, h})[0];
  ASSERT_EQ(like.dtype(), DataType::kBFloat16);
  EXPECT_EQ(static_cast<const uint16_t*>(like.raw_data())[1], 0xC020);
  // Strings.
  auto s = run_kernel_once("Cast", 13, Attributes{{"to", int64_t{8}}}, {h})[0];
  EXPECT_EQ(s.data<std::string>()[1], "-2.5");
  EXPECT_EQ(s.data<std::string>()[5], "NaN");
}

// The per-ISA float Add/Sub/Mul/Div/Min/Max of each level this CPU runs give
// the bits of the plain scalar ops, for every stride pattern, lengths around
// the vector widths, and NaN, infinities, signed zeros and denormals (Min /
// Max return the first operand when it is NaN, the second when the two
// compare equal, as the generic ops do).
TEST(BinaryIsa, EveryLevelGivesTheScalarBits) {
  using kernels::math::FloatBinOp;
  using Fn = void (*)(FloatBinOp, unsigned, float*, const float*, const float*, int64_t);
  std::vector<std::pair<const char*, Fn>> levels{{"baseline", &kernels::baseline::binary_float_chunk}};
  if (detected_isa_level() >= IsaLevel::kAvx2) levels.push_back({"avx2", &kernels::avx2::binary_float_chunk});
  if (detected_isa_level() >= IsaLevel::kAvx512) levels.push_back({"avx512", &kernels::avx512::binary_float_chunk});
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 1e-40f, -3.5f, 2.0f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  auto values = [&](size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = (rng() % 4 == 0) ? specials[rng() % 8] : dist(rng);
    return v;
  };
  auto scalar = [](FloatBinOp op, float x, float y) {
    switch (op) {
      case FloatBinOp::kAdd: return x + y;
      case FloatBinOp::kSub: return x - y;
      case FloatBinOp::kMul: return x * y;
      case FloatBinOp::kDiv: return x / y;
      case FloatBinOp::kMin: return (x < y || x != x) ? x : y;
      case FloatBinOp::kMax: return (x > y || x != x) ? x : y;
    }
    return 0.0f;
  };
  auto same = [](float x, float y) { return (x != x && y != y) || std::memcmp(&x, &y, sizeof x) == 0; };
  const FloatBinOp ops[] = {FloatBinOp::kAdd, FloatBinOp::kSub, FloatBinOp::kMul,
                            FloatBinOp::kDiv, FloatBinOp::kMin, FloatBinOp::kMax};
  for (const auto& [name, fn] : levels)
    for (FloatBinOp op : ops)
      for (unsigned mask = 0; mask < 4; ++mask)
        for (int64_t n : {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
          const auto a = values(static_cast<size_t>(std::max<int64_t>(n, 1)));
          const auto b = values(static_cast<size_t>(std::max<int64_t>(n, 1)));
          std::vector<float> out(static_cast<size_t>(n) + 1, 123.0f);
          fn(op, mask, out.data(), a.data(), b.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const float x = (mask & 1u) ? a[0] : a[static_cast<size_t>(i)];
            const float y = (mask & 2u) ? b[0] : b[static_cast<size_t>(i)];
            const float want = scalar(op, x, y);
            ASSERT_TRUE(same(out[static_cast<size_t>(i)], want))
                << name << " op " << static_cast<int>(op) << " mask " << mask << " n " << n << " at " << i << ": "
                << out[static_cast<size_t>(i)] << " vs " << want << " (" << x << ", " << y << ")";
          }
          EXPECT_EQ(out[static_cast<size_t>(n)], 123.0f) << name << ": wrote past n";
        }
}

// Through the kernel: Max / Min of a broadcast row keep NaN from either side
// and the first operand's signed zero on ties, like the generic path.
TEST(BinaryIsa, BroadcastMaxMinKeepNaNAndTies) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = Tensor::from_vector<float>({2, 3}, {nan, 1.0f, -0.0f, 2.0f, 5.0f, 0.0f});
  const Tensor b = Tensor::from_vector<float>({3}, {0.0f, nan, 0.0f});
  const auto mx = run_kernel_once("Max", 13, {}, {a, b})[0].to_vector<float>();
  const auto mn = run_kernel_once("Min", 13, {}, {a, b})[0].to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mx[4]));
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]) && std::isnan(mn[4]));
  EXPECT_EQ(mx[3], 2.0f);
  EXPECT_EQ(mn[3], 0.0f);
  EXPECT_TRUE(std::signbit(mx[2]) == false && std::signbit(mn[2]) == false) << "a tie gives the second operand (+0)";
}

}  // namespace
// A row's moments at each level this CPU runs are the plain loop's bits:
// 8 partial double sums (element i into sum i % 8), the fixed tree, then
// the squared deviations the same way; and the normalized row is
// ((x - mean) * inv) * scale (+ bias), each step rounded. Lengths around
// the vector widths (tails of 1 to 7), RMS (no centering), no bias.
TEST(MomentsIsa, EveryLevelGivesThePlainLoopsBits) {
  using Moments = void (*)(const float*, int64_t, bool, double*, double*);
  using Normalize = void (*)(const float*, float*, int64_t, float, float, const float*, const float*);
  std::vector<std::tuple<const char*, Moments, Normalize>> levels{
      {"baseline", &kernels::baseline::row_moments, &kernels::baseline::normalize_row}};
  if (detected_isa_level() >= IsaLevel::kAvx2)
    levels.push_back({"avx2", &kernels::avx2::row_moments, &kernels::avx2::normalize_row});
  if (detected_isa_level() >= IsaLevel::kAvx512)
    levels.push_back({"avx512", &kernels::avx512::row_moments, &kernels::avx512::normalize_row});
  auto chained = [](const std::vector<float>& x, double m, bool squares) {
    double s[8] = {};
    for (size_t i = 0; i < x.size(); ++i) {
      const double d = static_cast<double>(x[i]) - m;
      volatile double sq = d * d;  // rounded before the add
      s[i % 8] += squares ? sq : static_cast<double>(x[i]);
    }
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  };
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> dist(-3.0f, 5.0f);
  for (int64_t n : {1, 5, 7, 8, 9, 15, 16, 23, 64, 383, 384, 1000}) {
    std::vector<float> x(static_cast<size_t>(n)), scale(x.size()), bias(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng), scale[i] = dist(rng), bias[i] = dist(rng);
    for (bool centered : {true, false}) {
      const double want_mean = centered ? chained(x, 0.0, false) / static_cast<double>(n) : 0.0;
      const double want_var = chained(x, want_mean, true) / static_cast<double>(n);
      const float m = static_cast<float>(want_mean), inv = static_cast<float>(1.0 / std::sqrt(want_var + 1e-5));
      for (const auto& [name, moments, normalize] : levels) {
        double mean = -1.0, var = -1.0;
        moments(x.data(), n, centered, &mean, &var);
        EXPECT_EQ(mean, want_mean) << name << " n=" << n << " centered=" << centered;
        EXPECT_EQ(var, want_var) << name << " n=" << n << " centered=" << centered;
        for (bool with_bias : {true, false}) {
          std::vector<float> y(x.size() + 1, 77.0f);
          normalize(x.data(), y.data(), n, m, inv, scale.data(), with_bias ? bias.data() : nullptr);
          for (size_t i = 0; i < x.size(); ++i) {
            volatile float t = (x[i] - m) * inv;
            volatile float u = t * scale[i];
            const float want = with_bias ? u + bias[i] : u;
            ASSERT_EQ(y[i], want) << name << " n=" << n << " i=" << i << " bias=" << with_bias;
          }
          EXPECT_EQ(y[x.size()], 77.0f) << name << ": wrote past the row";
        }
      }
    }
  }
}

}  // namespace spindle
