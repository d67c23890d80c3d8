// pool_bench.cpp — spindle's intra-op pool side by side with OpenMP (libgomp),
// oneTBB, Eigen's ThreadPool and pthreadpool, all at 2 threads counting the
// caller (dop 2), in one Google Benchmark run (bench/threading/run.sh runs it
// with repetitions and random interleaving, and prints the medians).
//
// Benchmarks (the name is <benchmark>/<peer>[/<size>]):
//   dispatch_hot        an empty 2-block loop back to back: dispatch + join.
//   dispatch_after_gap  the same after 200 µs of idle sleep, so spinning
//                       workers have spun out; manual time covers the
//                       dispatch only (time = mean over the gaps; p50_ns and
//                       p90_ns = percentiles of single dispatches).
//                       proc_cpu_us = CPU the whole process burnt per
//                       iteration, gap included (spinning shows).
//   axpy                y = a*x + b on 4K / 64K / 1M floats, split in 2 equal
//                       blocks for every peer; serial = one thread, no pool;
//                       spindle_cost = spindle's own grain from a Cost hint.
//   idle_burn           idle_cpu_ms: CPU the whole process burnt during 100 ms
//                       of sleep right after 1000 dispatches (4K axpy),
//                       summed over per-thread CPU clocks; idle_cpu_ms_rusage:
//                       the same from getrusage(RUSAGE_SELF) user+sys, which
//                       can count up to a tick of the burst's own work (see
//                       rusage_cpu_seconds). remote_share is the burst's.
//   pingpong            round trip of one 64-byte line between threads pinned
//                       to CPU 0 and CPU 1: the floor of any hand-off.
// remote_share = fraction of blocks run by a thread other than the caller
// (0 means the caller ran everything itself and the worker never helped).
//
// Peers, each created once per benchmark run (never per iteration):
//   spindle          spindle::ThreadPool, num_threads=2 (1 worker + caller),
//                    default spin window, nothing pinned; spindle_nospin:
//                    allow_spinning=false; spindle_pinned: the worker pinned
//                    to the second allowed CPU (the default placement on 2
//                    cores), the caller unpinned;
//                    spindle_runscope (idle_burn only): the burst runs inside
//                    a ThreadPool::RunScope, so workers stop spinning when it ends.
//   omp              #pragma omp parallel for num_threads(2) schedule(static);
//                    libgomp's thread team is process-global.
//   tbb              tbb::parallel_for (simple_partitioner, grain 1) inside a
//                    tbb::task_arena(2) (1 worker slot + the caller).
//   eigen            Eigen::ThreadPool(1): the caller schedules one closure
//                    for the worker, runs the other half itself, then waits on
//                    an Eigen::Barrier (mutex + condvar), as Eigen's own
//                    TensorDeviceThreadPool::parallelFor does.
//   pthreadpool      pthreadpool_create(2) (1 worker + caller),
//                    pthreadpool_parallelize_1d with flags 0.
#include <benchmark/benchmark.h>
#include <omp.h>
#include <pthread.h>
#include <pthreadpool.h>
#include <sched.h>
#include <dirent.h>
#include <sys/resource.h>
#include <time.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "spindle/thread_pool.h"
#include "spindle/threading_options.h"
#include "threading/cost.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kDop = 2;
constexpr auto kGap = 200us;
constexpr auto kIdleWindow = 100ms;
constexpr int kBurstDispatches = 1000;
// After a benchmark of a peer with a process-global runtime (libgomp's team,
// TBB's market workers), its idle workers may still be spinning; the next
// benchmark of another peer waits this long first so it does not pay for them.
constexpr auto kSettle = 50ms;

// Blocks run by this thread (each thread has its own; the caller reads its own
// before and after a benchmark to compute remote_share).
thread_local uint64_t t_blocks = 0;

// CPU time of the whole process, as getrusage(RUSAGE_SELF) reports it. Caveat:
// the kernel folds the runtime of a thread that is running on another CPU in
// at its next tick or context switch, so a worker that was busy when this is
// read has up to a tick of earlier work counted later.
double rusage_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// CPU time of the whole process as the sum of every thread's CPU clock (the
// clock id of a thread of this process is built from its TID, as glibc's
// pthread_getcpuclockid does). Reading a thread's clock brings a running
// thread's runtime up to date, so nothing earlier leaks into a later window.
// The threads are listed once, before a window (no thread starts or exits
// inside one here), so the window itself only pays for clock_gettime calls.
class ProcessCpu {
 public:
  ProcessCpu() {
    if (DIR* dir = opendir("/proc/self/task")) {
      while (const dirent* e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        const auto tid = static_cast<clockid_t>(std::atoi(e->d_name));
        clocks_.push_back((~tid << 3) | 6);  // CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED
      }
      closedir(dir);
    }
  }
  double seconds() const {
    double total = 0;
    for (clockid_t clock : clocks_) {
      timespec ts{};
      if (clock_gettime(clock, &ts) == 0) total += static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
    }
    return total;
  }

 private:
  std::vector<clockid_t> clocks_;
};

// ------------------------------------------------------------------ peers
// Every peer runs f(block) for block in [0, nblocks) on dop 2 and returns when
// all blocks are done.

enum class Runtime { kNone, kSpindle, kOmp, kTbb, kEigen, kPthreadpool };

// Waits kSettle when the previous benchmark used a process-global runtime
// other than this one (see kSettle).
void settle(Runtime now) {
  static Runtime last = Runtime::kNone;
  if (last != now && (last == Runtime::kOmp || last == Runtime::kTbb)) std::this_thread::sleep_for(kSettle);
  last = now;
}

struct SpindlePeer {
  static constexpr Runtime kRuntime = Runtime::kSpindle;
  explicit SpindlePeer(bool spinning, int pin_worker_to = -1) {
    spindle::ThreadingOptions o;
    o.num_threads = kDop;
    o.allow_spinning = spinning;
    if (pin_worker_to >= 0) o.affinities = {spindle::CpuSet::single(pin_worker_to)};
    auto r = spindle::ThreadPool::create(o);
    if (!r.is_ok()) {
      std::fprintf(stderr, "spindle::ThreadPool::create: %s\n", r.status().to_string().c_str());
      std::abort();
    }
    pool = std::move(r.value());
  }
  template <class F>
  void run(int64_t nblocks, F& f) {
    pool->parallel_for(0, nblocks, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) f(b);
    });
  }
  std::unique_ptr<spindle::ThreadPool> pool;
};

struct OmpPeer {
  static constexpr Runtime kRuntime = Runtime::kOmp;
  template <class F>
  void run(int64_t nblocks, F& f) {
#pragma omp parallel for num_threads(kDop) schedule(static)
    for (int64_t b = 0; b < nblocks; ++b) f(b);
  }
};

struct TbbPeer {
  static constexpr Runtime kRuntime = Runtime::kTbb;
  TbbPeer() : arena(kDop) { arena.initialize(); }
  template <class F>
  void run(int64_t nblocks, F& f) {
    arena.execute([&] {
      tbb::parallel_for(
          tbb::blocked_range<int64_t>(0, nblocks, 1),
          [&](const tbb::blocked_range<int64_t>& r) {
            for (int64_t b = r.begin(); b < r.end(); ++b) f(b);
          },
          tbb::simple_partitioner());
    });
  }
  tbb::task_arena arena;
};

struct EigenPeer {
  static constexpr Runtime kRuntime = Runtime::kEigen;
  EigenPeer() : pool(kDop - 1) {}
  template <class F>
  void run(int64_t nblocks, F& f) {
    // The worker takes the upper half of the blocks, the caller the lower.
    struct Ctx {
      F* f;
      int64_t lo, hi;
      Eigen::Barrier barrier{1};
    } ctx{&f, nblocks / 2, nblocks};
    Ctx* c = &ctx;  // one pointer: fits std::function's small buffer
    pool.Schedule([c] {
      for (int64_t b = c->lo; b < c->hi; ++b) (*c->f)(b);
      c->barrier.Notify();
    });
    for (int64_t b = 0; b < nblocks / 2; ++b) f(b);
    ctx.barrier.Wait();
  }
  Eigen::ThreadPool pool;
};

struct PthreadpoolPeer {
  static constexpr Runtime kRuntime = Runtime::kPthreadpool;
  PthreadpoolPeer() : pool(pthreadpool_create(kDop)) {
    if (!pool) {
      std::fprintf(stderr, "pthreadpool_create failed\n");
      std::abort();
    }
  }
  ~PthreadpoolPeer() { pthreadpool_destroy(pool); }
  PthreadpoolPeer(const PthreadpoolPeer&) = delete;
  PthreadpoolPeer& operator=(const PthreadpoolPeer&) = delete;
  template <class F>
  void run(int64_t nblocks, F& f) {
    pthreadpool_parallelize_1d(
        pool, [](void* ctx, size_t i) { (*static_cast<F*>(ctx))(static_cast<int64_t>(i)); }, &f,
        static_cast<size_t>(nblocks), 0);
  }
  pthreadpool_t pool;
};

// Tags that build each peer (so a benchmark creates its peer itself, once).
struct Spindle {
  static constexpr const char* kName = "spindle";
  static SpindlePeer make() { return SpindlePeer(true); }
};
struct SpindleNoSpin {
  static constexpr const char* kName = "spindle_nospin";
  static SpindlePeer make() { return SpindlePeer(false); }
};
// The worker pinned to the second allowed CPU, the caller unpinned: what
// spindle's default placement (num_threads = 0) does on a 2-core machine.
int second_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set) && ++seen == 2) return cpu;
  return -1;
}
struct SpindlePinned {
  static constexpr const char* kName = "spindle_pinned";
  static SpindlePeer make() { return SpindlePeer(true, second_allowed_cpu()); }
};
struct Omp {
  static constexpr const char* kName = "omp";
  static OmpPeer make() { return {}; }
};
struct Tbb {
  static constexpr const char* kName = "tbb";
  static std::unique_ptr<TbbPeer> make() { return std::make_unique<TbbPeer>(); }
};
struct EigenTp {
  static constexpr const char* kName = "eigen";
  static std::unique_ptr<EigenPeer> make() { return std::make_unique<EigenPeer>(); }
};
struct Pthreadpool {
  static constexpr const char* kName = "pthreadpool";
  static std::unique_ptr<PthreadpoolPeer> make() { return std::make_unique<PthreadpoolPeer>(); }
};

template <class P>
P& deref(P& p) {
  return p;
}
template <class P>
P& deref(std::unique_ptr<P>& p) {
  return *p;
}

template <class Tag>
using PeerOf = std::remove_reference_t<decltype(deref(std::declval<decltype(Tag::make())&>()))>;

// Records remote_share over a benchmark run.
class ShareMeter {
 public:
  ShareMeter() : caller_start_(t_blocks) {}
  void report(benchmark::State& state, int64_t blocks_per_iter) const {
    const double total = static_cast<double>(state.iterations()) * static_cast<double>(blocks_per_iter);
    const double by_caller = static_cast<double>(t_blocks - caller_start_);
    state.counters["remote_share"] = total > 0 ? 1.0 - by_caller / total : 0.0;
  }

 private:
  uint64_t caller_start_;
};

// ------------------------------------------------------------------ dispatch

template <class Tag>
void BM_dispatch_hot(benchmark::State& state) {
  auto holder = Tag::make();
  auto& peer = deref(holder);
  settle(PeerOf<Tag>::kRuntime);
  auto block = [](int64_t b) {
    ++t_blocks;
    benchmark::DoNotOptimize(b);
  };
  ShareMeter share;
  for (auto _ : state) {
    peer.run(2, block);
    benchmark::ClobberMemory();
  }
  share.report(state, 2);
}

template <class Tag>
void BM_dispatch_after_gap(benchmark::State& state) {
  auto holder = Tag::make();
  auto& peer = deref(holder);
  settle(PeerOf<Tag>::kRuntime);
  auto block = [](int64_t b) {
    ++t_blocks;
    benchmark::DoNotOptimize(b);
  };
  peer.run(2, block);  // threads started and warm
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(state.max_iterations));
  ShareMeter share;
  const ProcessCpu cpu;
  const double cpu0 = cpu.seconds();
  for (auto _ : state) {
    std::this_thread::sleep_for(kGap);
    const auto t0 = Clock::now();
    peer.run(2, block);
    const auto t1 = Clock::now();
    benchmark::ClobberMemory();
    const double s = std::chrono::duration<double>(t1 - t0).count();
    samples.push_back(s);
    state.SetIterationTime(s);
  }
  const double cpu1 = cpu.seconds();
  share.report(state, 2);
  state.counters["proc_cpu_us"] = (cpu1 - cpu0) * 1e6 / static_cast<double>(state.iterations());
  // The reported time is the mean over the gaps; these show its shape.
  std::sort(samples.begin(), samples.end());
  auto pct = [&](double q) { return samples[static_cast<size_t>(q * static_cast<double>(samples.size() - 1))] * 1e9; };
  state.counters["p50_ns"] = pct(0.5);
  state.counters["p90_ns"] = pct(0.9);
}

// ------------------------------------------------------------------ axpy

struct AxpyData {
  explicit AxpyData(int64_t n) : n(n), x(static_cast<size_t>(n)), y(static_cast<size_t>(n)) {
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.001f;
  }
  int64_t n;
  std::vector<float> x, y;
  float a = 1.5f, b = 0.25f;
  bool check() const {
    for (int64_t i : {int64_t{0}, n / 2 - 1, n / 2, n - 1}) {
      const float want = a * x[static_cast<size_t>(i)] + b;
      if (y[static_cast<size_t>(i)] != want) return false;
    }
    return true;
  }
};

__attribute__((noinline)) void axpy_range(const float* __restrict x, float* __restrict y, float a, float b,
                                          int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) y[i] = a * x[i] + b;
}

void finish_axpy(benchmark::State& state, const AxpyData& d) {
  if (!d.check()) state.SkipWithError("axpy result is wrong");
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<int64_t>(2 * sizeof(float)));
}

void BM_axpy_serial(benchmark::State& state) {
  settle(Runtime::kNone);
  AxpyData d(state.range(0));
  for (auto _ : state) {
    axpy_range(d.x.data(), d.y.data(), d.a, d.b, 0, d.n);
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  finish_axpy(state, d);
}

template <class Tag>
void BM_axpy(benchmark::State& state) {
  auto holder = Tag::make();
  auto& peer = deref(holder);
  settle(PeerOf<Tag>::kRuntime);
  AxpyData d(state.range(0));
  const int64_t half = d.n / 2;
  auto block = [&](int64_t blk) {
    ++t_blocks;
    const int64_t lo = blk * half;
    const int64_t hi = blk == 1 ? d.n : half;
    axpy_range(d.x.data(), d.y.data(), d.a, d.b, lo, hi);
  };
  ShareMeter share;
  for (auto _ : state) {
    peer.run(2, block);
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  share.report(state, 2);
  finish_axpy(state, d);
}

// spindle with the grain it derives itself from a per-element cost (4 bytes
// loaded, 4 stored): small loops run inline on the caller.
void BM_axpy_spindle_cost(benchmark::State& state) {
  SpindlePeer peer(true);
  settle(Runtime::kSpindle);
  AxpyData d(state.range(0));
  const spindle::Cost cost{4, 4, 0};
  const spindle::Partition part = spindle::partition_range(d.n, spindle::grain_for_cost(cost));
  ShareMeter share;
  for (auto _ : state) {
    peer.pool->parallel_for(d.n, cost, [&](int64_t lo, int64_t hi) {
      ++t_blocks;
      axpy_range(d.x.data(), d.y.data(), d.a, d.b, lo, hi);
    });
    benchmark::DoNotOptimize(d.y.data());
    benchmark::ClobberMemory();
  }
  share.report(state, part.num_blocks);
  state.counters["blocks"] = static_cast<double>(part.num_blocks);
  finish_axpy(state, d);
}

// ------------------------------------------------------------------ idle burn

template <class Peer>
void burst(Peer& peer, AxpyData& d) {
  const int64_t half = d.n / 2;
  auto block = [&](int64_t blk) {
    ++t_blocks;
    const int64_t lo = blk * half;
    const int64_t hi = blk == 1 ? d.n : half;
    axpy_range(d.x.data(), d.y.data(), d.a, d.b, lo, hi);
  };
  for (int i = 0; i < kBurstDispatches; ++i) {
    peer.run(2, block);
    benchmark::DoNotOptimize(d.y.data());
  }
}

template <class Peer>
void idle_burn_loop(benchmark::State& state, Peer& peer, bool run_scope) {
  AxpyData d(4096);
  double idle_cpu = 0, idle_cpu_rusage = 0;
  ShareMeter share;
  for (auto _ : state) {
    if constexpr (std::is_same_v<Peer, SpindlePeer>) {
      if (run_scope) {
        spindle::ThreadPool::RunScope scope(peer.pool.get());
        burst(peer, d);
      } else {
        burst(peer, d);
      }
    } else {
      burst(peer, d);
    }
    const ProcessCpu cpu;
    const double ru0 = rusage_cpu_seconds();
    const double cpu0 = cpu.seconds();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(kIdleWindow);
    const auto t1 = Clock::now();
    const double cpu1 = cpu.seconds();
    const double ru1 = rusage_cpu_seconds();
    idle_cpu += cpu1 - cpu0;
    idle_cpu_rusage += ru1 - ru0;
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["idle_cpu_ms"] = idle_cpu * 1e3 / iters;
  state.counters["idle_cpu_ms_rusage"] = idle_cpu_rusage * 1e3 / iters;
  share.report(state, 2 * kBurstDispatches);
  if (!d.check()) state.SkipWithError("axpy result is wrong");
}

template <class Tag>
void BM_idle_burn(benchmark::State& state) {
  auto holder = Tag::make();
  auto& peer = deref(holder);
  settle(PeerOf<Tag>::kRuntime);
  idle_burn_loop(state, peer, false);
}

void BM_idle_burn_spindle_runscope(benchmark::State& state) {
  SpindlePeer peer(true);
  settle(Runtime::kSpindle);
  idle_burn_loop(state, peer, true);
}

// ------------------------------------------------------------------ ping-pong

bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

struct alignas(64) Line {
  std::atomic<int64_t> v{0};
  char pad[64 - sizeof(std::atomic<int64_t>)];
};

void BM_pingpong(benchmark::State& state) {
  settle(Runtime::kNone);
  cpu_set_t saved;
  CPU_ZERO(&saved);
  pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
  if (!CPU_ISSET(0, &saved) || !CPU_ISSET(1, &saved)) {
    state.SkipWithError("CPU 0 and CPU 1 must both be in the affinity mask");
    return;
  }
  if (!pin_self(0)) {
    state.SkipWithError("pthread_setaffinity_np(CPU 0) failed");
    return;
  }
  Line line;
  std::atomic<bool> partner_pinned{true};
  std::thread partner([&] {
    partner_pinned.store(pin_self(1));
    // Answers odd values with the next even one; a negative value stops it.
    for (int64_t expect = 1;; expect += 2) {
      int64_t v;
      while ((v = line.v.load(std::memory_order_acquire)) != expect) {
        if (v < 0) return;
      }
      line.v.store(expect + 1, std::memory_order_release);
    }
  });
  int64_t k = 0;
  auto round_trip = [&] {
    line.v.store(2 * k + 1, std::memory_order_release);
    while (line.v.load(std::memory_order_acquire) != 2 * k + 2) {
    }
    ++k;
  };
  for (int i = 0; i < 10000; ++i) round_trip();  // partner started, line warm
  for (auto _ : state) round_trip();
  line.v.store(-1, std::memory_order_release);
  partner.join();
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  if (!partner_pinned.load()) state.SkipWithError("pthread_setaffinity_np(CPU 1) failed");
}

// ------------------------------------------------------------------ registration

template <class Tag>
void register_peer() {
  const std::string p = Tag::kName;
  benchmark::RegisterBenchmark(("dispatch_hot/" + p).c_str(), BM_dispatch_hot<Tag>)
      ->UseRealTime()
      ->MinTime(0.05)
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark(("dispatch_after_gap/" + p).c_str(), BM_dispatch_after_gap<Tag>)
      ->UseManualTime()
      ->Iterations(200)
      ->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark(("axpy/" + p).c_str(), BM_axpy<Tag>)
      ->Arg(4096)
      ->Arg(65536)
      ->Arg(1 << 20)
      ->UseRealTime()
      ->MinTime(0.05)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(("idle_burn/" + p).c_str(), BM_idle_burn<Tag>)
      ->UseManualTime()
      ->Iterations(2)
      ->Unit(benchmark::kMillisecond);
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(fallback);
}

}  // namespace

int main(int argc, char** argv) {
  register_peer<Spindle>();
  register_peer<SpindleNoSpin>();
  if (second_allowed_cpu() >= 0) register_peer<SpindlePinned>();
  register_peer<Omp>();
  register_peer<Tbb>();
  register_peer<EigenTp>();
  register_peer<Pthreadpool>();
  benchmark::RegisterBenchmark("axpy/serial", BM_axpy_serial)
      ->Arg(4096)
      ->Arg(65536)
      ->Arg(1 << 20)
      ->UseRealTime()
      ->MinTime(0.05)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("axpy/spindle_cost", BM_axpy_spindle_cost)
      ->Arg(4096)
      ->Arg(65536)
      ->Arg(1 << 20)
      ->UseRealTime()
      ->MinTime(0.05)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("idle_burn/spindle_runscope", BM_idle_burn_spindle_runscope)
      ->UseManualTime()
      ->Iterations(2)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("pingpong/cpu0_cpu1", BM_pingpong)->UseRealTime()->MinTime(0.05)->Unit(
      benchmark::kNanosecond);

  benchmark::AddCustomContext("dop", std::to_string(kDop) + " (caller included) for every peer");
  benchmark::AddCustomContext("spindle_backend", SPINDLE_BACKEND_NAME);
  benchmark::AddCustomContext("spindle_spin_us_default", std::to_string(spindle::kDefaultSpinDuration.count()));
  benchmark::AddCustomContext("openmp", "libgomp, _OPENMP=" + std::to_string(_OPENMP));
  benchmark::AddCustomContext("OMP_WAIT_POLICY", env_or("OMP_WAIT_POLICY", "unset (libgomp default)"));
  benchmark::AddCustomContext("GOMP_SPINCOUNT", env_or("GOMP_SPINCOUNT", "unset (libgomp default)"));
  benchmark::AddCustomContext("tbb", TBB_VERSION_STRING);
  benchmark::AddCustomContext("eigen", std::to_string(EIGEN_WORLD_VERSION) + "." +
                                           std::to_string(EIGEN_MAJOR_VERSION) + "." +
                                           std::to_string(EIGEN_MINOR_VERSION) +
                                           ", ThreadPool(1) + caller, Barrier join");
  benchmark::AddCustomContext("pthreadpool", "pthreadpool_create(2) = 1 worker + caller, flags 0");
  benchmark::AddCustomContext("gap_us", std::to_string(std::chrono::microseconds(kGap).count()));
  benchmark::AddCustomContext("idle_window_ms", std::to_string(std::chrono::milliseconds(kIdleWindow).count()));

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
