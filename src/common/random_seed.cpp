// random_seed.cpp — see spindle/random.h.
#include <atomic>

#include "spindle/random.h"

namespace spindle {
namespace {

std::atomic<bool> seeded{false};
std::atomic<int64_t> process_seed{0};

}  // namespace

void set_random_seed(int64_t seed) {
  process_seed.store(seed, std::memory_order_relaxed);
  seeded.store(true, std::memory_order_release);
}

std::optional<int64_t> random_seed() {
  if (!seeded.load(std::memory_order_acquire)) return std::nullopt;
  return process_seed.load(std::memory_order_relaxed);
}

}  // namespace spindle
