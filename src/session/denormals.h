// denormals.h — flush-to-zero / denormals-are-zero for
// session.set_denormal_as_zero: results that would be denormal become 0 and
// denormal inputs read as 0, on the thread that sets it (x86 MXCSR FTZ|DAZ,
// AArch64 FPCR.FZ; elsewhere nothing changes).
#pragma once

#include <cstdint>

namespace spindle {

// Turns FTZ/DAZ on for the calling thread (pool workers, for their life).
void set_denormals_as_zero_on_this_thread();

// FTZ/DAZ on the calling thread for one run, the previous mode restored at
// the end (the caller's thread is the user's).
class DenormalsAsZeroScope {
 public:
  explicit DenormalsAsZeroScope(bool enable);
  ~DenormalsAsZeroScope();
  DenormalsAsZeroScope(const DenormalsAsZeroScope&) = delete;
  DenormalsAsZeroScope& operator=(const DenormalsAsZeroScope&) = delete;

 private:
  bool active_;
  uint64_t saved_ = 0;
};

}  // namespace spindle
