// dispatch.h — per-ISA kernels and how the runtime picks one.
//
// A file named `*.isa.cpp` anywhere under src/primitives/ or src/kernels/ is
// compiled three times (CMakeLists.txt, spindle_isa_objects): for x86-64
// baseline, for AVX2+FMA+F16C and for AVX-512 F/BW/DQ/VL, each time with
// SPINDLE_ISA_NS defined to `baseline`, `avx2` or `avx512`. Such a file puts
// everything it defines in namespace spindle::kernels::SPINDLE_ISA_NS (or an
// anonymous namespace inside it); the primitives keep that namespace too. Ordinary kernel files declare the functions once for
// all levels and take the active level's version at run time:
//
//   // conv/conv_depthwise.cpp
//   SPINDLE_ISA_DECLARE(void, depthwise_rows, (const DwArgs& a, int64_t r0, int64_t r1));
//   static const auto depthwise_rows_fn = SPINDLE_ISA_SELECT(depthwise_rows);
//   depthwise_rows_fn(args, 0, rows);
//
// The rule that keeps a baseline machine safe: a per-ISA file defines no
// function that the linker could share with other files. Inline functions and
// templates from headers (std::vector's growth, a helper in a shared header)
// are emitted as weak symbols; the linker keeps one copy, which may be the
// AVX-512 one, and a baseline CPU then dies with SIGILL. So per-ISA files keep
// their helpers in their own namespace, use intrinsics and plain loops, and
// call no out-of-line std:: template. tests/kernels/isa_symbols_test checks
// the compiled objects for weak symbols.
#pragma once

#include "spindle/cpu.h"

#ifndef SPINDLE_ISA_NS
#define SPINDLE_ISA_NS baseline
#endif

// Declares `ret name args` in each ISA namespace.
#ifdef SPINDLE_ISA_BASELINE_ONLY
// Only the baseline level is compiled (CMake option SPINDLE_ISA_BASELINE_ONLY).
#define SPINDLE_ISA_DECLARE(ret, name, args) \
  namespace spindle::kernels::baseline {     \
  ret name args;                             \
  }
#define SPINDLE_ISA_SELECT(name) (&::spindle::kernels::baseline::name)
#else
#define SPINDLE_ISA_DECLARE(ret, name, args)   \
  namespace spindle::kernels::baseline {       \
  ret name args;                               \
  }                                            \
  namespace spindle::kernels::avx2 {           \
  ret name args;                               \
  }                                            \
  namespace spindle::kernels::avx512 {         \
  ret name args;                               \
  }

// The active level's version of a function declared with SPINDLE_ISA_DECLARE.
#define SPINDLE_ISA_SELECT(name)                                                               \
  ::spindle::kernels::isa_select(&::spindle::kernels::baseline::name, &::spindle::kernels::avx2::name, \
                                 &::spindle::kernels::avx512::name)
#endif

namespace spindle::kernels {

template <class Fn>
Fn isa_select(Fn baseline_fn, Fn avx2_fn, Fn avx512_fn) {
  switch (active_isa_level()) {
    case IsaLevel::kAvx512: return avx512_fn;
    case IsaLevel::kAvx2: return avx2_fn;
    case IsaLevel::kBaseline: break;
  }
  return baseline_fn;
}

}  // namespace spindle::kernels
