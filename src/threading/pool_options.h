// pool_options.h — validation and resolution of ThreadingOptions.
//
// Turns what the user asked for into what a pool will do: the thread count
// (explicit > environment variable > detected default), the placement of
// each worker, and the spin budget. Every rejection names the key, the value
// and what was expected. Used by both pool kinds and by parallel_info.
#pragma once

#include <string>
#include <vector>

#include "spindle/status.h"
#include "spindle/threading_options.h"

namespace spindle::detail {

enum class PoolKind { kIntraOp, kInterOp };

inline constexpr int kMaxThreads = kMaxThreadCount;

struct ResolvedPool {
  ThreadingOptions options;          // num_threads filled in, backoff rounded
  std::vector<CpuSet> placement;     // one per worker; empty = unpinned
  std::string num_threads_source;    // "option", "SPINDLE_INTRA_OP_NUM_THREADS", ..., "detected"
  bool default_pinning = false;
  int num_workers() const;
  PoolKind kind = PoolKind::kIntraOp;
};

struct Topology;
struct Core;

// The plan of one pool on a machine: a pure function of the machine (see
// topology.h: this one or a simulated one), the options and the thread-count
// environment variables. Default placement pins each worker to one logical
// processor, one per physical core first (faster cpukinds first); a second
// processor of a core (its SMT sibling) only once every core has a worker.
// With numa_node >= 0, automatic counts are the node's cores and default
// placement stays on the node; affinities must lie on the node.
Result<ResolvedPool> plan_pool(const Topology& topo, const ThreadingOptions& options, PoolKind kind);
// plan_pool on this machine (topology()): what the pools run.
Result<ResolvedPool> resolve_pool_options(const ThreadingOptions& options, PoolKind kind);

// The processors, in order, that default placement hands to workers: one per
// core per round, the cores rotated by `offset` (the intra-op caller keeps
// the first core), then the second processor of each core, and so on.
std::vector<int> default_cpu_order(const std::vector<Core>& cores, int offset);

// One line per worker: "worker 0 -> processor 2 (core 1, NUMA node 0)".
std::string describe_placement(const Topology& topo, const ResolvedPool& pool, const std::string& indent);

// Largest power of two <= v (v >= 1).
int round_down_pow2(int v);

}  // namespace spindle::detail
