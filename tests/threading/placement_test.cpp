// Thread placement on machines this one is not: hwloc synthetic descriptions
// and XML exports go through the same load_topology + plan_pool as the real
// machine, and every row of the table checks the default thread count, one
// worker per physical core before any SMT sibling, node-bound sessions kept
// on their node, one session per node together within the allowed cores, and
// affinity strings that name a processor the machine lacks (or the process
// may not use) rejected naming that processor and the machine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hwloc.h>
#include <hwloc/export.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "spindle/environment.h"
#include "spindle/placement.h"
#include "spindle/thread_pool.h"
#include "test_util.h"
#include "threading/pool_options.h"
#include "threading/topology.h"

namespace spindle {
namespace {

using detail::Core;
using detail::PoolKind;
using detail::Topology;
using ::testing::HasSubstr;

struct Machine {
  std::string name;
  std::string topology;          // hwloc synthetic description
  std::string cpuset;            // "" = every processor
  std::optional<double> quota;   // CPUs
  int cores;                     // allowed physical cores
  int nodes;                     // NUMA nodes of the machine
  int default_threads;           // expected
};

// Written by hand from the descriptions (synthetic machines number their
// processors in order: core k of an SMT-2 machine is processors 2k, 2k+1).
const std::vector<Machine> kMachines = {
    {"desktop_8c_smt", "package:1 core:8 pu:2", "", std::nullopt, 8, 1, 8},
    {"two_sockets_2x32c_smt", "package:2 numa:1 core:32 pu:2", "", std::nullopt, 64, 2, 64},
    {"epyc_4_nodes_64c", "package:1 numa:4 l3cache:2 core:8 pu:2", "", std::nullopt, 64, 4, 64},
    {"two_sockets_one_removed_by_cpuset", "package:2 numa:1 core:16 pu:2", "0-31", std::nullopt, 16, 2, 16},
    // ceil(3.5) = 4, as for a cgroup quota on this machine (topology.cpp).
    {"quota_3_5_on_64c", "package:1 core:64 pu:2", "", 3.5, 64, 1, 4},
    {"no_smt_16c", "package:1 core:16 pu:1", "", std::nullopt, 16, 1, 16},
};

class EveryMachine : public ::testing::TestWithParam<Machine> {
 protected:
  void SetUp() override {
    // The plan honors the thread-count variables; the table expects none.
    for (bool intra : {true, false})
      for (const std::string& var : thread_count_variables(intra)) unsetenv(var.c_str());
    const Machine& m = GetParam();
    detail::MachineInput in;
    in.topology = m.topology;
    if (!m.cpuset.empty()) in.allowed = parse_affinity_string("cpuset", m.cpuset).value()[0];
    in.cpu_quota = m.quota;
    topo_ = detail::load_topology(in).value();
  }

  detail::ResolvedPool plan(int num_threads, int node, PoolKind kind = PoolKind::kIntraOp) {
    ThreadingOptions o;
    o.name = kind == PoolKind::kIntraOp ? "intra_op" : "inter_op";
    o.num_threads = num_threads;
    o.numa_node = node;
    auto r = detail::plan_pool(topo_, o, kind);
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    return r.value();
  }

  const Core& core_of(int cpu) const {
    for (const Core& c : topo_.cores)
      if (c.pus.contains(cpu)) return c;
    ADD_FAILURE() << "processor " << cpu << " is on no allowed core";
    return topo_.cores.front();
  }

  // Every worker pinned to exactly one allowed processor; returns them.
  std::vector<int> pinned_cpus(const detail::ResolvedPool& p) const {
    std::vector<int> cpus;
    for (const CpuSet& s : p.placement) {
      EXPECT_EQ(s.cpus().size(), 1u) << s.to_string();
      EXPECT_TRUE(s.is_subset_of(topo_.allowed)) << s.to_string() << " outside " << topo_.allowed.to_string();
      cpus.push_back(s.cpus().front());
    }
    return cpus;
  }

  Topology topo_;
};

TEST_P(EveryMachine, MachineAsDescribed) {
  const Machine& m = GetParam();
  EXPECT_EQ(static_cast<int>(topo_.cores.size()), m.cores);
  EXPECT_EQ(topo_.numa_nodes, m.nodes);
  EXPECT_EQ(topo_.default_num_threads, m.default_threads);
  for (const Core& c : topo_.cores) EXPECT_TRUE(c.pus.is_subset_of(topo_.allowed));
}

TEST_P(EveryMachine, DefaultPoolsUseOneProcessorPerCoreAndNoSiblings) {
  const Machine& m = GetParam();
  for (PoolKind kind : {PoolKind::kIntraOp, PoolKind::kInterOp}) {
    const detail::ResolvedPool p = plan(0, -1, kind);
    EXPECT_EQ(p.options.num_threads, m.default_threads);
    EXPECT_TRUE(p.default_pinning);
    ASSERT_EQ(static_cast<int>(p.placement.size()), p.num_workers());
    std::set<int> cores;
    for (int cpu : pinned_cpus(p)) EXPECT_TRUE(cores.insert(core_of(cpu).index).second) << "two workers on core " << core_of(cpu).index;
    if (kind == PoolKind::kIntraOp) {
      // The caller is not pinned and keeps the first core to itself.
      EXPECT_EQ(cores.count(topo_.cores.front().index), 0u);
    }
  }
}

TEST_P(EveryMachine, SmtSiblingsOnlyOnceEveryCoreHasAWorker) {
  // Explicit counts pin only on a node; the machine's only node when it has one.
  const int cores = static_cast<int>(topo_.cores_of_node(0).size());
  const int pus_per_core = static_cast<int>(topo_.cores_of_node(0).front().pus.cpus().size());
  const detail::ResolvedPool p = plan(2 * cores, 0, PoolKind::kInterOp);
  const std::vector<int> cpus = pinned_cpus(p);
  ASSERT_EQ(static_cast<int>(cpus.size()), 2 * cores);
  std::set<int> first_round_cores;
  for (int i = 0; i < cores; ++i) first_round_cores.insert(core_of(cpus[static_cast<size_t>(i)]).index);
  EXPECT_EQ(static_cast<int>(first_round_cores.size()), cores) << "a sibling was used before every core had a worker";
  if (pus_per_core > 1) {  // then each processor of the node once
    EXPECT_EQ(std::set<int>(cpus.begin(), cpus.end()).size(), cpus.size());
  }
}

TEST_P(EveryMachine, NodeBoundSessionsStayOnTheirNodeAndTogetherFitTheAllowedCores) {
  const Machine& m = GetParam();
  std::set<int> all_cpus;
  int total_threads = 0;
  for (int node = 0; node < topo_.numa_nodes; ++node) {
    const std::vector<Core> cores = topo_.cores_of_node(node);
    ThreadingOptions o;
    o.numa_node = node;
    auto r = detail::plan_pool(topo_, o, PoolKind::kIntraOp);
    if (cores.empty()) {  // the cpuset took the whole node away
      ASSERT_FALSE(r.is_ok());
      EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("numa_node={}: this process may use no processor", node)));
      continue;
    }
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    const detail::ResolvedPool& p = r.value();
    EXPECT_EQ(p.options.num_threads, std::min<int>(static_cast<int>(cores.size()), m.default_threads));
    total_threads += p.options.num_threads;
    for (int cpu : pinned_cpus(p)) {
      EXPECT_EQ(core_of(cpu).numa_node, node) << "processor " << cpu << " is off node " << node;
      EXPECT_TRUE(all_cpus.insert(cpu).second) << "processor " << cpu << " used by two node-bound sessions";
    }
    // An explicit count above the node's processors wraps around on the node.
    for (int cpu : pinned_cpus(plan(3 * static_cast<int>(cores.size()), node))) EXPECT_EQ(core_of(cpu).numa_node, node);
  }
  // One session per node (callers included): no more threads than allowed
  // cores, unless a quota caps each session's count.
  if (!m.quota) EXPECT_EQ(total_threads, m.cores);
}

TEST_P(EveryMachine, AffinitiesOffTheMachineOrOutsideTheMaskAreRejectedNamingBoth) {
  const Machine& m = GetParam();
  const int beyond = topo_.machine_cpus.cpus().back() + 1;
  ThreadingOptions o;
  o.num_threads = 3;
  o.affinities = {CpuSet::single(topo_.allowed.cpus().front()), CpuSet::single(beyond)};
  auto r = detail::plan_pool(topo_, o, PoolKind::kIntraOp);
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("entry 1 names processor {}, which this process may not use: "
                                                          "the machine has no such processor",
                                                          beyond)));
  EXPECT_THAT(r.status().message(), HasSubstr(fmt::format("synthetic \"{}\"", m.topology)));
  if (!m.cpuset.empty()) {
    const int masked = topo_.machine_cpus.cpus().back();
    o.affinities = {CpuSet::single(topo_.allowed.cpus().front()), CpuSet::single(masked)};
    r = detail::plan_pool(topo_, o, PoolKind::kIntraOp);
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(),
                HasSubstr(fmt::format("names processor {}, which this process may not use: it is outside the process's "
                                      "mask (allowed: {}",
                                      masked, m.cpuset)));
  }
  // Parsed from the option's string, a valid one passes.
  o.affinities = parse_affinity_string("session.intra_op_thread_affinities",
                                       fmt::format("{};{}", topo_.allowed.cpus().front(), topo_.allowed.cpus().back()))
                     .value();
  EXPECT_TRUE(detail::plan_pool(topo_, o, PoolKind::kIntraOp).is_ok());
  if (topo_.numa_nodes > 1 && !topo_.cores_of_node(1).empty()) {  // on node 1, a processor of node 0 is refused
    o.numa_node = 1;
    o.affinities = {CpuSet::single(topo_.cores_of_node(1).front().pus.cpus().front()),
                    CpuSet::single(topo_.cores_of_node(0).front().pus.cpus().front())};
    r = detail::plan_pool(topo_, o, PoolKind::kIntraOp);
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(),
                HasSubstr(fmt::format("entry 1 names processor {} of NUMA node 0, but intra_op.numa_node=1",
                                      topo_.cores_of_node(0).front().pus.cpus().front())));
  }
}

// The same machine read back from an hwloc XML export plans the same.
TEST_P(EveryMachine, XmlExportPlansLikeTheSyntheticDescription) {
  const Machine& m = GetParam();
  hwloc_topology_t hw;
  ASSERT_EQ(hwloc_topology_init(&hw), 0);
  ASSERT_EQ(hwloc_topology_set_synthetic(hw, m.topology.c_str()), 0);
  ASSERT_EQ(hwloc_topology_load(hw), 0);
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("spindle_placement_{}_{}.xml", m.name, getpid()))
                               .string();
  ASSERT_EQ(hwloc_topology_export_xml(hw, path.c_str(), 0), 0);
  hwloc_topology_destroy(hw);
  detail::MachineInput in;
  in.topology = path;
  if (!m.cpuset.empty()) in.allowed = topo_.allowed;
  in.cpu_quota = m.quota;
  auto xml = detail::load_topology(in);
  std::filesystem::remove(path);
  ASSERT_TRUE(xml.is_ok()) << xml.status().message();
  EXPECT_THAT(xml->machine, HasSubstr("XML file"));
  EXPECT_EQ(xml->default_num_threads, m.default_threads);
  EXPECT_EQ(xml->numa_nodes, m.nodes);
  ThreadingOptions o;
  EXPECT_EQ(detail::plan_pool(*xml, o, PoolKind::kIntraOp)->placement, plan(0, -1).placement);
}

INSTANTIATE_TEST_SUITE_P(Machines, EveryMachine, ::testing::ValuesIn(kMachines),
                         [](const auto& info) { return info.param.name; });

// hwloc 2.9's synthetic descriptions have no cpukinds; an XML export carries
// them. 4 fast cores (kind 1) and 4 slow ones (kind 0): workers go to the
// fast ones first, and the count stays the allowed cores.
TEST(Placement, HybridMachineFromXmlPutsWorkersOnTheFasterKindFirst) {
  hwloc_topology_t hw;
  ASSERT_EQ(hwloc_topology_init(&hw), 0);
  ASSERT_EQ(hwloc_topology_set_synthetic(hw, "package:1 core:8 pu:1"), 0);
  ASSERT_EQ(hwloc_topology_load(hw), 0);
  hwloc_bitmap_t little = hwloc_bitmap_alloc();
  hwloc_bitmap_t big = hwloc_bitmap_alloc();
  hwloc_bitmap_set_range(little, 0, 3);  // the slow cores first, so order alone would pick them
  hwloc_bitmap_set_range(big, 4, 7);
  ASSERT_EQ(hwloc_cpukinds_register(hw, little, 0, 0, nullptr, 0), 0);
  ASSERT_EQ(hwloc_cpukinds_register(hw, big, 1, 0, nullptr, 0), 0);
  hwloc_bitmap_free(little);
  hwloc_bitmap_free(big);
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("spindle_placement_hybrid_{}.xml", getpid())).string();
  ASSERT_EQ(hwloc_topology_export_xml(hw, path.c_str(), 0), 0);
  hwloc_topology_destroy(hw);
  auto topo = detail::load_topology(detail::MachineInput{path, std::nullopt, std::nullopt});
  auto text = placement_plan(MachineDescription{path, "", 0});
  std::filesystem::remove(path);
  ASSERT_TRUE(topo.is_ok()) << topo.status().message();
  EXPECT_EQ(topo->cpu_kinds, 2);
  EXPECT_EQ(topo->default_num_threads, 8);
  ThreadingOptions o;
  o.name = "inter_op";
  auto p = detail::plan_pool(*topo, o, PoolKind::kInterOp).value();
  std::vector<int> cpus;
  for (const CpuSet& s : p.placement) cpus.push_back(s.cpus().front());
  EXPECT_EQ(cpus, (std::vector<int>{4, 5, 6, 7, 0, 1, 2, 3}));
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_THAT(text.value(), HasSubstr("2 cpukinds"));
  EXPECT_THAT(text.value(), HasSubstr("worker 0 -> processor 4 (core 4, NUMA node 0, cpukind 1)"));
}

TEST(Placement, PlanTextListsEveryWorkerWithCoreAndNode) {
  for (bool intra : {true, false})
    for (const std::string& var : thread_count_variables(intra)) unsetenv(var.c_str());
  auto text = placement_plan(MachineDescription{"package:2 numa:1 core:4 pu:2", "", 0});
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_THAT(text.value(), HasSubstr("8 physical cores, 16 logical processors 0-15, 2 NUMA node(s)"));
  EXPECT_THAT(text.value(), HasSubstr("intra-op pool: 8 thread(s) = caller (not pinned) + 7 worker(s)"));
  EXPECT_THAT(text.value(), HasSubstr("  worker 6 -> processor 14 (core 7 of 14-15, NUMA node 1)\n"));
  EXPECT_THAT(text.value(), HasSubstr("intra-op pool of a session with intra_op.numa_node=1: 4 thread(s)"));
}

TEST(Placement, BadMachineInputsAreRejectedNamingThem) {
  auto r = placement_plan(MachineDescription{"package:2 bogus:3", "", 0});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("topology \"package:2 bogus:3\": neither an existing XML file"));
  r = placement_plan(MachineDescription{"package:1 core:4 pu:1", "2-9", 0});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("processor 4 is not on the machine"));
  r = placement_plan(MachineDescription{"package:1 core:4 pu:1", "0;1", 0});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("expected one list of processors"));
  r = placement_plan(MachineDescription{"package:1 core:4 pu:1", "", -2});
  ASSERT_FALSE(r.is_ok());
  EXPECT_THAT(r.status().message(), HasSubstr("CPU quota -2: expected a number of CPUs > 0"));
}

// This machine goes through the same plan: the pools run what plan_pool says.
TEST(Placement, ThisMachineIsOneInputOfThePlan) {
  SPINDLE_REQUIRE_NATIVE_BACKEND();
  const Topology& topo = detail::topology();
  ThreadingOptions o;
  const auto planned = detail::plan_pool(topo, o, PoolKind::kIntraOp).value();
  auto pool = ThreadPool::create(o).value();
  EXPECT_EQ(pool->dop(), planned.options.num_threads);
  const auto tids = pool->worker_tids();
  ASSERT_EQ(tids.size(), planned.placement.size());
  for (size_t i = 0; i < tids.size(); ++i) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    ASSERT_EQ(sched_getaffinity(tids[i], sizeof(mask), &mask), 0);
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) cpus.push_back(c);
    EXPECT_EQ(CpuSet(cpus), planned.placement[i]) << "worker " << i;
  }
}

}  // namespace
}  // namespace spindle
