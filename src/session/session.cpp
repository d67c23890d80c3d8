// session.cpp — InferenceSession (see spindle/session.h).
#include "spindle/session.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "graph/graph.h"

namespace spindle {

// ---------------------------------------------------------------- options

std::vector<std::string> config_keys::all() {
  return {kIntraOpAllowSpinning,   kInterOpAllowSpinning, kIntraOpSpinDurationUs, kInterOpSpinDurationUs,
          kIntraOpSpinBackoffMax,  kInterOpSpinBackoffMax, kIntraOpThreadAffinities, kIntraOpNumaNode,
          kMaxTensorBytes,         kMaxRunBytes,          kMaxLoopIterations,     kExternalDataDir,
          kDisablePrepacking};
}

namespace {

// The candidate nearest to `word` by edit distance (for "did you mean").
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    std::vector<size_t> row(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= c.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[c.size()] < best_d) best_d = row[c.size()], best = c;
  }
  return best;
}

}  // namespace

SessionOptions SessionOptions::from_json(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  if (!j.is_object()) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: expected a JSON object", origin));
  SessionOptions o;
  auto bad = [&](const std::string& key, const std::string& expected) {
    return Error(StatusCode::kInvalidArgument,
                 fmt::format("{}: \"{}\" is {}, expected {}", origin, key, j[key].dump(), expected));
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "intra_op_num_threads" || key == "inter_op_num_threads") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 4096)
        throw bad(key, "an integer from 0 (default) to 4096");
      (key == "intra_op_num_threads" ? o.intra_op_num_threads : o.inter_op_num_threads) = v.get<int>();
    } else if (key == "execution_mode") {
      if (v == "sequential") o.execution_mode = ExecutionMode::kSequential;
      else if (v == "parallel") o.execution_mode = ExecutionMode::kParallel;
      else throw bad(key, "\"sequential\" or \"parallel\"");
    } else if (key == "graph_optimization_level") {
      if (v == "disable") o.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
      else if (v == "basic") o.graph_optimization_level = GraphOptimizationLevel::kBasic;
      else if (v == "extended") o.graph_optimization_level = GraphOptimizationLevel::kExtended;
      else if (v == "all") o.graph_optimization_level = GraphOptimizationLevel::kAll;
      else throw bad(key, "\"disable\", \"basic\", \"extended\" or \"all\"");
    } else if (key == "config") {
      if (!v.is_object()) throw bad(key, "an object of string values");
      for (const auto& [ck, cv] : v.items()) {
        if (!cv.is_string() && !cv.is_number())
          throw Error(StatusCode::kInvalidArgument,
                      fmt::format("{}: config \"{}\" is {}, expected a string", origin, ck, cv.dump()));
        o.add_config_entry(ck, cv.is_string() ? cv.get<std::string>() : cv.dump());
      }
    } else {
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: unknown field \"{}\" (expected intra_op_num_threads, inter_op_num_threads, "
                              "execution_mode, graph_optimization_level, config)",
                              origin, key));
    }
  }
  // Validate the config keys and values now, as a session would.
  ThreadingOptions intra, inter;
  if (Status st = threading_options_from_session(o, intra, inter); !st.is_ok())
    throw Error(st.code(), fmt::format("{}: {}", origin, st.message()));
  return o;
}

SessionOptions SessionOptions::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(StatusCode::kNotFound, fmt::format("options file {} cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), path);
}

std::string SessionOptions::to_json() const {
  nlohmann::ordered_json j;
  j["intra_op_num_threads"] = intra_op_num_threads;
  j["inter_op_num_threads"] = inter_op_num_threads;
  j["execution_mode"] = execution_mode == ExecutionMode::kParallel ? "parallel" : "sequential";
  switch (graph_optimization_level) {
    case GraphOptimizationLevel::kDisableAll: j["graph_optimization_level"] = "disable"; break;
    case GraphOptimizationLevel::kBasic: j["graph_optimization_level"] = "basic"; break;
    case GraphOptimizationLevel::kExtended: j["graph_optimization_level"] = "extended"; break;
    case GraphOptimizationLevel::kAll: j["graph_optimization_level"] = "all"; break;
  }
  j["config"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : config_entries) j["config"][k] = v;
  return j.dump(2) + "\n";
}

void SessionOptions::save(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw Error(StatusCode::kInvalidArgument, fmt::format("options file {} cannot be written", path));
  out << to_json();
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("writing options file {} failed", path));
}

Status threading_options_from_session(const SessionOptions& o, ThreadingOptions& intra, ThreadingOptions& inter) {
  intra = ThreadingOptions{};
  inter = ThreadingOptions{};
  intra.name = "intra_op";
  inter.name = "inter_op";
  if (o.intra_op_num_threads < 0)
    return invalid_argument(fmt::format("intra_op_num_threads = {}: expected 0 (automatic) or a positive thread count",
                                        o.intra_op_num_threads));
  if (o.inter_op_num_threads < 0)
    return invalid_argument(fmt::format("inter_op_num_threads = {}: expected 0 (automatic) or a positive thread count",
                                        o.inter_op_num_threads));
  intra.num_threads = o.intra_op_num_threads;
  inter.num_threads = o.inter_op_num_threads;
  if ((o.custom_create_thread_fn == nullptr) != (o.custom_join_thread_fn == nullptr))
    return invalid_argument("custom_create_thread_fn and custom_join_thread_fn must be set together");
  for (ThreadingOptions* t : {&intra, &inter}) {
    t->create_thread = o.custom_create_thread_fn;
    t->join_thread = o.custom_join_thread_fn;
    t->custom_thread_options = o.custom_thread_creation_options;
  }
  const auto known = config_keys::all();
  for (const auto& [key, value] : o.config_entries) {
    if (std::find(known.begin(), known.end(), key) == known.end())
      return invalid_argument(fmt::format("unknown session config key '{}' (value '{}'); did you mean '{}'? known keys: {}",
                                          key, value, closest(key, known), fmt::join(known, ", ")));
    ThreadingOptions& t = key.find("inter_op") != std::string::npos ? inter : intra;
    if (key.ends_with(".allow_spinning")) {
      SPINDLE_ASSIGN_OR_RETURN(t.allow_spinning, parse_bool_value(key, value));
    } else if (key.ends_with(".spin_duration_us")) {
      SPINDLE_ASSIGN_OR_RETURN(int64_t us, parse_int_value(key, value, 0, 10'000'000));
      t.spin_duration = std::chrono::microseconds(us);
    } else if (key.ends_with(".spin_backoff_max")) {
      SPINDLE_ASSIGN_OR_RETURN(int64_t b, parse_int_value(key, value, 1, 1 << 20));
      t.spin_backoff_max = static_cast<int>(b);
    } else if (key == config_keys::kIntraOpThreadAffinities) {
      SPINDLE_ASSIGN_OR_RETURN(t.affinities, parse_affinity_string(key, value));
    } else if (key == config_keys::kIntraOpNumaNode) {
      SPINDLE_ASSIGN_OR_RETURN(int64_t node, parse_int_value(key, value, -1, 1023));
      t.numa_node = static_cast<int>(node);
    } else if (key == config_keys::kDisablePrepacking) {
      SPINDLE_ASSIGN_OR_RETURN(bool disable, parse_bool_value(key, value));
      (void)disable;  // read again when the plan is compiled
    }
  }
  SessionLimits limits;
  return session_limits(o, limits);
}

namespace {

// 0 when unknown.
size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

}  // namespace

Status session_limits(const SessionOptions& o, SessionLimits& limits) {
  const size_t mem = physical_memory_bytes();
  limits.max_tensor_bytes = mem / 2;
  limits.max_run_bytes = mem / 4 * 3;
  limits.max_loop_iterations = 1'000'000;
  for (const auto& [key, value] : o.config_entries) {
    if (key == config_keys::kMaxTensorBytes || key == config_keys::kMaxRunBytes) {
      SPINDLE_ASSIGN_OR_RETURN(int64_t v, parse_int_value(key, value, 0, INT64_MAX));
      (key == config_keys::kMaxTensorBytes ? limits.max_tensor_bytes : limits.max_run_bytes) = static_cast<size_t>(v);
    } else if (key == config_keys::kMaxLoopIterations) {
      SPINDLE_ASSIGN_OR_RETURN(limits.max_loop_iterations, parse_int_value(key, value, 0, INT64_MAX));
    } else if (key == config_keys::kExternalDataDir) {
      std::error_code ec;
      if (value.empty() || !std::filesystem::is_directory(value, ec))
        return invalid_argument(fmt::format("{} = '{}': expected an existing directory", key, value));
      limits.external_data_dir = value;
    }
  }
  return Status::ok();
}

// ---------------------------------------------------------------- session

// Destruction order. Members are destroyed bottom-up, so the pools come last
// in the declaration: they are stopped first, while everything a queued task
// touches (plan, frames, options) still exists. A pool's destructor runs the
// tasks still queued on it before joining. ~InferenceSession first waits for
// its run_async work (which may sit on a pool the session does not own), so
// nothing of the session runs after it is gone.
struct InferenceSession::Impl {
  SessionOptions options;
  SessionLimits limits;
  std::string origin;
  std::vector<TensorInfo> inputs, outputs;
  ModelMetadata metadata;
  std::unique_ptr<exec::Plan> plan;
  graph::OptimizerStats stats;
  int nodes_before = 0;
  std::mutex frames_mu;
  std::vector<std::unique_ptr<exec::Frame>> frames;
  std::map<std::string, int> input_index;  // name -> index in inputs
  std::mutex profile_mu;  // enable_profiling: runs recorded so far
  std::vector<ProfiledRun> profiled;
  std::chrono::steady_clock::time_point profile_start = std::chrono::steady_clock::now();
  // run_async calls whose callback has not returned yet.
  std::mutex async_mu;
  std::condition_variable async_cv;
  int async_pending = 0;
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

  void validate_feeds(const Feeds& feeds) const;
  std::vector<int> resolve_outputs(const std::vector<std::string>& names) const;
  std::vector<Tensor> run(const Feeds& feeds, const std::vector<std::string>& output_names, RunOptions* ro,
                          RunProfile* profile);
};

namespace {

std::string dims_to_string(const TensorInfo& info) {
  std::vector<std::string> dims;
  for (size_t i = 0; i < info.shape.size(); ++i)
    dims.push_back(info.shape[i] >= 0 ? std::to_string(info.shape[i])
                                      : (info.dim_names[i].empty() ? std::string("?") : info.dim_names[i]));
  return "[" + fmt::format("{}", fmt::join(dims, ",")) + "]";
}

TensorInfo tensor_info(const graph::ValueInfo& v) {
  TensorInfo t;
  t.name = v.name;
  t.is_optional = v.is_optional;
  t.is_sequence = v.is_sequence;
  t.dtype = v.dtype;
  t.shape = v.shape;
  t.dim_names = v.dim_names;
  t.dim_names.resize(t.shape.size());
  return t;
}

}  // namespace

void InferenceSession::Impl::validate_feeds(const Feeds& feeds) const {
  std::set<std::string> given;
  for (const auto& [name, tensor] : feeds) {
    auto it = input_index.find(name);
    if (it == input_index.end()) {
      std::vector<std::string> names;
      for (const auto& in : inputs) names.push_back(in.name);
      throw Error(StatusCode::kNotFound, fmt::format("{}: unknown input name '{}'; the model's inputs are: {}", origin, name,
                                                     fmt::join(names, ", ")));
    }
    if (!given.insert(name).second)
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is fed twice", origin, name));
    const TensorInfo& info = inputs[static_cast<size_t>(it->second)];
    if (!tensor.defined())
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is an empty tensor", origin, name));
    if (tensor.is_optional() || info.is_optional) {
      // Optional values: the kind and element type must match (Tensor::optional
      // checked what it holds against them).
      if (!tensor.is_optional() || tensor.optional_of_sequence() != info.is_sequence ||
          (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype))
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("{}: input '{}' is the {}, expected {}", origin, name, tensor.describe(),
                                info.is_optional ? fmt::format("an optional {} of {}", info.is_sequence ? "sequence" : "tensor",
                                                               dtype_name(info.dtype))
                                                 : "a tensor or sequence, not an optional"));
      continue;
    }
    if (tensor.is_sequence() != info.is_sequence)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: input '{}' is a {}, expected {}", origin, name, tensor.describe(),
                              info.is_sequence ? "a sequence of " + dtype_name(info.dtype) + " tensors"
                                               : "a tensor of " + dtype_name(info.dtype)));
    if (info.is_sequence) {
      if (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype)
        throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is a {}, expected {} tensors", origin,
                                                              name, tensor.describe(), dtype_name(info.dtype)));
      continue;
    }
    if (info.dtype != DataType::kUndefined && tensor.dtype() != info.dtype)
      throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' is {}, expected element type {} with shape {}",
                                                            origin, name, tensor.describe(), dtype_name(info.dtype),
                                                            dims_to_string(info)));
    if (!info.shape.empty() || tensor.rank() == 0) {
      bool ok = tensor.rank() == static_cast<int64_t>(info.shape.size());
      for (size_t d = 0; ok && d < info.shape.size(); ++d)
        ok = info.shape[d] < 0 || info.shape[d] == tensor.shape()[d];
      if (!ok)
        throw Error(StatusCode::kInvalidArgument, fmt::format("{}: input '{}' has shape {}, expected {} (rank {})", origin,
                                                              name, shape_to_string(tensor.shape()), dims_to_string(info),
                                                              info.shape.size()));
    }
  }
  std::vector<std::string> missing;
  for (const auto& in : inputs)
    if (!given.count(in.name)) missing.push_back(in.name);
  if (!missing.empty())
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: missing input(s): {}", origin, fmt::join(missing, ", ")));
}

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
  validate_feeds(feeds);
  const std::vector<int> wanted = resolve_outputs(output_names);
  const graph::Graph& g = plan->graph();
  auto frame = acquire_frame();
  frame->begin_run();
  for (const auto& [name, tensor] : feeds) frame->values()[static_cast<size_t>(g.value_id(name))] = tensor;

  kernels::RunLimits run_limits;
  run_limits.terminate = ro ? &ro->terminate : nullptr;
  if (ro && ro->timeout_ms > 0) {
    run_limits.timeout_ms = ro->timeout_ms;
    run_limits.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ro->timeout_ms);
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
    ThreadPool::RunScope scope(intra);
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
InferenceSession::~InferenceSession() { impl_->wait_for_async_runs(); }

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

std::unique_ptr<InferenceSession::Impl> build(graph::Graph g, const std::string& origin, const SessionOptions& options,
                                              Environment* env) {
  auto impl = std::make_unique<InferenceSession::Impl>();
  impl->options = options;
  impl->origin = origin;
  ThreadingOptions intra, inter;
  if (Status s = threading_options_from_session(options, intra, inter); !s.is_ok()) throw Error(s);
  if (Status s = session_limits(options, impl->limits); !s.is_ok()) throw Error(s);
  impl->metadata = g.metadata;
  for (const auto& v : g.input_info) impl->inputs.push_back(tensor_info(v));
  for (const auto& v : g.output_info) impl->outputs.push_back(tensor_info(v));
  for (size_t i = 0; i < impl->inputs.size(); ++i) impl->input_index[impl->inputs[i].name] = static_cast<int>(i);
  impl->nodes_before = static_cast<int>(g.nodes.size());

  auto stats = graph::optimize(g, static_cast<graph::OptimizationLevel>(options.graph_optimization_level));
  if (!stats.is_ok()) throw Error(stats.status().code(), origin + ": " + stats.status().message());
  impl->stats = stats.value();
  const auto no_prepack = options.config_entries.find(config_keys::kDisablePrepacking);
  const bool prepack = no_prepack == options.config_entries.end() || !parse_bool_value("", no_prepack->second).value();
  auto plan = exec::Plan::compile(std::move(g), static_cast<graph::OptimizationLevel>(options.graph_optimization_level),
                                  prepack);
  if (!plan.is_ok()) throw Error(plan.status().code(), origin + ": " + plan.status().message());
  impl->plan = std::move(plan).value();

  const bool parallel = options.execution_mode == ExecutionMode::kParallel;
  Environment& environment = env ? *env : Environment::default_env();
  if (options.use_per_session_threads) {
    // set_num_threads (PyTorch's meaning) governs default sessions created
    // after the call: see spindle/environment.h.
    if (options.intra_op_num_threads == 0) {
      intra.num_threads = environment.intra_op_num_threads_set();
      impl->threads_from_set_num_threads = intra.num_threads != 0;
    }
    impl->intra_pool = start_pool<ThreadPool>("intra-op", intra);
    if (parallel) {
      impl->inter_pool = start_pool<TaskPool>("inter-op", inter);
    }
  } else {
    const auto threading_key = [](const auto& kv) {
      return kv.first.starts_with("session.intra_op") || kv.first.starts_with("session.inter_op");
    };
    if (options.intra_op_num_threads != 0 || options.inter_op_num_threads != 0 ||
        std::any_of(options.config_entries.begin(), options.config_entries.end(), threading_key) ||
        options.custom_create_thread_fn)
      throw Error(StatusCode::kInvalidArgument,
                  "use_per_session_threads = false uses the Environment's global pools, but the session also sets its "
                  "own thread options (intra_op_num_threads, inter_op_num_threads, config entries or custom thread "
                  "functions); set them on the Environment (ThreadingOptions) instead");
    impl->intra_pool = environment.intra_op_pool();
    if (parallel) impl->inter_pool = environment.inter_op_pool();
  }
  impl->intra = impl->intra_pool.get();
  impl->inter = impl->inter_pool.get();
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
  ThreadingOptions intra, inter;  // options first: a bad key fails before the model is read
  if (Status s = threading_options_from_session(options, intra, inter); !s.is_ok()) throw Error(s);
  return guard_memory(model_path, [&] {
    auto g = graph::load_model_file(model_path);
    if (!g.is_ok()) throw Error(g.status());
    return std::unique_ptr<InferenceSession>(new InferenceSession(build(std::move(g).value(), model_path, options, env)));
  });
}

std::unique_ptr<InferenceSession> InferenceSession::create_from_bytes(std::span<const uint8_t> model,
                                                                      const SessionOptions& options, Environment* env) {
  ThreadingOptions intra, inter;
  if (Status s = threading_options_from_session(options, intra, inter); !s.is_ok()) throw Error(s);
  SessionLimits limits;
  if (Status s = session_limits(options, limits); !s.is_ok()) throw Error(s);
  return guard_memory("<model bytes>", [&] {
    auto g = graph::load_model_bytes(model, "<model bytes>", limits.external_data_dir);
    if (!g.is_ok()) throw Error(g.status());
    return std::unique_ptr<InferenceSession>(new InferenceSession(build(std::move(g).value(), "<model bytes>", options, env)));
  });
}

const std::vector<TensorInfo>& InferenceSession::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& InferenceSession::outputs() const { return impl_->outputs; }
const ModelMetadata& InferenceSession::model_metadata() const { return impl_->metadata; }

std::vector<Tensor> InferenceSession::run(const Feeds& feeds, const std::vector<std::string>& output_names,
                                          RunOptions* run_options) {
  return guard_memory(impl_->origin, [&] {
    if (!impl_->options.enable_profiling) return impl_->run(feeds, output_names, run_options, nullptr);
    ProfiledRun r;
    r.offset_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - impl_->profile_start).count();
    auto out = impl_->run(feeds, output_names, run_options, &r.profile);
    std::lock_guard<std::mutex> lock(impl_->profile_mu);
    impl_->profiled.push_back(std::move(r));
    return out;
  });
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
  out << chrome_trace_json(runs, "spindle " + impl_->origin, static_cast<int>(syscall(SYS_gettid)),
                           impl_->intra ? impl_->intra->worker_tids() : std::vector<int>{});
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("end_profiling: cannot write {}", path));
  return path;
}

std::string chrome_trace_json(const std::vector<ProfiledRun>& runs, const std::string& process_name, int caller_tid,
                              const std::vector<int>& intra_worker_tids) {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> tids;
  auto span = [&](const char* name, const char* cat, int tid, double ts, double dur, nlohmann::json args) {
    events.push_back({{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                      {"args", std::move(args)}});
  };
  for (size_t r = 0; r < runs.size(); ++r) {
    const double off = runs[r].offset_us;
    const RunProfile& p = runs[r].profile;
    std::map<int, std::vector<const BlockEvent*>> blocks_of;
    for (const auto& b : p.blocks) blocks_of[b.node_index].push_back(&b);
    for (const auto& n : p.nodes) {
      tids.insert(n.thread_id);
      nlohmann::json args = {{"node", n.node_name}, {"run", r}};
      if (n.parent_index >= 0) {  // inside a subgraph: nested in its parent's span on the same thread
        args["scope"] = n.scope;
        args["parent"] = n.parent_index;
      }
      args["id"] = n.node_index;
      span(n.op_type.c_str(), "node", n.thread_id, off + n.start_us, n.duration_us, std::move(args));
      auto& mine = blocks_of[n.node_index];
      std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return x->start_us < y->start_us; });
      double cursor = n.start_us;
      for (const BlockEvent* b : mine) {
        tids.insert(b->thread_id);
        span("block", "parallel_for", b->thread_id, off + b->start_us, b->duration_us,
             {{"node", n.node_name}, {"op", n.op_type}});
        // The node's own thread between its blocks: waiting for the others.
        if (b->thread_id != n.thread_id) continue;
        if (b->start_us - cursor > 1.0) span("wait", "wait", n.thread_id, off + cursor, b->start_us - cursor, {{"node", n.node_name}});
        cursor = std::max(cursor, b->start_us + b->duration_us);
      }
      const double end = n.start_us + n.duration_us;
      if (cursor > n.start_us && end - cursor > 1.0)
        span("wait", "wait", n.thread_id, off + cursor, end - cursor, {{"node", n.node_name}});
    }
  }
  const std::set<int> intra(intra_worker_tids.begin(), intra_worker_tids.end());
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", process_name}}}});
  for (int t : tids) {
    const std::string name = t == caller_tid      ? std::string("caller")
                             : intra.count(t) ? fmt::format("intra-op worker {}", t)
                                              : fmt::format("inter-op thread {}", t);
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"name", name}}}});
  }
  return nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}}).dump() + "\n";
}

std::vector<Tensor> InferenceSession::run_profiled(const Feeds& feeds, RunProfile& profile) {
  return impl_->run(feeds, {}, nullptr, &profile);
}

void InferenceSession::run_async(Feeds feeds, std::vector<std::string> output_names,
                                 std::function<void(Status, std::vector<Tensor>)> callback) {
  // Sequential sessions have no inter-op pool of their own: the default
  // Environment's (which lives as long as the process) runs the request.
  std::shared_ptr<TaskPool> pool = impl_->inter_pool ? impl_->inter_pool : Environment::default_env().inter_op_pool();
  {
    std::lock_guard<std::mutex> lock(impl_->async_mu);
    ++impl_->async_pending;
  }
  // The session waits in its destructor until the callback returned, so
  // `impl` outlives the task.
  Impl* impl = impl_.get();
  pool->schedule([impl, feeds = std::move(feeds), names = std::move(output_names), cb = std::move(callback)] {
    std::vector<Tensor> out;
    Status status = Status::ok();
    try {
      out = impl->run(feeds, names, nullptr, nullptr);
    } catch (const Error& e) {
      status = e.status();
    } catch (const std::exception& e) {
      status = runtime_error(e.what());
    }
    struct Done {  // also when the callback throws (which ends the process)
      Impl* impl;
      ~Done() {
        std::lock_guard<std::mutex> lock(impl->async_mu);
        if (--impl->async_pending == 0) impl->async_cv.notify_all();
      }
    } done{impl};
    cb(std::move(status), std::move(out));
  });
}

ThreadPool* InferenceSession::intra_op_pool() { return impl_->intra; }

int InferenceSession::num_nodes() const { return static_cast<int>(impl_->plan->nodes().size()); }

std::string InferenceSession::optimization_summary() const {
  const auto& s = impl_->stats;
  return fmt::format("{} nodes -> {} after optimization (constants folded {}, identities removed {}, batchnorms folded {}, "
                     "affine Mul/Add folded {}, HardSwish patterns fused {}, GELU patterns fused {}, layer norms "
                     "fused {}, activations fused {})",
                     impl_->nodes_before, num_nodes(), s.folded_constants, s.removed_identities, s.folded_batchnorms,
                     s.folded_affines, s.fused_hardswish, s.fused_gelus, s.fused_layer_norms, s.fused_activations);
}

std::string InferenceSession::threading_info() const {
  const Impl& i = *impl_;
  std::string s;
  const bool parallel = i.options.execution_mode == ExecutionMode::kParallel;
  s += fmt::format("execution mode: {}\n", parallel ? "parallel" : "sequential");
  s += fmt::format("pools: {}\n", i.options.use_per_session_threads ? "per session" : "global (Environment)");
  const ThreadingOptions& io = i.intra->options();
  s += fmt::format("intra-op: {} thread(s) including the caller{}, spinning {}{}\n", i.intra->dop(),
                   i.threads_from_set_num_threads ? " (from set_num_threads)" : "", io.allow_spinning ? "on" : "off",
                   io.spin_duration ? fmt::format(" ({} us)", io.spin_duration->count()) : std::string());
  if (i.inter)
    s += fmt::format("inter-op: {} thread(s)\n", i.inter->num_threads());
  else if (i.options.inter_op_num_threads != 0)
    s += fmt::format("inter-op: inter_op_num_threads = {} is ignored in sequential mode\n", i.options.inter_op_num_threads);
  else
    s += "inter-op: none (sequential mode)\n";
  return s;
}

}  // namespace spindle
