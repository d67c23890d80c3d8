// chrome_trace.h — profiled runs as Chrome trace event JSON
// (chrome_trace.cpp); InferenceSession::chrome_trace and end_profiling are
// its public faces.
#pragma once

#include <string>
#include <vector>

#include "spindle/session.h"

namespace spindle {

// Chrome trace event JSON (chrome://tracing, Perfetto) of profiled runs: one
// track per thread; node spans, parallel_for blocks ("parallel_for") and the
// waits of each node's thread between its own blocks. Threads are named
// "caller" (caller_tid), "intra-op worker" (intra_worker_tids) or
// "inter-op thread".
std::string chrome_trace_json(const std::vector<ProfiledRun>& runs, const std::string& process_name, int caller_tid,
                              const std::vector<int>& intra_worker_tids);

}  // namespace spindle
