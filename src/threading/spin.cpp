// spin.cpp — pause calibration and spin budgets (see spin.h).
#include "threading/spin.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>

namespace spindle::detail {

double calibrate_pause_ns() {
  static const double ns = [] {
    // 7 batches of 2000 pauses; the median resists a preempted batch.
    constexpr int kBatches = 7;
    constexpr int kPauses = 2000;
    std::array<double, kBatches> samples{};
    for (double& s : samples) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kPauses; ++i) cpu_pause();
      auto t1 = std::chrono::steady_clock::now();
      s = std::chrono::duration<double, std::nano>(t1 - t0).count() / kPauses;
    }
    std::sort(samples.begin(), samples.end());
    return std::max(0.5, samples[kBatches / 2]);
  }();
  return ns;
}

void yield_cpu() { sched_yield(); }

SpinPolicy make_spin_policy(const ThreadingOptions& options) {
  SpinPolicy p;
  auto window = options.spin_duration.value_or(kDefaultSpinDuration);
  if (!options.allow_spinning || window.count() <= 0) return p;
  p.pause_budget = std::max<int64_t>(1, static_cast<int64_t>(window.count() * 1000.0 / calibrate_pause_ns()));
  p.backoff_max = std::max(1, options.spin_backoff_max);
  p.window = window;
  return p;
}

SpinPolicy make_in_run_spin_policy(const ThreadingOptions& options) {
  if (options.spin_duration) return make_spin_policy(options);
  ThreadingOptions in_run = options;
  in_run.spin_duration = kInRunSpinDuration;
  return make_spin_policy(in_run);
}

}  // namespace spindle::detail
