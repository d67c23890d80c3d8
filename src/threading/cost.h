// threading/cost.h — how a loop is cut into blocks, and the cost model
// behind parallel_for's Cost overloads: the grain a per-iteration Cost gets
// and how many threads a loop is worth.
// Kernels use it to size their own loops the way the pool would
// (thread_pool.cpp holds the constants and the reasons for them).
#pragma once

#include <cstdint>

#include "spindle/thread_pool.h"

namespace spindle {

// The deterministic partition of [0, n) for a grain: block b covers
// [b * block_size, min(n, (b + 1) * block_size)). It is the determinism
// contract of thread_pool.h made concrete: it depends on n and the grain
// only, never on the thread count.
struct Partition {
  int64_t num_blocks = 0;
  int64_t block_size = 0;
};
Partition partition_range(int64_t n, int64_t grain);

// Grain for a per-iteration cost (at least 1).
int64_t grain_for_cost(const Cost& cost);
// Estimated cycles of `n` iterations of `cost`.
double cycles_of(int64_t n, const Cost& cost);
// Threads (1..max_threads) worth running a loop of `total_cycles`: each must
// get at least kThreadCycles (100K) of work, which pays for waking a parked
// worker and for the spin window it then burns; workers already spinning
// (`spinning_workers`, awake and idle when the loop starts) join for a fifth
// of that. Only who runs the blocks depends on it, never the partition.
int threads_for_cost(double total_cycles, int max_threads, int spinning_workers = 0);

}  // namespace spindle
