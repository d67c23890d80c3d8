// env_vars.h — thread counts from environment variables.
//
// Precedence (PyTorch's): SPINDLE_INTRA_OP_NUM_THREADS, then MKL_NUM_THREADS,
// then OMP_NUM_THREADS for intra-op; SPINDLE_INTER_OP_NUM_THREADS for
// inter-op. A malformed value is an error naming the variable. Explicit
// options beat all of them (pool_options.cpp applies that).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spindle/status.h"

namespace spindle::detail {

struct EnvThreadCount {
  int value = 0;
  std::string variable;  // which variable supplied it
};

// nullopt when none of the variables is set (or all are empty).
Result<std::optional<EnvThreadCount>> env_thread_count(bool intra_op);

// The names of the variables consulted, in precedence order, are public:
// spindle::thread_count_variables (spindle/environment.h).

}  // namespace spindle::detail
