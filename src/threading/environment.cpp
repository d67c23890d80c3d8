// environment.cpp — global pools and the PyTorch-style process API.
//
// Pools start lazily under the environment's mutex. Every user of a pool
// (session, parallel_for call) copies its shared_ptr, held by a short lock
// for the copy only, so set_num_threads can replace the pool at any time:
// the old one is joined when its last user lets go (see environment.h).
#include "spindle/environment.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "spindle/cpu.h"

#include "threading/env_vars.h"
#include "threading/intra_pool.h"
#include "threading/pool_options.h"
#include "threading/spin.h"
#include "threading/topology.h"

namespace spindle {

struct Environment::Impl {
  std::mutex mu;  // serializes creating and replacing pools and reading the options
  ThreadingOptions intra_options;
  ThreadingOptions inter_options;
  // The current pools. Readers copy the shared_ptr under ptr_mu (held for
  // the copy only; libstdc++ 12's std::atomic<std::shared_ptr> is not
  // ThreadSanitizer-clean) and so keep the pool alive while they use it; a
  // replaced pool is joined by whoever drops its last reference, outside
  // ptr_mu.
  mutable std::mutex ptr_mu;
  std::shared_ptr<ThreadPool> intra;
  std::shared_ptr<TaskPool> inter;

  template <class P>
  std::shared_ptr<P> get(const std::shared_ptr<P>& p) const {
    std::lock_guard<std::mutex> lock(ptr_mu);
    return p;
  }
  // Installs `next`; returns the previous pool (dropped by the caller, outside ptr_mu).
  template <class P>
  std::shared_ptr<P> put(std::shared_ptr<P>& p, std::shared_ptr<P> next) {
    std::lock_guard<std::mutex> lock(ptr_mu);
    p.swap(next);
    return next;
  }
  std::atomic<int> intra_set{0};  // set_intra_op_num_threads' count, 0 = never called
};

Result<std::shared_ptr<Environment>> Environment::create(ThreadingOptions intra_op, ThreadingOptions inter_op) {
  intra_op.name = "intra_op";
  inter_op.name = "inter_op";
  SPINDLE_RETURN_IF_ERROR(detail::resolve_pool_options(intra_op, detail::PoolKind::kIntraOp).status());
  SPINDLE_RETURN_IF_ERROR(detail::resolve_pool_options(inter_op, detail::PoolKind::kInterOp).status());
  auto impl = std::make_unique<Impl>();
  impl->intra_options = std::move(intra_op);
  impl->inter_options = std::move(inter_op);
  return std::shared_ptr<Environment>(new Environment(std::move(impl)));
}

Environment& Environment::default_env() {
  // Options are read from the environment variables when pools start, so a
  // malformed variable surfaces on first use, naming the variable.
  static Environment* env = [] {
    auto impl = std::make_unique<Impl>();
    impl->intra_options.name = "intra_op";
    impl->inter_options.name = "inter_op";
    return new Environment(std::move(impl));  // lives for the whole process
  }();
  return *env;
}

Environment::Environment(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Environment::~Environment() = default;

std::shared_ptr<ThreadPool> Environment::intra_op_pool() {
  if (auto p = impl_->get(impl_->intra)) return p;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto p = impl_->get(impl_->intra);
  if (!p) {
    p = ThreadPool::create(impl_->intra_options).value();
    impl_->put(impl_->intra, p);
  }
  return p;
}

std::shared_ptr<TaskPool> Environment::inter_op_pool() {
  if (auto p = impl_->get(impl_->inter)) return p;
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto p = impl_->get(impl_->inter);
  if (!p) {
    p = TaskPool::create(impl_->inter_options).value();
    impl_->put(impl_->inter, p);
  }
  return p;
}

Status Environment::set_intra_op_num_threads(int n) {
  if (n < 1 || n > detail::kMaxThreads)
    return invalid_argument(fmt::format("set_num_threads({}): expected a thread count in [1, {}]", n,
                                        detail::kMaxThreads));
  std::lock_guard<std::mutex> lock(impl_->mu);
  ThreadingOptions next = impl_->intra_options;
  next.num_threads = n;
  if (!next.affinities.empty() && static_cast<int>(next.affinities.size()) != n - 1) next.affinities.clear();
  if (impl_->get(impl_->intra)) {
    // Build the new pool first: on failure the old one stays in service.
    // Sessions and parallel_for calls that hold the old pool finish on it;
    // the last of them joins its workers.
    SPINDLE_ASSIGN_OR_RETURN(std::shared_ptr<ThreadPool> pool, ThreadPool::create(next));
    impl_->put(impl_->intra, std::move(pool));  // the old one is released here, outside ptr_mu
  } else {
    SPINDLE_RETURN_IF_ERROR(detail::resolve_pool_options(next, detail::PoolKind::kIntraOp).status());
  }
  impl_->intra_options = std::move(next);
  impl_->intra_set.store(n, std::memory_order_release);
  return Status::ok();
}

int Environment::intra_op_num_threads_set() const { return impl_->intra_set.load(std::memory_order_acquire); }

Status Environment::set_inter_op_num_threads(int n) {
  if (n < 1 || n > detail::kMaxThreads)
    return invalid_argument(fmt::format("set_num_interop_threads({}): expected a thread count in [1, {}]", n,
                                        detail::kMaxThreads));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (auto inter = impl_->get(impl_->inter))
    return failed_precondition(fmt::format(
        "set_num_interop_threads({}): the inter-op pool has already started with {} thread(s); the size can only "
        "be set before its first use (the first fork or parallel run)",
        n, inter->num_threads()));
  ThreadingOptions next = impl_->inter_options;
  next.num_threads = n;
  SPINDLE_RETURN_IF_ERROR(detail::resolve_pool_options(next, detail::PoolKind::kInterOp).status());
  impl_->inter_options = std::move(next);
  return Status::ok();
}

int Environment::intra_op_num_threads() {
  if (auto p = impl_->get(impl_->intra)) return p->dop();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return detail::resolve_pool_options(impl_->intra_options, detail::PoolKind::kIntraOp).value().options.num_threads;
}

int Environment::inter_op_num_threads() {
  if (auto p = impl_->get(impl_->inter)) return p->num_threads();
  std::lock_guard<std::mutex> lock(impl_->mu);
  return detail::resolve_pool_options(impl_->inter_options, detail::PoolKind::kInterOp).value().options.num_threads;
}

const ThreadingOptions& Environment::intra_op_options() const { return impl_->intra_options; }
const ThreadingOptions& Environment::inter_op_options() const { return impl_->inter_options; }

// ---------------------------------------------------------------- free functions

void set_num_threads(int n) { Environment::default_env().set_intra_op_num_threads(n).throw_if_error(); }
int get_num_threads() { return Environment::default_env().intra_op_num_threads(); }
void set_num_interop_threads(int n) { Environment::default_env().set_inter_op_num_threads(n).throw_if_error(); }
int get_num_interop_threads() { return Environment::default_env().inter_op_num_threads(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn) {
  // The shared_ptr keeps the pool alive should set_num_threads replace it
  // while this loop runs.
  Environment::default_env().intra_op_pool()->parallel_for(begin, end, grain, fn);
}

const char* parallel_backend_name() { return SPINDLE_BACKEND_NAME; }

namespace {

std::string describe_pool(const ThreadingOptions& options, detail::PoolKind kind, bool started,
                          const std::vector<std::string>& ignored) {
  auto r = detail::resolve_pool_options(options, kind);
  if (!r.is_ok()) return fmt::format("  {}: invalid settings: {}\n", options.name, r.status().message());
  const detail::ResolvedPool& p = *r;
  const ThreadingOptions& o = p.options;
  std::string s;
  if (kind == detail::PoolKind::kIntraOp) {
    s += fmt::format("  intra-op pool: {} thread(s) = caller + {} worker(s) (from {}){}\n", o.num_threads,
                     p.num_workers(), p.num_threads_source, started ? "" : ", not started yet");
  } else {
    s += fmt::format("  inter-op pool: {} thread(s) (from {}){}\n", o.num_threads, p.num_threads_source,
                     started ? "" : ", not started yet (starts on first fork or parallel run)");
  }
  if (p.placement.empty()) {
    s += "    affinity: not pinned\n";
  } else {
    std::string list;
    for (size_t i = 0; i < p.placement.size(); ++i)
      list += fmt::format("{}{}", i ? "; " : "", p.placement[i].to_string());
    s += fmt::format("    affinity: workers on [{}]{}\n", list,
                     !p.default_pinning ? "" : kind == detail::PoolKind::kIntraOp ? " (default: one worker per physical core, caller unpinned)" : " (default: one thread per physical core)");
    s += detail::describe_placement(detail::topology(), p, "      ");
  }
  detail::SpinPolicy spin = detail::make_spin_policy(o);
  if (!spin.enabled()) {
    s += "    spinning: off (idle workers park at once)\n";
  } else {
    s += fmt::format("    spinning: on, window {} us{} = {} pauses of {:.1f} ns, backoff max {}\n",
                     o.spin_duration.value_or(kDefaultSpinDuration).count(),
                     o.spin_duration ? "" : fmt::format(" (default; {} us while a run is active)",
                                                        detail::kInRunSpinDuration.count()),
                     spin.pause_budget, detail::calibrate_pause_ns(), spin.backoff_max);
  }
  if (options.numa_node >= 0) s += fmt::format("    NUMA node: {}\n", options.numa_node);
  if (options.create_thread) s += "    threads created through custom create/join callbacks\n";
  for (const std::string& knob : ignored) s += fmt::format("    ignored by the {} backend: {}\n", SPINDLE_BACKEND_NAME, knob);
  return s;
}

}  // namespace

std::string Environment::parallel_info() {
  std::string s = "spindle parallel_info\n";
  s += fmt::format("  backend: {}\n", parallel_backend_name());
  s += fmt::format("  topology: {}\n", detail::topology().summary());
  s += fmt::format("  kernels ISA level: {} (CPU supports {}; SPINDLE_ISA caps it)\n", isa_level_name(active_isa_level()),
                   isa_level_name(detected_isa_level()));
  s += "  environment variables:";
  for (bool intra : {true, false})
    for (const std::string& var : thread_count_variables(intra)) {
      const char* v = std::getenv(var.c_str());
      s += fmt::format(" {}={}", var, v ? fmt::format("\"{}\"", v) : "unset");
    }
  s += "\n";
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto ignored = detail::backend_ignored_knobs();
  const auto intra = impl_->get(impl_->intra);
  const auto inter = impl_->get(impl_->inter);
  s += describe_pool(intra ? intra->options() : impl_->intra_options, detail::PoolKind::kIntraOp, intra != nullptr,
                     ignored);
  s += describe_pool(inter ? inter->options() : impl_->inter_options, detail::PoolKind::kInterOp, inter != nullptr, {});
  if (const int n = impl_->intra_set.load(std::memory_order_acquire))
    s += fmt::format("  set_num_threads({}): sessions created since then with intra_op_num_threads = 0 get {} intra-op "
                     "thread(s); sessions created before keep their pools\n",
                     n, n);
  else
    s += "  set_num_threads: not called (sessions with intra_op_num_threads = 0 size their pools as above: "
         "variables, then physical cores); once called, its count governs sessions created afterwards\n";
  return s;
}

std::string parallel_info() { return Environment::default_env().parallel_info(); }

}  // namespace spindle
