// pool_options.cpp — see pool_options.h.
#include "threading/pool_options.h"

#include <algorithm>

#include <fmt/format.h>

#include "threading/env_vars.h"
#include "threading/topology.h"

namespace spindle::detail {

namespace {

CpuSet node_cpus(const Topology& topo, int node) {
  std::vector<int> cpus;
  for (const Core& c : topo.cores_of_node(node)) cpus.insert(cpus.end(), c.pus.cpus().begin(), c.pus.cpus().end());
  return CpuSet(std::move(cpus));
}

}  // namespace

int round_down_pow2(int v) {
  int p = 1;
  while (p <= v / 2) p <<= 1;
  return p;
}

int ResolvedPool::num_workers() const {
  return kind == PoolKind::kIntraOp ? options.num_threads - 1 : options.num_threads;
}

std::vector<int> default_cpu_order(const std::vector<Core>& cores, int offset) {
  std::vector<int> order;
  if (cores.empty()) return order;
  // Rotate so the caller's core comes last, then put faster kinds first
  // (stable: the rotation decides among cores of one kind).
  std::vector<const Core*> rotated;
  for (size_t k = 0; k < cores.size(); ++k) rotated.push_back(&cores[(k + static_cast<size_t>(offset)) % cores.size()]);
  std::stable_sort(rotated.begin(), rotated.end(),
                   [](const Core* a, const Core* b) { return a->efficiency > b->efficiency; });
  size_t rounds = 0;
  for (const Core& c : cores) rounds = std::max(rounds, c.pus.cpus().size());
  for (size_t s = 0; s < rounds; ++s)
    for (const Core* c : rotated)
      if (s < c->pus.cpus().size()) order.push_back(c->pus.cpus()[s]);
  return order;
}

std::string describe_placement(const Topology& topo, const ResolvedPool& pool, const std::string& indent) {
  std::string s;
  for (size_t i = 0; i < pool.placement.size(); ++i) {
    const CpuSet& set = pool.placement[i];
    s += fmt::format("{}worker {} -> processor{} {}", indent, i, set.cpus().size() == 1 ? "" : "s", set.to_string());
    if (set.cpus().size() == 1) {
      for (const Core& c : topo.cores)
        if (c.pus.contains(set.cpus()[0])) {
          s += fmt::format(" (core {}{}, NUMA node {}{})", c.index,
                           c.pus.cpus().size() > 1 ? fmt::format(" of {}", c.pus.to_string()) : "", c.numa_node,
                           topo.cpu_kinds > 1 ? fmt::format(", cpukind {}", c.efficiency) : "");
          break;
        }
    }
    s += "\n";
  }
  return s;
}

Result<ResolvedPool> resolve_pool_options(const ThreadingOptions& options, PoolKind kind) {
  return plan_pool(topology(), options, kind);
}

Result<ResolvedPool> plan_pool(const Topology& topo, const ThreadingOptions& in, PoolKind kind) {
  ResolvedPool r;
  r.kind = kind;
  r.options = in;
  ThreadingOptions& o = r.options;
  const std::string& pool = in.name;

  if (in.numa_node < -1 || in.numa_node >= topo.numa_nodes)
    return invalid_argument(fmt::format("{}.numa_node={}: expected -1 (any) or a node in [0, {}]", pool,
                                        in.numa_node, topo.numa_nodes - 1));
  if (in.numa_node >= 0 && topo.cores_of_node(in.numa_node).empty())
    return invalid_argument(fmt::format("{}.numa_node={}: this process may use no processor of that node "
                                        "(allowed: {}; {})",
                                        pool, in.numa_node, topo.allowed.to_string(), topo.describe_machine()));
  if (in.num_threads < 0 || in.num_threads > kMaxThreads)
    return invalid_argument(fmt::format("{}_num_threads={}: expected 0 (automatic) or a thread count in [1, {}]",
                                        pool, in.num_threads, kMaxThreads));
  if (in.num_threads > 0) {
    r.num_threads_source = "option";
  } else {
    SPINDLE_ASSIGN_OR_RETURN(auto env, env_thread_count(kind == PoolKind::kIntraOp));
    if (env) {
      o.num_threads = env->value;
      r.num_threads_source = env->variable;
    } else {
      o.num_threads = topo.default_threads_of_node(in.numa_node);
      r.num_threads_source = in.numa_node >= 0 ? fmt::format("detected on NUMA node {}", in.numa_node) : "detected";
    }
  }

  if (in.spin_duration && in.spin_duration->count() < 0)
    return invalid_argument(fmt::format("session.{}.spin_duration_us={}: expected a duration >= 0 microseconds",
                                        pool, in.spin_duration->count()));
  if (in.spin_backoff_max < 1 || in.spin_backoff_max > (1 << 20))
    return invalid_argument(fmt::format("session.{}.spin_backoff_max={}: expected a power of two in [1, {}]",
                                        pool, in.spin_backoff_max, 1 << 20));
  o.spin_backoff_max = round_down_pow2(in.spin_backoff_max);

  if ((in.create_thread == nullptr) != (in.join_thread == nullptr))
    return invalid_argument(fmt::format("{} custom thread callbacks: create_thread and join_thread must be set "
                                        "together (got only {})",
                                        pool, in.create_thread ? "create_thread" : "join_thread"));

  const int workers = r.num_workers();
  const std::string affinity_key =
      kind == PoolKind::kIntraOp ? "session.intra_op_thread_affinities" : "inter_op.affinities";
  if (!in.affinities.empty()) {
    if (static_cast<int>(in.affinities.size()) != workers)
      return invalid_argument(fmt::format(
          "{}: {} entries given, expected exactly {} ({} {} thread(s){})", affinity_key, in.affinities.size(),
          workers, kind == PoolKind::kIntraOp ? "one per worker of" : "one per thread of", o.num_threads,
          kind == PoolKind::kIntraOp ? ", the caller is never pinned" : ""));
    for (size_t i = 0; i < in.affinities.size(); ++i) {
      const CpuSet& set = in.affinities[i];
      if (set.empty())
        return invalid_argument(fmt::format("{}: entry {} is empty; expected at least one processor", affinity_key, i));
      for (int cpu : set.cpus()) {
        if (!topo.allowed.contains(cpu))
          return invalid_argument(fmt::format("{}: entry {} names processor {}, which this process may not use: {} "
                                              "(allowed: {}; {})",
                                              affinity_key, i, cpu,
                                              topo.machine_cpus.contains(cpu) ? "it is outside the process's mask"
                                                                              : "the machine has no such processor",
                                              topo.allowed.to_string(), topo.describe_machine()));
        if (in.numa_node >= 0 && topo.node_of_cpu(cpu) != in.numa_node)
          return invalid_argument(fmt::format("{}: entry {} names processor {} of NUMA node {}, but {}.numa_node={} "
                                              "(that node's processors: {}; {})",
                                              affinity_key, i, cpu, topo.node_of_cpu(cpu), pool, in.numa_node,
                                              node_cpus(topo, in.numa_node).to_string(), topo.describe_machine()));
      }
    }
    r.placement = in.affinities;
  } else if (r.num_threads_source.starts_with("detected") || in.numa_node >= 0) {
    // Default placement: one worker per physical core, then SMT siblings.
    // Intra-op leaves the first core to the (unpinned) caller.
    const std::vector<int> order = default_cpu_order(topo.cores_of_node(in.numa_node), kind == PoolKind::kIntraOp ? 1 : 0);
    if (!order.empty() && workers > 0) {
      r.default_pinning = true;
      for (int i = 0; i < workers; ++i) r.placement.push_back(CpuSet::single(order[static_cast<size_t>(i) % order.size()]));
    }
  }
  return r;
}

}  // namespace spindle::detail
