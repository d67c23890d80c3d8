// parker.h — put one thread to sleep until a condition holds (futex based).
//
// The sleeper announces itself (parked_ = true) and then re-checks its
// condition before sleeping; the waker makes the condition true and then
// checks parked_:
//
//   sleeper                               waker
//   parked_.store(true, seq_cst)          condition write (seq_cst)
//   s = seq_.load(seq_cst)                if (parked_.load(seq_cst)) {
//   fence(seq_cst)                          seq_.fetch_add(1, seq_cst); futex_wake }
//   if (!ready()) futex_wait(seq_, s)     // ready() may load with acquire only
//
// This is the store-buffering pattern: it needs every one of the four
// accesses ordered in the single seq_cst order. The waker's two are seq_cst
// (callers must write their condition seq_cst: the intra-op pool's slot CAS
// and `done` add are). The sleeper's predicate loads only with acquire (the
// pool's slot load, `done` load), so the fence after the announcement orders
// it: the waker's condition write either precedes the fence, and ready() sees
// it, or follows it, and then the waker's parked_ load sees true. If the
// waker bumps seq_ after the sleeper read s, futex_wait returns at once (the
// value changed); if before, reading the bumped seq_ makes the
// condition visible to ready(). A wake-up without the condition (a revoked
// offer) just loops.
// Used by the intra-op pool (one Parker per worker, one per Job for the
// caller waiting for its blocks).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace spindle::detail {

inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
inline void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

class Parker {
 public:
  // Sleeps until ready() is true. Only one thread may park on a Parker.
  template <class Ready>
  void park(Ready ready) {
    parked_.store(true, std::memory_order_seq_cst);
    for (;;) {
      uint32_t s = seq_.load(std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // orders ready()'s acquire load (see above)
      if (ready()) break;
      futex_wait(&seq_, s);
    }
    parked_.store(false, std::memory_order_relaxed);
  }
  // Call after making the condition true. Returns whether the thread was
  // parked (and so has been woken).
  bool unpark() {
    if (!parked_.load(std::memory_order_seq_cst)) return false;
    seq_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(&seq_, 1);
    return true;
  }
  // A hint only (relaxed): the intra-op pool's take-back uses it where a
  // stale answer costs a wasted look, never a block (intra_pool_native.cpp).
  bool is_parked() const { return parked_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> seq_{0};
  std::atomic<bool> parked_{false};
};

}  // namespace spindle::detail
