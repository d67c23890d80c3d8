// Inter-op pool and futures; the default environment's process API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "spindle/environment.h"
#include "spindle/thread_pool.h"
#include "test_util.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<TaskPool> make_tasks(int n) {
  ThreadingOptions o;
  o.num_threads = n;
  return TaskPool::create(o).value();
}

TEST(TaskPool, CreatesExactlyNThreadsAndJoinsThem) {
  const int before = testing::baseline_thread_count();
  {
    auto pool = make_tasks(3);
    EXPECT_EQ(testing::settled_thread_count(before + 3) - before, 3);
  }
  EXPECT_EQ(testing::settled_thread_count(before), before);  // joined threads can linger in /proc for a moment
}

TEST(TaskPool, ForkReturnsValueOnAPoolThread) {
  auto pool = make_tasks(2);
  auto caller = std::this_thread::get_id();
  auto f = pool->fork([&] { return std::this_thread::get_id() != caller ? 42 : -1; });
  EXPECT_EQ(f.get(), 42);
}

TEST(TaskPool, FutureCarriesTheException) {
  auto pool = make_tasks(2);
  auto f = pool->fork([]() -> int { throw std::invalid_argument("bad task"); });
  EXPECT_THROW(f.get(), std::invalid_argument);
  EXPECT_EQ(pool->fork([] { return 7; }).get(), 7);
}

class SaturatedPool : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Threads, SaturatedPool, ::testing::Values(1, 2, 3));

// Every task forks children and waits for them from a pool thread: with
// blocking waits a pool of 1 would deadlock; helping waits finish.
TEST_P(SaturatedPool, ForkInsideForkWithWaitFromPoolThreadsDoesNotDeadlock) {
  auto pool = make_tasks(GetParam());
  std::function<int64_t(int)> tree = [&](int depth) -> int64_t {
    if (depth == 0) return 1;
    auto left = pool->fork([&, depth] { return tree(depth - 1); });
    auto right = pool->fork([&, depth] { return tree(depth - 1); });
    return left.get() + right.get();
  };
  auto root = pool->fork([&] { return tree(8); });
  EXPECT_EQ(root.get(), 256);
}

TEST(TaskPool, ManyProducersAndIdleBurnWithoutSpinning) {
  ThreadingOptions o;
  o.num_threads = 2;
  o.allow_spinning = false;
  auto pool = TaskPool::create(o).value();
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p)
    producers.emplace_back([&] {
      std::vector<Future<void>> fs;
      for (int i = 0; i < 500; ++i) fs.push_back(pool->fork([&] { ++done; }));
      for (auto& f : fs) f.wait();
    });
  for (auto& t : producers) t.join();
  EXPECT_EQ(done.load(), 2000);
  EXPECT_LT(testing::cpu_ms_while_sleeping(100), 2.0);
}

TEST(Environment, ProcessApiSetsAndReportsThreadCounts) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  set_num_threads(1);  // no workers, whether or not an earlier test started the pool
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let joined workers leave /proc
  const int before = testing::baseline_thread_count();
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  std::atomic<int64_t> sum{0};
  parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1000);
  EXPECT_EQ(testing::settled_thread_count(before + 2) - before, 2);
  set_num_threads(2);
  EXPECT_EQ(testing::settled_thread_count(before + 1) - before, 1) << "the old pool's workers are joined";
  EXPECT_THROW(set_num_threads(-1), Error);
  EXPECT_EQ(get_num_threads(), 2) << "a rejected value leaves the pool as it was";
}

// On a fresh Environment each time (the default one keeps its started pool
// for the rest of the process, and tests must hold when repeated).
TEST(Environment, InteropThreadsOnlyBeforeFirstUse) {
  auto env = Environment::create().value();
  ASSERT_TRUE(env->set_inter_op_num_threads(3).is_ok());
  EXPECT_EQ(env->inter_op_num_threads(), 3);
  EXPECT_EQ(env->inter_op_pool()->fork([] { return 5; }).get(), 5);
  Status late = env->set_inter_op_num_threads(2);
  EXPECT_EQ(late.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.message(), HasSubstr("set_num_interop_threads(2)"));
  EXPECT_THAT(late.message(), HasSubstr("before its first use"));
  EXPECT_EQ(env->inter_op_num_threads(), 3);
  // The process functions act on the default Environment the same way.
  EXPECT_EQ(fork([] { return 5; }).get(), 5);
  try {
    set_num_interop_threads(get_num_interop_threads() + 1);
    FAIL() << "set_num_interop_threads after first use must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("before its first use"));
  }
}

// A fresh Environment: the default one may have started its pools or been
// given set_num_threads by an earlier test in this process.
TEST(Environment, ParallelInfoNamesBackendPoolsAndVariables) {
  auto env = Environment::create().value();
  setenv("OMP_NUM_THREADS", "2", 1);
  std::string info = env->parallel_info();
  unsetenv("OMP_NUM_THREADS");
  EXPECT_THAT(info, HasSubstr(std::string("backend: ") + parallel_backend_name()));
  EXPECT_THAT(info, HasSubstr("intra-op pool: 2 thread(s)"));
  EXPECT_THAT(info, HasSubstr("from OMP_NUM_THREADS"));
  EXPECT_THAT(info, HasSubstr("OMP_NUM_THREADS=\"2\""));
  EXPECT_THAT(info, HasSubstr("inter-op pool"));
  EXPECT_THAT(info, HasSubstr("physical core"));
  if (std::string_view(SPINDLE_BACKEND_NAME) != "native") {
    EXPECT_THAT(info, HasSubstr(std::string("ignored by the ") + SPINDLE_BACKEND_NAME + " backend: spin_backoff_max"));
    EXPECT_THAT(info, HasSubstr("thread_affinities"));
  } else {
    EXPECT_THAT(info, Not(HasSubstr("ignored by the")));
  }
}

// set_num_threads replaces the pool while other threads run parallel_for on
// it: each call keeps the pool it started on (use-after-free before).
TEST(Environment, FreeParallelForWhileSetNumThreadsReplacesThePool) {
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      while (!stop.load()) {
        std::atomic<int64_t> sum{0};
        parallel_for(0, 4096, 16, [&](int64_t b, int64_t e) { sum += e - b; });
        if (sum.load() != 4096) ++wrong;
      }
    });
  const int before = get_num_threads();
  for (int i = 0; i < 200; ++i) set_num_threads(1 + i % 2);
  stop = true;
  for (auto& t : callers) t.join();
  set_num_threads(before);
  EXPECT_THAT(parallel_info(), HasSubstr(fmt::format("set_num_threads({})", before)));
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Environment, SeparateEnvironmentOwnsItsOwnPools) {
  auto env = Environment::create(ThreadingOptions{.num_threads = 2}, ThreadingOptions{.num_threads = 1}).value();
  EXPECT_EQ(env->intra_op_pool()->dop(), 2);
  EXPECT_EQ(env->inter_op_pool()->num_threads(), 1);
  EXPECT_FALSE(Environment::create(ThreadingOptions{.num_threads = -2}).is_ok());
}

}  // namespace
}  // namespace spindle
