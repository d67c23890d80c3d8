// prepack_test.cpp — the session.disable_prepacking config key: "1" keeps
// constant weights as given (Conv, MatMul, Gemm), outputs are bitwise the
// same either way, and a value other than 0 / 1 is an error naming the key.
// Weights held once: a packed weight's original storage is freed at
// creation unless something else reads it; initializers nothing reads are
// dropped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "exec/executor.h"
#include "graph/graph.h"
#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

// x [1, 8, 10, 10] -> Conv (W 12x8x3x3, pads 1, bias) -> MatMul (B 10x20):
// a pre-packed A side (Conv) and a pre-packed B side (MatMul).
std::vector<uint8_t> conv_matmul_model() {
  ModelBuilder b;
  b.input("x", {1, 8, 10, 10}).output("y", {1, 12, 10, 20});
  std::vector<float> w(12 * 8 * 9), m(10 * 20), bias(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 37 % 23) - 11) * 0.03f;
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(static_cast<int>(i * 11 % 17) - 8) * 0.05f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.1f * static_cast<float>(i);
  b.initializer("w", {12, 8, 3, 3}, w);
  b.initializer("bias", {12}, bias);
  b.initializer("m", {10, 20}, m);
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w", "bias"}, {"c"}), "pads", {1, 1, 1, 1});
  b.node("MatMul", {"c", "m"}, {"y"});
  return b.bytes();
}

Tensor run_with(const std::string& disable) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  if (!disable.empty()) o.add_config_entry("session.disable_prepacking", disable);
  auto s = InferenceSession::create_from_bytes(conv_matmul_model(), o);
  std::vector<float> x(800);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 29) - 14) * 0.07f;
  return s->run({{"x", Tensor::from_vector<float>({1, 8, 10, 10}, x)}})[0];
}

TEST(SessionPrepacking, DisablingGivesBitwiseTheSameOutputs) {
  const Tensor packed = run_with(""), off = run_with("1"), on = run_with("0");
  ASSERT_EQ(packed.shape(), (Shape{1, 12, 10, 20}));
  EXPECT_EQ(0, std::memcmp(packed.raw_data(), off.raw_data(), packed.nbytes()));
  EXPECT_EQ(0, std::memcmp(packed.raw_data(), on.raw_data(), packed.nbytes()));
}

TEST(SessionPrepacking, BadValueNamesTheKey) {
  try {
    run_with("yes");
    FAIL() << "no error for session.disable_prepacking=yes";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("session.disable_prepacking"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("yes"));
  }
}

// x [3, 16] -> MatMul (W 16x40) -> Gemm (G 24x40, transB) -> y [3, 24];
// with `w_as_output`, W is also a graph output (read as given); "unused" is
// an initializer nothing reads.
std::vector<uint8_t> weights_model(bool w_as_output) {
  ModelBuilder b;
  b.input("x", {3, 16}).output("y", {3, 24});
  if (w_as_output) b.output("w", {16, 40});
  std::vector<float> w(16 * 40), g(24 * 40), unused(1000, 1.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i * 13 % 31) - 15) * 0.02f;
  for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(static_cast<int>(i * 7 % 19) - 9) * 0.03f;
  b.initializer("w", {16, 40}, w).initializer("g", {24, 40}, g).initializer("unused", {1000}, unused);
  b.node("MatMul", {"x", "w"}, {"h"});
  ModelBuilder::attr_int(b.node("Gemm", {"h", "g"}, {"y"}), "transB", 1);
  return b.bytes();
}

struct Compiled {
  std::unique_ptr<exec::Plan> plan;
  std::weak_ptr<Buffer> w, g, unused;  // the loaded initializers' storage
};

Compiled compile(bool w_as_output, bool prepack) {
  const std::vector<uint8_t> bytes = weights_model(w_as_output);
  auto loaded = graph::load_model_bytes(bytes, "weights", ".");
  EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  graph::Graph g = std::move(loaded).value();
  Compiled c;
  c.w = g.initializer(g.value_id("w"))->buffer();
  c.g = g.initializer(g.value_id("g"))->buffer();
  c.unused = g.initializer(g.value_id("unused"))->buffer();
  EXPECT_FALSE(c.w.expired());
  auto plan = exec::Plan::compile(std::move(g), graph::OptimizationLevel::kAll, prepack);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  c.plan = std::move(plan).value();
  return c;
}

std::vector<float> run_plan(const exec::Plan& plan) {
  exec::Frame frame(plan);
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 11) - 5) * 0.1f;
  const graph::Graph& g = plan.graph();
  frame.begin_run();
  frame.values()[static_cast<size_t>(g.value_id("x"))] = Tensor::from_vector<float>({3, 16}, x);
  exec::run_sequential(plan, frame, nullptr, {});
  std::vector<float> y = frame.values()[static_cast<size_t>(g.outputs[0])].to_vector<float>();
  frame.end_run();
  return y;
}

TEST(SessionPrepacking, PackedWeightsAreHeldOnce) {
  const Compiled packed = compile(false, true);
  // The storage the loader allocated for W and G is gone: the plan holds
  // only the packed copies; the unread initializer is gone too.
  EXPECT_TRUE(packed.w.expired());
  EXPECT_TRUE(packed.g.expired());
  EXPECT_TRUE(packed.unused.expired());
  const auto bytes = packed.plan->constant_bytes();
  EXPECT_EQ(bytes.initializers, 0u);
  EXPECT_GE(bytes.packed, (16 * 40 + 24 * 40) * sizeof(float));
  // Without packing the kernels read the originals, which stay.
  const Compiled plain = compile(false, false);
  EXPECT_FALSE(plain.w.expired());
  EXPECT_FALSE(plain.g.expired());
  EXPECT_TRUE(plain.unused.expired());
  EXPECT_EQ(plain.plan->constant_bytes().initializers, (16 * 40 + 24 * 40) * sizeof(float));
  EXPECT_EQ(plain.plan->constant_bytes().packed, 0u);
  const std::vector<float> a = run_plan(*packed.plan), b = run_plan(*plain.plan);
  ASSERT_EQ(a.size(), 72u);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

// x [2, 40] -> com.microsoft MatMulNBits (K 40, N 6, 4 bits, blocks of 16:
// 3 per column, the last padded; packed zero points) -> y [2, 6]. The kernel
// keeps B, scales and zero points; the loader's copies are freed.
std::vector<uint8_t> nbits_model(int64_t accuracy_level = 0) {
  ModelBuilder b;
  b.opset("com.microsoft", 1);
  b.input("x", {2, 40}).output("y", {2, 6});
  std::vector<uint8_t> q(6 * 3 * 8), zp(6 * 2);
  std::vector<float> scales(18);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<uint8_t>(i * 37 % 251);
  for (size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<uint8_t>(i * 29 % 256);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.01f * static_cast<float>(i + 1);
  b.initializer_u8("q", {6, 3, 8}, q).initializer("s", {18}, scales).initializer_u8("zp", {12}, zp);
  onnx::NodeProto& n = b.node("MatMulNBits", {"x", "q", "s", "zp"}, {"y"});
  n.set_domain("com.microsoft");
  ModelBuilder::attr_int(n, "K", 40);
  ModelBuilder::attr_int(n, "N", 6);
  ModelBuilder::attr_int(n, "bits", 4);
  ModelBuilder::attr_int(n, "block_size", 16);
  ModelBuilder::attr_int(n, "accuracy_level", accuracy_level);
  return b.bytes();
}

// nbits_model(accuracy_level) compiled with and without prepacking and run
// on x [2, 40]: y of each plan, after checking that prepacking dropped the
// loader's copies (and kept packed bytes instead).
std::vector<std::vector<float>> run_nbits_plans(int64_t accuracy_level, const std::vector<float>& x) {
  std::vector<std::vector<float>> outs;
  for (bool prepack : {true, false}) {
    auto loaded = graph::load_model_bytes(nbits_model(accuracy_level), "nbits", ".");
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
    if (!loaded.is_ok()) return {};
    graph::Graph g = std::move(loaded).value();
    std::weak_ptr<Buffer> q = g.initializer(g.value_id("q"))->buffer();
    auto plan = exec::Plan::compile(std::move(g), graph::OptimizationLevel::kAll, prepack);
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan.is_ok()) return {};
    EXPECT_EQ(q.expired(), prepack);
    EXPECT_EQ((*plan)->constant_bytes().initializers, prepack ? 0u : 6u * 3 * 8 + 18 * 4 + 12);
    EXPECT_EQ((*plan)->constant_bytes().packed > 0, prepack);
    exec::Frame frame(**plan);
    const graph::Graph& pg = (*plan)->graph();
    frame.begin_run();
    frame.values()[static_cast<size_t>(pg.value_id("x"))] = Tensor::from_vector<float>({2, 40}, x);
    exec::run_sequential(**plan, frame, nullptr, {});
    outs.push_back(frame.values()[static_cast<size_t>(pg.outputs[0])].to_vector<float>());
    frame.end_run();
  }
  return outs;
}

TEST(SessionPrepacking, MatMulNBitsWeightsAreHeldOnce) {
  std::vector<float> x(80);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.1f;
  const auto outs = run_nbits_plans(0, x);
  ASSERT_EQ(outs.size(), 2u);
  ASSERT_EQ(outs[0].size(), 12u);
  EXPECT_EQ(outs[0], outs[1]);
  // Row 0, column 0 by hand: code k of column 0 is nibble k of its 24 bytes
  // (blocks of 8 bytes), zero point of block b the low / high nibble of zp[b / 2].
  double want = 0;
  for (int k = 0; k < 40; ++k) {
    const int blk = k / 16, byte = static_cast<int>((blk * 8 + (k % 16) / 2) * 37 % 251);
    const int code = k % 2 == 0 ? byte & 15 : byte >> 4;
    const int zbyte = (blk / 2) * 29 % 256, z = blk % 2 == 0 ? zbyte & 15 : zbyte >> 4;
    want += static_cast<double>(x[static_cast<size_t>(k)]) * (code - z) * (0.01 * (blk + 1));
  }
  EXPECT_NEAR(outs[0][0], want, 1e-4);
}

// accuracy_level 4: the kept weights (at AVX-512 rearranged into 16-column
// panels in place of the copies) give the bits a plan without prepacking
// gets from the model's own B.
TEST(SessionPrepacking, MatMulNBitsInt8WeightsAreHeldOnceAndGiveTheSameBits) {
  std::vector<float> x(80);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 11) - 5) * 0.13f;
  const auto outs = run_nbits_plans(4, x);
  ASSERT_EQ(outs.size(), 2u);
  ASSERT_EQ(outs[0].size(), 12u);
  EXPECT_EQ(outs[0], outs[1]);
}

TEST(SessionPrepacking, WeightAlsoReadAsGivenIsKept) {
  const Compiled c = compile(true, true);
  EXPECT_FALSE(c.w.expired());  // a graph output
  EXPECT_TRUE(c.g.expired());
  EXPECT_EQ(c.plan->constant_bytes().initializers, 16 * 40 * sizeof(float));
  const Compiled plain = compile(true, false);
  const std::vector<float> a = run_plan(*c.plan), b = run_plan(*plain.plan);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(SessionPrepacking, SessionWithDroppedWeightsRunsRepeatedly) {
  SessionOptions o;
  o.intra_op_num_threads = 2;
  auto s = InferenceSession::create_from_bytes(weights_model(false), o);
  SessionOptions off = o;
  off.add_config_entry("session.disable_prepacking", "1");
  auto r = InferenceSession::create_from_bytes(weights_model(false), off);
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.2f;
  const Tensor want = r->run({{"x", Tensor::from_vector<float>({3, 16}, x)}})[0];
  for (int i = 0; i < 3; ++i) {
    const Tensor got = s->run({{"x", Tensor::from_vector<float>({3, 16}, x)}})[0];
    ASSERT_EQ(got.nbytes(), want.nbytes());
    EXPECT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()));
  }
}

}  // namespace
}  // namespace spindle
