// resolve_options.cpp — the resolve step between SessionOptions' typed
// fields and the pools: validation that needs more than one field, the
// session-wide custom thread functions and set_denormal_as_zero filled into
// both pools' ThreadingOptions, and the run limits' defaults.
#include "session/resolve_options.h"

#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "session/denormals.h"
#include "spindle/session.h"

namespace spindle {

namespace {

constexpr std::pair<ExecutionMode, std::string_view> kModes[] = {{ExecutionMode::kSequential, "sequential"},
                                                                  {ExecutionMode::kParallel, "parallel"}};
constexpr std::pair<GraphOptimizationLevel, std::string_view> kLevels[] = {
    {GraphOptimizationLevel::kDisableAll, "disable"},
    {GraphOptimizationLevel::kBasic, "basic"},
    {GraphOptimizationLevel::kExtended, "extended"},
    {GraphOptimizationLevel::kAll, "all"}};

template <class E, size_t N>
std::string_view name_of(const std::pair<E, std::string_view> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return "unknown";
}

template <class E, size_t N>
std::optional<E> value_of(const std::pair<E, std::string_view> (&table)[N], std::string_view name) {
  for (const auto& [v, n] : table)
    if (n == name) return v;
  return std::nullopt;
}

template <class E, size_t N>
std::vector<std::string> names_of(const std::pair<E, std::string_view> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.second);
  return names;
}

}  // namespace

std::string_view execution_mode_name(ExecutionMode mode) { return name_of(kModes, mode); }
std::optional<ExecutionMode> parse_execution_mode(std::string_view name) { return value_of(kModes, name); }
std::string_view optimization_level_name(GraphOptimizationLevel level) { return name_of(kLevels, level); }
std::optional<GraphOptimizationLevel> parse_optimization_level(std::string_view name) { return value_of(kLevels, name); }
const std::vector<std::string>& execution_mode_names() {
  static const std::vector<std::string> names = names_of(kModes);
  return names;
}
const std::vector<std::string>& optimization_level_names() {
  static const std::vector<std::string> names = names_of(kLevels);
  return names;
}

Status threading_options_from_session(const SessionOptions& o, ThreadingOptions& intra, ThreadingOptions& inter) {
  intra = o.intra_op;
  inter = o.inter_op;
  intra.name = "intra_op";
  inter.name = "inter_op";
  for (const ThreadingOptions* t : {&intra, &inter})
    if (t->num_threads < 0 || t->num_threads > kMaxThreadCount)
      return invalid_argument(fmt::format("{}_num_threads = {}: expected 0 (automatic) or a thread count in [1, {}]",
                                          t->name, t->num_threads, kMaxThreadCount));
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

Status log_settings_status(const SessionOptions& o) {
  if (o.log_severity_level < -1 || o.log_severity_level > 4)
    return invalid_argument(fmt::format("log_severity_level = {}: expected -1 (the process default) or 0 (verbose) to 4 "
                                        "(fatal)",
                                        o.log_severity_level));
  if (auto level = logging::env_severity(); !level.is_ok()) return level.status();
  return Status::ok();
}

Status SessionOptions::validate() const {
  ThreadingOptions intra, inter;
  if (Status s = threading_options_from_session(*this, intra, inter); !s.is_ok()) return s;
  SPINDLE_RETURN_IF_ERROR(log_settings_status(*this));
  SessionLimits limits;
  return session_limits(*this, limits);
}

}  // namespace spindle
