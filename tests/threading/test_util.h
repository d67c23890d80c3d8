// test_util.h — helpers that observe real effects: threads in /proc, CPU time.
#pragma once

#include <dirent.h>
#include <time.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>

namespace spindle::testing {

// The OpenMP and TBB backends own their threads: thread counts, spinning,
// pinning and custom thread callbacks are the native backend's (parallel_info
// lists what the others ignore). Tests of those effects skip elsewhere.
#define SPINDLE_REQUIRE_NATIVE_BACKEND()                                                   \
  do {                                                                                     \
    if (std::string_view(SPINDLE_BACKEND_NAME) != "native")                                \
      GTEST_SKIP() << "thread-level knobs are the native backend's, not " SPINDLE_BACKEND_NAME; \
  } while (0)

// Number of threads of this process, from /proc/self/task. The first call
// starts and joins one thread so that runtime helpers started lazily on the
// first pthread_create (ThreadSanitizer's background thread) already exist.
inline int count_process_threads() {
  static const bool warmed_up = [] {
    std::thread([] {}).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return true;
  }();
  (void)warmed_up;
  DIR* dir = opendir("/proc/self/task");
  int n = 0;
  while (dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ++n;
  closedir(dir);
  return n;
}

// Thread ids of this process, from /proc/self/task.
inline std::set<int> process_thread_ids() {
  count_process_threads();  // its first call warms up lazily started runtime threads
  std::set<int> ids;
  DIR* dir = opendir("/proc/self/task");
  while (dirent* e = readdir(dir))
    if (e->d_name[0] != '.') ids.insert(std::atoi(e->d_name));
  closedir(dir);
  return ids;
}

// count() once it equals `expected`, or after a bound (2 s) the value it
// settled on: a joined thread can stay listed in /proc for a moment, and a
// started one can appear a moment late.
template <class Count>
int settled_count(int expected, Count count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = count();
  while (n != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    n = count();
  }
  return n;
}

// Threads of this process that are not in `before`, once their number equals
// `expected` (or after 2 s, the number then). Threads that existed before and
// end meanwhile (an earlier test's pool released late) do not count.
inline int settled_new_threads(const std::set<int>& before, int expected) {
  return settled_count(expected, [&] {
    int n = 0;
    for (int id : process_thread_ids()) n += before.count(id) == 0;
    return n;
  });
}

// The process's thread count once it has not changed for 50 ms (at most
// 2 s): the baseline of a test that counts the threads it starts. A thread
// that an earlier test joined can stay listed in /proc for a moment and
// would otherwise be counted in the baseline, then vanish mid-test.
inline int baseline_thread_count() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = count_process_threads();
  auto stable_since = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() < deadline &&
         std::chrono::steady_clock::now() - stable_since < std::chrono::milliseconds(50)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int m = count_process_threads();
    if (m != n) n = m, stable_since = std::chrono::steady_clock::now();
  }
  return n;
}

// The process's thread count once it equals `expected` (settled_count).
inline int settled_thread_count(int expected) { return settled_count(expected, count_process_threads); }

// CPU time of the whole process in milliseconds.
inline double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// CPU burned by the process while the calling thread sleeps for `ms`.
inline double cpu_ms_while_sleeping(int ms) {
  double before = process_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return process_cpu_ms() - before;
}

// CPU time thread `tid` of this process has run, in milliseconds (the first
// field of /proc/self/task/<tid>/schedstat, nanoseconds on a CPU); -1 if
// unreadable.
inline double thread_cpu_ms(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  long long ns = -1;
  if (!(f >> ns)) return -1;
  return static_cast<double>(ns) / 1e6;
}

// Time thread `tid` of this process spent runnable but waiting for a CPU, in
// milliseconds (the second field of its schedstat); -1 if unreadable.
inline double thread_runqueue_wait_ms(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  long long run_ns = -1, wait_ns = -1;
  if (!(f >> run_ns >> wait_ns)) return -1;
  return static_cast<double>(wait_ns) / 1e6;
}

// Scheduler state of thread `tid` of this process ('R' running or runnable,
// 'S' sleeping, ...), from /proc/self/task/<tid>/stat; '?' if unreadable.
inline char thread_state(int tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// Fraction of samples, taken every 200 us for `ms`, in which thread `tid` was
// running or runnable. A spinning thread is runnable even when a loaded
// machine gives it little CPU (it yields); a parked one sleeps.
inline double runnable_fraction(int tid, int ms) {
  int runnable = 0, samples = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    runnable += thread_state(tid) == 'R';
    ++samples;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return samples ? static_cast<double>(runnable) / samples : 0.0;
}

}  // namespace spindle::testing
