// cse_test.cpp — common subexpression elimination: repeated computations
// (an exported decoder's per-layer shape arithmetic) run once, with the
// outputs of the unoptimized graph; what must not merge stays.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../session/model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;

constexpr const char* kNoCse = "CommonSubexpressionElimination";

std::unique_ptr<InferenceSession> session(const std::vector<uint8_t>& bytes, bool cse = true) {
  SessionOptions o;
  if (!cse) o.add_config_entry("optimization.disable_specified_optimizers", kNoCse);
  return InferenceSession::create_from_bytes(bytes, o);
}

std::vector<std::vector<float>> run(InferenceSession& s, const Tensor& x) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : s.run({{"x", x}})) out.push_back(t.to_vector<float>());
  return out;
}

// Two "layers" each reshape x to [rows, 2, cols / 2] from x's own Shape,
// through their own copies of the same index and axes constants, then add:
// one chain is left, and a third with a different index constant stays.
std::vector<uint8_t> layered_model() {
  ModelBuilder b(17);
  b.input("x", {-1, 6}).output("y", {-1, 2, 3});
  for (const std::string l : {"0", "1", "2"}) {
    b.initializer_i64("idx" + l, {}, {l == "2" ? 1 : 0});  // layers 0 and 1: the same value
    b.initializer_i64("axes" + l, {1}, {0});
    b.initializer_i64("tail" + l, {2}, {2, -1});
    b.node("Shape", {"x"}, {"s" + l});
    b.node("Gather", {"s" + l, "idx" + l}, {"d" + l});
    b.node("Unsqueeze", {"d" + l, "axes" + l}, {"u" + l});
    ModelBuilder::attr_int(b.node("Concat", {"u" + l, "tail" + l}, {"shape" + l}), "axis", 0);
    b.node("Relu", {"x"}, {"r" + l});
  }
  // Layer 2 gathers dimension 1 (6): [6, 2, -1] of 24 values is [6, 2, 2].
  b.node("Reshape", {"r0", "shape0"}, {"a"});
  b.node("Reshape", {"r1", "shape1"}, {"c"});
  b.node("Add", {"a", "c"}, {"y"});
  b.output("z", {6, 2, 2});
  b.node("Reshape", {"r2", "shape2"}, {"z"});
  return b.bytes();
}

TEST(Cse, RepeatedShapeArithmeticRunsOnceWithTheSameOutputs) {
  const auto bytes = layered_model();
  Tensor x = Tensor::from_vector<float>({4, 6}, {-3, 1, 2, -4, 5, 6, 7, -8, 9, 10, 11, 12,
                                                13, 14, -15, 16, 17, 18, 19, 20, -21, 22, 23, 24});
  auto with = session(bytes), without = session(bytes, false);
  EXPECT_EQ(run(*with, x), run(*without, x));
  // Without: 3 x (Shape, Gather, Unsqueeze, Concat, Relu) + 3 Reshape + Add.
  EXPECT_EQ(without->num_nodes(), 19) << without->optimization_summary();
  // With: Shape and Relu once; Gather, Unsqueeze, Concat for index 0 and
  // for index 1; the Reshapes of r0 and r1 merge (same input, same shape).
  EXPECT_EQ(with->num_nodes(), 11) << with->optimization_summary();
  EXPECT_THAT(with->optimization_summary(), ::testing::HasSubstr("CommonSubexpressionElimination 8"));
}

// Nodes whose outputs are graph outputs keep them; random operators and
// nodes whose attributes differ are never merged (the one Transpose like an
// earlier one is).
TEST(Cse, GraphOutputsRandomOpsAndOtherAttributesAreKept) {
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y", {2, 3}).output("z", {2, 3}).output("t", {3, 2}).output("v", {2, 3});
  b.output("w", {2, 3});
  b.node("Relu", {"x"}, {"y"});
  b.node("Relu", {"x"}, {"z"});
  ModelBuilder::attr_ints(b.node("Transpose", {"x"}, {"ta"}), "perm", {1, 0});
  ModelBuilder::attr_ints(b.node("Transpose", {"x"}, {"tb"}), "perm", {0, 1});
  ModelBuilder::attr_ints(b.node("Transpose", {"x"}, {"tc"}), "perm", {1, 0});
  b.node("Add", {"ta", "tc"}, {"t"});
  b.node("Add", {"tb", "x"}, {"v"});
  ModelBuilder::attr_float(b.node("RandomUniformLike", {"x"}, {"n0"}), "seed", 1.0f);
  ModelBuilder::attr_float(b.node("RandomUniformLike", {"x"}, {"n1"}), "seed", 1.0f);
  b.node("Add", {"n0", "n1"}, {"w"});
  const auto bytes = b.bytes();
  auto with = session(bytes), without = session(bytes, false);
  EXPECT_EQ(with->num_nodes(), without->num_nodes() - 1) << with->optimization_summary();
  EXPECT_THAT(with->optimization_summary(), ::testing::HasSubstr("CommonSubexpressionElimination 1"));
  Tensor x = Tensor::from_vector<float>({2, 3}, {-1, 2, -3, 4, -5, 6});
  const auto got = run(*with, x);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], (std::vector<float>{0, 2, 0, 4, 0, 6}));
  EXPECT_EQ(got[1], got[0]);
  EXPECT_EQ(got[2], (std::vector<float>{-2, 8, 4, -10, -6, 12}));
  EXPECT_EQ(got[3], (std::vector<float>{-2, 4, -6, 8, -10, 12}));
}

}  // namespace
}  // namespace spindle
