// intra_pool_tbb.cpp — the oneTBB backend (-DSPINDLE_PARALLEL_BACKEND=tbb).
//
// A task_arena of dop slots (one reserved for the caller) runs each loop as a
// tbb::parallel_for over the blocks of the shared partition, so results are
// the same as with the native backend. TBB owns its worker threads and their
// spinning; spindle's spin, affinity, NUMA and custom-thread knobs are not
// applied (parallel_info lists them).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tbb/task_scheduler_observer.h>

#include <mutex>
#include <set>

#include "threading/intra_pool.h"
#include "threading/thread_hooks.h"

namespace spindle::detail {
namespace {

thread_local const IntraPoolImpl* t_tbb_worker_of = nullptr;

class TbbIntraPool final : public IntraPoolImpl {
 public:
  explicit TbbIntraPool(ResolvedPool r)
      : IntraPoolImpl(std::move(r)), arena_(dop(), 1), observer_(arena_, this) {
    observer_.observe(true);
  }
  ~TbbIntraPool() override { observer_.observe(false); }

  // The arena's concurrency is fixed: `threads` only bounds what the native
  // and OpenMP backends wake; TBB's idle workers steal on their own.
  void run(int64_t begin, int64_t end, const Partition& part, int /*threads*/, RangeFn fn) override {
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<int64_t>(0, part.num_blocks, 1),
                        [&](const tbb::blocked_range<int64_t>& r) {
                          InsidePoolScope scope(this);
                          for (int64_t b = r.begin(); b < r.end(); ++b) {
                            const int64_t lo = begin + b * part.block_size;
                            fn(lo, std::min(end, lo + part.block_size));
                          }
                        },
                        tbb::simple_partitioner());
    });
  }

  std::vector<int> worker_tids() const override {
    std::lock_guard<std::mutex> lock(observer_.mu);
    return {observer_.tids.begin(), observer_.tids.end()};
  }
  bool is_worker_thread() const override { return t_tbb_worker_of == this; }

 private:
  struct Observer : tbb::task_scheduler_observer {
    Observer(tbb::task_arena& arena, const IntraPoolImpl* pool) : tbb::task_scheduler_observer(arena), pool(pool) {}
    void on_scheduler_entry(bool is_worker) override {
      if (!is_worker) return;
      t_tbb_worker_of = pool;
      std::lock_guard<std::mutex> lock(mu);
      tids.insert(current_tid());
    }
    void on_scheduler_exit(bool is_worker) override {
      if (is_worker) t_tbb_worker_of = nullptr;
    }
    const IntraPoolImpl* pool;
    mutable std::mutex mu;
    std::set<int> tids;
  };

  tbb::task_arena arena_;
  Observer observer_;
};

}  // namespace

std::vector<std::string> backend_ignored_knobs() {
  return {"allow_spinning", "spin_duration_us", "spin_backoff_max", "thread_affinities", "numa_node",
          "create_thread/join_thread", "on_worker_start/on_worker_stop", "default pinning"};
}

Result<std::unique_ptr<IntraPoolImpl>> IntraPoolImpl::create(ResolvedPool resolved) {
  return std::unique_ptr<IntraPoolImpl>(std::make_unique<TbbIntraPool>(std::move(resolved)));
}

}  // namespace spindle::detail
