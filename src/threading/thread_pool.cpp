// thread_pool.cpp — what every backend of the intra-op pool shares.
//
// Partitioning is deterministic: the number of blocks depends on the range
// and the grain only (at most kMaxBlocks), never on the thread count or on
// timing. Threads claim blocks dynamically, which balances load without
// changing the boundaries.
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "threading/cost.h"
#include "threading/intra_pool.h"

namespace spindle {

namespace {
// Cycles of work per block when the grain comes from a Cost, and the inline
// break-even: a loop cheaper than one block runs on the caller. About 8 µs at
// 2.6 GHz, several times the hot dispatch cost measured by
// bench/threading (dispatch_hot); checked by the elementwise sweep there.
constexpr double kBlockCycles = 20000;
// Cycles per byte moved, for Cost hints (streaming from L2/L3).
constexpr double kCyclesPerByte = 0.1;
// Cycles of work each thread of a loop with a Cost must get (threads_for_cost).
// Waking a parked worker costs the caller a futex wake and the worker a
// reschedule (5-30 us under load), and the worker then spins its window
// (100 us by default) unless the next loop comes: a loop smaller than this per
// thread finishes on the caller before a second thread would have helped.
// Chosen among 50K/100K/200K on bench-models at intra 2 (docs/benchmarks.md,
// "Threads inside kernels"). (A recurrent step, whose second block a spinning
// worker claims every step, gives no Cost: rnn.cpp.)
constexpr double kThreadCycles = 100000;
// The same for a worker that is spinning its window when the loop starts:
// it sees the offer within a fraction of a microsecond and burns the CPU
// anyway, so a share of ~6 us (a 1x1 convolution of 16 channels at 55x55,
// SqueezeNet's concats) pays for it. Measured on bench-models at intra 2
// (docs/benchmarks.md, "Spinning workers take smaller loops"); no other
// value was compared.
constexpr double kSpinningThreadCycles = 20000;

thread_local const detail::IntraPoolImpl* t_inside_pool = nullptr;
thread_local BlockTracer* t_tracer = nullptr;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs fn(lo, hi) and reports it to `tracer` (which may be null).
void traced(BlockTracer* tracer, RangeFn fn, int64_t lo, int64_t hi) {
  if (!tracer) return fn(lo, hi);
  const int64_t t0 = now_ns();
  fn(lo, hi);
  tracer->on_block(static_cast<int>(syscall(SYS_gettid)), t0, now_ns());
}
}  // namespace

BlockTraceScope::BlockTraceScope(BlockTracer* tracer) : saved_(t_tracer) { t_tracer = tracer; }
BlockTraceScope::~BlockTraceScope() { t_tracer = saved_; }

Partition partition_range(int64_t n, int64_t grain) {
  if (n <= 0) return {};
  grain = std::max<int64_t>(1, grain);
  int64_t blocks = std::min(detail::kMaxBlocks, (n + grain - 1) / grain);
  int64_t size = (n + blocks - 1) / blocks;
  return {(n + size - 1) / size, size};
}

namespace {
double cycles_per_iter(const Cost& cost) {
  const double c = cost.compute_cycles + kCyclesPerByte * (cost.bytes_loaded + cost.bytes_stored);
  return c > 0 ? c : 1;
}
}  // namespace

int64_t grain_for_cost(const Cost& cost) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kBlockCycles / cycles_per_iter(cost))));
}

double cycles_of(int64_t n, const Cost& cost) { return static_cast<double>(std::max<int64_t>(n, 0)) * cycles_per_iter(cost); }

int threads_for_cost(double total_cycles, int max_threads, int spinning_workers) {
  const double cold = std::floor(total_cycles / kThreadCycles);
  const double hot = std::min(std::floor(total_cycles / kSpinningThreadCycles), 1.0 + std::max(spinning_workers, 0));
  return static_cast<int>(std::clamp<double>(std::max(cold, hot), 1, std::max(max_threads, 1)));
}

namespace detail {
bool inside_pool(const IntraPoolImpl* pool) { return t_inside_pool == pool; }
InsidePoolScope::InsidePoolScope(const IntraPoolImpl* pool) : saved_(t_inside_pool) { t_inside_pool = pool; }
InsidePoolScope::~InsidePoolScope() { t_inside_pool = saved_; }
}  // namespace detail

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(const ThreadingOptions& options) {
  SPINDLE_ASSIGN_OR_RETURN(auto resolved, detail::resolve_pool_options(options, detail::PoolKind::kIntraOp));
  SPINDLE_ASSIGN_OR_RETURN(auto impl, detail::IntraPoolImpl::create(std::move(resolved)));
  return std::unique_ptr<ThreadPool>(new ThreadPool(std::move(impl)));
}

ThreadPool::ThreadPool(std::unique_ptr<detail::IntraPoolImpl> impl) : impl_(std::move(impl)) {}
ThreadPool::~ThreadPool() = default;

int ThreadPool::dop() const { return impl_->dop(); }
const ThreadingOptions& ThreadPool::options() const { return impl_->resolved().options; }
std::vector<int> ThreadPool::worker_tids() const { return impl_->worker_tids(); }
bool ThreadPool::is_worker_thread() const { return impl_->is_worker_thread(); }

int64_t ThreadPool::reduce_blocks(int64_t begin, int64_t end, int64_t grain) {
  return end > begin ? partition_range(end - begin, grain).num_blocks : 0;
}

void ThreadPool::run_reduce_blocks(int64_t begin, int64_t end, int64_t grain,
                                   FunctionRef<void(int64_t block, int64_t lo, int64_t hi)> fn) {
  if (end <= begin) return;
  const Partition part = partition_range(end - begin, grain);
  parallel_for(0, part.num_blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t lo = begin + b * part.block_size;
      fn(b, lo, std::min(end, lo + part.block_size));
    }
  });
}

// `threads` bounds the threads that run the blocks (the partition is the
// grain's whatever it is): 1 runs the loop inline.
void ThreadPool::run_loop(int64_t begin, int64_t end, int64_t grain, int threads, RangeFn fn) {
  if (end <= begin) return;
  const Partition part = partition_range(end - begin, grain);
  BlockTracer* const tracer = t_tracer;
  if (part.num_blocks <= 1 || threads <= 1 || impl_->dop() <= 1 || detail::inside_pool(impl_.get())) {
    detail::InsidePoolScope scope(impl_.get());
    traced(tracer, fn, begin, end);
    return;
  }
  threads = std::min(threads, impl_->dop());
  if (!tracer) return impl_->run(begin, end, part, threads, fn);
  auto each = [&](int64_t lo, int64_t hi) { traced(tracer, fn, lo, hi); };
  impl_->run(begin, end, part, threads, each);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  run_loop(begin, end, grain, impl_->dop(), fn);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain, const Cost& per_iter, RangeFn fn) {
  if (end <= begin) return;
  const double cycles = cycles_of(end - begin, per_iter);
  // Ask the backend for spinning workers only when they could change the answer.
  const bool hot_only = cycles >= 2 * kSpinningThreadCycles && cycles < 2 * kThreadCycles;
  const int spinning = hot_only ? impl_->spinning_workers() : 0;
  const int threads = threads_for_cost(cycles, impl_->dop(), spinning);
  // A loop a spinning worker would have shared, run alone because the
  // workers are parked: the backend hears of it (it may wake them for the
  // loops that follow; a parked worker is otherwise only woken by a loop
  // worth waking it for, and a run of many small loops, such as a decode
  // step's products, would stay on one thread).
  if (hot_only && threads <= 1 && impl_->dop() > 1 && !detail::inside_pool(impl_.get()) &&
      partition_range(end - begin, grain).num_blocks > 1) {
    struct Missed {
      detail::IntraPoolImpl* impl;
      ~Missed() { impl->missed_loop_end(); }
    };
    impl_->missed_loop_start();
    const Missed missed{impl_.get()};
    run_loop(begin, end, grain, 1, fn);
    return;
  }
  run_loop(begin, end, grain, threads, fn);
}

void ThreadPool::parallel_for(int64_t n, const Cost& cost, RangeFn fn) {
  parallel_for(0, n, grain_for_cost(cost), cost, fn);
}

ThreadPool::RunScope::RunScope(ThreadPool* pool) : pool_(pool) {
  if (pool_) pool_->impl_->begin_run();
}
ThreadPool::RunScope::~RunScope() {
  if (pool_) pool_->impl_->end_run();
}

void parallel_for(ThreadPool* pool, int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  if (pool) {
    pool->parallel_for(begin, end, grain, fn);
  } else if (end > begin) {
    traced(t_tracer, fn, begin, end);
  }
}

void parallel_for(ThreadPool* pool, int64_t n, const Cost& cost, RangeFn fn) {
  parallel_for(pool, 0, n, grain_for_cost(cost), cost, fn);
}

void parallel_for(ThreadPool* pool, int64_t begin, int64_t end, int64_t grain, const Cost& per_iter, RangeFn fn) {
  if (pool) {
    pool->parallel_for(begin, end, grain, per_iter, fn);
  } else if (end > begin) {
    traced(t_tracer, fn, begin, end);
  }
}

}  // namespace spindle
