// best_of.h — the timing the kernel micro-benchmarks without Google
// Benchmark share: the best over `rounds` rounds of the median of `calls`
// calls of f, in seconds.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace spindle::bench {

template <class F>
double best_seconds(F&& f, int rounds = 5, int calls = 15) {
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> t;
    for (int c = 0; c < calls; ++c) {
      const auto t0 = Clock::now();
      f();
      t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::nth_element(t.begin(), t.begin() + calls / 2, t.end());
    best = std::min(best, t[static_cast<size_t>(calls / 2)]);
  }
  return best;
}

}  // namespace spindle::bench
