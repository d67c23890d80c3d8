// load_limits_test.cpp — what bounds loading a model: functions whose
// expansion would explode are refused before anything is expanded
// (session.max_graph_nodes), optimizer passes stay linear on long chains, a
// load deadline (session.load_timeout_ms), names assigned once as the onnx
// checker requires, and run deadlines that cannot overflow.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "../session/model_builder.h"
#include "graph/graph.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

Status load(const ModelBuilder& b) {
  const auto bytes = b.bytes();
  auto g = graph::load_model_bytes(bytes, "m.onnx", {}, {});
  return g.is_ok() ? Status::ok() : g.status();
}

// Status of creating a session (the error when it fails).
Status create(const ModelBuilder& b, const SessionOptions& o = {}) {
  try {
    InferenceSession::create_from_bytes(b.bytes(), o);
    return Status::ok();
  } catch (const Error& e) {
    return e.status();
  }
}

// Functions F0 .. F<levels-1> of domain "fan": F0(x) = Relu(x), F<k>(x) =
// F<k-1>(F<k-1>(x)); the model calls the last once, so it expands to
// 2^(levels-1) Relus from a few bytes per level.
ModelBuilder fan_out_model(int levels) {
  ModelBuilder b(18);
  b.input("x", {3}).output("y", {3});
  auto* d = b.proto().add_opset_import();
  d->set_domain("fan");
  d->set_version(1);
  for (int k = 0; k < levels; ++k) {
    onnx::FunctionProto& f = *b.proto().add_functions();
    f.set_name("F" + std::to_string(k));
    f.set_domain("fan");
    f.add_input("x");
    f.add_output("y");
    auto* op = f.add_opset_import();
    op->set_domain("");
    op->set_version(18);
    if (k == 0) {
      auto* n = f.add_node();
      n->set_op_type("Relu");
      n->add_input("x");
      n->add_output("y");
      continue;
    }
    for (const auto& [in, out] : {std::pair{"x", "t"}, std::pair{"t", "y"}}) {
      auto* n = f.add_node();
      n->set_op_type("F" + std::to_string(k - 1));
      n->set_domain("fan");
      n->add_input(in);
      n->add_output(out);
    }
  }
  b.node("F" + std::to_string(levels - 1), {"x"}, {"y"}, "call").set_domain("fan");
  return b;
}

TEST(LoadLimits, FunctionsThatWouldExpandExponentiallyAreRefusedBeforeExpanding) {
  // 2^29 Relus from ~2 KB; expanding them took 3 GiB within seconds.
  ModelBuilder b = fan_out_model(30);
  EXPECT_LT(b.bytes().size(), 4096u);
  const Status s = create(b);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("the model has 536870912 nodes once its functions are expanded"));
  EXPECT_THAT(s.message(), HasSubstr("more than session.max_graph_nodes = 1000000"));
}

TEST(LoadLimits, TheExpandedNodeCountIsTheSessionsToSet) {
  ModelBuilder b = fan_out_model(5);  // 16 Relus
  auto s = InferenceSession::create_from_bytes(b.bytes());
  EXPECT_EQ(s->run({{"x", Tensor::from_vector<float>({3}, {-1, 0, 2})}})[0].to_vector<float>(),
            (std::vector<float>{0, 0, 2}));
  SessionOptions o;
  o.add_config_entry("session.max_graph_nodes", "15");
  const Status refused = create(b, o);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.message(), HasSubstr("the model has 16 nodes once its functions are expanded (subgraphs included), "
                                           "more than session.max_graph_nodes = 15"));
  o.add_config_entry("session.max_graph_nodes", "16");
  EXPECT_TRUE(create(b, o).is_ok());
  EXPECT_THROW(o.add_config_entry("session.max_graph_nodes", "-1"), Error);
}

// A chain of `n` single-input nodes `op` from x to y (with `constant` as the
// second input of each, when given).
ModelBuilder chain(const std::string& op, int n, int opset, const std::string& constant = "") {
  ModelBuilder b(opset);
  b.input("x", {2}).output("y", {2});
  if (!constant.empty()) b.initializer(constant, {1}, {1.0f});
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> in = {i == 0 ? "x" : "v" + std::to_string(i)};
    if (!constant.empty()) in.push_back(constant);
    b.node(op, in, {i + 1 == n ? "y" : "v" + std::to_string(i + 1)});
  }
  return b;
}

// Each pass asked "who reads this value" by scanning every node: a chain of
// 100000 Identity nodes loaded in 42 s, 100000 Add-a-constant nodes in over
// 200 s. Linear passes load them in well under a second; the load deadline
// (generous for a loaded machine) turns a relapse into a failure.
TEST(LoadLimits, LongChainsLoadInLinearTime) {
  SessionOptions o;
  o.add_config_entry("session.load_timeout_ms", "30000");
  const auto x = Tensor::from_vector<float>({2}, {1, -2});
  for (const char* op : {"Identity", "Dropout"}) {
    auto s = InferenceSession::create_from_bytes(chain(op, 100000, 13).bytes(), o);
    EXPECT_EQ(s->num_nodes(), 1) << op;  // the last one writes the graph output
    EXPECT_EQ(s->run({{"x", x}})[0].to_vector<float>(), (std::vector<float>{1, -2})) << op;
  }
  auto s = InferenceSession::create_from_bytes(chain("Add", 100000, 13, "one").bytes(), o);
  EXPECT_EQ(s->run({{"x", x}})[0].to_vector<float>(), (std::vector<float>{100001, 99998}));
}

TEST(LoadLimits, ALoadDeadlineBoundsSessionCreation) {
  SessionOptions o;
  o.add_config_entry("session.load_timeout_ms", "1");
  const Status s = create(chain("Add", 100000, 13, "one"), o);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("creating the session took longer than session.load_timeout_ms = 1 ms (while "));
  EXPECT_THROW(o.add_config_entry("session.load_timeout_ms", "soon"), Error);
}

TEST(LoadLimits, RunDeadlinesTooFarAwayToRepresentAreNoLimit) {
  // now() + 10^13 ms overflowed into the past: every run failed at once
  // with a false "exceeded its time limit".
  auto s = InferenceSession::create_from_bytes(chain("Add", 3, 13, "one").bytes());
  for (int64_t ms : {int64_t{10'000'000'000'000}, int64_t{1} << 62, std::numeric_limits<int64_t>::max()}) {
    RunOptions ro;
    ro.timeout_ms = ms;
    EXPECT_EQ(s->run({{"x", Tensor::from_vector<float>({2}, {0, 1})}}, {}, &ro)[0].to_vector<float>(),
              (std::vector<float>{3, 4}))
        << ms;
  }
}

TEST(SingleAssignment, ANameAssignedTwiceIsRefusedAsTheOnnxCheckerRefusesIt) {
  {
    ModelBuilder b;
    b.input("x", {1}).output("y", {1});
    b.initializer("w", {1}, {1.0f}).initializer("w", {1}, {2.0f});
    b.node("Add", {"x", "w"}, {"y"});
    EXPECT_THAT(load(b).message(), HasSubstr("'w' is assigned twice, as an initializer and as an initializer"));
  }
  {
    ModelBuilder b;
    b.input("x", {1}).output("y", {1});
    b.initializer("w", {1}, {1.0f});
    b.node("Relu", {"x"}, {"w"}, "r");
    b.node("Add", {"x", "w"}, {"y"});
    EXPECT_THAT(load(b).message(), HasSubstr("'w' is assigned twice, as an initializer and as an output of node Relu 'r'"));
  }
  {
    ModelBuilder b;
    b.input("x", {1}).output("y", {1});
    b.node("Relu", {"x"}, {"x"}, "r");
    b.node("Relu", {"x"}, {"y"});
    EXPECT_THAT(load(b).message(), HasSubstr("'x' is assigned twice, as a graph input and as an output of node Relu 'r'"));
  }
  {
    ModelBuilder b;
    b.input("x", {1}).output("y", {1});
    b.node("Relu", {"x"}, {"y"}, "a");
    b.node("Neg", {"x"}, {"y"}, "b");
    const Status s = load(b);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("'y' is assigned twice, as an output of node Relu 'a' and as an output of node Neg 'b'"));
  }
  {
    // An input with a default value (also an initializer) is one assignment.
    ModelBuilder b;
    b.input("x", {1}).input("w", {1}).output("y", {1});
    b.initializer("w", {1}, {1.0f});
    b.node("Add", {"x", "w"}, {"y"});
    EXPECT_TRUE(load(b).is_ok());
  }
}

}  // namespace
}  // namespace spindle
