// buffer_cache.cpp — see buffer_cache.h.
#include "common/buffer_cache.h"

#include <cstdlib>
#include <deque>
#include <mutex>
#include <utility>

#include "spindle/tensor.h"

namespace spindle {

namespace {

constexpr size_t kPage = 4096;
constexpr size_t kMinBytes = size_t{64} << 10;
constexpr size_t kMaxBytes = size_t{8} << 20;
constexpr size_t kTotalBytes = size_t{32} << 20;

// AddressSanitizer finds a use after free only when the memory is freed
// (GCC defines __SANITIZE_ADDRESS__; clang, which builds the fuzzers, tells
// through __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define SPINDLE_BUFFER_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPINDLE_BUFFER_CACHE_ASAN 1
#endif
#endif
#if defined(SPINDLE_BUFFER_CACHE_ASAN)
constexpr bool kEnabled = false;
#else
constexpr bool kEnabled = true;
#endif

class BufferCache {
 public:
  void* take(size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)  // the newest first: still in cache
      if (it->first == capacity) {
        void* p = it->second;
        bytes_ -= capacity;
        kept_.erase(std::next(it).base());
        return p;
      }
    return nullptr;
  }

  void give(void* p, size_t capacity) {
    std::deque<std::pair<size_t, void*>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      kept_.emplace_back(capacity, p);
      bytes_ += capacity;
      while (bytes_ > kTotalBytes) {
        bytes_ -= kept_.front().first;
        dropped.push_back(kept_.front());
        kept_.pop_front();
      }
    }
    for (const auto& d : dropped) std::free(d.second);
  }

  size_t bytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

  void clear() {
    std::deque<std::pair<size_t, void*>> dropped;
    {
      std::lock_guard<std::mutex> lock(mu_);
      dropped.swap(kept_);
      bytes_ = 0;
    }
    for (const auto& d : dropped) std::free(d.second);
  }

 private:
  std::mutex mu_;
  std::deque<std::pair<size_t, void*>> kept_;  // oldest first
  size_t bytes_ = 0;
};

// Never destroyed: buffers may be freed by static destructors after it.
BufferCache& cache() {
  static auto* c = new BufferCache;
  return *c;
}

bool cached_size(size_t capacity) { return kEnabled && capacity >= kMinBytes && capacity <= kMaxBytes; }

}  // namespace

size_t buffer_capacity(size_t bytes) {
  const size_t unit = bytes >= kMinBytes ? kPage : kTensorAlignment;
  const size_t rounded = (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
  return rounded < bytes ? 0 : rounded;  // 0: the size overflowed
}

void* take_cached_buffer(size_t capacity) { return cached_size(capacity) ? cache().take(capacity) : nullptr; }

void give_cached_buffer(void* p, size_t capacity) {
  if (cached_size(capacity))
    cache().give(p, capacity);
  else
    std::free(p);
}

size_t cached_buffer_bytes() { return kEnabled ? cache().bytes() : 0; }

void release_cached_buffers() {
  if (kEnabled) cache().clear();
}

}  // namespace spindle
