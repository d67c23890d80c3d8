// intra_pool.h — the backend interface behind spindle::ThreadPool.
//
// thread_pool.cpp holds everything backends share: partitioning, the inline
// decisions (one block, no workers, nested call) and parallel_reduce. A
// backend only runs an already partitioned loop over its threads:
//   intra_pool_native.cpp  per-worker slots, spin-then-park (all knobs)
//   intra_pool_openmp.cpp  one OpenMP parallel region per loop
//   intra_pool_tbb.cpp     a task_arena of dop threads
// Exactly one backend is compiled in (SPINDLE_PARALLEL_BACKEND).
#pragma once

#include <memory>
#include <vector>

#include "spindle/thread_pool.h"
#include "threading/cost.h"
#include "threading/pool_options.h"

namespace spindle::detail {

// Upper bound on blocks per loop (partition_range never makes more): enough
// for 4 blocks per thread on 32 threads while keeping per-block claiming (one
// atomic increment) negligible. Backends may rely on it (the native pool
// packs the block count into 16 bits).
inline constexpr int64_t kMaxBlocks = 128;

class IntraPoolImpl {
 public:
  explicit IntraPoolImpl(ResolvedPool resolved) : resolved_(std::move(resolved)) {}
  virtual ~IntraPoolImpl() = default;

  // Defined by the compiled-in backend.
  static Result<std::unique_ptr<IntraPoolImpl>> create(ResolvedPool resolved);

  int dop() const { return resolved_.options.num_threads; }
  const ResolvedPool& resolved() const { return resolved_; }

  // Runs fn over the blocks of `part` (2 to kMaxBlocks blocks, not nested)
  // on at most `threads` threads (2..dop, the caller counted). Rethrows the
  // first exception of fn.
  virtual void run(int64_t begin, int64_t end, const Partition& part, int threads, RangeFn fn) = 0;
  virtual std::vector<int> worker_tids() const = 0;
  virtual bool is_worker_thread() const = 0;
  // Run boundaries (ThreadPool::RunScope); backends without spinning ignore them.
  virtual void begin_run() {}
  virtual void end_run() {}
  // Workers idle and awake right now (spinning their window), so a loop
  // offered to them starts in well under a microsecond; a hint read without
  // ordering (threads_for_cost). Backends that do not know say 0.
  virtual int spinning_workers() const { return 0; }
  // A loop that a spinning worker would have shared (threads_for_cost's bar
  // for one) ran on the caller alone because every worker was parked:
  // called as it starts and as it ends. A backend whose workers park may
  // wake them to spin for the loops that follow. Backends that do not park
  // ignore it.
  virtual void missed_loop_start() {}
  virtual void missed_loop_end() {}

 private:
  ResolvedPool resolved_;
};

// Knobs the compiled-in backend cannot honor, for parallel_info.
std::vector<std::string> backend_ignored_knobs();

// True while the calling thread runs a block of `pool` (worker or caller):
// a parallel_for on the same pool then runs inline.
bool inside_pool(const IntraPoolImpl* pool);

class InsidePoolScope {
 public:
  explicit InsidePoolScope(const IntraPoolImpl* pool);
  ~InsidePoolScope();
  InsidePoolScope(const InsidePoolScope&) = delete;
  InsidePoolScope& operator=(const InsidePoolScope&) = delete;

 private:
  const IntraPoolImpl* saved_;
};

}  // namespace spindle::detail
