// intra_pool_openmp.cpp — the OpenMP backend (-DSPINDLE_PARALLEL_BACKEND=openmp).
//
// Each loop is one `omp parallel` region of dop threads; the threads claim
// blocks from a shared counter, so the partition (and any reduction built on
// it) is the same as with the native backend. libgomp owns its threads:
// their spinning follows OMP_WAIT_POLICY / GOMP_SPINCOUNT, and spindle's
// spin, affinity, NUMA and custom-thread knobs are not applied (parallel_info
// lists them).
#include <omp.h>

#include <atomic>
#include <exception>
#include <mutex>

#include "threading/intra_pool.h"
#include "threading/thread_hooks.h"

namespace spindle::detail {
namespace {

thread_local const IntraPoolImpl* t_openmp_worker_of = nullptr;

class OpenMpIntraPool final : public IntraPoolImpl {
 public:
  explicit OpenMpIntraPool(ResolvedPool r) : IntraPoolImpl(std::move(r)) {
    // Warm the team up once so its threads exist and report their ids.
    std::mutex mu;
#pragma omp parallel num_threads(dop())
    {
      if (omp_get_thread_num() != 0) {
        std::lock_guard<std::mutex> lock(mu);
        tids_.push_back(current_tid());
      }
    }
  }

  void run(int64_t begin, int64_t end, const Partition& part, int max_threads, RangeFn fn) override {
    std::atomic<int64_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mu;
    const int threads = static_cast<int>(std::min<int64_t>({dop(), max_threads, part.num_blocks}));
#pragma omp parallel num_threads(threads)
    {
      const IntraPoolImpl* saved = t_openmp_worker_of;
      if (omp_get_thread_num() != 0) t_openmp_worker_of = this;
      InsidePoolScope scope(this);
      for (;;) {
        const int64_t b = next.fetch_add(1, std::memory_order_relaxed);
        if (b >= part.num_blocks || failed.load(std::memory_order_relaxed)) break;
        const int64_t lo = begin + b * part.block_size;
        const int64_t hi = std::min(end, lo + part.block_size);
        try {
          fn(lo, hi);
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mu);
          if (!failed.exchange(true)) error = std::current_exception();
        }
      }
      t_openmp_worker_of = saved;
    }
    if (error) std::rethrow_exception(error);
  }

  std::vector<int> worker_tids() const override { return tids_; }
  bool is_worker_thread() const override { return t_openmp_worker_of == this; }

 private:
  std::vector<int> tids_;
};

}  // namespace

std::vector<std::string> backend_ignored_knobs() {
  return {"allow_spinning (OMP_WAIT_POLICY decides)", "spin_duration_us (GOMP_SPINCOUNT decides)",
          "spin_backoff_max", "thread_affinities", "numa_node", "create_thread/join_thread",
          "on_worker_start/on_worker_stop", "default pinning"};
}

Result<std::unique_ptr<IntraPoolImpl>> IntraPoolImpl::create(ResolvedPool resolved) {
  return std::unique_ptr<IntraPoolImpl>(std::make_unique<OpenMpIntraPool>(std::move(resolved)));
}

}  // namespace spindle::detail
