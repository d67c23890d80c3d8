// session.cpp — InferenceSession (see spindle/session.h): building a
// session from a graph (options resolved, pools started), running it, and
// the session's queries. The options' other concerns live beside it:
// config_keys.cpp (the config-key table), options_json.cpp (options files),
// resolve_options.cpp (typed fields -> pool options), feeds.cpp (feed
// validation), chrome_trace.cpp (the profiling trace format).
#include "spindle/session.h"

#include <cxxabi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "common/log.h"
#include "exec/executor.h"
#include "graph/graph.h"
#include "graph/model_writer.h"
#include "session/chrome_trace.h"
#include "session/denormals.h"
#include "session/feeds.h"
#include "session/resolve_options.h"
#include "spindle/cpu.h"
#include "threading/pool_options.h"

namespace spindle {

// Destruction order. Members are destroyed bottom-up, so the pools come last
// in the declaration: they are stopped first, while everything a queued task
// touches (plan, frames, options) still exists. A pool's destructor runs the
// tasks still queued on it before joining. ~InferenceSession first waits for
// its run_async work (which may sit on a pool the session does not own), so
// nothing of the session runs after it is gone.
struct InferenceSession::Impl {
  SessionOptions options;
  logging::Logger logger;  // log_severity_level, log_id
  SessionLimits limits;
  std::string origin;
  std::vector<TensorInfo> inputs, outputs;
  // Initializers a run may feed (Graph::overridable), and their values when
  // it does not: the graph has them as inputs.
  std::vector<TensorInfo> overridable;
  Feeds defaults;
  // What a run's feeds are checked against: inputs, then overridable.
  std::vector<TensorInfo> feedable;
  ModelMetadata metadata;
  std::unique_ptr<exec::Plan> plan;
  graph::OptimizerStats stats;
  int nodes_before = 0;
  std::mutex frames_mu;
  std::vector<std::unique_ptr<exec::Frame>> frames;
  std::map<std::string, int> input_index;  // name -> index in feedable
  std::mutex profile_mu;  // enable_profiling: runs recorded so far
  std::vector<ProfiledRun> profiled;
  std::chrono::steady_clock::time_point profile_start = std::chrono::steady_clock::now();
  // run_async calls whose callback has not returned yet.
  std::mutex async_mu;
  std::condition_variable async_cv;
  int async_pending = 0;
  // Set when the session was destroyed from inside one of its own run_async
  // callbacks: the request that ends last frees the session (see
  // ~InferenceSession).
  std::unique_ptr<Impl> orphan;
  bool threads_from_set_num_threads = false;
  // Last: the pools (see above). Shared with the Environment for global
  // pools, so set_num_threads or the Environment's end cannot free them
  // under this session; the raw pointers are the same pools, for the run path.
  std::shared_ptr<ThreadPool> intra_pool;
  std::shared_ptr<TaskPool> inter_pool;  // parallel mode
  ThreadPool* intra = nullptr;
  TaskPool* inter = nullptr;

  void wait_for_async_runs() {
    std::unique_lock<std::mutex> lock(async_mu);
    async_cv.wait(lock, [&] { return async_pending == 0; });
  }

  std::unique_ptr<exec::Frame> acquire_frame() {
    {
      std::lock_guard<std::mutex> lock(frames_mu);
      if (!frames.empty()) {
        auto f = std::move(frames.back());
        frames.pop_back();
        return f;
      }
    }
    return std::make_unique<exec::Frame>(*plan);
  }
  void release_frame(std::unique_ptr<exec::Frame> f) {
    std::lock_guard<std::mutex> lock(frames_mu);
    frames.push_back(std::move(f));
  }

  std::vector<int> resolve_outputs(const std::vector<std::string>& names) const;
  std::vector<Tensor> run(const Feeds& feeds, const std::vector<std::string>& output_names, RunOptions* ro,
                          RunProfile* profile);
};

namespace {

TensorInfo tensor_info(const graph::ValueInfo& v) {
  TensorInfo t;
  t.name = v.name;
  t.is_optional = v.is_optional;
  t.is_sequence = v.is_sequence;
  t.dtype = v.dtype;
  t.shape = v.shape;
  t.dim_names = v.dim_names;
  t.dim_names.resize(t.shape.size());
  t.dim_denotations = v.dim_denotations;
  t.dim_denotations.resize(t.shape.size());
  return t;
}

// The feeds with the default of each overridable initializer they leave out.
Feeds with_defaults(const Feeds& feeds, const Feeds& defaults) {
  Feeds all = feeds;
  for (const auto& d : defaults) {
    bool fed = false;
    for (const auto& f : feeds) fed = fed || f.first == d.first;
    if (!fed) all.push_back(d);
  }
  return all;
}

}  // namespace

std::vector<int> InferenceSession::Impl::resolve_outputs(const std::vector<std::string>& names) const {
  const graph::Graph& g = plan->graph();
  if (names.empty()) return g.outputs;
  std::vector<int> ids;
  for (const auto& name : names) {
    int id = -1;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].name == name) id = g.outputs[i];
    if (id < 0) {
      std::vector<std::string> all;
      for (const auto& o : outputs) all.push_back(o.name);
      throw Error(StatusCode::kNotFound,
                  fmt::format("{}: unknown output name '{}'; the model's outputs are: {}", origin, name, fmt::join(all, ", ")));
    }
    ids.push_back(id);
  }
  return ids;
}

std::vector<Tensor> InferenceSession::Impl::run(const Feeds& feeds, const std::vector<std::string>& output_names,
                                                RunOptions* ro, RunProfile* profile) {
  if (ro && (ro->log_severity_level < -1 || ro->log_severity_level > 4))
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("{}: RunOptions log_severity_level is {}, expected -1 (the session's) or 0 (verbose) to 4 "
                            "(fatal)",
                            origin, ro->log_severity_level));
  const Feeds merged = defaults.empty() ? Feeds{} : with_defaults(feeds, defaults);
  const Feeds& all_feeds = defaults.empty() ? feeds : merged;
  validate_feeds(all_feeds, feedable, input_index, origin);
  const std::vector<int> wanted = resolve_outputs(output_names);
  const graph::Graph& g = plan->graph();
  // A run asking for some outputs runs only the nodes they depend on; one
  // asking for all of them takes the plan as it is.
  const std::shared_ptr<const exec::NodeSubset> subset = output_names.empty() ? nullptr : plan->subset(wanted);
  auto frame = acquire_frame();
  frame->begin_run(subset.get());
  for (const auto& [name, tensor] : all_feeds) frame->values()[static_cast<size_t>(g.value_id(name))] = tensor;

  kernels::RunLimits run_limits;
  run_limits.terminate = ro ? &ro->terminate : nullptr;
  if (ro && ro->timeout_ms > 0) {
    run_limits.timeout_ms = ro->timeout_ms;
    run_limits.deadline = kernels::deadline_after(ro->timeout_ms);
  }
  run_limits.max_loop_iterations = limits.max_loop_iterations;
  if (limits.max_tensor_bytes || limits.max_run_bytes)
    run_limits.memory = std::make_shared<MemoryBudget>(limits.max_tensor_bytes, limits.max_run_bytes);
  exec::RunControl control;
  control.limits = &run_limits;
  std::mutex events_mu;
  const auto run_start = std::chrono::steady_clock::now();
  const int64_t run_start_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(run_start.time_since_epoch()).count();
  if (profile) {
    control.on_node = [&](const exec::NodeSpan& n, std::chrono::steady_clock::time_point s,
                          std::chrono::steady_clock::time_point e) {
      NodeEvent ev{n.id, n.info.name, n.info.op_type, static_cast<int>(syscall(SYS_gettid)),
                   std::chrono::duration<double, std::micro>(s - run_start).count(),
                   std::chrono::duration<double, std::micro>(e - s).count(), n.parent, n.scope};
      std::lock_guard<std::mutex> lock(events_mu);
      profile->nodes.push_back(std::move(ev));
    };
    control.on_block = [&](int node, int tid, int64_t s, int64_t e) {
      BlockEvent ev{node, tid, static_cast<double>(s - run_start_ns) / 1e3, static_cast<double>(e - s) / 1e3};
      std::lock_guard<std::mutex> lock(events_mu);
      profile->blocks.push_back(ev);
    };
  }
  std::vector<Tensor> result;
  try {
    // force_spinning_stop: run boundaries tell the pool when to stop spinning.
    ThreadPool::RunScope scope(options.force_spinning_stop ? intra : nullptr);
    DenormalsAsZeroScope flush(options.set_denormal_as_zero);
    if (options.execution_mode == ExecutionMode::kParallel && inter)
      exec::run_parallel(*plan, *frame, intra, *inter, control);
    else
      exec::run_sequential(*plan, *frame, intra, control);
    for (int id : wanted) result.push_back(frame->values()[static_cast<size_t>(id)]);
  } catch (...) {
    frame->end_run();
    release_frame(std::move(frame));
    throw;
  }
  frame->end_run();
  release_frame(std::move(frame));
  return result;
}

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
namespace {

// The run_async request whose callback this thread is running: its session
// and where the request takes the session over when the callback destroys it.
struct CallbackScope {
  const InferenceSession::Impl* impl;
  std::unique_ptr<InferenceSession::Impl>* adopted;
};
thread_local CallbackScope* tl_callback = nullptr;

}  // namespace

InferenceSession::~InferenceSession() {
  if (tl_callback && tl_callback->impl == impl_.get()) {
    // Destroyed from inside one of its own run_async callbacks (a callback
    // that dropped the last reference to it): waiting here would wait for
    // this very callback. The request takes the session over and frees it
    // once every request of the session has returned.
    *tl_callback->adopted = std::move(impl_);
    return;
  }
  impl_->wait_for_async_runs();
}

namespace {

// Creates a pool; a thread the system refuses (ulimit -u, memory limits)
// becomes an error naming the pool and the thread count.
template <class Pool>
std::unique_ptr<Pool> start_pool(const char* name, const ThreadingOptions& t) {
  try {
    auto p = Pool::create(t);
    if (!p.is_ok()) throw Error(p.status());
    return std::move(p).value();
  } catch (const std::system_error& e) {
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("cannot start the {} pool with {} threads: the system refused to create a thread ({}); use "
                            "fewer threads or raise the process limits",
                            name, t.num_threads == 0 ? std::string("the default number of") : std::to_string(t.num_threads),
                            e.what()));
  }
}

// The load limits a SessionOptions sets; the deadline counts from now.
graph::LoadOptions load_options(const SessionOptions& options) {
  graph::LoadOptions lo;
  lo.limits.max_nodes = options.max_graph_nodes.value_or(1'000'000);
  lo.limits.timeout_ms = options.load_timeout_ms;
  lo.custom_ops = &options.custom_op_domains;
  if (options.load_timeout_ms > 0) lo.limits.deadline = kernels::deadline_after(options.load_timeout_ms);
  return lo;
}

// SessionOptions::initializers in place of the main graph's initializers of
// those names (names the model does not have are left unused); a different
// element type or shape fails.
void replace_initializers(graph::Graph& g, const SessionOptions& options, const std::string& origin) {
  for (const auto& [name, t] : options.initializers) {
    const int id = g.value_id(name);
    const Tensor* model = id < 0 ? nullptr : g.initializer(id);
    if (!model) continue;
    if (!t.is_tensor() || !t.defined() || t.dtype() != model->dtype() || t.shape() != model->shape())
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: the initializer '{}' supplied in the session options is {}; the model's is {}", origin,
                              name, t.defined() ? t.describe() : std::string("undefined"), model->describe()));
    g.initializers[id] = t;
  }
}

// The session's threading options, resolved once, before the model is read
// (bad options fail first).
struct SessionThreading {
  ThreadingOptions intra, inter;
  explicit SessionThreading(const SessionOptions& options) {
    if (Status s = threading_options_from_session(options, intra, inter); !s.is_ok()) throw Error(s);
    if (Status s = log_settings_status(options); !s.is_ok()) throw Error(s);
  }
};

// The class name of a node's kernel ("spindle::kernels::Conv" -> "Conv").
std::string kernel_name(const kernels::OpKernel& k) {
  int status = 0;
  char* d = abi::__cxa_demangle(typeid(k).name(), nullptr, nullptr, &status);
  std::string name = status == 0 && d ? d : typeid(k).name();
  std::free(d);
  const size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

// Where a pool's thread count came from ("option", SPINDLE_*_NUM_THREADS, "detected").
std::string threads_source(const ThreadingOptions& t, detail::PoolKind kind, bool from_set_num_threads) {
  if (from_set_num_threads) return "set_num_threads";
  auto r = detail::resolve_pool_options(t, kind);
  return r.is_ok() ? r.value().num_threads_source : std::string("unresolved");
}

// A run that did not complete, as ONNX Runtime logs it: a cancelled run
// (RunOptions::terminate) at warning, any other failure at error; at the
// run's own severity and under its tag when its options set them.
void log_run_failure(const InferenceSession::Impl& impl, const Status& status, const RunOptions* run) {
  std::optional<logging::Logger> own;
  if (run && (run->log_severity_level >= 0 || !run->run_tag.empty()))
    own.emplace(run->log_severity_level >= 0 ? run->log_severity_level : impl.options.log_severity_level,
                run->run_tag.empty() ? impl.options.log_id : run->run_tag);
  const logging::Logger& log = own ? *own : impl.logger;
  if (status.code() == StatusCode::kCancelled)
    SPINDLE_LOG(log, kWarning, "run {}: {}", impl.origin, status.message());
  else
    SPINDLE_LOG(log, kError, "run {}: {} ({})", impl.origin, status.message(), status_code_name(status.code()));
}

// What session creation decided, at info (threads, optimizer) and verbose
// (each node's kernel).
void log_created(const InferenceSession::Impl& impl, const std::string& origin, const ThreadingOptions& intra,
                 const ThreadingOptions& inter) {
  const logging::Logger& log = impl.logger;
  if (!log.enabled(LogSeverity::kInfo)) return;
  SPINDLE_LOG(log, kInfo, "session for {}: execution mode {}, {} pools", origin,
              execution_mode_name(impl.options.execution_mode),
              impl.options.use_per_session_threads ? "per-session" : "global (Environment)");
  const ThreadingOptions& io = impl.intra->options();
  SPINDLE_LOG(log, kInfo, "intra-op: {} thread(s) including the caller (from {}), spinning {}{}", impl.intra->dop(),
              impl.options.use_per_session_threads
                  ? threads_source(intra, detail::PoolKind::kIntraOp, impl.threads_from_set_num_threads)
                  : std::string("the Environment"),
              io.allow_spinning ? "on" : "off",
              io.spin_duration ? fmt::format(" ({} us)", io.spin_duration->count()) : std::string());
  if (impl.inter)
    SPINDLE_LOG(log, kInfo, "inter-op: {} thread(s) (from {})", impl.inter->num_threads(),
                impl.options.use_per_session_threads ? threads_source(inter, detail::PoolKind::kInterOp, false)
                                                     : std::string("the Environment"));
  else if (impl.options.inter_op.num_threads != 0)
    SPINDLE_LOG(log, kInfo, "inter-op: inter_op_num_threads = {} is ignored in sequential mode",
                impl.options.inter_op.num_threads);
  SPINDLE_LOG(log, kInfo, "optimizer ({}): {} nodes -> {}", optimization_level_name(impl.options.graph_optimization_level),
              impl.nodes_before, impl.plan->nodes().size());
  // Passes that changed the graph at info, the others at verbose.
  for (const graph::PassRecord& r : impl.stats.passes) {
    const std::string detail = r.detail.empty() ? "" : " (" + r.detail + ")";
    if (r.count > 0)
      SPINDLE_LOG(log, kInfo, "optimizer pass {}: {} rewrite(s){}", r.name, r.count, detail);
    else
      SPINDLE_LOG(log, kVerbose, "optimizer pass {}: no rewrite{}", r.name, detail);
  }
  if (!log.enabled(LogSeverity::kVerbose)) return;
  const char* isa = isa_level_name(active_isa_level());
  for (const exec::PlanNode& n : impl.plan->nodes())
    SPINDLE_LOG(log, kVerbose, "node {}: kernel {} (ISA {}, up to {} intra-op thread(s){})", n.info.label(),
                n.kernel ? kernel_name(*n.kernel) : std::string("none"), isa, impl.intra->dop(),
                n.kernel && n.kernel->packed_bytes() ? fmt::format(", {} bytes of packed weights", n.kernel->packed_bytes())
                                                     : std::string());
}

// optimized_model_filepath: the graph as the optimizer left it, before the
// kernels are created. Weights are still in the graph's layout then (packing
// happens at kernel creation, which may drop an original it packed), so
// this is the one place the file is written.
void write_optimized_model(const graph::Graph& g, const SessionOptions& options, const std::vector<std::string>& applied,
                           const graph::OptimizerStats& stats) {
  graph::WriteOptions wo;
  wo.external_file = options.optimized_model_external_file;
  wo.external_min_bytes = options.optimized_model_external_min_bytes;
  wo.applied_passes = applied;
  for (const graph::PassRecord& r : stats.passes)
    if (std::find(applied.begin(), applied.end(), r.name) == applied.end()) wo.applied_passes.push_back(r.name);
  if (Status s = graph::write_model(g, options.optimized_model_filepath, wo); !s.is_ok()) throw Error(s);
}

// Initializers the model also lists as inputs become inputs of the graph
// the session runs (not folded, not packed: a run may replace them, as in
// ONNX Runtime); the session keeps their values as defaults.
void feed_overridable(graph::Graph& g, InferenceSession::Impl& impl) {
  std::vector<std::string> names;
  for (size_t i = 0; i < g.overridable.size(); ++i) {
    const int id = g.overridable[i];
    auto it = g.initializers.find(id);
    if (it == g.initializers.end()) continue;
    graph::ValueInfo info = g.overridable_info[i];
    if (info.dtype == DataType::kUndefined && it->second.is_tensor()) info.dtype = it->second.dtype();
    impl.overridable.push_back(tensor_info(info));
    impl.defaults.emplace_back(g.value_name(id), std::move(it->second));
    g.initializers.erase(it);
    g.inputs.push_back(id);
    g.input_info.push_back(std::move(info));
    names.push_back(g.value_name(id));
  }
  g.overridable.clear();
  g.overridable_info.clear();
  impl.feedable = impl.inputs;
  impl.feedable.insert(impl.feedable.end(), impl.overridable.begin(), impl.overridable.end());
  for (size_t i = 0; i < impl.feedable.size(); ++i) impl.input_index[impl.feedable[i].name] = static_cast<int>(i);
  if (!names.empty())
    SPINDLE_LOG(impl.logger, kWarning,
                "{}: initializer(s) {} are also graph inputs: a run may feed them, so they are not folded into "
                "constants nor packed; remove them from the graph's inputs if they are never fed",
                impl.origin, fmt::join(names, ", "));
}

std::unique_ptr<InferenceSession::Impl> build(graph::Graph g, const std::string& origin, const SessionOptions& options,
                                              SessionThreading threading, const graph::LoadLimits& load_limits,
                                              Environment* env) {
  auto impl = std::make_unique<InferenceSession::Impl>();
  impl->options = options;
  impl->logger = logging::Logger(options.log_severity_level, options.log_id);
  impl->origin = origin;
  ThreadingOptions& intra = threading.intra;
  ThreadingOptions& inter = threading.inter;
  if (Status s = session_limits(options, impl->limits); !s.is_ok()) throw Error(s);
  // A model written by optimized_model_filepath lists the passes it has had.
  const std::vector<std::string> applied = graph::take_applied_passes(g.metadata);
  impl->metadata = g.metadata;
  for (const auto& v : g.input_info) impl->inputs.push_back(tensor_info(v));
  for (const auto& v : g.output_info) impl->outputs.push_back(tensor_info(v));
  feed_overridable(g, *impl);
  impl->nodes_before = static_cast<int>(g.nodes.size());

  // Constant folding and weight packing allocate while the session is
  // created: a model's constant subgraph (ConstantOfShape, Expand, Tile of
  // constants) is held to the same limits as a run.
  std::shared_ptr<MemoryBudget> budget;
  if (impl->limits.max_tensor_bytes || impl->limits.max_run_bytes)
    budget = std::make_shared<MemoryBudget>(impl->limits.max_tensor_bytes, impl->limits.max_run_bytes);
  MemoryBudget::Scope budget_scope(budget ? &budget : nullptr);
  std::vector<std::string> skipped = options.disabled_optimizers;
  for (const std::string& name : applied)
    if (std::find(skipped.begin(), skipped.end(), name) == skipped.end()) skipped.push_back(name);
  if (!applied.empty())
    SPINDLE_LOG(impl->logger, kInfo, "{}: the model was optimized when written; not repeated: {}", origin,
                fmt::join(applied, ", "));
  auto stats = graph::optimize(g, static_cast<graph::OptimizationLevel>(options.graph_optimization_level), load_limits,
                               skipped);
  if (!stats.is_ok()) throw Error(stats.status().code(), origin + ": " + stats.status().message());
  impl->stats = stats.value();
  if (!options.optimized_model_filepath.empty() && impl->defaults.empty()) {
    write_optimized_model(g, options, applied, impl->stats);
  } else if (!options.optimized_model_filepath.empty()) {
    // Overridable initializers are written back as they came: inputs that
    // are also initializers.
    graph::Graph written = g;
    for (const auto& [name, t] : impl->defaults) written.initializers[written.value_id(name)] = t;
    write_optimized_model(written, options, applied, impl->stats);
  }
  auto plan = exec::Plan::compile(std::move(g), static_cast<graph::OptimizationLevel>(options.graph_optimization_level),
                                  !options.disable_prepacking, &options.custom_op_domains);
  if (!plan.is_ok()) throw Error(plan.status().code(), origin + ": " + plan.status().message());
  impl->plan = std::move(plan).value();
  if (Status s = load_limits.check(origin, "packing weights"); !s.is_ok()) throw Error(s);

  const bool parallel = options.execution_mode == ExecutionMode::kParallel;
  Environment& environment = env ? *env : Environment::default_env();
  if (options.use_per_session_threads) {
    // set_num_threads (PyTorch's meaning) governs default sessions created
    // after the call: see spindle/environment.h.
    if (intra.num_threads == 0) {
      intra.num_threads = environment.intra_op_num_threads_set();
      impl->threads_from_set_num_threads = intra.num_threads != 0;
    }
    impl->intra_pool = start_pool<ThreadPool>("intra-op", intra);
    if (parallel) {
      impl->inter_pool = start_pool<TaskPool>("inter-op", inter);
    }
  } else {
    // The global pools are shared: a session may not change them.
    const ThreadingOptions defaults;
    const auto own_settings = [&](const ThreadingOptions& t) {
      return t.num_threads != 0 || t.allow_spinning != defaults.allow_spinning || t.spin_duration ||
             t.spin_backoff_max != defaults.spin_backoff_max || !t.affinities.empty() || t.numa_node != -1 ||
             t.create_thread || t.on_worker_start || t.on_worker_stop;
    };
    if (own_settings(options.intra_op) || own_settings(options.inter_op) || options.custom_create_thread_fn ||
        options.set_denormal_as_zero)
      throw Error(StatusCode::kInvalidArgument,
                  "use_per_session_threads = false uses the Environment's global pools, but the session also sets its "
                  "own thread options (intra_op / inter_op settings or their config keys, custom thread functions, "
                  "session.set_denormal_as_zero); set them on the Environment (ThreadingOptions) instead");
    impl->intra_pool = environment.intra_op_pool();
    if (parallel) impl->inter_pool = environment.inter_op_pool();
  }
  impl->intra = impl->intra_pool.get();
  impl->inter = impl->inter_pool.get();
  log_created(*impl, origin, intra, inter);
  return impl;
}

// Runs f, turning allocation failures into RESOURCE_EXHAUSTED errors naming `origin`.
template <class F>
auto guard_memory(const std::string& origin, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw Error(StatusCode::kResourceExhausted, fmt::format("{}: out of memory", origin));
  } catch (const std::length_error&) {
    throw Error(StatusCode::kResourceExhausted, fmt::format("{}: a buffer size exceeds what can be allocated", origin));
  }
}

}  // namespace

std::unique_ptr<InferenceSession> InferenceSession::create(const std::string& model_path, const SessionOptions& options,
                                                           Environment* env) {
  SessionThreading threading(options);
  return guard_memory(model_path, [&] {
    const graph::LoadOptions lo = load_options(options);
    auto g = graph::load_model_file(model_path, lo);
    if (!g.is_ok()) throw Error(g.status());
    replace_initializers(g.value(), options, model_path);
    return std::unique_ptr<InferenceSession>(
        new InferenceSession(build(std::move(g).value(), model_path, options, std::move(threading), lo.limits, env)));
  });
}

std::unique_ptr<InferenceSession> InferenceSession::create_from_bytes(std::span<const uint8_t> model,
                                                                      const SessionOptions& options, Environment* env) {
  SessionThreading threading(options);
  return guard_memory("<model bytes>", [&] {
    const graph::LoadOptions lo = load_options(options);
    auto g = graph::load_model_bytes(model, "<model bytes>", options.external_data_dir, lo);
    if (!g.is_ok()) throw Error(g.status());
    replace_initializers(g.value(), options, "<model bytes>");
    return std::unique_ptr<InferenceSession>(
        new InferenceSession(build(std::move(g).value(), "<model bytes>", options, std::move(threading), lo.limits, env)));
  });
}

const std::vector<TensorInfo>& InferenceSession::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& InferenceSession::overridable_initializers() const { return impl_->overridable; }
const std::vector<TensorInfo>& InferenceSession::outputs() const { return impl_->outputs; }
const ModelMetadata& InferenceSession::model_metadata() const { return impl_->metadata; }

std::vector<Tensor> InferenceSession::run(const Feeds& feeds, const std::vector<std::string>& output_names,
                                          RunOptions* run_options) {
  try {
    return guard_memory(impl_->origin, [&] {
      if (!impl_->options.enable_profiling) return impl_->run(feeds, output_names, run_options, nullptr);
      ProfiledRun r;
      r.offset_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - impl_->profile_start).count();
      auto out = impl_->run(feeds, output_names, run_options, &r.profile);
      std::lock_guard<std::mutex> lock(impl_->profile_mu);
      impl_->profiled.push_back(std::move(r));
      return out;
    });
  } catch (const Error& e) {
    log_run_failure(*impl_, e.status(), run_options);
    throw;
  }
}

std::string InferenceSession::end_profiling() {
  if (!impl_->options.enable_profiling)
    throw Error(StatusCode::kInvalidArgument, "end_profiling: profiling is not enabled (SessionOptions::enable_profiling)");
  std::vector<ProfiledRun> runs;
  {
    std::lock_guard<std::mutex> lock(impl_->profile_mu);
    runs.swap(impl_->profiled);
  }
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tm);
  const std::string path = fmt::format("{}_{}.json", impl_->options.profile_file_prefix, stamp);
  std::ofstream out(path);
  out << chrome_trace(runs, "spindle " + impl_->origin);
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("end_profiling: cannot write {}", path));
  return path;
}

std::string InferenceSession::chrome_trace(const std::vector<ProfiledRun>& runs, const std::string& process_name) const {
  return chrome_trace_json(runs, process_name, static_cast<int>(syscall(SYS_gettid)),
                           impl_->intra ? impl_->intra->worker_tids() : std::vector<int>{});
}

std::vector<Tensor> InferenceSession::run_profiled(const Feeds& feeds, RunProfile& profile) {
  return impl_->run(feeds, {}, nullptr, &profile);
}

void InferenceSession::run_async(Feeds feeds, std::vector<std::string> output_names,
                                 std::function<void(Status, std::vector<Tensor>)> callback, RunOptions* run_options) {
  // Sequential sessions have no inter-op pool of their own: the default
  // Environment's (which lives as long as the process) runs the request.
  std::shared_ptr<TaskPool> pool = impl_->inter_pool ? impl_->inter_pool : Environment::default_env().inter_op_pool();
  {
    std::lock_guard<std::mutex> lock(impl_->async_mu);
    ++impl_->async_pending;
  }
  // The session waits in its destructor until the callback returned (or, when
  // the callback destroys it, is freed by the last request), so `impl`
  // outlives the task.
  Impl* impl = impl_.get();
  pool->schedule([impl, run_options, feeds = std::move(feeds), names = std::move(output_names),
                  cb = std::move(callback)] {
    std::vector<Tensor> out;
    Status status = Status::ok();
    try {
      out = impl->run(feeds, names, run_options, nullptr);
    } catch (const Error& e) {
      status = e.status();
    } catch (const std::exception& e) {
      status = runtime_error(e.what());
    }
    if (!status.is_ok()) log_run_failure(*impl, status, run_options);
    std::unique_ptr<Impl> adopted;
    {
      // Counted as returned also when the callback throws (which ends the process).
      struct Done {
        Impl* impl;
        std::unique_ptr<Impl>* adopted;
        CallbackScope* outer;
        ~Done() {
          tl_callback = outer;
          std::unique_ptr<Impl> last;
          {
            std::lock_guard<std::mutex> lock(impl->async_mu);
            if (*adopted) impl->orphan = std::move(*adopted);
            if (--impl->async_pending == 0) {
              impl->async_cv.notify_all();
              last = std::move(impl->orphan);
            }
          }
          *adopted = std::move(last);
        }
      };
      CallbackScope scope{impl, &adopted};
      Done done{impl, &adopted, tl_callback};
      tl_callback = &scope;
      cb(std::move(status), std::move(out));
    }
    if (!adopted) return;
    // The last request of a session its callback destroyed frees it, but not
    // here: this thread may be one of the session's own pool threads, which
    // cannot stop that pool. A thread of the default Environment's pool does
    // (never a pool the session owns; other pools it holds are shared).
    // The task holds the only reference (moved, never copied), so the
    // session is freed there, not when this thread drops a copy.
    Environment::default_env().inter_op_pool()->schedule(
        [last = std::shared_ptr<Impl>(std::move(adopted))]() mutable { last.reset(); });
  });
}

ThreadPool* InferenceSession::intra_op_pool() { return impl_->intra; }

int InferenceSession::num_nodes() const { return static_cast<int>(impl_->plan->nodes().size()); }

std::string InferenceSession::optimization_summary() const {
  std::vector<std::string> passes;
  for (const graph::PassRecord& r : impl_->stats.passes)
    passes.push_back(r.detail.empty() ? fmt::format("{} {}", r.name, r.count)
                                      : fmt::format("{} {} ({})", r.name, r.count, r.detail));
  return fmt::format("{} nodes -> {} after optimization ({})", impl_->nodes_before, num_nodes(),
                     passes.empty() ? std::string("no passes") : fmt::format("{}", fmt::join(passes, ", ")));
}

std::string InferenceSession::threading_info() const {
  const Impl& i = *impl_;
  std::string s;
  s += fmt::format("execution mode: {}\n", execution_mode_name(i.options.execution_mode));
  s += fmt::format("pools: {}\n", i.options.use_per_session_threads ? "per session" : "global (Environment)");
  const ThreadingOptions& io = i.intra->options();
  s += fmt::format("intra-op: {} thread(s) including the caller{}, spinning {}{}\n", i.intra->dop(),
                   i.threads_from_set_num_threads ? " (from set_num_threads)" : "", io.allow_spinning ? "on" : "off",
                   io.spin_duration ? fmt::format(" ({} us)", io.spin_duration->count()) : std::string());
  if (i.inter)
    s += fmt::format("inter-op: {} thread(s)\n", i.inter->num_threads());
  else if (i.options.inter_op.num_threads != 0)
    s += fmt::format("inter-op: inter_op_num_threads = {} is ignored in sequential mode\n", i.options.inter_op.num_threads);
  else
    s += "inter-op: none (sequential mode)\n";
  if (!i.options.force_spinning_stop) s += "spinning: not stopped when runs end (session.force_spinning_stop = 0)\n";
  if (i.options.set_denormal_as_zero) s += "denormals: flushed to zero (session.set_denormal_as_zero)\n";
  return s;
}

}  // namespace spindle
