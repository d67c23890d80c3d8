// static_shapes_test.cpp — the shapes known before any run
// (exec::static_value_shapes) and their way to the kernels
// (NodeInfo::input_shapes): through Conv, pools (ceil_mode), Relu, Concat,
// Add and Flatten from a static input; nothing from a dynamic one, nor
// past an operator whose output shape depends on values.
#include <gtest/gtest.h>

#include <optional>

#include "exec/executor.h"
#include "exec/static_shapes.h"
#include "graph/graph.h"
#include "session/model_builder.h"

namespace spindle::exec {
namespace {

using spindle::testing::ModelBuilder;

// x [dims] -> Conv 3x3 stride 2 pads 1 (8 out) -> Relu -> MaxPool 2x2 / 2
// ceil_mode -> Concat with itself on axis 1 -> Add itself -> Flatten;
// Reshape of x by a run-time shape beside.
graph::Graph chain(const std::vector<int64_t>& dims) {
  ModelBuilder b;
  b.input("x", dims).input("shape", {2}, onnx::TensorProto::INT64);
  b.initializer("w", {8, 3, 3, 3}, std::vector<float>(8 * 3 * 9, 0.5f));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(conv, "strides", {2, 2});
  b.node("Relu", {"c"}, {"r"});
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "pool");
  ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(pool, "strides", {2, 2});
  ModelBuilder::attr_int(pool, "ceil_mode", 1);
  ModelBuilder::attr_int(b.node("Concat", {"p", "p"}, {"cat"}), "axis", 1);
  b.node("Add", {"cat", "cat"}, {"sum"});
  b.node("Flatten", {"sum"}, {"f"});
  b.node("Reshape", {"x", "shape"}, {"rs"});
  b.output("f", {-1, -1}).output("rs", {-1, -1});
  const std::vector<uint8_t> bytes = b.bytes();
  auto g = graph::load_model_bytes(bytes, "chain", ".");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return std::move(g).value();
}

std::optional<Shape> shape_of(const graph::Graph& g, const std::vector<std::optional<Shape>>& shapes,
                              const std::string& name) {
  return shapes[static_cast<size_t>(g.value_id(name))];
}

TEST(StaticShapes, FollowAStaticInputThroughShapeOnlyOperators) {
  const graph::Graph g = chain({1, 3, 25, 25});
  const auto shapes = static_value_shapes(g, true);
  EXPECT_EQ(shape_of(g, shapes, "w"), (Shape{8, 3, 3, 3}));
  EXPECT_EQ(shape_of(g, shapes, "c"), (Shape{1, 8, 13, 13}));  // (25 + 2 - 3) / 2 + 1
  EXPECT_EQ(shape_of(g, shapes, "r"), (Shape{1, 8, 13, 13}));
  EXPECT_EQ(shape_of(g, shapes, "p"), (Shape{1, 8, 7, 7}));  // ceil((13 - 2) / 2) + 1
  EXPECT_EQ(shape_of(g, shapes, "cat"), (Shape{1, 16, 7, 7}));
  EXPECT_EQ(shape_of(g, shapes, "sum"), (Shape{1, 16, 7, 7}));
  EXPECT_EQ(shape_of(g, shapes, "f"), (Shape{1, 16 * 49}));
  EXPECT_EQ(shape_of(g, shapes, "rs"), std::nullopt);  // depends on the values of `shape`
  // A subgraph's inputs are not checked against their declarations: unused.
  EXPECT_EQ(shape_of(g, static_value_shapes(g, false), "c"), std::nullopt);
}

TEST(StaticShapes, ADynamicDimensionGivesNothing) {
  const graph::Graph g = chain({-1, 3, 25, 25});
  const auto shapes = static_value_shapes(g, true);
  EXPECT_EQ(shape_of(g, shapes, "x"), std::nullopt);
  EXPECT_EQ(shape_of(g, shapes, "f"), std::nullopt);
  EXPECT_EQ(shape_of(g, shapes, "w"), (Shape{8, 3, 3, 3}));
}

TEST(StaticShapes, KernelsReceiveTheirInputsShapes) {
  auto plan = Plan::compile(chain({1, 3, 25, 25}), graph::OptimizationLevel::kDisableAll);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  bool seen_pool = false;
  for (const PlanNode& p : plan.value()->nodes()) {
    if (p.info.op_type != "MaxPool") continue;
    seen_pool = true;
    ASSERT_NE(p.info.input_shape(0), nullptr);
    EXPECT_EQ(*p.info.input_shape(0), (Shape{1, 8, 13, 13}));
    EXPECT_EQ(p.info.input_shape(1), nullptr);
  }
  EXPECT_TRUE(seen_pool);
}

}  // namespace
}  // namespace spindle::exec
