// pool_options.cpp — see pool_options.h.
#include "threading/pool_options.h"

#include <fmt/format.h>

#include "threading/env_vars.h"
#include "threading/topology.h"

namespace spindle::detail {

int round_down_pow2(int v) {
  int p = 1;
  while (p <= v / 2) p <<= 1;
  return p;
}

int ResolvedPool::num_workers() const {
  return kind == PoolKind::kIntraOp ? options.num_threads - 1 : options.num_threads;
}

Result<ResolvedPool> resolve_pool_options(const ThreadingOptions& in, PoolKind kind) {
  ResolvedPool r;
  r.kind = kind;
  r.options = in;
  ThreadingOptions& o = r.options;
  const std::string& pool = in.name;
  const Topology& topo = topology();

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
      o.num_threads = topo.default_num_threads;
      r.num_threads_source = "detected";
    }
  }

  if (in.spin_duration && in.spin_duration->count() < 0)
    return invalid_argument(fmt::format("session.{}.spin_duration_us={}: expected a duration >= 0 microseconds",
                                        pool, in.spin_duration->count()));
  if (in.spin_backoff_max < 1 || in.spin_backoff_max > (1 << 20))
    return invalid_argument(fmt::format("session.{}.spin_backoff_max={}: expected a power of two in [1, {}]",
                                        pool, in.spin_backoff_max, 1 << 20));
  o.spin_backoff_max = round_down_pow2(in.spin_backoff_max);

  if (in.numa_node < -1 || in.numa_node >= topo.numa_nodes)
    return invalid_argument(fmt::format("{}.numa_node={}: expected -1 (any) or a node in [0, {}]", pool,
                                        in.numa_node, topo.numa_nodes - 1));
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
      for (int cpu : set.cpus())
        if (!topo.allowed.contains(cpu))
          return invalid_argument(fmt::format("{}: entry {} names processor {}, which this process may not use "
                                              "(allowed: {})",
                                              affinity_key, i, cpu, topo.allowed.to_string()));
    }
    r.placement = in.affinities;
  } else if (r.num_threads_source == "detected" || in.numa_node >= 0) {
    // Default placement: one worker per physical core. Intra-op leaves the
    // first core to the (unpinned) caller.
    std::vector<Core> cores = topo.cores_of_node(in.numa_node);
    if (!cores.empty() && workers > 0) {
      r.default_pinning = true;
      const int offset = kind == PoolKind::kIntraOp ? 1 : 0;
      for (int i = 0; i < workers; ++i) r.placement.push_back(cores[(i + offset) % cores.size()].pus);
    }
  }
  return r;
}

}  // namespace spindle::detail
