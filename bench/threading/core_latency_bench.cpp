// core_latency_bench.cpp — what it costs one core to use what another core
// just wrote, for every pair of processors this process may run on:
//
//   round trip   a cache line bounced between the two (one writes, the other
//                waits for it and answers), ns per round trip;
//   read own     GB/s reading a buffer this core wrote itself;
//   read other's GB/s reading a buffer the other core wrote just before.
//
// These decide how much a pool loses when consecutive layers' blocks land on
// different cores (docs/threading.md: the pool hands blocks out from both
// ends of a loop so that they do not).
//
//   build/bench/threading/bench_core_latency [BUFFER_KB=1024]
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

double round_trip_ns(int a, int b) {
  constexpr int kTrips = 200000;
  alignas(64) std::atomic<int> flag{0};
  std::thread other([&] {
    pin(b);
    for (int i = 0; i < kTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  pin(a);
  const auto t0 = Clock::now();
  for (int i = 0; i < kTrips; ++i) {
    flag.store(2 * i + 1, std::memory_order_release);
    while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kTrips;
  other.join();
  return ns;
}

// Sums the buffer (8 independent sums, so the loads overlap).
double sum(const std::vector<double>& v) {
  double s[8] = {};
  for (size_t i = 0; i + 8 <= v.size(); i += 8)
    for (int k = 0; k < 8; ++k) s[k] += v[i + k];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// GB/s of core a reading `bytes` last written by core `writer` (a or b).
double read_gbs(int a, int b, size_t bytes, bool other_wrote) {
  constexpr int kReps = 50;
  std::vector<double> buf(bytes / sizeof(double), 1.0);
  std::barrier sync(2);
  double seconds = 0.0, sink = 0.0;
  std::thread helper([&] {
    pin(b);
    for (int r = 0; r < kReps; ++r) {
      if (other_wrote)
        for (double& x : buf) x += 1.0;
      sync.arrive_and_wait();
      sync.arrive_and_wait();
    }
  });
  pin(a);
  for (int r = 0; r < kReps; ++r) {
    if (!other_wrote)
      for (double& x : buf) x += 1.0;
    sync.arrive_and_wait();
    const auto t0 = Clock::now();
    sink += sum(buf);
    seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    sync.arrive_and_wait();
  }
  helper.join();
  if (sink == 0.0) std::printf(" ");
  return static_cast<double>(bytes) * kReps / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t kb = argc > 1 ? static_cast<size_t>(std::strtoul(argv[1], nullptr, 10)) : 1024;
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof(allowed), &allowed);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::printf("one processor: nothing to measure\n");
    return 0;
  }
  std::printf("cpu pair   round trip   read own (%zu KB)   read other's\n", kb);
  for (size_t i = 0; i < cpus.size(); ++i)
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      const int a = cpus[i], b = cpus[j];
      std::printf("%3d %3d   %8.0f ns   %10.1f GB/s   %8.1f GB/s\n", a, b, round_trip_ns(a, b),
                  read_gbs(a, b, kb << 10, false), read_gbs(a, b, kb << 10, true));
    }
  return 0;
}
