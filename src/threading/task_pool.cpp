// task_pool.cpp — the inter-op pool: independent tasks and futures.
//
// Tasks go to one FIFO queue guarded by a mutex: inter-op tasks are whole
// operators or requests (tens of microseconds and up), so the lock is not on
// a hot path the way parallel_for is. Idle workers spin for the spin window
// watching `queued_`, then sleep on one futex word shared by the pool:
//
//   worker                            schedule()
//   ++sleepers                        push; ++queued_
//   s = wake_seq_                     if (sleepers) { ++wake_seq_; futex_wake(1) }
//   if (queued_ == 0) futex_wait(wake_seq_, s)
//
// (seq_cst on both sides: the worker sees the task or the scheduler sees the
// sleeper.) Future::wait() from a pool thread runs queued tasks while it
// waits, so a saturated pool whose tasks wait on tasks cannot deadlock; with
// nothing queued it sleeps on the same word as a "helper", and every task
// that finishes while helpers sleep wakes them to look at their futures
// (fences on both sides: the helper sees its future ready or the finishing
// task sees the helper). No timed poll.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <latch>
#include <mutex>

#include <fmt/format.h>

#include "spindle/thread_pool.h"
#include "threading/parker.h"
#include "threading/pool_options.h"
#include "threading/spin.h"
#include "threading/thread_hooks.h"

namespace spindle {
namespace detail {

// A Future's completion, shared by the Future and its task: done once, with
// or without the task's exception. The error is written before the release
// store of ready_ and read only after an acquire load saw it.
class FutureCore {
 public:
  explicit FutureCore(TaskPoolImpl* pool) : pool_(pool) {}
  bool is_ready() const { return ready_.load(std::memory_order_acquire); }
  void complete(std::exception_ptr error);
  // Blocks until ready; from a thread of the pool it runs queued tasks meanwhile.
  void wait();
  const std::exception_ptr& error() const { return error_; }

 private:
  TaskPoolImpl* pool_;
  std::atomic<bool> ready_{false};
  std::exception_ptr error_;
  std::mutex mu_;
  std::condition_variable cv_;
};

class TaskPoolImpl {
 public:
  explicit TaskPoolImpl(ResolvedPool r) : resolved_(std::move(r)), spin_(make_spin_policy(resolved_.options)) {}

  Status start() {
    const int n = resolved_.num_workers();
    threads_.resize(static_cast<size_t>(n));
    tids_.assign(static_cast<size_t>(n), 0);
    std::latch started(n);
    for (int i = 0; i < n; ++i) {
      const CpuSet* pin = resolved_.placement.empty() ? nullptr : &resolved_.placement[static_cast<size_t>(i)];
      threads_[static_cast<size_t>(i)] = start_pool_thread(resolved_.options, i, pin, [this, i, &started] {
        tids_[static_cast<size_t>(i)] = current_tid();
        started.count_down();
        worker_loop();
      });
      if (!threads_[static_cast<size_t>(i)].started()) {
        for (int j = i; j < n; ++j) started.count_down();
        stop_all();
        return runtime_error(fmt::format("{}: create_thread returned no thread for worker {}",
                                         resolved_.options.name, i));
      }
    }
    started.wait();
    return Status::ok();
  }

  ~TaskPoolImpl() { stop_all(); }

  const ResolvedPool& resolved() const { return resolved_; }
  const std::vector<int>& tids() const { return tids_; }
  bool is_worker_thread() const { return t_pool == this; }

  void schedule(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
    }
    queued_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_seq_.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(&wake_seq_, 1);
    }
  }

  bool try_run_one() {
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return false;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    queued_.fetch_sub(1, std::memory_order_relaxed);
    task();
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with wait_helping's
    if (helpers_.load(std::memory_order_relaxed) > 0) {
      wake_seq_.fetch_add(1, std::memory_order_seq_cst);
      futex_wake(&wake_seq_, INT_MAX);
    }
    return true;
  }

  // Future::wait on a thread of this pool: runs queued tasks until `f` is
  // ready, sleeping while there are none (see the overview).
  void wait_helping(const FutureCore& f) {
    while (!f.is_ready()) {
      if (try_run_one()) continue;
      helpers_.fetch_add(1, std::memory_order_seq_cst);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      for (;;) {
        const uint32_t s = wake_seq_.load(std::memory_order_seq_cst);
        if (f.is_ready() || has_queued() || stop_.load(std::memory_order_seq_cst)) break;
        futex_wait(&wake_seq_, s);
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      helpers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  bool has_queued() const { return queued_.load(std::memory_order_acquire) > 0; }

 private:
  static thread_local const TaskPoolImpl* t_pool;

  void worker_loop() {
    t_pool = this;
    for (;;) {
      if (try_run_one()) continue;
      if (stop_.load(std::memory_order_acquire)) return;
      if (spin_until(spin_, [&] { return has_queued(); }, [&] { return stop_.load(std::memory_order_relaxed); }))
        continue;
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      for (;;) {
        uint32_t s = wake_seq_.load(std::memory_order_seq_cst);
        if (has_queued() || stop_.load(std::memory_order_seq_cst)) break;
        futex_wait(&wake_seq_, s);
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }

  void stop_all() {
    stop_.store(true, std::memory_order_seq_cst);
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&wake_seq_, INT_MAX);
    for (PoolThread& t : threads_) t.join();
  }

  ResolvedPool resolved_;
  SpinPolicy spin_;
  std::vector<PoolThread> threads_;
  std::vector<int> tids_;
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
  std::atomic<int64_t> queued_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<int> helpers_{0};  // sleepers inside wait_helping
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<bool> stop_{false};
};

thread_local const TaskPoolImpl* TaskPoolImpl::t_pool = nullptr;

void FutureCore::complete(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::move(error);
    ready_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

void FutureCore::wait() {
  if (is_ready()) return;
  if (pool_ && pool_->is_worker_thread()) {
    // Help: run queued tasks until ours is done (a pool thread blocked here
    // could otherwise hold up the very task it waits for).
    pool_->wait_helping(*this);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return is_ready(); });
}

}  // namespace detail

bool FutureBase::is_ready() const { return core_ && core_->is_ready(); }

void FutureBase::wait() const {
  if (!core_) throw Error(StatusCode::kFailedPrecondition, "wait() on an empty Future");
  core_->wait();
}

void FutureBase::rethrow_if_error() const {
  if (core_->error()) std::rethrow_exception(core_->error());
}

std::shared_ptr<detail::FutureCore> TaskPool::new_future() const {
  return std::make_shared<detail::FutureCore>(impl_.get());
}

void TaskPool::complete(detail::FutureCore& core, std::exception_ptr error) { core.complete(std::move(error)); }

Result<std::unique_ptr<TaskPool>> TaskPool::create(const ThreadingOptions& options) {
  ThreadingOptions named = options;
  if (named.name == "intra_op") named.name = "inter_op";
  SPINDLE_ASSIGN_OR_RETURN(auto resolved, detail::resolve_pool_options(named, detail::PoolKind::kInterOp));
  auto impl = std::make_unique<detail::TaskPoolImpl>(std::move(resolved));
  SPINDLE_RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<TaskPool>(new TaskPool(std::move(impl)));
}

TaskPool::TaskPool(std::unique_ptr<detail::TaskPoolImpl> impl) : impl_(std::move(impl)) {}
TaskPool::~TaskPool() = default;

int TaskPool::num_threads() const { return impl_->resolved().options.num_threads; }
const ThreadingOptions& TaskPool::options() const { return impl_->resolved().options; }
void TaskPool::schedule(std::function<void()> fn) { impl_->schedule(std::move(fn)); }
bool TaskPool::try_run_one() { return impl_->try_run_one(); }
std::vector<int> TaskPool::worker_tids() const { return impl_->tids(); }
bool TaskPool::is_worker_thread() const { return impl_->is_worker_thread(); }

}  // namespace spindle
