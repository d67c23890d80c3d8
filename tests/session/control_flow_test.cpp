// control_flow_test.cpp — If, Loop and Scan through whole sessions: values
// read from enclosing graphs (two levels up, and through an Identity the
// optimizer removes), early exit on the body's condition, zero iterations,
// scan axes and directions, both executors, and clear errors for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <thread>

#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;
constexpr int kBool = onnx::TensorProto::BOOL;
constexpr int kInt64 = onnx::TensorProto::INT64;

std::vector<SessionOptions> all_modes() {
  std::vector<SessionOptions> out;
  for (ExecutionMode mode : {ExecutionMode::kSequential, ExecutionMode::kParallel})
    for (int level : {0, 99}) {
      SessionOptions o;
      o.execution_mode = mode;
      o.graph_optimization_level = static_cast<GraphOptimizationLevel>(level);
      out.push_back(o);
    }
  return out;
}

// y = c ? (c ? sq - xi : xi) + xi : -xi, with xi = Identity(x), sq = x * x;
// the inner If reads c, sq and xi from the main graph.
std::vector<uint8_t> nested_if_model() {
  ModelBuilder inner_then, inner_else, then_b, else_b, m;
  inner_then.output("r", {3});
  inner_then.node("Sub", {"sq", "xi"}, {"r"});
  inner_else.output("r2", {3});
  inner_else.node("Identity", {"xi"}, {"r2"});
  then_b.output("t", {3});
  auto& inner = then_b.node("If", {"c"}, {"inner"});
  ModelBuilder::attr_graph(inner, "then_branch", inner_then);
  ModelBuilder::attr_graph(inner, "else_branch", inner_else);
  then_b.node("Add", {"inner", "xi"}, {"t"});
  else_b.output("e", {3});
  else_b.node("Neg", {"xi"}, {"e"});
  m.input("x", {3}).input("c", {}, kBool).output("y", {3});
  m.node("Identity", {"x"}, {"xi"});
  m.node("Mul", {"x", "x"}, {"sq"});
  auto& outer = m.node("If", {"c"}, {"y"});
  ModelBuilder::attr_graph(outer, "then_branch", then_b);
  ModelBuilder::attr_graph(outer, "else_branch", else_b);
  return m.bytes();
}

TEST(ControlFlow, NestedIfReadsValuesFromEveryEnclosingGraph) {
  const Tensor x = Tensor::from_vector<float>({3}, {1, 2, -3});
  for (const SessionOptions& o : all_modes()) {
    auto s = InferenceSession::create_from_bytes(nested_if_model(), o);
    EXPECT_EQ(s->run({{"x", x}, {"c", Tensor::scalar<bool>(true)}})[0].to_vector<float>(),
              (std::vector<float>{1, 4, 9}));  // (x*x - x) + x
    EXPECT_EQ(s->run({{"x", x}, {"c", Tensor::scalar<bool>(false)}})[0].to_vector<float>(),
              (std::vector<float>{-1, -2, 3}));
    StatusCode code = StatusCode::kOk;
    try {
      s->run({{"x", x}, {"c", Tensor::from_vector<bool>({2}, {true, false})}});
    } catch (const Error& e) {
      code = e.code();
      EXPECT_THAT(std::string(e.what()), HasSubstr("cond is bool 2, expected a single bool"));
    }
    EXPECT_EQ(code, StatusCode::kInvalidArgument);
  }
}

// Loop(M, cond = true, acc): acc += x each iteration, stops after the
// iteration where i reaches stop_at; scan output acc * i per iteration.
std::vector<uint8_t> loop_model(bool with_m = true, bool with_cond = true) {
  ModelBuilder body, m;
  body.input("i", {}, kInt64).input("cond_in", {}, kBool).input("acc", {3}).output("cond_out", {}, kBool)
      .output("acc_out", {3}).output("scan", {3});
  body.node("Add", {"acc", "x"}, {"acc_out"});
  body.node("Less", {"i", "stop_at"}, {"cond_out"});
  body.node("Cast", {"i"}, {"fi"});
  ModelBuilder::attr_int(body.proto().mutable_graph()->mutable_node(2)[0], "to", onnx::TensorProto::FLOAT);
  body.node("Mul", {"acc_out", "fi"}, {"scan"});
  m.input("x", {3}).input("M", {}, kInt64).input("stop_at", {}, kInt64).input("acc0", {3});
  m.output("acc", {3}).output("scans", {-1, 3});
  m.initializer("cond", {}, {1});
  m.proto().mutable_graph()->mutable_initializer(0)->set_data_type(kBool);
  m.proto().mutable_graph()->mutable_initializer(0)->clear_float_data();
  m.proto().mutable_graph()->mutable_initializer(0)->add_int32_data(1);
  auto& loop = m.node("Loop", {with_m ? "M" : "", with_cond ? "cond" : "", "acc0"}, {"acc", "scans"});
  ModelBuilder::attr_graph(loop, "body", body);
  return m.bytes();
}

TEST(ControlFlow, LoopStopsOnTheTripCountOrTheBodyConditionAndStacksScanOutputs) {
  const Tensor x = Tensor::from_vector<float>({3}, {1, 10, 100});
  const Tensor acc0 = Tensor::from_vector<float>({3}, {0.5f, 0.5f, 0.5f});
  for (const SessionOptions& o : all_modes()) {
    auto s = InferenceSession::create_from_bytes(loop_model(), o);
    auto run = [&](int64_t trips, int64_t stop_at) {
      return s->run({{"x", x}, {"M", Tensor::scalar<int64_t>(trips)}, {"stop_at", Tensor::scalar<int64_t>(stop_at)},
                     {"acc0", acc0}});
    };
    // The condition stops it: iterations 0, 1, 2 run (i < 2 is false after i = 2).
    auto out = run(10, 2);
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{3.5f, 30.5f, 300.5f}));
    EXPECT_EQ(out[1].shape(), (Shape{3, 3}));
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0, 0, 0, 2.5f, 20.5f, 200.5f, 7, 61, 601}));
    // The trip count stops it.
    out = run(2, 100);
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2.5f, 20.5f, 200.5f}));
    EXPECT_EQ(out[1].shape(), (Shape{2, 3}));
    // No iteration: the initial value, an empty scan output.
    out = run(0, 100);
    EXPECT_EQ(out[0].to_vector<float>(), acc0.to_vector<float>());
    EXPECT_EQ(out[1].shape(), (Shape{0}));
    EXPECT_EQ(out[1].dtype(), DataType::kFloat32);
  }
  // M alone: the body's condition is ignored.
  auto m_only = InferenceSession::create_from_bytes(loop_model(true, false));
  auto out = m_only->run({{"x", x}, {"M", Tensor::scalar<int64_t>(4)}, {"stop_at", Tensor::scalar<int64_t>(0)}, {"acc0", acc0}});
  EXPECT_EQ(out[1].shape(), (Shape{4, 3}));
  // Neither M nor cond would never end: refused when it runs; the session stays usable.
  auto endless = InferenceSession::create_from_bytes(loop_model(false, false));
  try {
    endless->run({{"x", x}, {"M", Tensor::scalar<int64_t>(1)}, {"stop_at", Tensor::scalar<int64_t>(0)}, {"acc0", acc0}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("neither a trip count M nor a condition"));
  }
  EXPECT_EQ(m_only->run({{"x", x}, {"M", Tensor::scalar<int64_t>(1)}, {"stop_at", Tensor::scalar<int64_t>(0)}, {"acc0", acc0}})[0]
                .to_vector<float>(),
            (std::vector<float>{1.5f, 10.5f, 100.5f}));
}

// Scan over X [2, 4] along axis 1, backwards: state sum [2] += column;
// scan output the running sum, stacked along axis 1 in reverse order.
std::vector<uint8_t> scan_model(int64_t num_scan_inputs = 1) {
  ModelBuilder body, m;
  body.input("sum_in", {2}).input("col", {2}).output("sum_out", {2}).output("running", {2});
  body.node("Add", {"sum_in", "col"}, {"sum_out"});
  body.node("Identity", {"sum_out"}, {"running"});
  m.input("s0", {2}).input("X", {2, 4}).output("sum", {2}).output("Y", {2, 4});
  auto& scan = m.node("Scan", {"s0", "X"}, {"sum", "Y"});
  ModelBuilder::attr_graph(scan, "body", body);
  ModelBuilder::attr_int(scan, "num_scan_inputs", num_scan_inputs);
  ModelBuilder::attr_ints(scan, "scan_input_axes", {1});
  ModelBuilder::attr_ints(scan, "scan_input_directions", {1});
  ModelBuilder::attr_ints(scan, "scan_output_axes", {-1});
  ModelBuilder::attr_ints(scan, "scan_output_directions", {1});
  return m.bytes();
}

TEST(ControlFlow, ScanHonoursInputAndOutputAxesAndDirections) {
  const Tensor X = Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, 10, 20, 30, 40});
  for (const SessionOptions& o : all_modes()) {
    auto s = InferenceSession::create_from_bytes(scan_model(), o);
    auto out = s->run({{"s0", Tensor::from_vector<float>({2}, {0, 100})}, {"X", X}});
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{10, 200}));
    // Columns read 3, 2, 1, 0: running sums 4, 7, 9, 10 (and 140, 170, 190, 200),
    // written back in reverse order along the last axis.
    EXPECT_EQ(out[1].shape(), (Shape{2, 4}));
    EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{10, 9, 7, 4, 200, 190, 170, 140}));
  }
}

// num_scan_inputs comes from the model: a count the node's inputs cannot
// hold (-2^63 used to overflow the subtraction, found by fuzz_graph) is
// refused at session creation, naming the attribute.
TEST(ControlFlow, ScanWithAnImpossibleNumScanInputsIsRefused) {
  for (int64_t bad : {std::numeric_limits<int64_t>::min(), int64_t{0}, int64_t{3},
                      std::numeric_limits<int64_t>::max()}) {
    try {
      InferenceSession::create_from_bytes(scan_model(bad), {});
      ADD_FAILURE() << "num_scan_inputs " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("num_scan_inputs " + std::to_string(bad))) << e.what();
    }
  }
}

TEST(ControlFlow, ManyThreadsRunOneLoopSessionAtOnce) {
  // Each run gets its own subgraph frames: concurrent runs do not see each
  // other's iteration values.
  auto s = InferenceSession::create_from_bytes(loop_model());
  const Tensor acc0 = Tensor::from_vector<float>({3}, {0, 0, 0});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const float v = static_cast<float>(t + 1);
      const Tensor x = Tensor::from_vector<float>({3}, {v, v, v});
      for (int r = 0; r < 25; ++r) {
        auto out = s->run({{"x", x}, {"M", Tensor::scalar<int64_t>(3 + t)}, {"stop_at", Tensor::scalar<int64_t>(100)},
                           {"acc0", acc0}});
        if (out[0].to_vector<float>()[0] != v * static_cast<float>(3 + t) || out[1].dim(0) != 3 + t) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ControlFlow, TerminateStopsALongLoopBetweenIterations) {
  // 10^12 iterations: only cancelling ends it.
  auto s = InferenceSession::create_from_bytes(loop_model());
  const Tensor x = Tensor::from_vector<float>({3}, {1, 1, 1});
  const Tensor acc0 = Tensor::from_vector<float>({3}, {0, 0, 0});
  RunOptions ro;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ro.terminate = true;
  });
  StatusCode code = StatusCode::kOk;
  try {
    s->run({{"x", x}, {"M", Tensor::scalar<int64_t>(1000000000000)}, {"stop_at", Tensor::scalar<int64_t>(1000000000000)},
            {"acc0", acc0}},
           {"acc"}, &ro);
  } catch (const Error& e) {
    code = e.code();
    EXPECT_THAT(std::string(e.what()), HasSubstr("RunOptions::terminate"));
  }
  canceller.join();
  EXPECT_EQ(code, StatusCode::kCancelled);
  // Still usable.
  EXPECT_EQ(s->run({{"x", x}, {"M", Tensor::scalar<int64_t>(2)}, {"stop_at", Tensor::scalar<int64_t>(9)}, {"acc0", acc0}})[0]
                .to_vector<float>(),
            (std::vector<float>{2, 2, 2}));
}

// Scan opset 8: a batch axis first, per-item sequence lengths, backwards.
TEST(ControlFlow, Scan8RunsEachBatchItemForItsLengthAndPadsWithZeros) {
  ModelBuilder body, m(8);
  body.input("sum_in", {1}).input("x", {1}).output("sum_out", {1}).output("running", {1});
  body.node("Add", {"sum_in", "x"}, {"sum_out"});
  body.node("Identity", {"sum_out"}, {"running"});
  m.input("lens", {2}, kInt64).input("s0", {2, 1}).input("X", {2, 3, 1}).output("sum", {2, 1}).output("Y", {2, 3, 1});
  auto& scan = m.node("Scan", {"lens", "s0", "X"}, {"sum", "Y"});
  ModelBuilder::attr_graph(scan, "body", body);
  ModelBuilder::attr_int(scan, "num_scan_inputs", 1);
  ModelBuilder::attr_ints(scan, "directions", {1});
  auto s = InferenceSession::create_from_bytes(m.bytes());
  auto out = s->run({{"lens", Tensor::from_vector<int64_t>({2}, {3, 2})},
                     {"s0", Tensor::from_vector<float>({2, 1}, {0, 100})},
                     {"X", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 10, 20, 30})}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{6, 130}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{3, 5, 6, 120, 130, 0}));
  try {
    s->run({{"lens", Tensor::from_vector<int64_t>({2}, {3, 4})}, {"s0", Tensor::from_vector<float>({2, 1}, {0, 0})},
            {"X", Tensor::from_vector<float>({2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("sequence_lens holds 4, expected 1..3"));
  }
}

}  // namespace
}  // namespace spindle
