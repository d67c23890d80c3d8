// rotary_fusion_test.cpp — rotary position embeddings written with
// rotate_half, as LLaMA-style decoders are exported:
//   y = x * cos + Concat(Neg(x[..., h:]), x[..., :h]) * sin
// become one spindle.RotaryHalf with the unfused graph's bits at any thread
// count; shapes the fast path does not take at run time run the replaced
// nodes; look-alikes stay as they are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "../session/model_builder.h"
#include "graph/attention_test_util.h"

namespace spindle {
namespace {

using testing::ModelBuilder;
using testing::random_values;
using testing::run_model;

// x [B, H, S, D] (D = 2 * half when the feeds say so), cos / sin of
// `trig_shape` (inputs, so computed at run time as exported). `axis` is the
// Slices' axis (3 or -1), `end` the upper Slice's end; `swap` writes the
// Muls' and the Add's operands the other way round; `lower_first` makes the
// Concat a look-alike (no rotation: not fused).
struct RotaryModel {
  int64_t half = 8, axis = 3, end = std::numeric_limits<int64_t>::max();
  bool swap = false, lower_first = false;
  std::vector<int64_t> trig_shape = {1, 1, -1, -1};
};

std::vector<uint8_t> rotary_model(const RotaryModel& m) {
  ModelBuilder b(14);
  b.input("x", {-1, -1, -1, -1}).input("cos", m.trig_shape).input("sin", m.trig_shape);
  b.output("y", {-1, -1, -1, -1});
  b.initializer_i64("h", {1}, {m.half});
  b.initializer_i64("zero", {1}, {0});
  b.initializer_i64("end", {1}, {m.end});
  b.initializer_i64("ax", {1}, {m.axis});
  b.initializer_i64("one", {1}, {1});
  b.node("Slice", {"x", "h", "end", "ax", "one"}, {"x2"});
  b.node("Slice", {"x", "zero", "h", "ax"}, {"x1"});
  b.node("Neg", {"x2"}, {"nx2"});
  ModelBuilder::attr_int(b.node("Concat", m.lower_first ? std::vector<std::string>{"x1", "nx2"}
                                                         : std::vector<std::string>{"nx2", "x1"},
                                {"r"}),
                         "axis", -1);
  b.node("Mul", m.swap ? std::vector<std::string>{"cos", "x"} : std::vector<std::string>{"x", "cos"}, {"a"});
  b.node("Mul", m.swap ? std::vector<std::string>{"sin", "r"} : std::vector<std::string>{"r", "sin"}, {"c"});
  b.node("Add", m.swap ? std::vector<std::string>{"c", "a"} : std::vector<std::string>{"a", "c"}, {"y"});
  return b.bytes();
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  return Tensor::from_vector<float>(shape, random_values(static_cast<size_t>(shape_numel(shape)), seed));
}

Feeds rotary_feeds(const Shape& x, const Shape& trig, uint32_t seed) {
  return {{"x", random_tensor(x, seed)}, {"cos", random_tensor(trig, seed + 1)}, {"sin", random_tensor(trig, seed + 2)}};
}

// The optimized model (RotaryFusion `fused` times) gives the unfused
// graph's bits at 1, 2 and 3 threads.
void expect_same_bits(const std::vector<uint8_t>& bytes, const Feeds& feeds, int fused) {
  const auto want = run_model(bytes, feeds, 1, false);
  for (int threads : {1, 2, 3}) {
    std::string summary;
    const auto got = run_model(bytes, feeds, threads, true, &summary);
    EXPECT_THAT(summary, ::testing::HasSubstr(fmt::format("RotaryFusion {}", fused)));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].shape(), want[0].shape());
    EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>()) << threads << " threads";
  }
}

// The exported form and its variants: a decode step's one row and a
// prefill's many, query heads (8) and key-value heads (2), cos / sin
// [1, 1, S, D] and [S, D], the Slices' axis 3 or -1, an end of exactly D,
// the operands swapped.
TEST(RotaryFusion, RotateHalfBecomesOneNodeBitwise) {
  for (int64_t heads : {8, 2})
    for (int64_t S : {1, 37}) {
      SCOPED_TRACE(::testing::Message() << heads << " heads, " << S << " rows");
      const Shape x = {1, heads, S, 16};
      expect_same_bits(rotary_model({}), rotary_feeds(x, {1, 1, S, 16}, 91), 1);
      expect_same_bits(rotary_model({.axis = -1, .end = 16, .swap = true, .trig_shape = {-1, -1}}),
                       rotary_feeds(x, {S, 16}, 92), 1);
    }
}

// Run-time shapes the fast path does not take run the replaced nodes, with
// their results: a last axis that is not 2 * half (D = 20 with half 8: the
// Concat joins 12 and 8 values), and cos / sin that widen x (a batch of 2
// against x's 1).
TEST(RotaryFusion, ShapesOutsideTheFastPathRunTheNodes) {
  expect_same_bits(rotary_model({.half = 8, .end = 20}), rotary_feeds({1, 2, 3, 20}, {1, 1, 3, 20}, 93), 1);
  expect_same_bits(rotary_model({.trig_shape = {-1, -1, -1, -1}}), rotary_feeds({1, 2, 3, 16}, {2, 2, 3, 16}, 94), 1);
}

// The Concat of the halves in the other order is no rotation: left alone.
TEST(RotaryFusion, ConcatInTheOtherOrderIsLeftAlone) {
  expect_same_bits(rotary_model({.lower_first = true}), rotary_feeds({1, 2, 3, 16}, {1, 1, 3, 16}, 95), 0);
}

}  // namespace
}  // namespace spindle
