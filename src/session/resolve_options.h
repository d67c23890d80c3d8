// resolve_options.h — the resolve step between SessionOptions' typed fields
// and what session creation builds: the two pools' ThreadingOptions and the
// run limits (resolve_options.cpp). SessionOptions::validate() runs the same
// checks for the API's users.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spindle/session.h"
#include "spindle/status.h"
#include "spindle/threading_options.h"

namespace spindle {

// The intra/inter ThreadingOptions a SessionOptions describes, validated
// (thread counts, custom thread functions both or neither) with the
// session-wide custom thread functions filled in. Errors name the field and
// the value. The config keys were parsed and checked when they were added.
Status threading_options_from_session(const SessionOptions& options, ThreadingOptions& intra, ThreadingOptions& inter);

// The run limits a SessionOptions sets, defaults filled in.
struct SessionLimits {
  size_t max_tensor_bytes = 0;  // 0 = no limit
  size_t max_run_bytes = 0;
  int64_t max_loop_iterations = 0;
};
Status session_limits(const SessionOptions& options, SessionLimits& limits);
// log_severity_level in -1..4 and SPINDLE_LOG_LEVEL, if set, a severity.
Status log_settings_status(const SessionOptions& options);

}  // namespace spindle
