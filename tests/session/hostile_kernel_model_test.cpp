// hostile_kernel_model_test.cpp — the ~100-byte models of issue 11 whose
// kernels read or wrote out of bounds: an initializer whose dims multiply
// past 2^63 feeding Gather (returned heap bytes) or ScatterElements (wrote
// past the buffer, during constant folding when the indices are constant;
// the loader now refuses the initializer, naming its shape),
// ConstantOfShape / Reshape / Tile with overflowing targets folded at load,
// and the same nodes at run time. Each must end in a spindle::Error naming
// what was wrong; a session that loads stays usable after a failed run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using testing::ModelBuilder;
using ::testing::HasSubstr;

constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int64_t k2p62 = int64_t{1} << 62;

// Expects loading to fail with a spindle::Error holding every needle.
void expect_load_error(const ModelBuilder& m, const std::vector<std::string>& needles) {
  try {
    auto s = InferenceSession::create_from_bytes(m.bytes());
    ADD_FAILURE() << "expected the model to be refused";
  } catch (const Error& e) {
    for (const std::string& n : needles) EXPECT_THAT(std::string(e.what()), HasSubstr(n));
  }
}

// dims [2^62 + 1, 4] with 16 bytes of data: the element count wraps when
// multiplied unchecked.
void add_overflowing_initializer(ModelBuilder& m) { m.initializer("big", {k2p62 + 1, 4}, {1, 2, 3, 4}); }

TEST(HostileKernelModels, GatherFromOverflowingInitializerIsRefused) {
  ModelBuilder m(13);
  add_overflowing_initializer(m);
  m.input("i", {1}, kInt64).output("y", {1, 4});
  m.node("Gather", {"big", "i"}, {"y"});
  expect_load_error(m, {"4611686018427387905, 4"});
}

TEST(HostileKernelModels, ScatterElementsIntoOverflowingInitializerIsRefusedBeforeFolding) {
  ModelBuilder m(13);
  add_overflowing_initializer(m);
  m.initializer_i64("idx", {1, 1}, {100000});
  m.initializer("upd", {1, 1}, {9});
  m.output("y", {-1, 4});
  m.node("ScatterElements", {"big", "idx", "upd"}, {"y"});
  expect_load_error(m, {"4611686018427387905, 4"});
}

// Folded at load: the errors name the node and the shape (ConstantOfShape
// used to raise SIGFPE, Reshape to wrap its dim product).
TEST(HostileKernelModels, OverflowingShapesFoldedAtLoadNameTheNode) {
  {
    ModelBuilder m(13);
    m.initializer_i64("shape", {2}, {k2p62 + 1, 4});
    m.output("y", {-1, 4});
    m.node("ConstantOfShape", {"shape"}, {"y"}, "cos");
    expect_load_error(m, {"ConstantOfShape 'cos'", "64-bit"});
  }
  {
    ModelBuilder m(13);
    m.initializer("x", {2, 2}, {1, 2, 3, 4});
    m.initializer_i64("shape", {3}, {-1, k2p62, 4});
    m.output("y", {-1, -1, 4});
    m.node("Reshape", {"x", "shape"}, {"y"}, "rs");
    expect_load_error(m, {"Reshape 'rs'", "64-bit"});
  }
}

// The same at run time, with the shapes fed as inputs: a clean error, and
// the session runs the next good input.
TEST(HostileKernelModels, OverflowingShapesAtRunTimeLeaveTheSessionUsable) {
  ModelBuilder m(13);
  m.input("x", {2}).input("reps", {1}, kInt64).output("y", {-1});
  m.node("Tile", {"x", "reps"}, {"y"}, "tile");
  auto s = InferenceSession::create_from_bytes(m.bytes());
  const Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  try {
    s->run({{"x", x}, {"reps", Tensor::from_vector<int64_t>({1}, {k2p62})}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("Tile 'tile'"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("64-bit"));
  }
  auto out = s->run({{"x", x}, {"reps", Tensor::from_vector<int64_t>({1}, {2})}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2, 1, 2}));
}

}  // namespace
}  // namespace spindle
