// wake_bench.cpp — fork-join cost of spindle's native intra-op pool as the
// worker count grows: 8, 32, 64 and 128 workers (dop = workers + 1).
//
// Benchmarks (name: <benchmark>/<spin|park>/<workers>):
//   fork_join_empty   parallel_for over dop one-iteration blocks that do
//                     nothing: the caller offers a block to every worker,
//                     wakes each one that sleeps (one futex wake per parked
//                     worker, issued one after another by the caller), runs
//                     its own block and waits for the blocks workers claimed.
//   fork_join_small   the same with ~1 µs of arithmetic per block.
// spin = default spin window (idle workers poll for 100 µs before parking);
// park = allow_spinning=false, so every loop wakes parked workers through
// futex: the wake-up path alone. per_worker_ns = time / workers.
//   wake_loop         the caller's part of waking: W threads asleep on
//                     spindle's Parker (parker.h); the timed part is the
//                     loop that makes each one's condition true and unparks
//                     it, one futex wake per sleeper, as the pool's offer
//                     loop does (manual time: the loop only, not the
//                     wait until every sleeper has run and parked again).
//                     wake_loop/apart: the caller pinned to the first
//                     allowed processor and the sleepers to the last, so
//                     woken threads do not preempt the caller's loop: the
//                     system calls alone (needs 2 allowed processors).
//
// On a machine with fewer processors than workers this measures an
// oversubscribed pool (the scheduler decides when a woken worker runs);
// compare figures only between runs on the same machine.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "spindle/thread_pool.h"
#include "threading/parker.h"

namespace {

std::unique_ptr<spindle::ThreadPool> make_pool(int workers, bool spin) {
  spindle::ThreadingOptions o;
  o.num_threads = workers + 1;
  o.allow_spinning = spin;
  auto r = spindle::ThreadPool::create(o);
  if (!r.is_ok()) {
    std::fprintf(stderr, "spindle::ThreadPool::create: %s\n", r.status().to_string().c_str());
    std::abort();
  }
  return std::move(r.value());
}

// ~1 µs of dependent multiply-adds that the compiler cannot drop.
float small_work(int64_t seed) {
  float x = static_cast<float>(seed) * 1e-3f;
  for (int i = 0; i < 1000; ++i) x = x * 0.999f + 0.5f;
  return x;
}

void fork_join(benchmark::State& state, bool spin, bool work) {
  const int workers = static_cast<int>(state.range(0));
  auto pool = make_pool(workers, spin);
  const int64_t blocks = workers + 1;
  float sink = 0;
  for (auto _ : state) {
    pool->parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
      if (!work) return;
      float s = 0;
      for (int64_t b = lo; b < hi; ++b) s += small_work(b);
      benchmark::DoNotOptimize(s);
    });
  }
  benchmark::DoNotOptimize(sink);
  state.counters["per_worker_ns"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * workers, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["workers"] = workers;
}

void BM_fork_join_empty_spin(benchmark::State& s) { fork_join(s, true, false); }
void BM_fork_join_empty_park(benchmark::State& s) { fork_join(s, false, false); }
void BM_fork_join_small_spin(benchmark::State& s) { fork_join(s, true, true); }
void BM_fork_join_small_park(benchmark::State& s) { fork_join(s, false, true); }

struct Sleeper {
  spindle::detail::Parker parker;
  std::atomic<uint32_t> go{0};
};

void pin_to(int cpu) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  CPU_SET(cpu, &mask);
  pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask);
}

void BM_wake_loop(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool apart = state.range(1) != 0;
  cpu_set_t process;
  CPU_ZERO(&process);
  sched_getaffinity(0, sizeof(process), &process);
  int first = -1, last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &process)) {
      if (first < 0) first = c;
      last = c;
    }
  if (apart && first == last) {
    state.SkipWithError("wake_loop/apart needs two allowed processors");
    return;
  }
  cpu_set_t caller_mask;
  CPU_ZERO(&caller_mask);
  pthread_getaffinity_np(pthread_self(), sizeof(caller_mask), &caller_mask);
  if (apart) pin_to(first);
  std::vector<Sleeper> sleepers(static_cast<size_t>(n));
  std::atomic<int> woke{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      Sleeper& s = sleepers[static_cast<size_t>(i)];
      if (apart) pin_to(last);
      uint32_t seen = 0;
      for (;;) {
        s.parker.park([&] { return s.go.load(std::memory_order_acquire) != seen; });
        seen = s.go.load(std::memory_order_acquire);
        if (stop.load(std::memory_order_acquire)) return;
        woke.fetch_add(1, std::memory_order_release);
      }
    });
  auto all_parked = [&] {
    for (;;) {
      bool all = true;
      for (const Sleeper& s : sleepers) all = all && s.parker.is_parked();
      if (all) return;
      std::this_thread::yield();
    }
  };
  for (auto _ : state) {
    all_parked();
    woke.store(0, std::memory_order_relaxed);
    const auto t0 = std::chrono::steady_clock::now();
    for (Sleeper& s : sleepers) {
      s.go.fetch_add(1, std::memory_order_seq_cst);
      s.parker.unpark();
    }
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    while (woke.load(std::memory_order_acquire) < n) std::this_thread::yield();
  }
  stop.store(true, std::memory_order_release);
  for (Sleeper& s : sleepers) {
    s.go.fetch_add(1, std::memory_order_seq_cst);
    s.parker.unpark();
  }
  for (std::thread& t : threads) t.join();
  pthread_setaffinity_np(pthread_self(), sizeof(caller_mask), &caller_mask);
  state.counters["per_wake_ns"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_wake_loop)->Name("wake_loop")->ArgsProduct({{8, 32, 64, 128}, {0, 1}})->ArgNames({"sleepers", "apart"})->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3);

#define SPINDLE_WAKE_BENCH(fn, name) \
  BENCHMARK(fn)->Name(name)->Arg(8)->Arg(32)->Arg(64)->Arg(128)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3)

SPINDLE_WAKE_BENCH(BM_fork_join_empty_park, "fork_join_empty/park");
SPINDLE_WAKE_BENCH(BM_fork_join_small_park, "fork_join_small/park");
SPINDLE_WAKE_BENCH(BM_fork_join_empty_spin, "fork_join_empty/spin");
SPINDLE_WAKE_BENCH(BM_fork_join_small_spin, "fork_join_small/spin");

BENCHMARK_MAIN();
