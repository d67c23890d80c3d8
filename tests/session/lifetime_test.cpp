// lifetime_test.cpp — who keeps pools and sessions alive: pools replaced or
// their Environment destroyed while sessions run on them, sessions destroyed
// with run_async work outstanding, and set_num_threads governing the default
// sessions created after it. Run under AddressSanitizer these fail loudly
// (heap-use-after-free) when a lifetime is wrong; without it they check the
// effects (every output right, every callback run before the destructor
// returns, the threads a session really starts).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <thread>

#include "../threading/test_util.h"
#include "model_builder.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ModelBuilder;

constexpr int64_t kN = 1 << 16;  // large enough that the kernel splits it across the pool

// y = tanh(x) + x, z = exp(-x): two branches, so parallel mode has inter-op work.
std::vector<uint8_t> wide_model() {
  ModelBuilder b;
  b.input("x", {kN}).output("y", {kN}).output("z", {kN});
  b.node("Tanh", {"x"}, {"t"});
  b.node("Add", {"t", "x"}, {"y"});
  b.node("Neg", {"x"}, {"n"});
  b.node("Exp", {"n"}, {"z"});
  return b.bytes();
}

Tensor feed() {
  std::vector<float> v(kN);
  for (int64_t i = 0; i < kN; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i % 97) / 50.0f - 1.0f;
  return Tensor::from_vector<float>({kN}, v);
}

// The outputs of a first run, to compare every later run with (bitwise: the
// result must not depend on the pool that ran it).
std::vector<std::vector<float>> reference(InferenceSession& s, const Tensor& x) {
  std::vector<std::vector<float>> r;
  for (const Tensor& t : s.run({{"x", x}})) r.push_back(t.to_vector<float>());
  return r;
}

TEST(SessionLifetimes, PoolsReplacedOrTheirEnvironmentDestroyedWhileSessionsRun) {
  auto env = Environment::create(ThreadingOptions{.num_threads = 2}, ThreadingOptions{.num_threads = 2}).value();
  SessionOptions o;
  o.use_per_session_threads = false;
  auto sequential = InferenceSession::create_from_bytes(wide_model(), o, env.get());
  o.execution_mode = ExecutionMode::kParallel;
  auto parallel = InferenceSession::create_from_bytes(wide_model(), o, env.get());
  const Tensor x = feed();
  const auto expected = reference(*sequential, x);
  ASSERT_EQ(reference(*parallel, x), expected);

  std::atomic<bool> stop{false};
  std::atomic<int> runs{0}, wrong{0};
  std::vector<std::thread> runners;
  for (int t = 0; t < 4; ++t)
    runners.emplace_back([&, t] {
      InferenceSession& s = t % 2 ? *parallel : *sequential;
      while (!stop.load()) {
        if (reference(s, x) != expected) ++wrong;
        ++runs;
      }
    });
  // As the Python reproduction: set_num_threads(1 + i % 2), 200 times.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(env->set_intra_op_num_threads(1 + i % 2).is_ok());
  // The Environment goes; its pools stay with the sessions using them.
  env.reset();
  const int after_reset = runs.load();
  while (runs.load() < after_reset + 8) std::this_thread::yield();
  stop = true;
  for (auto& t : runners) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(reference(*parallel, x), expected) << "the sessions stay usable after their Environment is gone";
}

// Callbacks still queued when the session is destroyed: the destructor waits
// for them, so all have run (with the right outputs) when it returns.
void destroy_with_async_work_outstanding(ExecutionMode mode) {
  SessionOptions o;
  o.execution_mode = mode;
  o.intra_op_num_threads = 2;
  o.inter_op_num_threads = 1;
  auto s = InferenceSession::create_from_bytes(wide_model(), o);
  const Tensor x = feed();
  const auto expected = reference(*s, x);
  constexpr int kRequests = 12;
  std::atomic<int> called{0}, right{0};
  for (int i = 0; i < kRequests; ++i)
    s->run_async({{"x", x}}, {}, [&](Status st, std::vector<Tensor> out) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // keep the queue long
      if (st.is_ok() && out.size() == 2 && out[0].to_vector<float>() == expected[0] &&
          out[1].to_vector<float>() == expected[1])
        ++right;
      ++called;
    });
  s.reset();
  EXPECT_EQ(called.load(), kRequests) << "the destructor returned before every callback ran";
  EXPECT_EQ(right.load(), kRequests);
}

TEST(SessionLifetimes, DestroyedWithRunAsyncWorkOutstandingOnItsOwnInterOpPool) {
  destroy_with_async_work_outstanding(ExecutionMode::kParallel);
}

TEST(SessionLifetimes, DestroyedWithRunAsyncWorkOutstandingOnTheGlobalInterOpPool) {
  destroy_with_async_work_outstanding(ExecutionMode::kSequential);
}

// A callback may drop the last reference to its own session (a binding's
// callback releasing the session object): the destructor, called inside the
// callback, cannot wait for that callback. The session is freed once its
// last outstanding request has returned; the other requests still complete.
void destroyed_inside_its_own_callback(ExecutionMode mode) {
  SessionOptions o;
  o.execution_mode = mode;
  o.intra_op_num_threads = 2;
  o.inter_op_num_threads = 1;
  const Tensor x = feed();
  for (int round = 0; round < 3; ++round) {
    std::shared_ptr<InferenceSession> s = InferenceSession::create_from_bytes(wide_model(), o);
    const auto expected = reference(*s, x);
    constexpr int kRequests = 4;
    std::atomic<int> called{0}, right{0};
    std::promise<void> all_done, released;
    std::shared_future<void> main_released = released.get_future().share();
    std::shared_ptr<InferenceSession> holder = s;
    for (int i = 0; i < kRequests; ++i)
      s->run_async({{"x", x}}, {}, [&, i](Status st, std::vector<Tensor> out) {
        if (st.is_ok() && out.size() == 2 && out[0].to_vector<float>() == expected[0]) ++right;
        if (i == 0) {
          main_released.wait();
          holder.reset();  // the last reference: destroys the session here
        }
        if (++called == kRequests) all_done.set_value();
      });
    s.reset();
    released.set_value();
    ASSERT_EQ(all_done.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready)
        << "a callback that destroyed its session hung";
    EXPECT_EQ(right.load(), kRequests);
  }
}

TEST(SessionLifetimes, DestroyedInsideItsOwnCallbackOnItsOwnInterOpPool) {
  destroyed_inside_its_own_callback(ExecutionMode::kParallel);
}

TEST(SessionLifetimes, DestroyedInsideItsOwnCallbackOnTheGlobalInterOpPool) {
  destroyed_inside_its_own_callback(ExecutionMode::kSequential);
}

TEST(SessionLifetimes, SetNumThreadsGovernsDefaultSessionsCreatedAfterIt) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  auto env = Environment::create().value();
  auto earlier = InferenceSession::create_from_bytes(wide_model(), {}, env.get());
  const int earlier_dop = earlier->intra_op_pool()->dop();
  ASSERT_TRUE(env->set_intra_op_num_threads(3).is_ok());
  EXPECT_EQ(env->intra_op_num_threads_set(), 3);
  EXPECT_THAT(env->parallel_info(), HasSubstr("set_num_threads(3): sessions created since then"));
  const int before = testing::baseline_thread_count();
  {
    auto s = InferenceSession::create_from_bytes(wide_model(), {}, env.get());
    EXPECT_EQ(testing::settled_thread_count(before + 2), before + 2) << "3 threads = the caller + 2 workers";
    EXPECT_EQ(s->intra_op_pool()->dop(), 3);
    EXPECT_THAT(s->threading_info(), HasSubstr("intra-op: 3 thread(s) including the caller (from set_num_threads)"));
    const Tensor x = feed();
    EXPECT_EQ(reference(*s, x), reference(*earlier, x));
  }
  EXPECT_EQ(testing::settled_thread_count(before), before);
  {
    SessionOptions o;
    o.intra_op_num_threads = 2;  // an explicit count wins
    auto s = InferenceSession::create_from_bytes(wide_model(), o, env.get());
    EXPECT_EQ(testing::settled_thread_count(before + 1), before + 1);
    EXPECT_THAT(s->threading_info(), Not(HasSubstr("set_num_threads")));
  }
  EXPECT_EQ(earlier->intra_op_pool()->dop(), earlier_dop) << "a session created before the call keeps its pool";
  auto other = Environment::create().value();
  EXPECT_EQ(other->intra_op_num_threads_set(), 0) << "the setting belongs to its Environment";
  EXPECT_THAT(other->parallel_info(), HasSubstr("set_num_threads: not called"));
}

}  // namespace
}  // namespace spindle
