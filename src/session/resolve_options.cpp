// resolve_options.cpp — the resolve step between SessionOptions' typed
// fields and the pools: validation that needs more than one field, the
// session-wide custom thread functions and set_denormal_as_zero filled into
// both pools' ThreadingOptions, and the run limits' defaults.
#include "session/resolve_options.h"

#include <unistd.h>

#include <fmt/format.h>

#include "session/denormals.h"

namespace spindle {

Status threading_options_from_session(const SessionOptions& o, ThreadingOptions& intra, ThreadingOptions& inter) {
  intra = o.intra_op;
  inter = o.inter_op;
  intra.name = "intra_op";
  inter.name = "inter_op";
  if (intra.num_threads < 0)
    return invalid_argument(
        fmt::format("intra_op_num_threads = {}: expected 0 (automatic) or a positive thread count", intra.num_threads));
  if (inter.num_threads < 0)
    return invalid_argument(
        fmt::format("inter_op_num_threads = {}: expected 0 (automatic) or a positive thread count", inter.num_threads));
  if ((o.custom_create_thread_fn == nullptr) != (o.custom_join_thread_fn == nullptr))
    return invalid_argument("custom_create_thread_fn and custom_join_thread_fn must be set together");
  for (ThreadingOptions* t : {&intra, &inter}) {
    if (o.custom_create_thread_fn) {
      if (t->create_thread && t->create_thread != o.custom_create_thread_fn)
        return invalid_argument(fmt::format("custom_create_thread_fn and {}.create_thread are both set and differ; set "
                                            "one of them",
                                            t->name));
      t->create_thread = o.custom_create_thread_fn;
      t->join_thread = o.custom_join_thread_fn;
      t->custom_thread_options = o.custom_thread_creation_options;
    }
    if (o.set_denormal_as_zero) {
      // Every pool thread flushes for its whole life (the pools are the
      // session's own; global pools are refused in build()).
      t->on_worker_start = [user = t->on_worker_start](int index) {
        set_denormals_as_zero_on_this_thread();
        if (user) user(index);
      };
    }
  }
  return Status::ok();
}

namespace {

// 0 when unknown.
size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

}  // namespace

Status session_limits(const SessionOptions& o, SessionLimits& limits) {
  for (const auto& [name, v] : {std::pair{"max_tensor_bytes", o.max_tensor_bytes}, std::pair{"max_run_bytes", o.max_run_bytes},
                                std::pair{"max_loop_iterations", o.max_loop_iterations},
                                std::pair{"max_graph_nodes", o.max_graph_nodes}})
    if (v && *v < 0) return invalid_argument(fmt::format("{} = {}: expected 0 (no limit) or a positive number", name, *v));
  const size_t mem = physical_memory_bytes();
  limits.max_tensor_bytes = o.max_tensor_bytes ? static_cast<size_t>(*o.max_tensor_bytes) : mem / 2;
  limits.max_run_bytes = o.max_run_bytes ? static_cast<size_t>(*o.max_run_bytes) : mem / 4 * 3;
  limits.max_loop_iterations = o.max_loop_iterations.value_or(1'000'000);
  return Status::ok();
}

Status SessionOptions::validate() const {
  ThreadingOptions intra, inter;
  if (Status s = threading_options_from_session(*this, intra, inter); !s.is_ok()) return s;
  SessionLimits limits;
  return session_limits(*this, limits);
}

}  // namespace spindle
