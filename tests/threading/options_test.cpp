// Bad input is rejected with an error naming the key, the value and what was
// expected; environment variables follow the documented precedence; cgroup
// quotas are read from v1 and v2 files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_util.h"
#include "spindle/cpu.h"
#include "spindle/environment.h"
#include "spindle/thread_pool.h"
#include "threading/pool_options.h"
#include "threading/topology.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;

std::string error_of(const ThreadingOptions& o) {
  auto r = ThreadPool::create(o);
  return r.is_ok() ? "" : r.status().message();
}

TEST(AffinityString, ParsesSeparatorsListsAndRanges) {
  auto sets = parse_affinity_string("k", "1,2;3-5;0").value();
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].cpus(), (std::vector<int>{1, 2}));
  EXPECT_EQ(sets[1].cpus(), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(sets[2].to_string(), "0");
  EXPECT_EQ(CpuSet({0, 1, 2, 5}).to_string(), "0-2,5");
}

class MalformedAffinity : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Strings, MalformedAffinity,
                         ::testing::Values("1,;2", "3-1", "a", "", ";", "1;;2", "1-", "-1", "1.5", "1 ,2"));

TEST_P(MalformedAffinity, IsRejectedNamingKeyValueAndGrammar) {
  auto r = parse_affinity_string("session.intra_op_thread_affinities", GetParam());
  ASSERT_FALSE(r.is_ok()) << GetParam();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("session.intra_op_thread_affinities=\"" + GetParam() + "\""));
  EXPECT_THAT(r.status().message(), HasSubstr("expected"));
}

TEST(ThreadingOptionsValidation, NegativeAndAbsurdThreadCounts) {
  ThreadingOptions o;
  o.num_threads = -1;
  EXPECT_THAT(error_of(o), HasSubstr("intra_op_num_threads=-1: expected 0 (automatic)"));
  o.num_threads = 1000000;
  EXPECT_THAT(error_of(o), HasSubstr("intra_op_num_threads=1000000"));
}

TEST(ThreadingOptionsValidation, AffinityEntryCountMustMatchWorkers) {
  ThreadingOptions o;
  o.num_threads = 3;
  o.affinities = {CpuSet::single(0)};
  EXPECT_THAT(error_of(o), HasSubstr("1 entries given, expected exactly 2"));
}

TEST(ThreadingOptionsValidation, ProcessorOutsideTheProcessMask) {
  ThreadingOptions o;
  o.num_threads = 2;
  o.affinities = {CpuSet::single(4000)};
  EXPECT_THAT(error_of(o), HasSubstr("names processor 4000, which this process may not use"));
}

TEST(ThreadingOptionsValidation, SpinValues) {
  ThreadingOptions o;
  o.num_threads = 2;
  o.spin_backoff_max = 0;
  EXPECT_THAT(error_of(o), HasSubstr("spin_backoff_max=0"));
  o.spin_backoff_max = 6;  // rounded down to 4
  auto pool = ThreadPool::create(o).value();
  EXPECT_EQ(pool->options().spin_backoff_max, 4);
  o.spin_duration = std::chrono::microseconds(-5);
  EXPECT_THAT(error_of(o), HasSubstr("spin_duration_us=-5"));
  EXPECT_FALSE(parse_int_value("session.intra_op.spin_duration_us", "fast", 0, 1000).is_ok());
  EXPECT_THAT(parse_int_value("session.intra_op.spin_duration_us", "fast", 0, 1000).status().message(),
              HasSubstr("session.intra_op.spin_duration_us=\"fast\": expected an integer"));
  EXPECT_FALSE(parse_bool_value("session.intra_op.allow_spinning", "yes").is_ok());
}

TEST(ThreadingOptionsValidation, CallbacksComeInPairs) {
  ThreadingOptions o;
  o.num_threads = 2;
  o.join_thread = [](void*) {};
  EXPECT_THAT(error_of(o), HasSubstr("create_thread and join_thread must be set together"));
}

TEST(ThreadingOptionsValidation, FailedCreateLeavesExistingPoolUsable) {
  auto good = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  ThreadingOptions bad;
  bad.num_threads = -3;
  EXPECT_FALSE(ThreadPool::create(bad).is_ok());
  std::atomic<int64_t> sum{0};
  good->parallel_for(0, 100, 1, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100);
}

// ---------------------------------------------------------------- environment variables

class EnvVars : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : {"SPINDLE_INTRA_OP_NUM_THREADS", "SPINDLE_INTER_OP_NUM_THREADS", "MKL_NUM_THREADS",
                          "OMP_NUM_THREADS"})
      unsetenv(v);
  }
  static detail::ResolvedPool resolve(int explicit_threads = 0, bool intra = true) {
    ThreadingOptions o;
    o.num_threads = explicit_threads;
    return detail::resolve_pool_options(o, intra ? detail::PoolKind::kIntraOp : detail::PoolKind::kInterOp).value();
  }
};

TEST_F(EnvVars, PrecedenceIsSpindleThenMklThenOmp) {
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(resolve().options.num_threads, 3);
  EXPECT_EQ(resolve().num_threads_source, "OMP_NUM_THREADS");
  setenv("MKL_NUM_THREADS", "5", 1);
  EXPECT_EQ(resolve().options.num_threads, 5);
  setenv("SPINDLE_INTRA_OP_NUM_THREADS", "7", 1);
  EXPECT_EQ(resolve().options.num_threads, 7);
  EXPECT_EQ(resolve().num_threads_source, "SPINDLE_INTRA_OP_NUM_THREADS");
  EXPECT_EQ(resolve(4).options.num_threads, 4) << "an explicit option beats every variable";
  EXPECT_EQ(resolve(0, false).num_threads_source, "detected") << "OMP/MKL do not size the inter-op pool";
  setenv("SPINDLE_INTER_OP_NUM_THREADS", "2", 1);
  EXPECT_EQ(resolve(0, false).options.num_threads, 2);
}

TEST_F(EnvVars, ThreadCountFromVariableCreatesThatManyThreads) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  setenv("OMP_NUM_THREADS", "3", 1);
  auto pool = ThreadPool::create(ThreadingOptions{}).value();
  EXPECT_EQ(pool->dop(), 3);
  EXPECT_EQ(pool->worker_tids().size(), 2u);
}

TEST_F(EnvVars, MalformedVariableIsAnErrorNamingIt) {
  for (const char* bad : {"abc", "-2", "0", "4x", "99999"}) {
    setenv("MKL_NUM_THREADS", bad, 1);
    auto r = ThreadPool::create(ThreadingOptions{});
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string("MKL_NUM_THREADS=\"") + bad + "\""));
  }
}

// ---------------------------------------------------------------- cgroup quota

class CgroupFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("spindle-cgroup-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& rel, const std::string& content) {
    auto p = root_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  std::filesystem::path root_;
};

TEST_F(CgroupFiles, V2CpuMaxRoundsUpAndTakesTheTightestAncestor) {
  write("a/cpu.max", "250000 100000\n");
  write("a/b/cpu.max", "max 100000\n");
  auto q = detail::read_cgroup_quota(root_.string(), "0::/a/b\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cpus, 2.5);
  EXPECT_FALSE(detail::read_cgroup_quota(root_.string(), "0::/nowhere\n").has_value());
}

TEST_F(CgroupFiles, V1CfsQuota) {
  write("cpu,cpuacct/box/cpu.cfs_quota_us", "150000\n");
  write("cpu,cpuacct/box/cpu.cfs_period_us", "100000\n");
  auto q = detail::read_cgroup_quota(root_.string(), "4:cpu,cpuacct:/box\n3:memory:/box\n");
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cpus, 1.5);
  write("cpu,cpuacct/free/cpu.cfs_quota_us", "-1\n");
  write("cpu,cpuacct/free/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(detail::read_cgroup_quota(root_.string(), "4:cpu,cpuacct:/free\n").has_value());
}

TEST(Topology, DefaultThreadsAreAllowedPhysicalCoresCappedByQuota) {
  const auto& t = detail::topology();
  EXPECT_GE(t.default_num_threads, 1);
  EXPECT_LE(t.default_num_threads, static_cast<int>(t.cores.size()));
  for (const auto& core : t.cores) EXPECT_TRUE(core.pus.is_subset_of(t.allowed));
  if (t.quota) {
    EXPECT_LE(t.default_num_threads, static_cast<int>(std::ceil(t.quota->cpus)));
  }
}

// step_off_cpu (a pool worker woken onto its caller's processor steps off
// it): allowed only processor a, the thread stays there; allowed a and b,
// it leaves the processor it is on and keeps its mask.
TEST(Topology, StepOffCpuMovesTheThreadAndKeepsItsMask) {
  const CpuSet allowed = detail::process_affinity();
  if (allowed.cpus().size() < 2) GTEST_SKIP() << "needs two allowed processors";
  const int a = allowed.cpus()[0], b = allowed.cpus()[1];
  auto set = [](std::initializer_list<int> cpus) {
    cpu_set_t m;
    CPU_ZERO(&m);
    for (int c : cpus) CPU_SET(c, &m);
    return pthread_setaffinity_np(pthread_self(), sizeof(m), &m) == 0;
  };
  std::thread([&] {
    ASSERT_TRUE(set({a}));
    EXPECT_EQ(sched_getcpu(), a);
    EXPECT_FALSE(detail::step_off_cpu(a)) << "only processor " << a << " is allowed";
    EXPECT_EQ(sched_getcpu(), a);
    ASSERT_TRUE(set({a, b}));
    const int here = sched_getcpu();
    EXPECT_TRUE(detail::step_off_cpu(here));
    EXPECT_NE(sched_getcpu(), here);
    EXPECT_EQ(detail::current_thread_affinity().to_string(), CpuSet({a, b}).to_string());
    EXPECT_FALSE(detail::step_off_cpu(-1));
  }).join();
}

// The public query (spindle/cpu.h, what `spindle info` and `tune` read)
// reports the detection the pools resolve against, field by field.
TEST(Topology, PublicCpuTopologyIsTheDetectedOne) {
  const auto& t = detail::topology();
  const CpuTopology& c = cpu_topology();
  EXPECT_EQ(c.usable_physical_cores, static_cast<int>(t.cores.size()));
  EXPECT_EQ(c.machine_physical_cores, t.machine_cores);
  EXPECT_EQ(c.machine_logical_cpus, t.machine_pus);
  EXPECT_EQ(c.numa_nodes, t.numa_nodes);
  EXPECT_EQ(c.default_num_threads, t.default_num_threads);
  EXPECT_EQ(c.summary, t.summary());
  EXPECT_LE(c.usable_physical_cores, c.machine_physical_cores);
  EXPECT_LE(c.machine_physical_cores, c.machine_logical_cpus);
}

// The public list (spindle/environment.h, printed by `spindle info --json`)
// names the variables the resolver reads, in its precedence order.
TEST_F(EnvVars, PublicVariableListIsTheResolversOrder) {
  const std::vector<std::string> intra = thread_count_variables(true);
  ASSERT_EQ(intra, (std::vector<std::string>{"SPINDLE_INTRA_OP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"}));
  EXPECT_EQ(thread_count_variables(false), std::vector<std::string>{"SPINDLE_INTER_OP_NUM_THREADS"});
  for (auto it = intra.rbegin(); it != intra.rend(); ++it) {  // each one set beats those after it
    setenv(it->c_str(), "3", 1);
    EXPECT_EQ(resolve().num_threads_source, *it);
  }
}

}  // namespace
}  // namespace spindle
