// executor_test.cpp — the executors on their own (no session): a compiled
// Plan run by run_sequential and run_parallel over inter-op pools of every
// size (0 = automatic), errors and cancellation, runs started from an
// inter-op thread, and many runs of one plan at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "exec/executor.h"
#include "graph/graph.h"
#include "session/model_builder.h"

namespace spindle::exec {
namespace {

using ::testing::HasSubstr;
using spindle::testing::ModelBuilder;

constexpr int kBranches = 12;
constexpr int64_t kN = 4096;

// x: float [kN]; shape: int64 [2]. Twelve independent branches
// y_i = tanh(x * c_i) + x, then r = Reshape(y_0, shape): a bad `shape` makes
// one node fail at run time while the others run.
std::unique_ptr<Plan> wide_plan() {
  ModelBuilder b;
  b.input("x", {kN}).input("shape", {2}, onnx::TensorProto::INT64);
  for (int i = 0; i < kBranches; ++i) {
    const std::string k = std::to_string(i);
    b.initializer("c" + k, {}, {0.1f * static_cast<float>(i + 1)});
    b.node("Mul", {"x", "c" + k}, {"m" + k});
    b.node("Tanh", {"m" + k}, {"t" + k});
    b.node("Add", {"t" + k, "x"}, {"y" + k});
    b.output("y" + k, {kN});
  }
  b.node("Reshape", {"y0", "shape"}, {"r"});
  b.output("r", {-1, -1});
  const std::vector<uint8_t> bytes = b.bytes();
  auto g = graph::load_model_bytes(bytes, "wide", ".");
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  auto plan = Plan::compile(std::move(g).value());
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return std::move(plan).value();
}

Tensor x_feed() {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 101) / 40.0f - 1.2f;
  return Tensor::from_vector<float>({kN}, v);
}

// One run on `frame`: the outputs' bytes, or the error thrown.
std::vector<std::vector<float>> run_once(const Plan& plan, Frame& frame, const std::vector<int64_t>& shape,
                                         ThreadPool* intra, TaskPool* inter, const RunControl& control = {}) {
  const graph::Graph& g = plan.graph();
  frame.begin_run();
  frame.values()[static_cast<size_t>(g.value_id("x"))] = x_feed();
  frame.values()[static_cast<size_t>(g.value_id("shape"))] = Tensor::from_vector<int64_t>({2}, shape);
  std::vector<std::vector<float>> out;
  try {
    if (inter)
      run_parallel(plan, frame, intra, *inter, control);
    else
      run_sequential(plan, frame, intra, control);
    for (int id : g.outputs) out.push_back(frame.values()[static_cast<size_t>(id)].to_vector<float>());
  } catch (...) {
    frame.end_run();
    throw;
  }
  frame.end_run();
  return out;
}

std::unique_ptr<TaskPool> tasks(int n) { return TaskPool::create(ThreadingOptions{.num_threads = n}).value(); }
std::unique_ptr<ThreadPool> intra(int n) { return ThreadPool::create(ThreadingOptions{.num_threads = n}).value(); }

class InterOpSizes : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Threads, InterOpSizes, ::testing::Values(0, 1, 2, 4));

TEST_P(InterOpSizes, ParallelRunsMatchSequentialBitwise) {
  auto plan = wide_plan();
  Frame frame(*plan);
  const auto expected = run_once(*plan, frame, {64, 64}, nullptr, nullptr);
  ASSERT_EQ(expected.size(), static_cast<size_t>(kBranches + 1));
  auto inter = tasks(GetParam());
  auto pool = intra(2);
  for (int rep = 0; rep < 20; ++rep) {
    ASSERT_EQ(run_once(*plan, frame, {64, 64}, nullptr, inter.get()), expected) << "rep " << rep;
    ASSERT_EQ(run_once(*plan, frame, {64, 64}, pool.get(), inter.get()), expected) << "rep " << rep;
  }
}

// The failing node's error reaches the caller after every task of the run
// ended (they reference the run's locals: under ASan a task that outlived
// the run is a use-after-free), and the same pool and frame serve the next run.
TEST_P(InterOpSizes, ErrorIsRethrownAfterEveryTaskEndedAndThePoolStaysUsable) {
  auto plan = wide_plan();
  Frame frame(*plan);
  const auto expected = run_once(*plan, frame, {64, 64}, nullptr, nullptr);
  auto inter = tasks(GetParam());
  for (int rep = 0; rep < 20; ++rep) {
    try {
      run_once(*plan, frame, {3, 5}, nullptr, inter.get());
      FAIL() << "a Reshape of 4096 elements to [3, 5] must fail";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("Reshape"));
    }
    ASSERT_EQ(run_once(*plan, frame, {64, 64}, nullptr, inter.get()), expected);
  }
}

// Buffers that reach a frame from outside (here the feed x, a fresh tensor
// every run that the frame ends up owning alone; in sessions an If branch's
// outputs) are recycled into its cache; the cache stays bounded instead of
// growing by one buffer per run (it grew without end, and allocation slowed
// with it, under a model of nested Ifs run for hours).
TEST(Executor, FrameCacheStaysBoundedWhenBuffersArriveEveryRun) {
  auto plan = wide_plan();
  Frame frame(*plan);
  const auto expected = run_once(*plan, frame, {64, 64}, nullptr, nullptr);
  for (int rep = 0; rep < 3000; ++rep) ASSERT_EQ(run_once(*plan, frame, {64, 64}, nullptr, nullptr), expected);
  EXPECT_LE(frame.cached_buffers(), frame.max_cached_buffers());
  EXPECT_LE(frame.max_cached_buffers(), static_cast<size_t>(plan->graph().num_values()) + 16);
  EXPECT_GE(frame.cached_buffers(), static_cast<size_t>(kBranches));  // still reusing
}

TEST(Executor, TerminateCancelsBothExecutors) {
  auto plan = wide_plan();
  Frame frame(*plan);
  std::atomic<bool> terminate{true};
  kernels::RunLimits limits;
  limits.terminate = &terminate;
  RunControl control;
  control.limits = &limits;
  auto inter = tasks(2);
  for (TaskPool* p : {static_cast<TaskPool*>(nullptr), inter.get()}) {
    try {
      run_once(*plan, frame, {64, 64}, nullptr, p, control);
      FAIL() << "a terminated run must fail";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::kCancelled);
    }
  }
  terminate = false;
  EXPECT_EQ(run_once(*plan, frame, {64, 64}, nullptr, inter.get(), control).size(), static_cast<size_t>(kBranches + 1));
}

// A run started on the pool's only thread (as run_async does) has no other
// thread to run its tasks: the caller runs them itself instead of waiting.
TEST(Executor, RunStartedFromTheOnlyInterOpThreadCompletes) {
  auto plan = wide_plan();
  Frame reference_frame(*plan);
  const auto expected = run_once(*plan, reference_frame, {64, 64}, nullptr, nullptr);
  auto inter = tasks(1);
  for (int rep = 0; rep < 20; ++rep) {
    auto result = inter->fork([&] {
      Frame frame(*plan);
      return run_once(*plan, frame, {64, 64}, nullptr, inter.get());
    });
    ASSERT_EQ(result.get(), expected);
  }
}

TEST(Executor, ManyRunsOfOnePlanAtOnceEachWithItsFrame) {
  auto plan = wide_plan();
  Frame reference_frame(*plan);
  const auto expected = run_once(*plan, reference_frame, {64, 64}, nullptr, nullptr);
  auto inter = tasks(2);
  auto pool = intra(2);
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&, c] {
      Frame frame(*plan);
      for (int rep = 0; rep < 10; ++rep)
        if (run_once(*plan, frame, {64, 64}, c % 2 ? pool.get() : nullptr, c % 3 ? inter.get() : nullptr) != expected)
          ++wrong;
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace spindle::exec

namespace spindle::exec {
namespace {

// A subset of the outputs: only the nodes they depend on run, in both
// executors, with the values a full run gives; the other outputs are never
// produced (no buffer: end_run leaves the previous run's values empty) and
// the failing Reshape of another branch does not run.
TEST_P(InterOpSizes, ASubsetRunsOnlyTheNodesItsOutputsNeed) {
  auto plan = wide_plan();
  const graph::Graph& g = plan->graph();
  const int y3 = g.value_id("y3"), r = g.value_id("r"), x = g.value_id("x");
  EXPECT_EQ(plan->subset(g.outputs), nullptr);  // every node
  const auto one = plan->subset({y3});
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->count, 3);
  EXPECT_EQ(one->value_uses[static_cast<size_t>(x)], 2);  // Mul and Add of branch 3
  EXPECT_EQ(plan->subset({y3, y3}), one);                 // cached, repeats ignored
  const auto with_r = plan->subset({r, y3});
  ASSERT_NE(with_r, nullptr);
  EXPECT_EQ(with_r->count, 7);  // branches 0 and 3, and the Reshape
  EXPECT_EQ(plan->subset({y3, r}), with_r);

  Frame frame(*plan);
  const auto full = run_once(*plan, frame, {64, 64}, nullptr, nullptr);
  auto inter = tasks(GetParam());
  for (int rep = 0; rep < 10; ++rep)
    for (TaskPool* pool : {static_cast<TaskPool*>(nullptr), inter.get()}) {
      frame.begin_run(one.get());
      frame.values()[static_cast<size_t>(x)] = x_feed();
      frame.values()[static_cast<size_t>(g.value_id("shape"))] = Tensor::from_vector<int64_t>({2}, {5, 5});  // bad
      if (pool)
        run_parallel(*plan, frame, nullptr, *pool, {});
      else
        run_sequential(*plan, frame, nullptr, {});
      EXPECT_EQ(frame.values()[static_cast<size_t>(y3)].to_vector<float>(), full[3]) << "rep " << rep;
      for (int i = 0; i < kBranches; ++i)
        if (i != 3) EXPECT_EQ(frame.values()[static_cast<size_t>(g.outputs[static_cast<size_t>(i)])].buffer(), nullptr) << i;
      EXPECT_EQ(frame.values()[static_cast<size_t>(r)].buffer(), nullptr);
      frame.end_run();
      // A full run on the same frame afterwards still computes everything.
      ASSERT_EQ(run_once(*plan, frame, {64, 64}, nullptr, pool), full) << "rep " << rep;
    }
}

}  // namespace
}  // namespace spindle::exec
