// denormals.cpp — FTZ/DAZ control word access (see denormals.h).
#include "session/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace spindle {

namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr uint64_t kFlushBits = 0x8040;  // MXCSR FTZ (bit 15) | DAZ (bit 6)
uint64_t read_mode() { return _mm_getcsr(); }
void write_mode(uint64_t v) { _mm_setcsr(static_cast<unsigned>(v)); }
#elif defined(__aarch64__)
constexpr uint64_t kFlushBits = uint64_t{1} << 24;  // FPCR.FZ
uint64_t read_mode() {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
void write_mode(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
#else
constexpr uint64_t kFlushBits = 0;
uint64_t read_mode() { return 0; }
void write_mode(uint64_t) {}
#endif

}  // namespace

void set_denormals_as_zero_on_this_thread() { write_mode(read_mode() | kFlushBits); }

DenormalsAsZeroScope::DenormalsAsZeroScope(bool enable) : active_(enable) {
  if (!active_) return;
  saved_ = read_mode();
  write_mode(saved_ | kFlushBits);
}

DenormalsAsZeroScope::~DenormalsAsZeroScope() {
  if (active_) write_mode(saved_);
}

}  // namespace spindle
