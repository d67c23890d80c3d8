// matmul_group_test.cpp — MatMuls of one A by constant weights (a decoder's
// query / key / value projections) become one spindle.MatMulGroup whose
// outputs have the separate MatMuls' bits at any thread count, for a decode
// step's one row and a prompt's many, with or without fused biases and with
// the weights packed or read as given; look-alikes stay as they are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../session/model_builder.h"
#include "graph/attention_test_util.h"

namespace spindle {
namespace {

using testing::ModelBuilder;
using testing::random_values;

// x [.., K] read by one MatMul per entry of `widths` (output yi = x Wi,
// + bi when `bias[i]`, Wi of K rows). `computed_w` makes
// W1 depend on x (not a constant), `relu_on` puts a Relu after
// that member's MatMul.
struct GroupModel {
  int64_t K = 40;
  std::vector<int64_t> widths = {48, 16, 33};
  std::vector<bool> bias = {false, true, false};
  bool computed_w = false;
  int relu_on = -1;
  int x_rank = 3;
};

std::vector<uint8_t> group_model(const GroupModel& m) {
  ModelBuilder b(14);
  b.input("x", std::vector<int64_t>(static_cast<size_t>(m.x_rank), -1));
  for (size_t i = 0; i < m.widths.size(); ++i) {
    const std::string s = std::to_string(i);
    const int64_t k = m.K, n = m.widths[i];
    b.output("y" + s, std::vector<int64_t>(static_cast<size_t>(m.x_rank), -1));
    b.initializer("w" + s, {k, n}, random_values(static_cast<size_t>(k * n), 100 + static_cast<uint32_t>(i)));
    std::string w = "w" + s;
    if (m.computed_w && i == 1) {  // W1 + sum(x): known at run time only
      ModelBuilder::attr_int(b.node("ReduceSum", {"x"}, {"sx"}), "keepdims", 0);
      b.node("Add", {w, "sx"}, {"xw"});
      w = "xw";
    }
    const bool more = m.bias[i] || m.relu_on == static_cast<int>(i);
    b.node("MatMul", {"x", w}, {more ? "p" + s : "y" + s});
    if (m.bias[i]) {
      b.initializer("b" + s, {n}, random_values(static_cast<size_t>(n), 200 + static_cast<uint32_t>(i)));
      b.node("Add", {"p" + s, "b" + s}, {m.relu_on == static_cast<int>(i) ? "q" + s : "y" + s});
    }
    if (m.relu_on == static_cast<int>(i)) b.node("Relu", {m.bias[i] ? "q" + s : "p" + s}, {"y" + s});
  }
  return b.bytes();
}

std::vector<Tensor> run(const std::vector<uint8_t>& bytes, const Tensor& x, int threads, bool group,
                        bool prepack = true, std::string* summary = nullptr) {
  SessionOptions o;
  o.intra_op_num_threads = threads;
  o.disable_prepacking = !prepack;
  if (!group) o.disabled_optimizers = {"MatMulSiblingFusion"};
  auto session = InferenceSession::create_from_bytes(bytes, o);
  if (summary) *summary = session->optimization_summary();
  return session->run({{"x", x}});
}

// The group (of `members` MatMuls) gives the separate MatMuls' bits at 1, 2
// and 3 threads.
void expect_group_bits(const GroupModel& m, const Shape& x_shape, int members, bool prepack = true) {
  const auto bytes = group_model(m);
  const Tensor x = Tensor::from_vector<float>(x_shape, random_values(static_cast<size_t>(shape_numel(x_shape)), 7));
  const auto want = run(bytes, x, 1, false, prepack);
  for (int threads : {1, 2, 3}) {
    std::string summary;
    const auto got = run(bytes, x, threads, true, prepack, &summary);
    EXPECT_THAT(summary, ::testing::HasSubstr(fmt::format("MatMulSiblingFusion {},", members)));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
      EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
    }
  }
}

// One row (decode), a few, and a prompt's many (several row blocks), with a
// fused bias on one member and column counts that are not whole panels.
TEST(MatMulGroup, SeparateMatMulsBitsAtAnyThreadCount) {
  for (const Shape& x : {Shape{1, 1, 40}, Shape{1, 5, 40}, Shape{2, 130, 40}}) {
    SCOPED_TRACE(shape_to_string(x));
    expect_group_bits(GroupModel{}, x, 3);
  }
}

// Decoder-sized members: a 512 x 512 query and two 512 x 128 key / value
// projections, one row (each member's decode blocks in one loop) and 64.
TEST(MatMulGroup, DecoderProjections) {
  GroupModel m;
  m.K = 512;
  m.widths = {512, 128, 128};
  m.bias = {false, false, false};
  expect_group_bits(m, Shape{1, 1, 512}, 3);
  expect_group_bits(m, Shape{1, 64, 512}, 3);
}

// Weights read as given (session.disable_prepacking) and a 2-D and a 1-D A.
TEST(MatMulGroup, UnpackedWeightsAndLowRankA) {
  expect_group_bits(GroupModel{}, Shape{3, 1, 40}, 3, false);
  GroupModel two_d;
  two_d.x_rank = 2;
  expect_group_bits(two_d, Shape{7, 40}, 3);
  GroupModel one_d;
  one_d.x_rank = 1;
  expect_group_bits(one_d, Shape{40}, 3);
}

// Not members: a MatMul by computed weights, one with a fused activation;
// a single MatMul is no group.
TEST(MatMulGroup, LookAlikesStaySeparate) {
  GroupModel computed;
  computed.computed_w = true;
  expect_group_bits(computed, Shape{1, 4, 40}, 2);
  GroupModel relu;
  relu.relu_on = 0;
  expect_group_bits(relu, Shape{1, 4, 40}, 2);
  GroupModel single;
  single.widths = {48};
  single.bias = {true};
  expect_group_bits(single, Shape{1, 4, 40}, 0);
}

// com.microsoft DynamicQuantizeMatMuls of one x (a dynamically quantized
// decoder's projections): uint8 weights with per-column zero points and
// scales, int8 ones with one of each, a bias, and on the first an exported
// SiLU (x * Sigmoid(x), fused as its activation). One
// spindle.DynamicQuantizeMatMulGroup, A quantized once, with the separate
// nodes' bits at 1, 2 and 3 threads, for one row and many.
std::vector<uint8_t> quantized_group_model() {
  ModelBuilder b(14);
  b.opset("com.microsoft", 1);
  b.input("x", {-1, -1, 64});
  const int64_t K = 64;
  const std::vector<int64_t> widths = {80, 32, 48};
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string s = std::to_string(i);
    const int64_t n = widths[i];
    b.output("y" + s, {-1, -1, n});
    std::vector<uint8_t> w(static_cast<size_t>(K * n));
    for (size_t j = 0; j < w.size(); ++j) w[j] = static_cast<uint8_t>((j * 37 + i * 11) % 251);
    std::vector<uint8_t> z(i == 1 ? 1 : static_cast<size_t>(n));
    for (size_t j = 0; j < z.size(); ++j) z[j] = static_cast<uint8_t>(i == 1 ? 0 : (j * 7) % 200);
    if (i == 1) {  // int8 weights, one scale and one zero point
      b.initializer_i8("w" + s, {K, n}, std::vector<int8_t>(w.begin(), w.end()));
      b.initializer_i8("z" + s, {}, {0});
      b.initializer("s" + s, {}, {0.0123f});
    } else {
      b.initializer_u8("w" + s, {K, n}, w);
      b.initializer_u8("z" + s, {n}, z);
      b.initializer("s" + s, {n}, random_values(static_cast<size_t>(n), 300 + static_cast<uint32_t>(i)));
    }
    std::vector<std::string> in = {"x", "w" + s, "s" + s, "z" + s};
    if (i == 2) {
      b.initializer("b" + s, {n}, random_values(static_cast<size_t>(n), 400));
      in.push_back("b" + s);
    }
    b.node("DynamicQuantizeMatMul", in, {i == 0 ? "p0" : "y" + s}).set_domain("com.microsoft");
    if (i == 0) {
      b.node("Sigmoid", {"p0"}, {"g0"});
      b.node("Mul", {"p0", "g0"}, {"y0"});
    }
  }
  return b.bytes();
}

// `bytes`, whose three products of x become one group, gives the separate
// nodes' bits at 1, 2 and 3 threads for an x of `shape`.
void expect_group_of_three_bits(const std::vector<uint8_t>& bytes, const Shape& shape, uint32_t seed) {
  const Tensor x = Tensor::from_vector<float>(shape, random_values(static_cast<size_t>(shape_numel(shape)), seed));
  const auto want = run(bytes, x, 1, false);
  for (int threads : {1, 2, 3}) {
    std::string summary;
    const auto got = run(bytes, x, threads, true, true, &summary);
    EXPECT_THAT(summary, ::testing::HasSubstr("MatMulSiblingFusion 3,"));
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>()) << "output " << i << ", " << threads << " threads";
  }
}

TEST(MatMulGroup, DynamicQuantizeMatMulsOfOneA) {
  const auto bytes = quantized_group_model();
  for (const Shape& shape : {Shape{1, 1, 64}, Shape{2, 37, 64}}) {
    SCOPED_TRACE(shape_to_string(shape));
    expect_group_of_three_bits(bytes, shape, 9);
  }
}

// com.microsoft MatMulNBits of one x (a 4-bit decoder's projections, as
// ONNX Runtime GenAI writes them): K 96 in blocks of 32, 4 bits, packed
// zero points on two members, a bias on one, at accuracy_level `level`.
std::vector<uint8_t> nbits_group_model(int64_t level) {
  ModelBuilder b(14);
  b.opset("com.microsoft", 1);
  b.input("x", {-1, -1, 96});
  const int64_t K = 96, block = 32, k_blocks = 3;
  const std::vector<int64_t> widths = {64, 16, 48};
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string s = std::to_string(i);
    const int64_t n = widths[i];
    b.output("y" + s, {-1, -1, n});
    std::vector<uint8_t> q(static_cast<size_t>(n * k_blocks * block / 2)), zp(static_cast<size_t>(n * 2));
    for (size_t j = 0; j < q.size(); ++j) q[j] = static_cast<uint8_t>((j * 37 + i * 5) % 251);
    for (size_t j = 0; j < zp.size(); ++j) zp[j] = static_cast<uint8_t>((j * 29 + i) % 256);
    std::vector<float> scales(static_cast<size_t>(n * k_blocks));
    for (size_t j = 0; j < scales.size(); ++j) scales[j] = 0.002f * static_cast<float>(j % 17 + 1);
    b.initializer_u8("q" + s, {n, k_blocks, block / 2}, q).initializer("s" + s, {n * k_blocks}, scales);
    std::vector<std::string> in = {"x", "q" + s, "s" + s};
    if (i != 1) {
      b.initializer_u8("z" + s, {n * 2}, zp);
      in.push_back("z" + s);
    }
    if (i == 2) {
      b.initializer("b" + s, {n}, random_values(static_cast<size_t>(n), 500));
      in.insert(in.end(), {"", "b" + s});  // no g_idx
    }
    onnx::NodeProto& node = b.node("MatMulNBits", in, {"y" + s});
    node.set_domain("com.microsoft");
    ModelBuilder::attr_int(node, "K", K);
    ModelBuilder::attr_int(node, "N", n);
    ModelBuilder::attr_int(node, "bits", 4);
    ModelBuilder::attr_int(node, "block_size", block);
    ModelBuilder::attr_int(node, "accuracy_level", level);
  }
  return b.bytes();
}

// The group of three gives each node's bits at 1, 2 and 3 threads: one row
// and two (at accuracy_level 4 the members' column blocks in one loop), 9
// rows (each member as its node), and at accuracy_level 0.
TEST(MatMulGroup, MatMulNBitsOfOneA) {
  for (int64_t level : {4, 0}) {
    const auto bytes = nbits_group_model(level);
    for (const Shape& shape : {Shape{1, 1, 96}, Shape{1, 2, 96}, Shape{1, 9, 96}}) {
      SCOPED_TRACE(fmt::format("accuracy_level {}, x {}", level, shape_to_string(shape)));
      expect_group_of_three_bits(bytes, shape, 11);
    }
  }
}

// A model may write the group itself: zero points it computes (the fusion
// groups constant ones only) are refused by name rather than ignored.
TEST(MatMulGroup, MatMulNBitsGroupWithComputedZeroPointsIsRefused) {
  ModelBuilder b(14);
  b.opset("spindle", 1);
  b.input("x", {2, 32}).input("z", {3}, onnx::TensorProto::UINT8).output("y", {2, 3});
  b.initializer_u8("q", {3, 1, 16}, std::vector<uint8_t>(48, 0x21)).initializer("s", {3}, {0.5f, 0.25f, 1.0f});
  onnx::NodeProto& n = b.node("MatMulNBitsGroup", {"x", "q", "s", "z"}, {"y"});
  n.set_domain("spindle");
  ModelBuilder::attr_ints(n, "N", {3});
  ModelBuilder::attr_int(n, "K", 32);
  ModelBuilder::attr_int(n, "bits", 4);
  ModelBuilder::attr_int(n, "block_size", 32);
  ModelBuilder::attr_int(n, "accuracy_level", 4);
  auto session = InferenceSession::create_from_bytes(b.bytes(), SessionOptions{});
  try {
    session->run({{"x", Tensor::from_vector<float>({2, 32}, random_values(64, 5))},
                  {"z", Tensor::from_vector<uint8_t>({3}, {1, 2, 3})}});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("input 3 (zero_points of output 0) is computed, expected a constant"));
  }
}

// Bad input after the fusion: x whose last dimension is not the weights'
// rows fails naming the group's input and what it expected; the session runs
// the next good input.
TEST(MatMulGroup, WrongInnerDimensionIsAClearError) {
  const auto bytes = group_model(GroupModel{});
  auto session = InferenceSession::create_from_bytes(bytes, SessionOptions{});
  const Tensor bad = Tensor::from_vector<float>({1, 2, 39}, random_values(78, 3));
  try {
    session->run({{"x", bad}});
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("expected a last dimension of 40"));
  }
  const Tensor good = Tensor::from_vector<float>({1, 2, 40}, random_values(80, 3));
  EXPECT_EQ(session->run({{"x", good}}).size(), 3u);
}

}  // namespace
}  // namespace spindle
