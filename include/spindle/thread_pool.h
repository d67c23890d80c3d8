// spindle/thread_pool.h — public handles of spindle's two kinds of pool.
//
// ThreadPool (intra-op): splits one loop across dop threads, the caller
// included. Block boundaries depend only on the range and the grain (never on
// timing or on the thread count), so parallel_reduce gives bitwise-identical
// results for any number of threads.
//
// TaskPool (inter-op): runs independent tasks; fork() returns a Future whose
// wait()/get() helps run queued tasks when called from a pool thread.
//
// The implementation lives in src/threading (native backend) or in the
// OpenMP / TBB backends chosen with -DSPINDLE_PARALLEL_BACKEND.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spindle/status.h"
#include "spindle/threading_options.h"

namespace spindle {

// A non-owning reference to a callable; cheap to pass down the hot path.
template <class Sig>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit by design
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(obj))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  void* obj_;
  R (*call_)(void*, Args...);
};

using RangeFn = FunctionRef<void(int64_t begin, int64_t end)>;

// Cost of one loop iteration, used to pick the grain and the inline
// break-even point when the caller does not know a grain.
struct Cost {
  double bytes_loaded = 0;
  double bytes_stored = 0;
  double compute_cycles = 0;
};

namespace detail {
class IntraPoolImpl;
class TaskPoolImpl;
class FutureCore;  // a Future's completion: ready flag, error, waiters (src/threading)
}  // namespace detail

// Intra-op pool. Thread-safe: many threads may call parallel_for at once; a
// parallel_for called from inside a parallel_for of the same pool runs inline.
class ThreadPool {
 public:
  // Validates the options (errors name the key, value and expectation) and
  // starts dop - 1 workers.
  static Result<std::unique_ptr<ThreadPool>> create(const ThreadingOptions& options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Degree of parallelism, counting the caller.
  int dop() const;
  int num_workers() const { return dop() - 1; }
  // The options after resolution (num_threads filled in, spin window set).
  const ThreadingOptions& options() const;

  // Runs fn over [begin, end) in blocks of at least `grain` iterations. The
  // caller runs blocks too. The first exception thrown by fn is rethrown here
  // after all blocks in flight finish; blocks not yet started are skipped.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn);
  // Same, with the cost of one iteration. The partition still comes from
  // `grain` alone (so results do not change); the cost only decides how many
  // threads run the blocks: a loop too small to pay for waking another
  // thread runs inline on the caller.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const Cost& per_iter, RangeFn fn);
  // Same, with the grain derived from a per-iteration cost; small loops run
  // inline on the caller.
  void parallel_for(int64_t n, const Cost& cost, RangeFn fn);

  // Deterministic reduction: block partials are combined in block order.
  template <class T, class Map, class Combine>
  T parallel_reduce(int64_t begin, int64_t end, int64_t grain, T identity, Map map, Combine combine);

  // Marks a run (e.g. one inference) as active: between runs, idle workers
  // stop spinning at once instead of waiting out their spin window.
  class RunScope {
   public:
    explicit RunScope(ThreadPool* pool);
    ~RunScope();
    RunScope(const RunScope&) = delete;
    RunScope& operator=(const RunScope&) = delete;

   private:
    ThreadPool* pool_;
  };

  // Linux thread ids of the workers (for tests and profiling).
  std::vector<int> worker_tids() const;
  // True when the calling thread is one of this pool's workers.
  bool is_worker_thread() const;

 private:
  explicit ThreadPool(std::unique_ptr<detail::IntraPoolImpl> impl);
  // parallel_reduce's blocks: how many the grain gives [begin, end), then
  // fn(block, lo, hi) for each of them across the pool.
  static int64_t reduce_blocks(int64_t begin, int64_t end, int64_t grain);
  void run_reduce_blocks(int64_t begin, int64_t end, int64_t grain,
                         FunctionRef<void(int64_t block, int64_t lo, int64_t hi)> fn);
  void run_loop(int64_t begin, int64_t end, int64_t grain, int threads, RangeFn fn);
  std::unique_ptr<detail::IntraPoolImpl> impl_;
};

// Runs fn over [begin, end) on `pool`, or inline when pool is null.
void parallel_for(ThreadPool* pool, int64_t begin, int64_t end, int64_t grain, RangeFn fn);
void parallel_for(ThreadPool* pool, int64_t n, const Cost& cost, RangeFn fn);
void parallel_for(ThreadPool* pool, int64_t begin, int64_t end, int64_t grain, const Cost& per_iter, RangeFn fn);

// Observes parallel_for blocks (spindle profile). While a tracer is installed
// on a thread (BlockTraceScope), every block of the parallel_for calls made
// from that thread is reported, on whichever thread ran it, with that
// thread's Linux tid and steady_clock times in nanoseconds. on_block may be
// called from several threads at once.
class BlockTracer {
 public:
  virtual ~BlockTracer() = default;
  virtual void on_block(int tid, int64_t start_ns, int64_t end_ns) = 0;
};

class BlockTraceScope {
 public:
  explicit BlockTraceScope(BlockTracer* tracer);
  ~BlockTraceScope();
  BlockTraceScope(const BlockTraceScope&) = delete;
  BlockTraceScope& operator=(const BlockTraceScope&) = delete;

 private:
  BlockTracer* saved_;
};

template <class T, class Map, class Combine>
T ThreadPool::parallel_reduce(int64_t begin, int64_t end, int64_t grain, T identity, Map map,
                              Combine combine) {
  const int64_t blocks = reduce_blocks(begin, end, grain);
  if (blocks == 0) return identity;
  std::vector<T> partials(static_cast<size_t>(blocks), identity);
  run_reduce_blocks(begin, end, grain, [&](int64_t b, int64_t lo, int64_t hi) {
    partials[static_cast<size_t>(b)] = map(lo, hi, identity);
  });
  T acc = identity;
  for (const T& p : partials) acc = combine(acc, p);
  return acc;
}

// ---------------------------------------------------------------------------
// Inter-op pool and futures.

// What every Future<T> has whatever T is: its completion, kept by the
// library (a task that threw completes with its exception).
class FutureBase {
 public:
  bool valid() const { return core_ != nullptr; }
  bool is_ready() const;
  // Waits for the task; from a pool thread, runs other queued tasks meanwhile.
  void wait() const;

 protected:
  FutureBase() = default;
  explicit FutureBase(std::shared_ptr<detail::FutureCore> core) : core_(std::move(core)) {}
  // Rethrows the task's exception, if it threw.
  void rethrow_if_error() const;

 private:
  std::shared_ptr<detail::FutureCore> core_;
};

template <class T>
class Future : public FutureBase {
 public:
  Future() = default;
  // Waits, then returns the value or rethrows the task's exception.
  T get() const {
    wait();
    rethrow_if_error();
    if constexpr (!std::is_void_v<T>) return *value_->value;
  }

 private:
  friend class TaskPool;
  // Where the task stores its value (nothing for void).
  struct Slot {
    std::optional<std::conditional_t<std::is_void_v<T>, char, T>> value;
  };
  Future(std::shared_ptr<detail::FutureCore> core, std::shared_ptr<Slot> value)
      : FutureBase(std::move(core)), value_(std::move(value)) {}
  std::shared_ptr<Slot> value_;
};

// Inter-op pool. Thread-safe.
class TaskPool {
 public:
  static Result<std::unique_ptr<TaskPool>> create(const ThreadingOptions& options);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  int num_threads() const;
  const ThreadingOptions& options() const;

  // Queues fn; the Future carries its result or exception.
  template <class F>
  auto fork(F&& fn) -> Future<std::invoke_result_t<F>>;

  // Queues a fire-and-forget task (executors use it); fn must not throw.
  void schedule(std::function<void()> fn);
  // Runs one queued task on the calling thread if any; returns whether it did.
  bool try_run_one();

  std::vector<int> worker_tids() const;
  bool is_worker_thread() const;

 private:
  explicit TaskPool(std::unique_ptr<detail::TaskPoolImpl> impl);
  // A new, pending completion for fork's Future, waited on through this pool.
  std::shared_ptr<detail::FutureCore> new_future() const;
  // Completes `core`: with `error` (the task threw) or without.
  static void complete(detail::FutureCore& core, std::exception_ptr error);
  std::unique_ptr<detail::TaskPoolImpl> impl_;
};

template <class F>
auto TaskPool::fork(F&& fn) -> Future<std::invoke_result_t<F>> {
  using T = std::invoke_result_t<F>;
  std::shared_ptr<detail::FutureCore> core = new_future();
  auto value = std::make_shared<typename Future<T>::Slot>();
  schedule([core, value, fn = std::forward<F>(fn)]() mutable {
    try {
      if constexpr (std::is_void_v<T>) {
        fn();
      } else {
        value->value.emplace(fn());
      }
      complete(*core, nullptr);
    } catch (...) {
      complete(*core, std::current_exception());
    }
  });
  return Future<T>(std::move(core), std::move(value));
}

}  // namespace spindle
