// cache_line.h — vectors whose storage starts on a cache line (64 bytes),
// for packed weights read in 64-byte groups (qgemm's panels, the 8-bit
// depthwise and grouped convolutions' blocks). At malloc's 16-byte
// alignment every such group straddles two lines, and whether it did
// depended on the heap's earlier allocations: a recurrence's step, which
// streams its 8-bit weights from L2, ran 20-25% slower when it did.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace spindle::kernels {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t{64}); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <class T>
using CacheLineVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace spindle::kernels
