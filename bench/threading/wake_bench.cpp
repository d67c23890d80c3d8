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
//
// On a machine with fewer processors than workers this measures an
// oversubscribed pool (the scheduler decides when a woken worker runs);
// compare figures only between runs on the same machine.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "spindle/thread_pool.h"

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

}  // namespace

#define SPINDLE_WAKE_BENCH(fn, name) \
  BENCHMARK(fn)->Name(name)->Arg(8)->Arg(32)->Arg(64)->Arg(128)->UseRealTime()->Unit(benchmark::kMicrosecond)->MinTime(0.3)

SPINDLE_WAKE_BENCH(BM_fork_join_empty_park, "fork_join_empty/park");
SPINDLE_WAKE_BENCH(BM_fork_join_small_park, "fork_join_small/park");
SPINDLE_WAKE_BENCH(BM_fork_join_empty_spin, "fork_join_empty/spin");
SPINDLE_WAKE_BENCH(BM_fork_join_small_spin, "fork_join_small/spin");

BENCHMARK_MAIN();
