// spindle/cpu.h — the instruction-set level spindle's hot kernels run at.
//
// spindle is built for plain x86-64 (no flag names the build machine's CPU).
// Hot kernels are compiled once per ISA level in their own translation units
// and one level is chosen once per process, at first use, from cpuid (and the
// OS's support for the wider registers): the best the CPU has, capped by the
// environment variable SPINDLE_ISA=baseline|avx2|avx512 when set.
//
// Thread-safety: all functions may be called from any thread; the active
// level is computed once and never changes afterwards.
#pragma once

namespace spindle {

enum class IsaLevel : int {
  kBaseline = 0,  // x86-64 (SSE2), or the plain C++ build on other machines
  kAvx2 = 1,      // AVX2 + FMA + F16C
  kAvx512 = 2,    // AVX-512 F/BW/DQ/VL (with AVX2 + FMA)
};

// "baseline", "avx2", "avx512".
const char* isa_level_name(IsaLevel level);
// The best level this CPU and OS support.
IsaLevel detected_isa_level();
// The level kernels run at: detected_isa_level() capped by SPINDLE_ISA.
// Throws spindle::Error (INVALID_ARGUMENT) naming the variable when
// SPINDLE_ISA holds anything but baseline, avx2 or avx512.
IsaLevel active_isa_level();

}  // namespace spindle
