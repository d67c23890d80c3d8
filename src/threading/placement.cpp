// placement.cpp — the plan of the pools on a machine (spindle/placement.h):
// load_topology (topology.cpp) turns the machine into a Topology, plan_pool
// (pool_options.cpp) makes each pool's plan, the same two calls the pools
// make on this machine.
#include "spindle/placement.h"

#include <cmath>

#include <fmt/format.h>

#include "threading/pool_options.h"
#include "threading/topology.h"

namespace spindle {

namespace {

std::string describe_pool_plan(const detail::Topology& topo, const ThreadingOptions& options, detail::PoolKind kind,
                               const std::string& title) {
  auto r = detail::plan_pool(topo, options, kind);
  if (!r.is_ok()) return fmt::format("{}: invalid settings: {}\n", title, r.status().message());
  const detail::ResolvedPool& p = r.value();
  std::string s = kind == detail::PoolKind::kIntraOp
                      ? fmt::format("{}: {} thread(s) = caller (not pinned) + {} worker(s) (from {})\n", title,
                                    p.options.num_threads, p.num_workers(), p.num_threads_source)
                      : fmt::format("{}: {} thread(s) (from {})\n", title, p.options.num_threads, p.num_threads_source);
  if (p.placement.empty()) s += "  not pinned\n";
  s += detail::describe_placement(topo, p, "  ");
  return s;
}

}  // namespace

Result<std::string> placement_plan(const MachineDescription& machine) {
  detail::MachineInput in;
  in.topology = machine.topology;
  if (!machine.cpuset.empty()) {
    SPINDLE_ASSIGN_OR_RETURN(std::vector<CpuSet> sets, parse_affinity_string("cpuset", machine.cpuset));
    if (sets.size() != 1)
      return invalid_argument(fmt::format("cpuset=\"{}\": expected one list of processors (\"0-15,32-47\"), "
                                          "got {} ';'-separated entries",
                                          machine.cpuset, sets.size()));
    in.allowed = sets[0];
  }
  if (machine.cpu_quota != 0) in.cpu_quota = machine.cpu_quota;
  SPINDLE_ASSIGN_OR_RETURN(detail::Topology topo, detail::load_topology(in));

  std::string s = fmt::format("machine: {}\n", topo.describe_machine());
  if (topo.cpu_kinds > 1)
    s += fmt::format("  {} cpukinds (hwloc): workers go to the faster kinds first\n", topo.cpu_kinds);
  s += fmt::format("allowed: processors {} = {} physical core(s)\n", topo.allowed.to_string(), topo.cores.size());
  if (topo.quota)
    s += fmt::format("CPU quota: {:.2f} CPUs ({}), rounded up to {}\n", topo.quota->cpus, topo.quota->source,
                     static_cast<int>(std::ceil(topo.quota->cpus - 1e-9)));
  s += fmt::format("default threads: {}\n", topo.default_num_threads);
  ThreadingOptions intra;
  intra.name = "intra_op";
  ThreadingOptions inter;
  inter.name = "inter_op";
  s += describe_pool_plan(topo, intra, detail::PoolKind::kIntraOp, "intra-op pool");
  s += describe_pool_plan(topo, inter, detail::PoolKind::kInterOp, "inter-op pool");
  if (topo.numa_nodes > 1) {
    for (int node = 0; node < topo.numa_nodes; ++node) {
      intra.numa_node = node;
      s += describe_pool_plan(topo, intra, detail::PoolKind::kIntraOp,
                              fmt::format("intra-op pool of a session with intra_op.numa_node={}", node));
    }
  }
  return s;
}

}  // namespace spindle
