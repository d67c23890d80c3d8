// spin.h — time-bounded spinning with exponential pause backoff.
//
// A spin window is given in microseconds. When a pool is created the window
// is turned into a budget of pause instructions, using the cost of one pause
// measured once per process on this CPU (calibrate_pause_ns), so the spin
// loop itself never reads the clock. Each poll is followed by 1, 2, 4, ...
// pauses, capped at backoff_max; the budget counts pauses, so the total spin
// time stays the window whatever the backoff. Polling itself costs time the
// budget does not see (much more under sanitizers or a loaded machine), so
// every kClockCheckPauses pauses, and after every yield (a yield on a loaded
// machine can give the CPU away for a whole time slice), the steady clock is
// read as a backstop and the spin ends when the window has passed. Pairs with parker.h: a worker
// spins first and parks when the budget runs out.
#pragma once

#include <chrono>
#include <cstdint>

#include "spindle/threading_options.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace spindle::detail {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Nanoseconds one cpu_pause() takes here (median of a few timed batches).
double calibrate_pause_ns();

struct SpinPolicy {
  int64_t pause_budget = 0;  // total pauses in one window; 0 = park at once
  int backoff_max = 1;       // power of two
  std::chrono::nanoseconds window{0};
  bool enabled() const { return pause_budget > 0; }
};

// From resolved options (allow_spinning, spin_duration, spin_backoff_max).
SpinPolicy make_spin_policy(const ThreadingOptions& options);

// The window of an intra-op worker while a run is active, when the options
// leave spin_duration unset (an explicit window is kept as given, in and out
// of runs). Inside a run the caller is busy between parallel loops (a decode
// step's attention, norms and small ops, 100-300 us between its matrix
// products), so a worker that parks after the default 100 us is woken by
// nearly every product, and one that waits longer finds the next loop.
// After the run the pool cuts any window to 100 us (intra_pool_native.cpp),
// so an idle process burns no more than with the default window.
inline constexpr std::chrono::microseconds kInRunSpinDuration{1000};
SpinPolicy make_in_run_spin_policy(const ThreadingOptions& options);

// Spins until done() is true (returns true) or the budget is spent or
// give_up() is true (returns false).
inline constexpr int64_t kClockCheckPauses = 4096;
// Every this many pauses a spinning thread yields its CPU. With nothing else
// runnable there, sched_yield returns at once; when the scheduler has put a
// thread that waits for us on this CPU (a woken worker lands on its waker's
// CPU), the spinner steps aside instead of holding the CPU for its window.
inline constexpr int64_t kYieldPauses = 256;

void yield_cpu();

template <class Done, class GiveUp>
bool spin_until(const SpinPolicy& policy, Done done, GiveUp give_up) {
  if (!policy.enabled()) return done();
  const auto deadline = std::chrono::steady_clock::now() + policy.window;
  int64_t spent = 0;
  int64_t next_clock_check = kClockCheckPauses;
  int backoff = 1;
  while (spent < policy.pause_budget) {
    if (done()) return true;
    if (give_up()) return false;
    for (int i = 0; i < backoff; ++i) cpu_pause();
    spent += backoff;
    if (backoff < policy.backoff_max) backoff <<= 1;
    if ((spent & (kYieldPauses - 1)) < static_cast<int64_t>(backoff)) {
      yield_cpu();
      next_clock_check = spent;  // read the clock now
    }
    if (spent >= next_clock_check) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      next_clock_check = spent + kClockCheckPauses;
    }
  }
  return done();
}

}  // namespace spindle::detail
