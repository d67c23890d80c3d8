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

Result<ResolvedPool> resolve_pool_options(const ThreadingOptions& options, PoolKind kind);

// Largest power of two <= v (v >= 1).
int round_down_pow2(int v);

}  // namespace spindle::detail
