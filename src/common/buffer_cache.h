// buffer_cache.h — freed tensor buffers of middle size kept for the next
// allocation of the same size.
//
// A run's outputs leave the session and are freed by the caller (at once, at
// a garbage collector's pace, or after the next step of a generation loop),
// while the run's own small allocations come and go around them. glibc then
// hands the freed regions out in pieces, and the next run's outputs of the
// same sizes take fresh pages from the system: `spindle profile` on a decoder
// step saw ~150 page faults a run in the Concat nodes writing the KV cache
// (1 ms of a 1.6 ms step). Buffers of kMinBytes to kMaxBytes are kept here
// instead, up to kTotalBytes in all (oldest dropped first), and taken back by
// an allocation of the same rounded size.
#pragma once

#include <cstddef>

namespace spindle {

// Sizes of tensor buffers: from kMinBytes, rounded up to whole pages (so that
// similar sizes share entries); below, rounded to the tensor alignment.
size_t buffer_capacity(size_t bytes);
// A kept buffer of exactly `capacity` bytes (buffer_capacity), or nullptr.
void* take_cached_buffer(size_t capacity);
// Keeps p (`capacity` bytes, from aligned_alloc) for a later take, or frees it.
void give_cached_buffer(void* p, size_t capacity);
// Bytes kept now (at most 32 MB).
size_t cached_buffer_bytes();
// Frees every kept buffer (after a session's creation dropped its originals,
// before the heap is trimmed).
void release_cached_buffers();

}  // namespace spindle
