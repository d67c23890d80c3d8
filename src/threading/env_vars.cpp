// env_vars.cpp — see env_vars.h.
#include "threading/env_vars.h"

#include <cstdlib>

#include <fmt/format.h>

#include "spindle/environment.h"
#include "spindle/threading_options.h"
#include "threading/pool_options.h"

namespace spindle {

std::vector<std::string> thread_count_variables(bool intra_op) {
  if (intra_op) return {"SPINDLE_INTRA_OP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"};
  return {"SPINDLE_INTER_OP_NUM_THREADS"};
}

}  // namespace spindle

namespace spindle::detail {

Result<std::optional<EnvThreadCount>> env_thread_count(bool intra_op) {
  for (const std::string& name : thread_count_variables(intra_op)) {
    const char* raw = std::getenv(name.c_str());
    if (!raw || !*raw) continue;
    std::string value = raw;
    // OMP_NUM_THREADS may list nested levels ("4,2"); the outer level counts.
    if (name == "OMP_NUM_THREADS") value = value.substr(0, value.find(','));
    auto n = parse_int_value(name, value, 1, kMaxThreads);
    if (!n.is_ok())
      return invalid_argument(fmt::format("environment variable {}=\"{}\": expected a thread count in [1, {}]",
                                          name, raw, kMaxThreads));
    return std::optional<EnvThreadCount>(EnvThreadCount{static_cast<int>(*n), name});
  }
  return std::optional<EnvThreadCount>();
}

}  // namespace spindle::detail
