// spindle/cpu.h — the machine as spindle sees it: the instruction-set level
// its hot kernels run at, and the processors this process may use (which set
// the default thread counts).
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

#include <string>

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

// The processors this process may use. Physical cores come from hwloc,
// intersected with the process's affinity mask (sched_getaffinity) at the
// first call; the default thread count is further capped by the cgroup CPU
// quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up).
// Detected once per process: later affinity changes are not seen.
struct CpuTopology {
  int usable_physical_cores = 0;   // physical cores with at least one allowed processor
  int machine_physical_cores = 0;  // all physical cores of the machine
  int machine_logical_cpus = 0;    // all logical processors of the machine
  int numa_nodes = 1;
  // What a thread count of 0 (automatic) means for intra_op_num_threads and
  // inter_op_num_threads when no environment variable sets it (at least 1).
  int default_num_threads = 1;
  std::string summary;  // one line: machine, allowed processors, quota
};
const CpuTopology& cpu_topology();

}  // namespace spindle
