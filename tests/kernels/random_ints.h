// random_ints.h — uniform random integers of a kernel test's element type.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace spindle::testing {

// n values uniform in [lo, hi], from seed.
template <class T>
std::vector<T> random_ints(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

}  // namespace spindle::testing
