// optimizer_test.cpp — every rewrite keeps the outputs of the unoptimized graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../kernels/onnx_node_runner.h"
#include "../session/model_builder.h"
#include "graph/graph.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// x -> Conv -> BatchNormalization -> Clip(0, 6) -> Identity -> Add(const folded) -> y
std::vector<uint8_t> conv_bn_clip_model() {
  ModelBuilder b(11);
  b.input("x", {1, 3, 9, 9}).output("y", {1, 4, 9, 9});
  b.initializer("W", {4, 3, 3, 3}, random_values(108, 1));
  b.initializer("B", {4}, random_values(4, 2));
  b.initializer("scale", {4}, random_values(4, 3, 0.5f, 2.0f));
  b.initializer("shift", {4}, random_values(4, 4));
  b.initializer("mean", {4}, random_values(4, 5));
  b.initializer("var", {4}, random_values(4, 6, 0.1f, 1.0f));
  b.initializer("lo", {}, {0.0f});
  b.initializer("hi", {}, {6.0f});
  b.initializer("k1", {4, 1, 1}, {1, 2, 3, 4});
  b.initializer("k2", {4, 1, 1}, {0.5f, 0.5f, 0.5f, 0.5f});
  auto& conv = b.node("Conv", {"x", "W", "B"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"bn"});
  b.node("Clip", {"bn", "lo", "hi"}, {"clipped"});
  b.node("Identity", {"clipped"}, {"id"});
  b.node("Mul", {"k1", "k2"}, {"k"});  // constant: folded at load
  b.node("Add", {"id", "k"}, {"y"});
  return b.bytes();
}

TEST(Optimizer, ConvBatchNormClipFoldingKeepsOutputs) {
  const auto bytes = conv_bn_clip_model();
  Tensor x = Tensor::from_vector<float>({1, 3, 9, 9}, random_values(243, 7, -3, 3));
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto plain = InferenceSession::create_from_bytes(bytes, none);
  EXPECT_EQ(plain->num_nodes(), 6);
  auto optimized = InferenceSession::create_from_bytes(bytes, {});
  EXPECT_EQ(optimized->num_nodes(), 2) << optimized->optimization_summary();  // Conv(+BN+Clip), Add
  EXPECT_THAT(optimized->optimization_summary(), ::testing::HasSubstr("ConvBNFusion 1"));
  EXPECT_THAT(optimized->optimization_summary(), ::testing::HasSubstr("ActivationFusion 1"));
  EXPECT_THAT(optimized->optimization_summary(), ::testing::HasSubstr("ConstantFolding 1"));
  auto want = plain->run({{"x", x}});
  auto got = optimized->run({{"x", x}});
  EXPECT_TRUE(testing::tensors_close(got[0], want[0], 1e-5, 1e-5));
  // The clip really applies: outputs lie in [0, 6] + k.
  float lo = 1e9f, hi = -1e9f;
  for (float v : got[0].to_vector<float>()) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, 0.5f);
  EXPECT_LE(hi, 8.0f);
}

// Every pass but common subexpression elimination: the tests below count
// the nodes a fusion leaves, and their look-alikes of a pattern, reading the
// same input, share first steps that it would merge (cse_test.cpp).
SessionOptions fusions_only() {
  SessionOptions o;
  o.add_config_entry("optimization.disable_specified_optimizers", "CommonSubexpressionElimination");
  return o;
}

// Runs `bytes` unoptimized and fully optimized on the same random input and
// returns the optimized session's summary; the outputs must agree.
std::string optimized_matches_plain(const std::vector<uint8_t>& bytes, const Shape& x_shape, int expect_nodes) {
  Tensor x = Tensor::from_vector<float>(x_shape, random_values(static_cast<size_t>(shape_numel(x_shape)), 11, -6, 6));
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto plain = InferenceSession::create_from_bytes(bytes, none);
  auto optimized = InferenceSession::create_from_bytes(bytes, fusions_only());
  EXPECT_EQ(optimized->num_nodes(), expect_nodes) << optimized->optimization_summary();
  auto want = plain->run({{"x", x}});
  auto got = optimized->run({{"x", x}});
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(testing::tensors_close(got[i], want[i], 1e-5, 1e-5)) << i;
  return optimized->optimization_summary();
}

// Runs the model (input "x") unoptimized, then optimized at 1, 2 and 3
// intra-op threads, expecting the same bits; `check` sees each optimized
// session first.
template <class Check>
void expect_same_bits_as_unoptimized(const std::vector<uint8_t>& bytes, const Tensor& x, Check check) {
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  const auto want = InferenceSession::create_from_bytes(bytes, none)->run({{"x", x}});
  for (int threads : {1, 2, 3}) {
    SessionOptions o;
    o.intra_op_num_threads = threads;
    auto session = InferenceSession::create_from_bytes(bytes, o);
    check(*session);
    const auto got = session->run({{"x", x}});
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
  }
}

// x -> Conv -> Mul(scalar) -> Add(per channel) -> x * Clip(x + 3, 0, 6) / 6
//   -> Mul(scalar) -> Add(scalar) -> y, as exporters write a Conv with a
// learnable affine and HardSwish: all of it becomes one Conv.
TEST(Optimizer, ConvAffineHardSwishPatternAndAffineAfterItBecomeOneConv) {
  ModelBuilder b(11);
  b.input("x", {1, 3, 5, 5}).output("y", {1, 4, 5, 5});
  b.initializer("W", {4, 3, 3, 3}, random_values(108, 1));
  b.initializer("B", {4}, random_values(4, 2));
  b.initializer("s", {1}, {1.7f});
  b.initializer("t", {1, 4, 1, 1}, {0.5f, -0.5f, 1.0f, 2.0f});
  b.initializer("three", {}, {3.0f});
  b.initializer("zero", {}, {0.0f});
  b.initializer("six", {}, {6.0f});
  b.initializer("s2", {1}, {0.8f});
  b.initializer("t2", {}, {-0.25f});
  auto& conv = b.node("Conv", {"x", "W", "B"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Mul", {"s", "c"}, {"cs"});
  b.node("Add", {"cs", "t"}, {"a"});
  b.node("Add", {"a", "three"}, {"a3"});
  b.node("Clip", {"a3", "zero", "six"}, {"r6"});
  b.node("Mul", {"a", "r6"}, {"m"});
  b.node("Div", {"m", "six"}, {"h"});
  b.node("Mul", {"h", "s2"}, {"hs"});
  b.node("Add", {"t2", "hs"}, {"y"});
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 3, 5, 5}, 1);
  EXPECT_THAT(summary, ::testing::HasSubstr("ConvAffineFusion 2"));
  EXPECT_THAT(summary, ::testing::HasSubstr("HardSwishFusion 1"));
  EXPECT_THAT(summary, ::testing::HasSubstr("ActivationFusion 1 (2 scalar Mul / Add folded after)"));
}

// Look-alikes that must stay as they are: a [4] constant broadcasts along
// the last axis (not per channel), a Clip to [0, 5] is not HardSwish, and a
// Conv output that is also a graph output keeps its value.
TEST(Optimizer, AffineAndHardSwishLookAlikesAreLeftAlone) {
  ModelBuilder b(11);
  b.input("x", {1, 3, 4, 4}).output("y", {1, 4, 4, 4}).output("c2", {1, 4, 4, 4}).output("z", {1, 4, 4, 4});
  b.initializer("W", {4, 3, 3, 3}, random_values(108, 3));
  b.initializer("k", {4}, {1.0f, 2.0f, 3.0f, 4.0f});
  b.initializer("half", {}, {0.5f});
  b.initializer("three", {}, {3.0f});
  b.initializer("zero", {}, {0.0f});
  b.initializer("five", {}, {5.0f});
  b.initializer("six", {}, {6.0f});
  auto& conv = b.node("Conv", {"x", "W"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Mul", {"c", "k"}, {"ck"});  // along W, not per channel
  b.node("Add", {"ck", "three"}, {"a3"});
  b.node("Clip", {"a3", "zero", "five"}, {"r5"});  // not Clip(0, 6)
  b.node("Mul", {"ck", "r5"}, {"m"});
  b.node("Div", {"m", "six"}, {"y"});
  auto& conv2 = b.node("Conv", {"x", "W"}, {"c2"});  // a graph output itself
  ModelBuilder::attr_ints(conv2, "pads", {1, 1, 1, 1});
  b.node("Mul", {"c2", "half"}, {"z"});
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 3, 4, 4}, 8);
  EXPECT_THAT(summary, ::testing::HasSubstr("ConvAffineFusion 0"));
  EXPECT_THAT(summary, ::testing::HasSubstr("HardSwishFusion 0"));
}

// Two encoder blocks' worth of exported patterns: layer normalization over
// the last axis (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)
// and Erf-form GELU (Div sqrt 2, Erf, Add 1, Mul x, Mul 0.5) become one
// LayerNormalization and one Gelu; a LayerNorm over another axis and a GELU
// whose Erf output is read twice stay as they are.
TEST(Optimizer, ExportedLayerNormAndGeluBecomeOneNodeEach) {
  ModelBuilder b(13);
  b.input("x", {2, 3, 8}).output("y", {2, 3, 8}).output("w", {2, 3, 8}).output("e2", {2, 3, 8});
  b.initializer("two", {}, {2.0f});
  b.initializer("eps", {}, {1e-5f});
  b.initializer("gamma", {8}, random_values(8, 21, 0.5f, 1.5f));
  b.initializer("beta", {8}, random_values(8, 22));
  b.initializer("sqrt2", {}, {1.4142135f});
  b.initializer("one", {}, {1.0f});
  b.initializer("half", {}, {0.5f});
  auto mean = [&](const std::string& in, const std::string& out, std::vector<int64_t> axes) -> auto& {
    auto& n = b.node("ReduceMean", {in}, {out});
    ModelBuilder::attr_ints(n, "axes", axes);
    return n;
  };
  mean("x", "m", {-1});
  b.node("Sub", {"x", "m"}, {"d"});
  b.node("Pow", {"d", "two"}, {"d2"});
  mean("d2", "v", {-1});
  b.node("Add", {"v", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Mul", {"n", "gamma"}, {"ng"});
  b.node("Add", {"ng", "beta"}, {"ln"});
  b.node("Div", {"ln", "sqrt2"}, {"s"});
  b.node("Erf", {"s"}, {"e"});
  b.node("Add", {"e", "one"}, {"e1"});
  b.node("Mul", {"ln", "e1"}, {"g"});
  b.node("Mul", {"g", "half"}, {"y"});
  // Normalization over axis 1: not LayerNormalization(axis -1).
  mean("x", "m1", {1});
  b.node("Sub", {"x", "m1"}, {"d1"});
  b.node("Pow", {"d1", "two"}, {"d12"});
  mean("d12", "v1", {1});
  b.node("Add", {"v1", "eps"}, {"ve1"});
  b.node("Sqrt", {"ve1"}, {"sd1"});
  b.node("Div", {"d1", "sd1"}, {"w"});
  // GELU whose Erf is also a graph output: the Erf must stay.
  b.node("Div", {"x", "sqrt2"}, {"s2"});
  b.node("Erf", {"s2"}, {"e2"});
  b.node("Add", {"e2", "one"}, {"e21"});
  b.node("Mul", {"x", "e21"}, {"g2"});
  b.node("Mul", {"g2", "half"}, {"y2"});
  b.output("y2", {2, 3, 8});
  const std::string summary = optimized_matches_plain(b.bytes(), {2, 3, 8}, 2 + 7 + 5);
  EXPECT_THAT(summary, ::testing::HasSubstr("GeluFusion 1"));
  EXPECT_THAT(summary, ::testing::HasSubstr("LayerNormFusion 1"));
}

// RMS normalization as LLaMA-style exports write it (Pow 2, ReduceMean over
// the last axis, Add eps, Sqrt, Div(1, s), Mul x, Mul gamma), with a
// Reciprocal and operands swapped, and as Div(x, s): each becomes one
// RMSNormalization. Look-alikes stay: a ReduceMean over axis 1, a Sqrt
// that is also a graph output, a fourth power instead of a square.
TEST(Optimizer, ExportedRmsNormBecomesOneRmsNormalization) {
  ModelBuilder b(14);
  b.input("x", {2, 3, 8});
  for (const char* y : {"ya", "yb", "yc", "yd", "ye", "e_s", "yf"}) b.output(y, {2, 3, 8});
  b.initializer("two", {}, {2.0f});
  b.initializer("four", {}, {4.0f});
  b.initializer("eps", {}, {1e-6f});
  b.initializer("one", {}, {1.0f});
  b.initializer("gamma", {8}, random_values(8, 23, 0.5f, 1.5f));
  auto mean = [&](const std::string& in, const std::string& out, std::vector<int64_t> axes) -> auto& {
    auto& n = b.node("ReduceMean", {in}, {out});
    ModelBuilder::attr_ints(n, "axes", axes);
    return n;
  };
  // As exported: Div(1, s), Mul(x, r), Mul(n, gamma).
  b.node("Pow", {"x", "two"}, {"a_p"});
  mean("a_p", "a_m", {-1});
  b.node("Add", {"a_m", "eps"}, {"a_e"});
  b.node("Sqrt", {"a_e"}, {"a_s"});
  b.node("Div", {"one", "a_s"}, {"a_r"});
  b.node("Mul", {"x", "a_r"}, {"a_n"});
  b.node("Mul", {"a_n", "gamma"}, {"ya"});
  // Reciprocal, operands swapped.
  b.node("Pow", {"x", "two"}, {"b_p"});
  mean("b_p", "b_m", {-1});
  b.node("Add", {"eps", "b_m"}, {"b_e"});
  b.node("Sqrt", {"b_e"}, {"b_s"});
  b.node("Reciprocal", {"b_s"}, {"b_r"});
  b.node("Mul", {"b_r", "x"}, {"b_n"});
  b.node("Mul", {"gamma", "b_n"}, {"yb"});
  // Div(x, s).
  b.node("Pow", {"x", "two"}, {"c_p"});
  mean("c_p", "c_m", {-1});
  b.node("Add", {"c_m", "eps"}, {"c_e"});
  b.node("Sqrt", {"c_e"}, {"c_s"});
  b.node("Div", {"x", "c_s"}, {"c_n"});
  b.node("Mul", {"c_n", "gamma"}, {"yc"});
  // Over axis 1: not RMSNormalization(axis -1).
  b.node("Pow", {"x", "two"}, {"d_p"});
  mean("d_p", "d_m", {1});
  b.node("Add", {"d_m", "eps"}, {"d_e"});
  b.node("Sqrt", {"d_e"}, {"d_s"});
  b.node("Div", {"x", "d_s"}, {"d_n"});
  b.node("Mul", {"d_n", "gamma"}, {"yd"});
  // The Sqrt also a graph output: it must stay.
  b.node("Pow", {"x", "two"}, {"e_p"});
  mean("e_p", "e_m", {-1});
  b.node("Add", {"e_m", "eps"}, {"e_e"});
  b.node("Sqrt", {"e_e"}, {"e_s"});
  b.node("Div", {"x", "e_s"}, {"e_n"});
  b.node("Mul", {"e_n", "gamma"}, {"ye"});
  // A fourth power.
  b.node("Pow", {"x", "four"}, {"f_p"});
  mean("f_p", "f_m", {-1});
  b.node("Add", {"f_m", "eps"}, {"f_e"});
  b.node("Sqrt", {"f_e"}, {"f_s"});
  b.node("Div", {"x", "f_s"}, {"f_n"});
  b.node("Mul", {"f_n", "gamma"}, {"yf"});
  const std::string summary = optimized_matches_plain(b.bytes(), {2, 3, 8}, 3 + 3 * 6);
  EXPECT_THAT(summary, ::testing::HasSubstr("RMSNormFusion 3"));
}

// GELU's tanh approximation as PyTorch writes it at opsets before 20
// (x * x * x, the constants first), as GPT-2-style code writes it
// (Pow(x, 3), 0.5 * x computed apart) and factored
// (x * 0.5 * (1 + Tanh(0.79788456 x * (1 + 0.044715 x x)))): each becomes
// one Gelu(approximate = "tanh"). Look-alikes stay: a coefficient off
// (0.04 instead of 0.044715), a Tanh output or a cube that is also a graph
// output, a product without the 0.5, and a second input instead of x.
TEST(Optimizer, TanhGeluPatternsBecomeOneGeluEach) {
  ModelBuilder b(14);
  b.input("x", {2, 3, 8}).input("z", {2, 3, 8});
  for (const char* y : {"ya", "yb", "yc", "yd", "ye", "yf", "yg", "yh"}) b.output(y, {2, 3, 8});
  b.output("te", {2, 3, 8}).output("x3", {2, 3, 8});
  b.initializer("beta", {}, {0.7978845608f});
  b.initializer("kappa", {}, {0.044715f});
  b.initializer("kappa_off", {}, {0.04f});
  b.initializer("one", {}, {1.0f});
  b.initializer("half", {}, {0.5f});
  b.initializer("three", {}, {3.0f});
  // PyTorch's decomposition: x * (x * x), constants first.
  b.node("Mul", {"x", "x"}, {"a_xx"});
  b.node("Mul", {"x", "a_xx"}, {"a_x3"});
  b.node("Mul", {"kappa", "a_x3"}, {"a_k"});
  b.node("Add", {"x", "a_k"}, {"a_s"});
  b.node("Mul", {"beta", "a_s"}, {"a_u"});
  b.node("Tanh", {"a_u"}, {"a_t"});
  b.node("Add", {"one", "a_t"}, {"a_1t"});
  b.node("Mul", {"x", "a_1t"}, {"a_p"});
  b.node("Mul", {"half", "a_p"}, {"ya"});
  // GPT-2's: Pow(x, 3), 0.5 * x apart, constants second.
  b.node("Mul", {"x", "half"}, {"b_h"});
  b.node("Pow", {"x", "three"}, {"b_x3"});
  b.node("Mul", {"b_x3", "kappa"}, {"b_k"});
  b.node("Add", {"x", "b_k"}, {"b_s"});
  b.node("Mul", {"b_s", "beta"}, {"b_u"});
  b.node("Tanh", {"b_u"}, {"b_t"});
  b.node("Add", {"b_t", "one"}, {"b_1t"});
  b.node("Mul", {"b_h", "b_1t"}, {"yb"});
  // Factored: x * beta * (1 + kappa * x * x).
  b.node("Mul", {"x", "half"}, {"c_h"});
  b.node("Mul", {"x", "beta"}, {"c_bx"});
  b.node("Mul", {"x", "kappa"}, {"c_kx"});
  b.node("Mul", {"c_kx", "x"}, {"c_kxx"});
  b.node("Add", {"c_kxx", "one"}, {"c_f"});
  b.node("Mul", {"c_bx", "c_f"}, {"c_u"});
  b.node("Tanh", {"c_u"}, {"c_t"});
  b.node("Add", {"c_t", "one"}, {"c_1t"});
  b.node("Mul", {"c_h", "c_1t"}, {"yc"});
  // GPT-2's form again, named after p: Pow(x, 3) * kappa, + x, * beta, Tanh,
  // + 1, * outer, then * 0.5 when `half`; cube and t name the cube and the
  // Tanh output when given.
  auto pow_form = [&](const std::string& p, const std::string& kappa, const std::string& outer, bool half,
                      std::string cube = "", std::string t = "") {
    if (cube.empty()) cube = p + "_x3";
    if (t.empty()) t = p + "_t";
    b.node("Pow", {"x", "three"}, {cube});
    b.node("Mul", {cube, kappa}, {p + "_k"});
    b.node("Add", {"x", p + "_k"}, {p + "_s"});
    b.node("Mul", {p + "_s", "beta"}, {p + "_u"});
    b.node("Tanh", {p + "_u"}, {t});
    b.node("Add", {t, "one"}, {p + "_1t"});
    b.node("Mul", {outer, p + "_1t"}, {half ? p + "_p" : "y" + p});
    if (half) b.node("Mul", {p + "_p", "half"}, {"y" + p});
  };
  pow_form("d", "kappa_off", "x", true);        // the cube's coefficient off: stays (8 nodes)
  pow_form("e", "kappa", "x", true, "", "te");  // the Tanh output is a graph output: stays (8)
  pow_form("f", "kappa", "x", false);           // no 0.5: x * (1 + tanh(u)) stays (7)
  pow_form("g", "kappa", "z", true);            // the product takes z, not x: stays (8)
  pow_form("h", "kappa", "x", true, "x3");      // the cube is a graph output: stays (8)
  const Tensor x = Tensor::from_vector<float>({2, 3, 8}, random_values(48, 11, -6, 6));
  const Tensor z = Tensor::from_vector<float>({2, 3, 8}, random_values(48, 12, -6, 6));
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto plain = InferenceSession::create_from_bytes(b.bytes(), none);
  auto optimized = InferenceSession::create_from_bytes(b.bytes(), fusions_only());
  EXPECT_EQ(optimized->num_nodes(), 3 + 8 + 8 + 7 + 8 + 8) << optimized->optimization_summary();
  EXPECT_THAT(optimized->optimization_summary(), ::testing::HasSubstr("FastGeluFusion 3"));
  const auto want = plain->run({{"x", x}, {"z", z}});
  const auto got = optimized->run({{"x", x}, {"z", z}});
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(testing::tensors_close(got[i], want[i], 1e-5, 1e-5)) << i;
}

// A Conv with padding 1 on every side (a 3x3 kernel keeps the spatial size).
void padded_conv(ModelBuilder& b, const std::vector<std::string>& inputs, const std::string& out) {
  ModelBuilder::attr_ints(b.node("Conv", inputs, {out}), "pads", {1, 1, 1, 1});
}

// Exported SiLU after a Conv (x * Sigmoid(x), either operand order) becomes
// the Conv's fused "Silu"; one whose Conv output is also a graph output, or
// whose Sigmoid output is read twice, stays as written.
TEST(Optimizer, SiluAfterConvIsFusedUnlessAValueHasAnotherReader) {
  ModelBuilder b(14);
  b.input("x", {1, 3, 6, 6}).output("y", {1, 4, 6, 6}).output("c2", {1, 4, 6, 6}).output("z", {1, 4, 6, 6});
  b.output("u", {1, 4, 6, 6});
  b.initializer("W", {4, 3, 3, 3}, random_values(108, 31));
  b.initializer("B", {4}, random_values(4, 32));
  auto conv = [&](const std::string& out) { padded_conv(b, {"x", "W", "B"}, out); };
  conv("c");
  b.node("Sigmoid", {"c"}, {"s"});
  b.node("Mul", {"s", "c"}, {"y"});
  conv("c2");  // a graph output itself
  b.node("Sigmoid", {"c2"}, {"s2"});
  b.node("Mul", {"c2", "s2"}, {"z"});
  conv("c3");
  b.node("Sigmoid", {"c3"}, {"s3"});
  b.node("Mul", {"c3", "s3"}, {"m3"});
  b.node("Add", {"m3", "s3"}, {"u"});  // the Sigmoid's output read twice
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 3, 6, 6}, 1 + 3 + 4);
  EXPECT_THAT(summary, ::testing::HasSubstr("ActivationFusion 1,"));
}

// Residual Adds into the Conv producing one operand, on each Conv path
// (im2col 3x3, pointwise 1x1, depthwise, 1x1 input as a matrix-vector
// product), with a Relu after them fused too; an Add whose other operand
// broadcasts ([1, C, 1, 1]) is fused and takes the kernel's unfused route;
// a Conv output read by another node keeps its Add.
TEST(Optimizer, ResidualAddIsFusedIntoTheConvOnEveryPath) {
  ModelBuilder b(14);
  b.input("x", {1, 4, 7, 7}).output("y", {1, 4, 7, 7}).output("g", {1, 4, 1, 1}).output("k", {1, 4, 7, 7});
  b.output("k2", {1, 4, 7, 7});
  b.initializer("W3", {4, 4, 3, 3}, random_values(144, 41));
  b.initializer("W1", {4, 4, 1, 1}, random_values(16, 42));
  b.initializer("Wd", {4, 1, 3, 3}, random_values(36, 43));
  b.initializer("B", {4}, random_values(4, 44));
  padded_conv(b, {"x", "W3", "B"}, "a");
  b.node("Add", {"a", "x"}, {"a_sum"});
  b.node("Relu", {"a_sum"}, {"a_out"});
  b.node("Conv", {"a_out", "W1", "B"}, {"p"});
  b.node("Add", {"a_out", "p"}, {"p_out"});  // the Conv output is the second operand
  auto& dw = b.node("Conv", {"p_out", "Wd", "B"}, {"d"});
  ModelBuilder::attr_ints(dw, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_int(dw, "group", 4);
  b.node("Add", {"d", "p_out"}, {"y"});
  auto& pool = b.node("ReduceMean", {"x"}, {"gx"});
  ModelBuilder::attr_ints(pool, "axes", {2, 3});
  b.node("Conv", {"gx", "W1"}, {"gc"});
  b.node("Add", {"gc", "gx"}, {"g"});  // 1x1 input: the matrix-vector path
  // The residual broadcasts: fused, then added by the kernel's unfused route.
  padded_conv(b, {"x", "W3"}, "kb");
  b.node("Add", {"gx", "kb"}, {"kb_sum"});
  b.node("Relu", {"kb_sum"}, {"k"});
  // A Conv output read twice keeps its Add.
  padded_conv(b, {"x", "W3"}, "t");
  b.node("Add", {"t", "x"}, {"t_sum"});
  b.node("Mul", {"t", "t_sum"}, {"k2"});
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 4, 7, 7}, 3 + 1 + 1 + 1 + 3);
  EXPECT_THAT(summary, ::testing::HasSubstr("ConvResidualAddFusion 5"));
  EXPECT_THAT(summary, ::testing::HasSubstr("ActivationFusion 2,"));
}

// A residual that cannot broadcast against the Conv output fails with the
// shapes named, as the Add would, and the session stays usable.
TEST(Optimizer, FusedResidualOfAnIncompatibleShapeFailsNamingTheShapes) {
  ModelBuilder b(14);
  b.input("x", {1, 2, 4, 4}).input("r", {1, 2, -1, -1}).output("y", {1, 2, 4, 4});
  b.initializer("W", {2, 2, 1, 1}, random_values(4, 51));
  b.node("Conv", {"x", "W"}, {"c"});
  b.node("Add", {"c", "r"}, {"y"});
  auto s = InferenceSession::create_from_bytes(b.bytes(), {});
  EXPECT_EQ(s->num_nodes(), 1) << s->optimization_summary();
  Tensor x = Tensor::from_vector<float>({1, 2, 4, 4}, random_values(32, 52));
  try {
    s->run({{"x", x}, {"r", Tensor::from_vector<float>({1, 2, 3, 3}, random_values(18, 53))}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.status().message(), ::testing::HasSubstr("shapes 1x2x4x4, 1x2x3x3 cannot be broadcast"));
  }
  Tensor r = Tensor::from_vector<float>({1, 2, 4, 4}, random_values(32, 54));
  auto out = s->run({{"x", x}, {"r", r}});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 4, 4}));
}

// The fused form (Conv with a fourth input) is the optimizer's own: a model
// that writes it is refused by the loader.
TEST(Optimizer, AModelCannotWriteTheFusedResidualConv) {
  ModelBuilder b(14);
  b.input("x", {1, 2, 4, 4}).output("y", {1, 2, 4, 4});
  b.initializer("W", {2, 2, 1, 1}, random_values(4, 55));
  b.initializer("B", {2}, random_values(2, 56));
  b.node("Conv", {"x", "W", "B", "x"}, {"y"});
  try {
    InferenceSession::create_from_bytes(b.bytes(), {});
    ADD_FAILURE() << "expected the loader to refuse a 4-input Conv";
  } catch (const Error& e) {
    EXPECT_THAT(e.status().message(), ::testing::HasSubstr("has 4 input(s), expected 2 to 3"));
  }
}

// Inference BatchNormalization -> Relu (DenseNet's pre-activation, where no
// Conv precedes the BN) becomes one node; a BN output that is also a graph
// output keeps its Relu.
TEST(Optimizer, BatchNormThenReluIsOnePass) {
  ModelBuilder b(14);
  b.input("x", {2, 3, 5, 5}).output("y", {2, 3, 5, 5}).output("n2", {2, 3, 5, 5}).output("z", {2, 3, 5, 5});
  b.initializer("scale", {3}, random_values(3, 61, 0.5f, 2.0f));
  b.initializer("shift", {3}, random_values(3, 62));
  b.initializer("mean", {3}, random_values(3, 63));
  b.initializer("var", {3}, random_values(3, 64, 0.1f, 1.0f));
  b.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"n"});
  b.node("Relu", {"n"}, {"y"});
  b.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"n2"});
  b.node("Relu", {"n2"}, {"z"});
  const std::string summary = optimized_matches_plain(b.bytes(), {2, 3, 5, 5}, 3);
  EXPECT_THAT(summary, ::testing::HasSubstr("ActivationFusion 1,"));
}

// A transformer's linear layers as exported: MatMul by constant weights then
// Add of a constant bias vector (bias first or second), followed by Relu:
// one MatMul with the bias as a third input and the Relu fused. Look-alikes
// stay: a [1, N] bias, a MatMul output also read by another node, and a
// MatMul whose B is not constant.
TEST(Optimizer, MatMulAndConstantBiasAddBecomeOneMatMul) {
  ModelBuilder b(13);
  b.input("x", {64, 5, 300}).output("y", {64, 5, 40}).output("z", {64, 5, 40}).output("u", {64, 5, 40});
  b.initializer("W", {300, 40}, random_values(300 * 40, 31));
  b.initializer("W2", {40, 40}, random_values(40 * 40, 32));
  b.initializer("bias", {40}, random_values(40, 33));
  b.initializer("bias_row", {1, 40}, random_values(40, 34));
  b.node("MatMul", {"x", "W"}, {"h"});
  b.node("Add", {"bias", "h"}, {"hb"});
  b.node("Relu", {"hb"}, {"r"});
  b.node("MatMul", {"r", "W2"}, {"h2"});
  b.node("Add", {"h2", "bias"}, {"y"});  // fused (bias second)
  b.node("MatMul", {"r", "W2"}, {"h3"});
  b.node("Add", {"h3", "bias_row"}, {"z"});  // [1, N] bias: kept
  b.node("MatMul", {"r", "W2"}, {"h4"});
  b.node("Add", {"h4", "bias"}, {"u4"});  // h4 read twice: kept
  b.node("Mul", {"h4", "u4"}, {"u"});
  // The three MatMuls of r by W2 then run as one spindle.MatMulGroup.
  const std::string summary = optimized_matches_plain(b.bytes(), {64, 5, 300}, 1 + 1 + 3);
  EXPECT_THAT(summary, ::testing::HasSubstr("MatMulAddFusion 2"));
  EXPECT_THAT(summary, ::testing::HasSubstr("ActivationFusion 1"));
  EXPECT_THAT(summary, ::testing::HasSubstr("MatMulSiblingFusion 3"));
  // The bias is added after the product as Add would: no bit differs from
  // the unfused graph, at any thread count (several row blocks here).
  Tensor x = Tensor::from_vector<float>({64, 5, 300}, random_values(64 * 5 * 300, 35, -6, 6));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession&) {});
}

// A decoder's residual connection and SwiGLU product: MatMul by constant
// weights whose output only an Add / Mul of a computed tensor reads becomes
// one MatMul applying it per output block (after a fused bias, before a
// fused activation). An operand that broadcasts (here [5, 40] against
// [64, 5, 40]) takes the separate Add's path at run time. No bit differs
// from the unfused graph at 1, 2 and 3 threads.
TEST(Optimizer, MatMulAndAddOrMulOfAComputedTensorBecomeOneMatMulBitwise) {
  ModelBuilder b(13);
  b.input("x", {64, 5, 300});
  for (const char* y : {"y1", "y2", "y3"}) b.output(y, {64, 5, 40});
  for (const char* w : {"W", "W2"}) b.initializer(w, {300, 40}, random_values(300 * 40, w[1] ? 52 : 51));
  b.initializer("bias", {40}, random_values(40, 53));
  b.node("MatMul", {"x", "W2"}, {"res"});  // read twice: computed once, stays
  b.node("MatMul", {"x", "W"}, {"h"});
  b.node("Add", {"h", "bias"}, {"hb"});
  b.node("Add", {"res", "hb"}, {"y1"});  // residual, the MatMul second
  // A gated product as SwiGLU's (a Relu gate here: the fused SiLU is not
  // bitwise the separate Sigmoid and Mul).
  b.node("MatMul", {"x", "W2"}, {"g"});
  b.node("Relu", {"g"}, {"s"});
  b.node("MatMul", {"x", "W"}, {"u"});
  b.node("Mul", {"u", "s"}, {"y2"});
  auto& mean = b.node("ReduceMean", {"res"}, {"t"});
  ModelBuilder::attr_ints(mean, "axes", {0});
  ModelBuilder::attr_int(mean, "keepdims", 0);
  b.node("MatMul", {"x", "W"}, {"h3"});
  b.node("Add", {"h3", "t"}, {"a3"});  // broadcast at run time
  b.node("Relu", {"a3"}, {"y3"});
  Tensor x = Tensor::from_vector<float>({64, 5, 300}, random_values(64 * 5 * 300, 54, -3, 3));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession& session) {
    EXPECT_EQ(session.num_nodes(), 6) << session.optimization_summary();
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("MatMulBinaryFusion 3"));
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("MatMulAddFusion 1"));
  });
}

// A GELU after a linear layer (ONNX's Gelu, exact or with the tanh
// approximation, and the com.microsoft Gelu the Erf-form pattern becomes)
// is fused into the MatMul: it runs on each output block with the Gelu op's
// own loop, so no bit differs from the unfused graph at any thread count
// (several row blocks here).
TEST(Optimizer, GeluAfterAMatMulIsFusedBitwise) {
  ModelBuilder b(20);
  b.input("x", {64, 5, 300}).output("y", {64, 5, 40}).output("t", {64, 5, 40});
  b.initializer("W", {300, 40}, random_values(300 * 40, 41));
  b.initializer("bias", {40}, random_values(40, 42));
  b.node("MatMul", {"x", "W"}, {"h"});
  b.node("Add", {"h", "bias"}, {"hb"});
  b.node("Gelu", {"hb"}, {"y"});
  b.node("MatMul", {"x", "W"}, {"h2"});
  auto& tanh_gelu = b.node("Gelu", {"h2"}, {"t"});
  ModelBuilder::attr_string(tanh_gelu, "approximate", "tanh");
  Tensor x = Tensor::from_vector<float>({64, 5, 300}, random_values(64 * 5 * 300, 43, -3, 3));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession& session) {
    EXPECT_EQ(session.num_nodes(), 2) << session.optimization_summary();
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("ActivationFusion 2"));
  });
}

// Squeeze-excite scaling: Mul(x, s) read only by a Conv is folded into it.
// One-group 1x1 convolutions multiply each channel as the GEMM packs B
// (per-image s [N, C, 1, 1], either operand order, a constant [1, C, 1, 1],
// a 1x1 input on the matrix-vector path, with a fused residual too); a 3x3
// convolution multiplies first. No bit differs from the unfused graph at 1, 2
// and 3 threads. A Mul whose output is also a graph output stays.
TEST(Optimizer, InputScaleMulIsFoldedIntoTheConvBitwise) {
  ModelBuilder b(14);
  b.input("x", {2, 8, 9, 9});
  for (const char* y : {"y1", "y2", "y3", "y5", "y6", "y7"}) b.output(y, {2, 6, 9, 9});
  b.output("y4", {2, 6, 1, 1}).output("m", {2, 8, 9, 9}).output("y8", {2, 8, 9, 9});
  b.initializer("W1", {6, 8, 1, 1}, random_values(48, 71));
  b.initializer("W8", {8, 8, 1, 1}, random_values(64, 72));
  b.initializer("W3", {6, 8, 3, 3}, random_values(432, 73));
  b.initializer("B", {6}, random_values(6, 74));
  b.initializer("c", {1, 8, 1, 1}, random_values(8, 75, 0.5f, 1.5f));
  auto& mean = b.node("ReduceMean", {"x"}, {"gx"});
  ModelBuilder::attr_ints(mean, "axes", {2, 3});
  b.node("Sigmoid", {"gx"}, {"s"});
  b.node("Mul", {"x", "s"}, {"xs1"});
  b.node("Conv", {"xs1", "W1", "B"}, {"y1"});
  b.node("Mul", {"s", "x"}, {"xs2"});  // the scale first
  b.node("Conv", {"xs2", "W1", "B"}, {"y2"});
  b.node("Mul", {"x", "s"}, {"xs3"});
  padded_conv(b, {"xs3", "W3", "B"}, "y3");  // 3x3: multiplied first
  b.node("Mul", {"gx", "s"}, {"gs"});
  b.node("Conv", {"gs", "W1", "B"}, {"y4"});  // 1x1 input: matrix-vector path
  b.node("Mul", {"x", "c"}, {"xc"});
  b.node("Conv", {"xc", "W1"}, {"y5"});  // constant scale, one for every image
  b.node("Mul", {"x", "s"}, {"m"});       // also a graph output: stays
  b.node("Conv", {"m", "W1", "B"}, {"y6"});
  b.node("Mul", {"x", "s"}, {"xs7"});
  b.node("Conv", {"xs7", "W1", "B"}, {"y7"});
  b.node("Mul", {"x", "s"}, {"xs8"});
  b.node("Conv", {"xs8", "W8"}, {"c8"});
  b.node("Add", {"c8", "x"}, {"y8"});  // residual fused first, then the scale
  Tensor x = Tensor::from_vector<float>({2, 8, 9, 9}, random_values(2 * 8 * 81, 76, -3, 3));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession& session) {
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("ConvInputScaleFusion 7"));
    EXPECT_EQ(session.num_nodes(), 2 + 7 + 2);  // ReduceMean, Sigmoid, 7 Convs, the kept Mul and its Conv
  });
}

// A BatchNormalization's scale, B, mean and var ("s", "t", "m", "v") for C
// channels: seeded, scale in [0.5, 1.5), var in [0.25, 2).
void batchnorm_params(ModelBuilder& b, int64_t C, uint32_t seed) {
  const size_t n = static_cast<size_t>(C);
  b.initializer("s", {C}, random_values(n, seed, 0.5f, 1.5f));
  b.initializer("t", {C}, random_values(n, seed + 1));
  b.initializer("m", {C}, random_values(n, seed + 2));
  b.initializer("v", {C}, random_values(n, seed + 3, 0.25f, 2.0f));
}

// Pre-activation (BatchNormalization -> Relu -> Conv, as DenseNet writes
// each layer): the normalization is folded into the Conv that alone reads
// it. A one-group 1x1 convolution normalizes each channel as the GEMM packs
// B (63 columns and 11 channels: partial panels both ways; with and without
// the Relu; with a fused residual); a 3x3 convolution and a 1x1 input (the
// matrix-vector path) run the BatchNormalization kernel first. No bit
// differs from the unfused graph at 1, 2 and 3 threads. A normalization
// whose output is a graph output, or whose activation is not a Relu, stays.
TEST(Optimizer, InputBatchNormIsFoldedIntoTheConvBitwise) {
  ModelBuilder b(14);
  b.input("x", {2, 11, 7, 9});
  for (const char* y : {"y1", "y2", "y3", "y5", "y6", "y7"}) b.output(y, {2, 6, 7, 9});
  b.output("y4", {2, 6, 1, 1}).output("r5", {2, 11, 7, 9});
  b.initializer("W1", {6, 11, 1, 1}, random_values(66, 81));
  b.initializer("W3", {6, 11, 3, 3}, random_values(594, 82));
  b.initializer("W7", {11, 11, 1, 1}, random_values(121, 83));
  b.initializer("B", {6}, random_values(6, 84));
  batchnorm_params(b, 11, 85);
  const std::vector<std::string> prm = {"s", "t", "m", "v"};
  auto bn = [&](const std::string& x, const std::string& out, const char* act) {
    std::vector<std::string> in = {x};
    in.insert(in.end(), prm.begin(), prm.end());
    if (!act) {
      b.node("BatchNormalization", in, {out});
      return;
    }
    b.node("BatchNormalization", in, {out + "_n"});
    b.node(act, {out + "_n"}, {out});
  };
  bn("x", "r1", "Relu");
  b.node("Conv", {"r1", "W1", "B"}, {"y1"});
  bn("x", "r2", nullptr);
  b.node("Conv", {"r2", "W1", "B"}, {"y2"});
  bn("x", "r3", "Relu");
  padded_conv(b, {"r3", "W3", "B"}, "y3");  // 3x3: normalized first
  auto& mean = b.node("ReduceMean", {"x"}, {"gx"});
  ModelBuilder::attr_ints(mean, "axes", {2, 3});
  bn("gx", "r4", "Relu");
  b.node("Conv", {"r4", "W1", "B"}, {"y4"});  // 1x1 input: matrix-vector path
  bn("x", "r5", "Relu");                       // also a graph output: stays
  b.node("Conv", {"r5", "W1", "B"}, {"y5"});
  bn("x", "r6", "Sigmoid");  // not a Relu: stays
  b.node("Conv", {"r6", "W1", "B"}, {"y6"});
  bn("x", "r7", "Relu");
  b.node("Conv", {"r7", "W7"}, {"c7"});
  b.node("Add", {"c7", "x"}, {"a7"});  // residual fused first, then the normalization
  b.node("Conv", {"a7", "W1", "B"}, {"y7"});
  Tensor x = Tensor::from_vector<float>({2, 11, 7, 9}, random_values(2 * 11 * 63, 89, -3, 3));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession& session) {
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("ConvInputBatchNormFusion 5"));
    // ReduceMean, the five Convs that took one in, the two kept normalizations and their Convs, y7's Conv
    EXPECT_EQ(session.num_nodes(), 1 + 5 + 4 + 1);
  });
  // 1024 channels into 96 at 10x10: three row blocks share one packing of
  // the normalized input (conv.cpp's two-pass path).
  ModelBuilder wide(14);
  wide.input("x", {1, 1024, 10, 10}).output("y", {1, 96, 10, 10});
  wide.initializer("W", {96, 1024, 1, 1}, random_values(96 * 1024, 90));
  batchnorm_params(wide, 1024, 91);
  wide.node("BatchNormalization", {"x", "s", "t", "m", "v"}, {"n"});
  wide.node("Relu", {"n"}, {"r"});
  wide.node("Conv", {"r", "W"}, {"y"});
  Tensor xw = Tensor::from_vector<float>({1, 1024, 10, 10}, random_values(102400, 95, -3, 3));
  expect_same_bits_as_unoptimized(wide.bytes(), xw, [](const InferenceSession& session) {
    EXPECT_EQ(session.num_nodes(), 1);
  });
}

// Attention as PyTorch 1.13 exports nn.MultiheadAttention: x [S, 3E] ->
// Slice q / k / v -> Reshape [S, H, D] -> Transpose (q, v: 1 0 2; k: 1 2 0)
// -> Div(q, sqrt D) -> MatMul -> Softmax -> MatMul -> Transpose 1 0 2 ->
// Reshape [S, E]. S = 200 keys make three blocks of query rows.
std::vector<uint8_t> torch_attention_model(int64_t S, int64_t H, int64_t D, int64_t softmax_axis = -1) {
  const int64_t E = H * D;
  ModelBuilder b(14);
  b.input("x", {S, 3 * E}).output("y", {S, E});
  b.initializer_i64("ax", {1}, {-1});
  const char* bounds[] = {"b0", "b1", "b2", "b3"};
  for (int i = 0; i < 4; ++i) b.initializer_i64(bounds[i], {1}, {i * E});
  b.initializer_i64("shp", {3}, {S, H, D});
  b.initializer_i64("shp2", {2}, {S, E});
  b.initializer("sc", {}, {std::sqrt(static_cast<float>(D))});
  const char* names[][3] = {{"q0", "q1"}, {"k0", "k1"}, {"v0", "v1"}};
  for (int i = 0; i < 3; ++i) {
    b.node("Slice", {"x", bounds[i], bounds[i + 1], "ax"}, {names[i][0]});
    b.node("Reshape", {names[i][0], "shp"}, {names[i][1]});
  }
  ModelBuilder::attr_ints(b.node("Transpose", {"q1"}, {"q2"}), "perm", {1, 0, 2});
  b.node("Div", {"q2", "sc"}, {"q3"});
  ModelBuilder::attr_ints(b.node("Transpose", {"k1"}, {"k2"}), "perm", {1, 2, 0});
  ModelBuilder::attr_ints(b.node("Transpose", {"v1"}, {"v2"}), "perm", {1, 0, 2});
  b.node("MatMul", {"q3", "k2"}, {"s"});
  ModelBuilder::attr_int(b.node("Softmax", {"s"}, {"p"}), "axis", softmax_axis);
  b.node("MatMul", {"p", "v2"}, {"o"});
  ModelBuilder::attr_ints(b.node("Transpose", {"o"}, {"o2"}), "perm", {1, 0, 2});
  b.node("Reshape", {"o2", "shp2"}, {"y"});
  return b.bytes();
}

// The whole chain (MatMul, scale, Softmax, MatMul and the four head
// Transposes) becomes one FusedAttention that reads the heads in place and
// gives the unfused graph's bits at 1, 2 and 3 threads.
TEST(Optimizer, ExportedAttentionBecomesOneNodeBitwise) {
  const auto bytes = torch_attention_model(200, 2, 8);
  Tensor x = Tensor::from_vector<float>({200, 48}, random_values(200 * 48, 61, -2, 2));
  expect_same_bits_as_unoptimized(bytes, x, [](const InferenceSession& session) {
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("AttentionFusion 1"));
    EXPECT_EQ(session.num_nodes(), 3 + 3 + 1 + 1) << session.optimization_summary();  // Slices, Reshapes, fused, Reshape
  });
  // Softmax over the heads axis: still one node, computed by the replaced
  // nodes one after another (same bits as the unfused graph).
  const auto other_axis = torch_attention_model(20, 2, 8, 0);
  Tensor x2 = Tensor::from_vector<float>({20, 48}, random_values(20 * 48, 62, -2, 2));
  expect_same_bits_as_unoptimized(other_axis, x2, [](const InferenceSession& session) {
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("AttentionFusion 1"));
  });
}

// The layout of BERT-style exports: x [B, S, 3, H, D] is split into
// [B, S, H, D] heads read through Transpose 0 2 1 3 (K: 0 2 3 1), the
// scores are divided, a padding mask [B, 1, 1, S] is added, and the output
// goes back through Transpose 0 2 1 3. Another chain scales Q and K^T by
// Mul before their product (as newer exports do) and reads V without a
// Transpose, with a [S, S] mask. Both fused, same bits as unfused.
TEST(Optimizer, MaskedAndScaledAttentionVariantsAreFusedBitwise) {
  const int64_t B = 2, S = 37, H = 3, D = 5;
  ModelBuilder b(14);
  b.input("x", {B, S, 3, H, D}).output("y", {B, S, H, D}).output("z", {B, H, S, D});
  b.initializer_i64("i0", {1}, {0});
  b.initializer_i64("i1", {1}, {1});
  b.initializer_i64("i2", {1}, {2});
  b.initializer_i64("i3", {1}, {3});
  b.initializer_i64("ax2", {1}, {2});
  b.initializer_i64("shp", {4}, {B, S, H, D});
  // Biases in [-1, 1] (the mask's values count, not only its -10000s).
  std::vector<float> pad = random_values(static_cast<size_t>(B * S), 69);
  for (int64_t j = S - 7; j < S; ++j) pad[static_cast<size_t>(S + j)] = -10000.0f;  // batch 1: 7 padded keys
  b.initializer("pad", {B, 1, 1, S}, pad);
  b.initializer("causal", {S, S}, [&] {
    std::vector<float> m(static_cast<size_t>(S * S), 0.0f);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) m[static_cast<size_t>(i * S + j)] = j > i ? -1e9f : 0.05f * static_cast<float>(j - i);
    return m;
  }());
  b.initializer("div", {1}, {2.236068f});
  b.initializer("half", {}, {0.6687403f});
  const char* bounds[] = {"i0", "i1", "i2", "i3"};
  const char* names[][2] = {{"q0", "q"}, {"k0", "k"}, {"v0", "v"}};
  for (int i = 0; i < 3; ++i) {
    b.node("Slice", {"x", bounds[i], bounds[i + 1], "ax2"}, {names[i][0]});
    b.node("Reshape", {names[i][0], "shp"}, {names[i][1]});
  }
  ModelBuilder::attr_ints(b.node("Transpose", {"q"}, {"qt"}), "perm", {0, 2, 1, 3});
  ModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt"}), "perm", {0, 2, 3, 1});
  ModelBuilder::attr_ints(b.node("Transpose", {"v"}, {"vt"}), "perm", {0, 2, 1, 3});
  b.node("MatMul", {"qt", "kt"}, {"s"});
  b.node("Div", {"s", "div"}, {"sd"});
  b.node("Add", {"pad", "sd"}, {"sm"});
  b.node("Softmax", {"sm"}, {"p"});
  b.node("MatMul", {"p", "vt"}, {"o"});
  ModelBuilder::attr_ints(b.node("Transpose", {"o"}, {"y"}), "perm", {0, 2, 1, 3});
  // Second chain: Mul(Q^T, c), Mul(c, K^T), causal mask, V as given (the
  // [B, S, H, D] tensor read as [B, S] batches of H x D... here as
  // [B, H, S, D] through its own Transpose, so V's own ops stay).
  ModelBuilder::attr_ints(b.node("Transpose", {"q"}, {"qt2"}), "perm", {0, 2, 1, 3});
  b.node("Mul", {"qt2", "half"}, {"qs"});
  ModelBuilder::attr_ints(b.node("Transpose", {"k"}, {"kt2"}), "perm", {0, 2, 3, 1});
  b.node("Mul", {"half", "kt2"}, {"ks"});
  b.node("MatMul", {"qs", "ks"}, {"s2"});
  b.node("Add", {"s2", "causal"}, {"sm2"});
  b.node("Softmax", {"sm2"}, {"p2"});
  b.node("MatMul", {"p2", "vt"}, {"z"});
  Tensor x = Tensor::from_vector<float>({B, S, 3, H, D}, random_values(B * S * 3 * H * D, 63, -2, 2));
  expect_same_bits_as_unoptimized(b.bytes(), x, [](const InferenceSession& session) {
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("AttentionFusion 2"));
    // Slices, Reshapes, vt (read by both chains), the two fused nodes.
    EXPECT_EQ(session.num_nodes(), 3 + 3 + 1 + 2) << session.optimization_summary();
  });
}

// Look-alikes stay: probabilities that are also a graph output, scores read
// twice, and a Mul by a non-scalar.
TEST(Optimizer, AttentionLookAlikesAreLeftAlone) {
  ModelBuilder b(14);
  b.input("x", {4, 6, 5}).output("y", {4, 6, 5}).output("p", {4, 6, 6}).output("y2", {4, 6, 5})
      .output("s2", {4, 6, 6}).output("y3", {4, 6, 5});
  b.initializer("vec", {6}, random_values(6, 64, 0.5f, 1.5f));
  ModelBuilder::attr_ints(b.node("Transpose", {"x"}, {"xt"}), "perm", {0, 2, 1});
  b.node("MatMul", {"x", "xt"}, {"s"});
  b.node("Softmax", {"s"}, {"p"});
  b.node("MatMul", {"p", "x"}, {"y"});
  b.node("MatMul", {"x", "xt"}, {"s2"});
  b.node("Softmax", {"s2"}, {"p2"});
  b.node("MatMul", {"p2", "x"}, {"y2"});
  b.node("MatMul", {"x", "xt"}, {"s3"});
  b.node("Mul", {"s3", "vec"}, {"s3v"});
  b.node("Softmax", {"s3v"}, {"p3"});
  b.node("MatMul", {"p3", "x"}, {"y3"});
  const std::string summary = optimized_matches_plain(b.bytes(), {4, 6, 5}, 11);
  EXPECT_THAT(summary, ::testing::HasSubstr("AttentionFusion 0"));
}

// A fused chain whose shapes do not fit at run time fails as the unfused
// graph would, naming the fused node and the MatMul's inner dimensions, and
// the session keeps working.
TEST(Optimizer, FusedAttentionWithMismatchedShapesFailsNamingThem) {
  ModelBuilder b(14);
  b.input("q", {2, 4, 8}).input("k", {2, -1, 4}).input("v", {2, 4, 3}).output("y", {2, 4, 3});
  b.node("MatMul", {"q", "k"}, {"s"});
  b.node("Softmax", {"s"}, {"p"});
  b.node("MatMul", {"p", "v"}, {"y"});
  auto session = InferenceSession::create_from_bytes(b.bytes(), {});
  EXPECT_THAT(session->optimization_summary(), ::testing::HasSubstr("AttentionFusion 1"));
  Tensor q = Tensor::from_vector<float>({2, 4, 8}, random_values(64, 65));
  Tensor v = Tensor::from_vector<float>({2, 4, 3}, random_values(24, 66));
  Tensor bad_k = Tensor::from_vector<float>({2, 7, 4}, random_values(56, 67));
  try {
    session->run({{"q", q}, {"k", bad_k}, {"v", v}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("FusedAttention"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("incompatible inner dimensions (8 vs 7)"));
  }
  Tensor k = Tensor::from_vector<float>({2, 8, 4}, random_values(64, 68));
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  const auto want = InferenceSession::create_from_bytes(b.bytes(), none)->run({{"q", q}, {"k", k}, {"v", v}});
  EXPECT_EQ(session->run({{"q", q}, {"k", k}, {"v", v}})[0].to_vector<float>(), want[0].to_vector<float>());
}

TEST(Optimizer, BasicLevelFoldsConstantsButDoesNotFuse) {
  SessionOptions basic;
  basic.graph_optimization_level = GraphOptimizationLevel::kBasic;
  auto s = InferenceSession::create_from_bytes(conv_bn_clip_model(), basic);
  EXPECT_EQ(s->num_nodes(), 4) << s->optimization_summary();  // Conv, BN, Clip, Add
}

// A Pad of zeros (as PyTorch exports AvgPool2d) is removed; a Pad with one
// non-zero pad stays.
TEST(Optimizer, PadOfZerosIsRemoved) {
  ModelBuilder b(13);
  b.input("x", {1, 2, 6, 6}).output("y", {1, 2, 3, 3}).output("z", {1, 2, 7, 6});
  b.initializer_i64("zeros", {8}, {0, 0, 0, 0, 0, 0, 0, 0});
  b.initializer_i64("one", {8}, {0, 0, 1, 0, 0, 0, 0, 0});
  b.node("Pad", {"x", "zeros"}, {"p"});
  auto& pool = b.node("AveragePool", {"p"}, {"y"});
  ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(pool, "strides", {2, 2});
  b.node("Pad", {"x", "one"}, {"z"});
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 2, 6, 6}, 2);
  EXPECT_THAT(summary, ::testing::HasSubstr("EliminateIdentity 1"));
}

TEST(Optimizer, IdentityOnAGraphOutputIsKept) {
  ModelBuilder b;
  b.input("x", {2}).output("y", {2}).output("z", {2});
  b.node("Relu", {"x"}, {"y"});
  b.node("Identity", {"y"}, {"z"});
  auto s = InferenceSession::create_from_bytes(b.bytes(), {});
  auto out = s->run({{"x", Tensor::from_vector<float>({2}, {-1, 2})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0, 2}));
}

// A MobileNet-style chain (1x1 expand with HardSwish, depthwise 3x3 with
// Relu, squeeze-excite scaling into the 1x1 projection, a residual Add,
// depthwise 5x5 stride 2, exported SiLU, then GlobalAveragePool) runs in the
// blocked layout at level all: eight BlockedConvs, one conversion in (x)
// and one out (y1, a graph output), the pool reading the blocked tensor. The
// squeeze-excite's own two 1x1 Convs (a chain of two, read as a scale) stay
// NCHW. Outputs match the unoptimized graph and the extended level (no
// layout change), and are the same bits at 1, 2 and 3 threads.
std::vector<uint8_t> blocked_chain_model() {
  ModelBuilder b(14);
  b.input("x", {1, 16, 10, 10}).output("y1", {1, 16, 10, 10}).output("pooled", {1, 24, 1, 1});
  uint32_t seed = 900;
  auto weights = [&](const std::string& name, Shape shape) {
    b.initializer(name, shape, random_values(static_cast<size_t>(shape_numel(shape)), ++seed, -0.5f, 0.5f));
    b.initializer(name + "_b", {shape[0]}, random_values(static_cast<size_t>(shape[0]), ++seed));
  };
  auto conv = [&](const std::string& x, const std::string& w, const std::string& out, int64_t group, int64_t k,
                  int64_t stride) -> onnx::NodeProto& {
    auto& c = b.node("Conv", {x, w, w + "_b"}, {out});
    ModelBuilder::attr_int(c, "group", group);
    ModelBuilder::attr_ints(c, "pads", {k / 2, k / 2, k / 2, k / 2});
    ModelBuilder::attr_ints(c, "strides", {stride, stride});
    return c;
  };
  weights("pw0", {16, 16, 1, 1});
  weights("pw1", {32, 16, 1, 1});
  weights("dw1", {32, 1, 3, 3});
  weights("se1", {8, 32, 1, 1});
  weights("se2", {32, 8, 1, 1});
  weights("pw2", {16, 32, 1, 1});
  weights("dw2", {16, 1, 5, 5});
  weights("pw3", {24, 16, 1, 1});
  weights("dw3", {24, 1, 3, 3});
  weights("pw4", {24, 24, 1, 1});
  conv("x", "pw0", "a0", 1, 1, 1);
  conv("a0", "pw1", "e1", 1, 1, 1);
  b.node("HardSwish", {"e1"}, {"e1a"});
  conv("e1a", "dw1", "d1", 32, 3, 1);
  b.node("Relu", {"d1"}, {"d1a"});
  b.node("GlobalAveragePool", {"d1a"}, {"g"});
  conv("g", "se1", "s1", 1, 1, 1);
  b.node("Relu", {"s1"}, {"s1a"});
  conv("s1a", "se2", "s2", 1, 1, 1);
  b.node("HardSigmoid", {"s2"}, {"s2a"});
  b.node("Mul", {"d1a", "s2a"}, {"m"});
  conv("m", "pw2", "p2", 1, 1, 1);
  b.node("Add", {"p2", "a0"}, {"y1"});
  conv("y1", "dw2", "d2", 16, 5, 2);
  conv("d2", "pw3", "p3", 1, 1, 1);
  conv("p3", "dw3", "d3", 24, 3, 1);
  b.node("Relu", {"d3"}, {"d3a"});
  conv("d3a", "pw4", "p4", 1, 1, 1);
  b.node("Sigmoid", {"p4"}, {"p4s"});
  b.node("Mul", {"p4", "p4s"}, {"p4a"});
  b.node("GlobalAveragePool", {"p4a"}, {"pooled"});
  return b.bytes();
}

TEST(Optimizer, ChainsOfPointwiseAndDepthwiseConvsRunBlocked) {
  const auto bytes = blocked_chain_model();
  Tensor x = Tensor::from_vector<float>({1, 16, 10, 10}, random_values(1600, 12, -3, 3));
  SessionOptions none, extended;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  extended.graph_optimization_level = GraphOptimizationLevel::kExtended;
  const auto want = InferenceSession::create_from_bytes(bytes, none)->run({{"x", x}});
  auto ext = InferenceSession::create_from_bytes(bytes, extended);
  EXPECT_THAT(ext->optimization_summary(), ::testing::Not(::testing::HasSubstr("NchwcTransformer")));  // level all only
  const auto want_ext = ext->run({{"x", x}});
  std::vector<Tensor> first;
  for (int threads : {1, 2, 3}) {
    SessionOptions o;
    o.intra_op_num_threads = threads;
    auto s = InferenceSession::create_from_bytes(bytes, o);
    // 10 Convs, 1 Mul folded in, the two pools, the two reorders.
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("NchwcTransformer 8 (2 reorders))"));
    EXPECT_EQ(s->num_nodes(), 10 + 2 + 2) << s->optimization_summary();
    const auto got = s->run({{"x", x}});
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << i;
      EXPECT_TRUE(testing::tensors_close(got[i], want[i], 1e-4, 1e-5)) << i;
      EXPECT_TRUE(testing::tensors_close(got[i], want_ext[i], 1e-5, 1e-5)) << i;
    }
    if (first.empty()) first = got;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].to_vector<float>(), first[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
  }
}

// A RegNet block (1x1, grouped 3x3 stride 2 in groups of 8 channels, 1x1
// with a residual from the strided 1x1 projection of the block's input)
// ending in a GlobalAveragePool runs blocked: four BlockedConvs, one
// conversion (x, read by two of them), none out. Outputs match the extended
// level, the same bits at 1, 2 and 3 threads.
TEST(Optimizer, RegNetBlockWithGroupedAndStridedConvsRunsBlocked) {
  ModelBuilder b(14);
  b.input("x", {1, 16, 11, 11}).output("pooled", {1, 24, 1, 1});
  b.initializer("wa", {16, 16, 1, 1}, random_values(256, 91, -0.5f, 0.5f));
  b.initializer("wb", {16, 8, 3, 3}, random_values(1152, 92, -0.5f, 0.5f));
  b.initializer("wc", {24, 16, 1, 1}, random_values(384, 93, -0.5f, 0.5f));
  b.initializer("wp", {24, 16, 1, 1}, random_values(384, 94, -0.5f, 0.5f));
  b.initializer("bias", {24}, random_values(24, 95));
  b.node("Conv", {"x", "wa"}, {"a"});
  b.node("Relu", {"a"}, {"ar"});
  auto& grouped = b.node("Conv", {"ar", "wb"}, {"g"});
  ModelBuilder::attr_int(grouped, "group", 2);
  ModelBuilder::attr_ints(grouped, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(grouped, "strides", {2, 2});
  b.node("Relu", {"g"}, {"gr"});
  b.node("Conv", {"gr", "wc", "bias"}, {"c"});
  ModelBuilder::attr_ints(b.node("Conv", {"x", "wp"}, {"p"}), "strides", {2, 2});
  b.node("Add", {"c", "p"}, {"sum"});
  b.node("Relu", {"sum"}, {"y"});
  b.node("GlobalAveragePool", {"y"}, {"pooled"});
  const auto bytes = b.bytes();
  Tensor x = Tensor::from_vector<float>({1, 16, 11, 11}, random_values(1936, 96, -3, 3));
  SessionOptions extended;
  extended.graph_optimization_level = GraphOptimizationLevel::kExtended;
  const auto want = InferenceSession::create_from_bytes(bytes, extended)->run({{"x", x}});
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    SessionOptions o;
    o.intra_op_num_threads = threads;
    auto s = InferenceSession::create_from_bytes(bytes, o);
    EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("NchwcTransformer 4 (1 reorders))"));
    const auto got = s->run({{"x", x}});
    EXPECT_TRUE(testing::tensors_close(got[0], want[0], 1e-5, 1e-5));
    if (first.empty()) first = got[0].to_vector<float>();
    EXPECT_EQ(got[0].to_vector<float>(), first) << threads << " threads";
  }
}

// A stem (3x3 stride 2 on an image's 3 channels) reads NCHW and writes its
// output blocked: with the 1x1 and depthwise Convs after it and a
// GlobalAveragePool at the end, the chain needs no conversion at all.
TEST(Optimizer, StemWritesItsOutputBlocked) {
  ModelBuilder b(14);
  b.input("x", {2, 3, 13, 12}).output("pooled", {2, 16, 1, 1});
  b.initializer("ws", {16, 3, 3, 3}, random_values(432, 101, -0.5f, 0.5f));
  b.initializer("wp", {16, 16, 1, 1}, random_values(256, 102, -0.5f, 0.5f));
  b.initializer("wd", {16, 1, 3, 3}, random_values(144, 103, -0.5f, 0.5f));
  auto& stem = b.node("Conv", {"x", "ws"}, {"s"});
  ModelBuilder::attr_ints(stem, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(stem, "strides", {2, 2});
  b.node("HardSwish", {"s"}, {"sa"});
  b.node("Conv", {"sa", "wp"}, {"p"});
  auto& dw = b.node("Conv", {"p", "wd"}, {"d"});
  ModelBuilder::attr_int(dw, "group", 16);
  ModelBuilder::attr_ints(dw, "pads", {1, 1, 1, 1});
  b.node("Relu", {"d"}, {"da"});
  b.node("GlobalAveragePool", {"da"}, {"pooled"});
  const auto bytes = b.bytes();
  Tensor x = Tensor::from_vector<float>({2, 3, 13, 12}, random_values(936, 104, -3, 3));
  SessionOptions extended;
  extended.graph_optimization_level = GraphOptimizationLevel::kExtended;
  const auto want = InferenceSession::create_from_bytes(bytes, extended)->run({{"x", x}});
  auto s = InferenceSession::create_from_bytes(bytes, {});
  EXPECT_THAT(s->optimization_summary(), ::testing::HasSubstr("NchwcTransformer 3)"));
  EXPECT_EQ(s->num_nodes(), 4) << s->optimization_summary();
  EXPECT_TRUE(testing::tensors_close(s->run({{"x", x}})[0], want[0], 1e-5, 1e-5));
}

// A 3x3 of one group with fewer than 32 outputs (PP-OCR det's head), which
// NCHW runs as im2col + a GEMM of few rows, is worth its two conversions
// alone.
TEST(Optimizer, ALoneNarrowThreeByThreeRunsBlocked) {
  ModelBuilder b(14);
  b.input("x", {1, 32, 10, 9}).output("y", {1, 24, 10, 9});
  b.initializer("w", {24, 32, 3, 3}, random_values(6912, 111, -0.2f, 0.2f));
  b.initializer("bias", {24}, random_values(24, 112));
  padded_conv(b, {"x", "w", "bias"}, "c");
  b.node("Relu", {"c"}, {"y"});
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 32, 10, 9}, 3);
  EXPECT_THAT(summary, ::testing::HasSubstr("NchwcTransformer 1 (2 reorders))"));
}

// A ResNet bottleneck (1x1, 3x3 of 32 channels, 1x1 + residual, twice)
// keeps NCHW: its 1x1s do not chain through the 3x3s (Winograd's in NCHW),
// and converting around each would cost more than it saves.
TEST(Optimizer, ConvolutionsThatDoNotChainKeepNchw) {
  ModelBuilder b(14);
  b.input("x", {1, 16, 8, 8}).output("y", {1, 16, 8, 8});
  std::string in = "x";
  for (int block = 0; block < 2; ++block) {
    std::string p = "b";
    p += std::to_string(block);
    b.initializer(p + "w1", {32, 16, 1, 1}, random_values(512, 60 + block, -0.3f, 0.3f));
    b.initializer(p + "w2", {32, 32, 3, 3}, random_values(9216, 70 + block, -0.1f, 0.1f));
    b.initializer(p + "w3", {16, 32, 1, 1}, random_values(512, 80 + block, -0.3f, 0.3f));
    b.node("Conv", {in, p + "w1"}, {p + "c1"});
    padded_conv(b, {p + "c1", p + "w2"}, p + "c2");
    b.node("Conv", {p + "c2", p + "w3"}, {p + "c3"});
    const std::string out = block == 1 ? "y" : p + "out";
    b.node("Add", {p + "c3", in}, {out});
    in = out;
  }
  const std::string summary = optimized_matches_plain(b.bytes(), {1, 16, 8, 8}, 6);
  EXPECT_THAT(summary, ::testing::HasSubstr("NchwcTransformer 0)"));
}

// ONNX Runtime's quantize_dynamic format: one DynamicQuantizeLinear read by
// two MatMulIntegers (int8 weights with a per-tensor zero point, then uint8
// weights with per-column zero points), each -> Cast(float) -> Mul by
// Mul(a_scale, b_scale) (either operand order), the first + a constant bias:
// both become com.microsoft DynamicQuantizeMatMul with no bit changed, at 1,
// 2 and 3 threads. Weights come through Casts of float initializers (folded
// at load). `relu`: the first output through a Relu.
std::vector<uint8_t> dynamic_quant_model(bool zp_is_output, bool relu = false) {
  std::mt19937 rng(77);
  std::uniform_int_distribution<int> s8(-128, 127), u8(0, 255);
  std::vector<float> w1(70 * 45), w2(70 * 33), z2(33);
  for (float& v : w1) v = static_cast<float>(s8(rng));
  for (float& v : w2) v = static_cast<float>(u8(rng));
  for (float& v : z2) v = static_cast<float>(u8(rng));
  ModelBuilder b(13);
  b.input("x", {6, 7, 70}).output("y1", {6, 7, 45}).output("y2", {6, 7, 33});
  if (zp_is_output) b.output("xz", {}, onnx::TensorProto::UINT8);
  b.initializer("w1f", {70, 45}, w1).initializer("z1f", {}, {-3.0f});
  b.initializer("w2f", {70, 33}, w2).initializer("z2f", {33}, z2);
  b.initializer("s1", {}, {0.0123f}).initializer("s2", {33}, random_values(33, 78, 0.001f, 0.02f));
  b.initializer("bias1", {45}, random_values(45, 79));
  ModelBuilder::attr_int(b.node("Cast", {"w1f"}, {"w1"}), "to", onnx::TensorProto::INT8);
  ModelBuilder::attr_int(b.node("Cast", {"z1f"}, {"z1"}), "to", onnx::TensorProto::INT8);
  ModelBuilder::attr_int(b.node("Cast", {"w2f"}, {"w2"}), "to", onnx::TensorProto::UINT8);
  ModelBuilder::attr_int(b.node("Cast", {"z2f"}, {"z2"}), "to", onnx::TensorProto::UINT8);
  b.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  b.node("MatMulInteger", {"xq", "w1", "xz", "z1"}, {"acc1"});
  ModelBuilder::attr_int(b.node("Cast", {"acc1"}, {"f1"}), "to", onnx::TensorProto::FLOAT);
  b.node("Mul", {"xs", "s1"}, {"sc1"});
  b.node("Mul", {"f1", "sc1"}, {"m1"});
  b.node("Add", {"m1", "bias1"}, {relu ? "a1" : "y1"});
  if (relu) b.node("Relu", {"a1"}, {"y1"});
  b.node("MatMulInteger", {"xq", "w2", "xz", "z2"}, {"acc2"});
  ModelBuilder::attr_int(b.node("Cast", {"acc2"}, {"f2"}), "to", onnx::TensorProto::FLOAT);
  b.node("Mul", {"s2", "xs"}, {"sc2"});
  b.node("Mul", {"sc2", "f2"}, {"y2"});
  return b.bytes();
}

TEST(Optimizer, DynamicQuantizedMatMulsBecomeDynamicQuantizeMatMulBitwise) {
  const auto bytes = dynamic_quant_model(false);
  Tensor x = Tensor::from_vector<float>({6, 7, 70}, random_values(6 * 7 * 70, 80, -4, 3));
  // The two products of the one A then run as one spindle.DynamicQuantizeMatMulGroup
  // (A quantized once): still the chain's bits.
  expect_same_bits_as_unoptimized(bytes, x, [](const InferenceSession& session) {
    EXPECT_EQ(session.num_nodes(), 1) << session.optimization_summary();
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("DynamicQuantizeMatMulFusion 2"));
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("MatMulSiblingFusion 2"));
  });
  // Disabled by name: the chain stays (and computes the same).
  SessionOptions off;
  off.add_config_entry("optimization.disable_specified_optimizers", "DynamicQuantizeMatMulFusion");
  auto plain = InferenceSession::create_from_bytes(bytes, off);
  EXPECT_THAT(plain->optimization_summary(), ::testing::Not(::testing::HasSubstr("DynamicQuantizeMatMulFusion")));
  EXPECT_EQ(plain->num_nodes(), 10);
  // A zero point that is also a graph output keeps the chain.
  auto kept = InferenceSession::create_from_bytes(dynamic_quant_model(true));
  EXPECT_EQ(kept->num_nodes(), 10) << kept->optimization_summary();
}

// A Relu after the fused product (a transformer's FFN) goes into it
// (ActivationFusion), applied to each output block: still the unfused
// chain's bits.
TEST(Optimizer, AReluAfterADynamicQuantizeMatMulIsFusedBitwise) {
  const auto bytes = dynamic_quant_model(false, true);
  Tensor x = Tensor::from_vector<float>({6, 7, 70}, random_values(6 * 7 * 70, 81, -4, 3));
  // In the group of the two products, the Relu applies to the first one's blocks only.
  expect_same_bits_as_unoptimized(bytes, x, [](const InferenceSession& session) {
    EXPECT_EQ(session.num_nodes(), 1) << session.optimization_summary();
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("ActivationFusion 1"));
    EXPECT_THAT(session.optimization_summary(), ::testing::HasSubstr("MatMulSiblingFusion 2"));
  });
}

// The optimizer is a table of named passes: each runs in table order at its
// level, reports its count by name, and can be turned off by name (ONNX
// Runtime's optimization.disable_specified_optimizers key); an unknown name
// is an error listing the passes.
TEST(Optimizer, PassesAreNamedCountedAndDisabledByName) {
  const auto bytes = blocked_chain_model();
  Tensor x = Tensor::from_vector<float>({1, 16, 10, 10}, random_values(1600, 12, -3, 3));
  SessionOptions none;
  none.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  const auto want = InferenceSession::create_from_bytes(bytes, none)->run({{"x", x}});
  std::vector<std::string> names;
  for (const graph::PassInfo& p : graph::optimizer_passes()) names.push_back(p.name);
  EXPECT_EQ(names.front(), "ConstantFolding");
  EXPECT_EQ(names.back(), "NchwcTransformer");

  auto all = InferenceSession::create_from_bytes(bytes);
  EXPECT_THAT(all->optimization_summary(), ::testing::ContainsRegex("NchwcTransformer [1-9]"));
  SessionOptions some;
  some.add_config_entry("optimization.disable_specified_optimizers", "NchwcTransformer, ActivationFusion");
  EXPECT_EQ(some.config_entry("optimization.disable_specified_optimizers"), "NchwcTransformer,ActivationFusion");
  auto fewer = InferenceSession::create_from_bytes(bytes, some);
  const std::string summary = fewer->optimization_summary();
  EXPECT_THAT(summary, ::testing::Not(::testing::HasSubstr("NchwcTransformer")));
  EXPECT_THAT(summary, ::testing::Not(::testing::HasSubstr("ActivationFusion")));
  EXPECT_THAT(summary, ::testing::HasSubstr("ConvResidualAddFusion"));
  EXPECT_GT(fewer->num_nodes(), all->num_nodes());
  const auto got = fewer->run({{"x", x}});
  ASSERT_EQ(got.size(), want.size());
  const auto g = got[0].to_vector<float>(), w = want[0].to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-4f * (1 + std::fabs(w[i]))) << i;

  SessionOptions bad;
  try {
    bad.add_config_entry("optimization.disable_specified_optimizers", "ConstantFolding,NoSuchPass");
    FAIL() << "an unknown pass name was accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("no optimizer pass is named NoSuchPass; the passes are: ConstantFolding, "
                                               "EliminateIdentity,"));
  }
}

}  // namespace
}  // namespace spindle
