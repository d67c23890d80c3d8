// cpu.cpp — detection of the ISA level (include/spindle/cpu.h).
#include "spindle/cpu.h"

#include <cstdlib>
#include <string>

#include "spindle/status.h"

namespace spindle {

const char* isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::kBaseline: return "baseline";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

IsaLevel detected_isa_level() {
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's cpu model also checks XCR0, so a level counts only when the OS
  // saves its registers.
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (avx512) return IsaLevel::kAvx512;
  if (avx2) return IsaLevel::kAvx2;
#endif
  return IsaLevel::kBaseline;
}

namespace {

IsaLevel resolve_active_level() {
  IsaLevel level = detected_isa_level();
  const char* cap = std::getenv("SPINDLE_ISA");
  if (!cap || !*cap) return level;
  const std::string v(cap);
  IsaLevel want;
  if (v == "baseline") want = IsaLevel::kBaseline;
  else if (v == "avx2") want = IsaLevel::kAvx2;
  else if (v == "avx512") want = IsaLevel::kAvx512;
  else
    throw Error(StatusCode::kInvalidArgument,
                "environment variable SPINDLE_ISA is '" + v + "', expected baseline, avx2 or avx512");
  return static_cast<int>(want) < static_cast<int>(level) ? want : level;
}

}  // namespace

IsaLevel active_isa_level() {
  static const IsaLevel level = resolve_active_level();
  return level;
}

}  // namespace spindle
