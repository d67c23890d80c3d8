// model_commands.cpp — spindle run and spindle bench, and the helpers every
// model command shares (model_common.h).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_common.h"
#include "spindle/cpu.h"
#include "spindle/io.h"
#include "spindle/logging.h"
#include "spindle/session.h"

namespace spindle::cli {


void add_threading_flags(CLI::App* cmd, ThreadingFlags& f) {
  cmd->add_option("--options", f.options_file, "JSON options file (spindle tune --out); flags given too override it");
  f.intra_opt = cmd->add_option("--intra", f.intra, "intra-op threads including the caller (0 = physical cores)");
  f.inter_opt = cmd->add_option("--inter", f.inter, "inter-op threads (parallel mode; 0 = physical cores)");
  f.mode_opt = cmd->add_option("--mode", f.mode, "execution mode")->check(CLI::IsMember(execution_mode_names()));
  cmd->add_option("--spin", f.spin, "allow spinning: 0 or 1 (both pools)")->check(CLI::IsMember({"0", "1"}));
  cmd->add_option("--spin-duration-us", f.spin_duration_us, "spin window in microseconds (both pools)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  cmd->add_option("--spin-backoff-max", f.spin_backoff_max, "cap of the pause backoff, a power of two (both pools)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--affinity", f.affinity, "intra-op thread affinities, e.g. \"1;2\" (N-1 entries)");
  f.opt_level_opt = cmd->add_option("--opt-level", f.opt_level, "graph optimization level")
      ->check(CLI::IsMember(optimization_level_names()));
  cmd->add_option("--config", f.config, "session config entry KEY=VALUE (repeatable)");
  cmd->add_option("--max-tensor-bytes", f.max_tensor_bytes, "largest tensor a run may allocate (0 = no limit; default half the RAM)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-run-bytes", f.max_run_bytes, "bytes of tensors a run may hold at once (0 = no limit; default 3/4 of the RAM)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-loop-iterations", f.max_loop_iterations, "cap on iterations of a Loop without a trip count (default 1000000)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-graph-nodes", f.max_graph_nodes, "cap on nodes once model-local functions are expanded (0 = no cap; default 1000000)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--load-timeout-ms", f.load_timeout_ms, "fail creating the session after this many milliseconds (0 = no limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--optimized-model", f.optimized_model,
                  "write the graph after the optimizer to this .onnx file (loads back with its passes skipped)");
  cmd->add_option("--log-level", f.log_level, "session log severity: verbose, info, warning, error, fatal or 0-4")
      ->check([](const std::string& v) {
        return parse_log_severity(v) ? std::string() : "expected verbose, info, warning, error, fatal or 0-4";
      });
}

std::pair<std::string, std::string> split_assignment(const std::string& s, const std::string& flag) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(StatusCode::kInvalidArgument, fmt::format("{} '{}': expected NAME=VALUE", flag, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

SessionOptions session_options(const ThreadingFlags& f) {
  const bool file = !f.options_file.empty();
  auto given = [&](const CLI::Option* opt) { return !file || (opt && opt->count() > 0); };
  SessionOptions o = file ? SessionOptions::from_file(f.options_file) : SessionOptions{};
  if (given(f.intra_opt)) o.intra_op.num_threads = f.intra;
  if (given(f.inter_opt)) o.inter_op.num_threads = f.inter;
  // CLI11 checked the names against the same lists.
  if (given(f.mode_opt)) o.execution_mode = parse_execution_mode(f.mode).value();
  if (given(f.opt_level_opt)) o.graph_optimization_level = parse_optimization_level(f.opt_level).value();
  for (ThreadingOptions* pool : {&o.intra_op, &o.inter_op}) {
    if (f.spin) pool->allow_spinning = *f.spin;
    if (f.spin_duration_us) pool->spin_duration = std::chrono::microseconds(*f.spin_duration_us);
    if (f.spin_backoff_max) pool->spin_backoff_max = *f.spin_backoff_max;
  }
  if (!f.affinity.empty()) {
    auto affinities = parse_affinity_string("--affinity", f.affinity);
    if (!affinities.is_ok()) throw Error(affinities.status());
    o.intra_op.affinities = std::move(affinities).value();
  }
  if (f.max_tensor_bytes) o.max_tensor_bytes = *f.max_tensor_bytes;
  if (f.max_run_bytes) o.max_run_bytes = *f.max_run_bytes;
  if (f.max_loop_iterations) o.max_loop_iterations = *f.max_loop_iterations;
  if (f.max_graph_nodes) o.max_graph_nodes = *f.max_graph_nodes;
  if (f.load_timeout_ms) o.load_timeout_ms = *f.load_timeout_ms;
  if (!f.optimized_model.empty()) o.optimized_model_filepath = f.optimized_model;
  if (!f.log_level.empty()) o.log_severity_level = static_cast<int>(*parse_log_severity(f.log_level));
  for (const auto& c : f.config) {
    auto [k, v] = split_assignment(c, "--config");
    o.add_config_entry(k, v);
  }
  return o;
}

Feeds read_inputs(const std::vector<std::string>& specs, const InferenceSession* session) {
  Feeds feeds;
  for (const auto& spec : specs) {
    auto [name, file] = split_assignment(spec, "--input");
    const TensorInfo* info = nullptr;
    if (session)
      for (const TensorInfo& in : session->inputs())
        if (in.name == name) info = &in;
    auto t = info ? io::read_value_file(file, *info) : io::read_tensor_file(file);
    if (!t.is_ok()) throw Error(t.status().code(), fmt::format("input '{}': {}", name, t.status().message()));
    feeds.emplace_back(name, std::move(t).value());
  }
  return feeds;
}

std::string sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  // "." and ".." would name the output folder or its parent.
  if (out.find_first_not_of('.') == std::string::npos) out.assign(out.size() + 1, '_');
  return out;
}

Shape parse_dims(const std::string& name, const std::string& dims) {
  Shape shape;
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t x = std::min(dims.find('x', pos), dims.size());
    const std::string part = dims.substr(pos, x - pos);
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--shape {}={}: expected dimensions like 1x3x224x224 (non-negative integers)", name, dims));
    shape.push_back(v);
    pos = x + 1;
  }
  return shape;
}

std::string describe_inputs(const InferenceSession& s) {
  std::string out;
  for (const TensorInfo& in : s.inputs()) {
    std::string dims;
    for (size_t d = 0; d < in.shape.size(); ++d)
      dims += fmt::format("{}{}", d ? "x" : "",
                          in.shape[d] >= 0 ? std::to_string(in.shape[d])
                                           : (d < in.dim_names.size() && !in.dim_names[d].empty() ? in.dim_names[d] : "?"));
    out += fmt::format("{}{} ({} {})", out.empty() ? "" : ", ", in.name, dtype_name(in.dtype), dims);
  }
  return out.empty() ? std::string("(none)") : out;
}

// Random inputs for every model input not given in `feeds`.
void fill_random_inputs(const InferenceSession& s, Feeds& feeds, const std::vector<std::string>& shape_specs) {
  std::map<std::string, Shape> shapes;
  for (const auto& spec : shape_specs) {
    auto [name, dims] = split_assignment(spec, "--shape");
    if (std::none_of(s.inputs().begin(), s.inputs().end(), [&](const TensorInfo& in) { return in.name == name; }))
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--shape {}: the model has no input '{}'; its inputs are {}", spec, name,
                              describe_inputs(s)));
    shapes[name] = parse_dims(name, dims);
  }
  std::mt19937 rng(42);
  for (const TensorInfo& in : s.inputs()) {
    if (std::any_of(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == in.name; })) continue;
    Shape shape = in.shape;
    if (auto it = shapes.find(in.name); it != shapes.end()) {
      shape = it->second;
    } else {
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] >= 0) continue;
        if (d == 0) {
          shape[d] = 1;
          continue;
        }
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("input '{}' has the dynamic dimension {} ('{}'); give its shape with --shape {}=...", in.name, d,
                                in.dim_names[d], in.name));
      }
    }
    Tensor t(in.dtype, shape);
    if (in.dtype == DataType::kFloat32) {
      std::uniform_real_distribution<float> dist(0.0f, 1.0f);
      float* p = t.mutable_data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
    }
    feeds.emplace_back(in.name, std::move(t));
  }
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The process's resident set and its high-water mark, in MB, from
// /proc/self/status (VmRSS, VmHWM); 0 where the file or a field is missing.
struct Resident {
  double now_mb = 0, peak_mb = 0;
};
Resident resident() {
  Resident r;
  std::ifstream f("/proc/self/status");
  std::string key;
  double kb = 0;
  while (f >> key) {
    if (key == "VmRSS:" && f >> kb) r.now_mb = kb / 1024.0;
    else if (key == "VmHWM:" && f >> kb) r.peak_mb = kb / 1024.0;
  }
  return r;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size()))) - (p > 0 ? 1 : 0));
  return v[i];
}

namespace {

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int64_t timeout_ms = 0;
  ThreadingFlags threading;
};

struct BenchArgs {
  std::vector<std::string> models;
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::string threads;  // --threads 0,1,2: one column per intra-op thread count
  int runs = 20;
  int warmup = 3;
  int concurrency = 1;
  bool json = false;
  bool table = false;
  int64_t timeout_ms = 0;
  // Sleep pause_ms before every pause_every-th timed run (0: never): runs in
  // series after idle gaps, as a server sees them, where the pool's workers
  // are parked and must be woken again.
  int pause_every = 0;
  int pause_ms = 250;
  // Read this many MiB before every timed run (0: never), so that the run
  // finds its activations, weights and outputs out of cache, as a model
  // between other work does.
  int flush_mb = 0;
  ThreadingFlags threading;
};

// Creates `dir` and its parents; `what` says which folder it is for the
// message ("the output folder 'out' (--output-dir)").
void create_folder(const std::filesystem::path& dir, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(StatusCode::kInvalidArgument, fmt::format("cannot create {}: {}", what, ec.message()));
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(StatusCode::kInvalidArgument, fmt::format("cannot create {}: a file of that name exists", what));
}

// Writes one output value under `path` (without extension): a tensor as
// PATH.npy, a sequence as the folder PATH/ with 0.npy, 1.npy..., an optional
// as what it holds (nothing when empty). Returns what it wrote.
std::string write_value(const std::filesystem::path& path, const Tensor& value) {
  if (value.is_optional()) {
    const Tensor* held = value.optional_value();
    return held ? write_value(path, *held) : std::string("nothing (empty optional)");
  }
  if (value.is_sequence()) {
    create_folder(path, fmt::format("the folder '{}' for the items of a sequence output", path.string()));
    const auto& items = value.sequence_items();
    for (size_t i = 0; i < items.size(); ++i)
      if (Status s = io::write_npy(path / fmt::format("{}.npy", i), items[i]); !s.is_ok()) throw Error(s);
    return items.empty() ? fmt::format("{}/ (empty sequence)", path.string())
                         : fmt::format("{}/0.npy ... {}.npy ({} items)", path.string(), items.size() - 1, items.size());
  }
  std::filesystem::path file = path;
  file += ".npy";
  if (Status s = io::write_npy(file, value); !s.is_ok()) throw Error(s);
  return file.string();
}

void check_timeout(int64_t timeout_ms) {
  if (timeout_ms < 0) throw Error(StatusCode::kInvalidArgument, fmt::format("--timeout-ms {}: expected 0 (none) or more", timeout_ms));
}

void run_command(const RunArgs& a) {
  check_timeout(a.timeout_ms);
  // Before the run, so a bad --output-dir fails before any long work.
  if (!a.output_dir.empty()) create_folder(a.output_dir, fmt::format("the output folder '{}' (--output-dir)", a.output_dir));
  auto session = InferenceSession::create(a.model, session_options(a.threading));
  Feeds feeds = read_inputs(a.inputs, session.get());
  RunOptions ro;
  ro.timeout_ms = a.timeout_ms;
  auto outputs = session->run(feeds, {}, &ro);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session->outputs()[i].name;
    if (a.output_dir.empty()) {
      fmt::print("{}: {}\n", name, outputs[i].describe());
      continue;
    }
    const std::string wrote = write_value(std::filesystem::path(a.output_dir) / sanitize(name), outputs[i]);
    fmt::print("{}: {} -> {}\n", name, outputs[i].describe(), wrote);
  }
}

// The --shape specs that apply to `model`: "MODEL:NAME=DIMS" when MODEL is
// the model's path or file stem, and every plain "NAME=DIMS" whose NAME is
// one of its inputs (with a single model, every plain spec: a NAME it lacks
// is then an error naming its inputs).
std::vector<std::string> shapes_for(const std::string& model, const InferenceSession& s,
                                    const std::vector<std::string>& specs, bool single) {
  const std::string stem = std::filesystem::path(model).stem().string();
  std::vector<std::string> out;
  for (const std::string& spec : specs) {
    const auto colon = spec.find(':');
    const auto eq = spec.find('=');
    if (colon != std::string::npos && colon < eq) {
      const std::string who = spec.substr(0, colon);
      if (who == model || who == stem) {
        out.push_back(spec.substr(colon + 1));
        continue;
      }
    }
    const std::string name = split_assignment(spec, "--shape").first;
    const bool has = std::any_of(s.inputs().begin(), s.inputs().end(), [&](const TensorInfo& in) { return in.name == name; });
    if (single || has) out.push_back(spec);
  }
  return out;
}

// Checks that every --shape spec applies to at least one model.
void check_shapes_used(const BenchArgs& a, const std::vector<std::vector<std::string>>& used,
                       const std::vector<std::string>& described) {
  for (const std::string& spec : a.shapes) {
    bool any = false;
    for (const auto& u : used)
      for (const std::string& x : u) any = any || x == spec || spec.ends_with(":" + x);
    if (any) continue;
    std::string models;
    for (size_t m = 0; m < a.models.size(); ++m)
      models += fmt::format("\n  {}: {}", std::filesystem::path(a.models[m]).stem().string(), described[m]);
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--shape {}: no model has that input (write MODEL:NAME=DIMS for one model); the "
                            "models' inputs are:{}",
                            spec, models));
  }
}

std::vector<int> parse_threads(const std::string& list) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string part = list.substr(pos, comma - pos);
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0 || v > 1024)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--threads {}: expected intra-op thread counts like 0,1,2 (0 = the default)", list));
    out.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return out;
}

// Times one model with the given flags; returns the measurements as JSON.
nlohmann::json bench_one(const std::string& model, const BenchArgs& a, const ThreadingFlags& flags,
                         const std::vector<std::string>& shapes) {
  const auto c0 = std::chrono::steady_clock::now();
  auto session = InferenceSession::create(model, session_options(flags));
  const double create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count();
  const Resident created = resident();
  Feeds feeds = read_inputs(a.inputs, session.get());
  fill_random_inputs(*session, feeds, shapes);
  RunOptions ro;  // shared by the callers: only the timeout is set
  ro.timeout_ms = a.timeout_ms;
  for (int i = 0; i < a.warmup; ++i) session->run(feeds, {}, &ro);

  std::vector<double> latencies(static_cast<size_t>(a.runs));
  std::atomic<int> next{0};
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  // Pauses and flushes (one caller only, checked by bench_command) are not
  // timed; the CPU per inference includes the flush's reads.
  const bool untimed_steps = a.pause_every > 0 || a.flush_mb > 0;
  double paused_s = 0;
  std::vector<uint8_t> flush(static_cast<size_t>(a.flush_mb) << 20, 1);
  volatile uint64_t flush_sum = 0;
  auto worker = [&] {
    for (int i; (i = next.fetch_add(1)) < a.runs;) {
      if (untimed_steps) {
        const auto p0 = std::chrono::steady_clock::now();
        if (a.pause_every > 0 && i % a.pause_every == 0)
          std::this_thread::sleep_for(std::chrono::milliseconds(a.pause_ms));
        uint64_t sum = 0;
        for (size_t b = 0; b < flush.size(); b += 64) sum += flush[b];
        flush_sum = flush_sum + sum;
        paused_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
      }
      const auto s = std::chrono::steady_clock::now();
      session->run(feeds, {}, &ro);
      latencies[static_cast<size_t>(i)] =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
    }
  };
  std::vector<std::thread> callers;
  std::exception_ptr error;
  std::mutex error_mu;
  for (int c = 1; c < a.concurrency; ++c)
    callers.emplace_back([&] {
      try {
        worker();
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        error = std::current_exception();
      }
    });
  worker();
  for (auto& t : callers) t.join();
  if (error) std::rethrow_exception(error);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - paused_s;
  const double cpu_ms = (cpu_seconds() - cpu0) * 1e3 / a.runs;

  nlohmann::json j;
  j["runtime"] = "spindle";
  j["model"] = model;
  j["intra"] = session->intra_op_pool()->dop();
  j["inter"] = flags.inter;
  j["mode"] = flags.mode;
  j["opt_level"] = flags.opt_level;
  j["optimizations"] = session->optimization_summary();
  j["threading"] = session->threading_info();
  j["runs"] = a.runs;
  j["warmup"] = a.warmup;
  j["concurrency"] = a.concurrency;
  if (a.pause_every > 0) j["pause"] = {{"every", a.pause_every}, {"ms", a.pause_ms}};
  if (a.flush_mb > 0) j["flush_mb"] = a.flush_mb;
  j["latency_ms"] = {{"min", *std::min_element(latencies.begin(), latencies.end())},
                     {"p50", percentile(latencies, 50)},
                     {"p90", percentile(latencies, 90)},
                     {"p99", percentile(latencies, 99)}};
  j["throughput_per_s"] = a.runs / wall;
  j["cpu_ms_per_inference"] = cpu_ms;
  const Resident ran = resident();
  j["create_ms"] = create_ms;
  // Process-wide: with several models in one `bench` the peak is the
  // largest so far, not this model's alone.
  j["memory_mb"] = {{"rss_after_create", created.now_mb}, {"rss_after_runs", ran.now_mb}, {"peak_rss", ran.peak_mb}};
  nlohmann::json in_shapes = nlohmann::json::object();
  for (const auto& [name, t] : feeds) in_shapes[name] = shape_to_string(t.shape());
  j["inputs"] = in_shapes;
  return j;
}

void print_report(const nlohmann::json& j) {
  fmt::print("model       {}\n", j["model"].get<std::string>());
  fmt::print("threads     intra {} · mode {} · {}\n", j["intra"].get<int>(), j["mode"].get<std::string>(),
             j["optimizations"].get<std::string>());
  fmt::print("runs        {} (warmup {}, concurrency {})\n", j["runs"].get<int>(), j["warmup"].get<int>(),
             j["concurrency"].get<int>());
  const auto& l = j["latency_ms"];
  fmt::print("latency ms  min {:.3f}  p50 {:.3f}  p90 {:.3f}  p99 {:.3f}\n", l["min"].get<double>(),
             l["p50"].get<double>(), l["p90"].get<double>(), l["p99"].get<double>());
  fmt::print("throughput  {:.2f} inferences/s\n", j["throughput_per_s"].get<double>());
  fmt::print("cpu         {:.3f} ms per inference\n", j["cpu_ms_per_inference"].get<double>());
  const auto& m = j["memory_mb"];
  fmt::print("session     created in {:.1f} ms · RSS {:.1f} MB after creation, {:.1f} MB after the runs, peak {:.1f} MB\n",
             j["create_ms"].get<double>(), m["rss_after_create"].get<double>(), m["rss_after_runs"].get<double>(),
             m["peak_rss"].get<double>());
}

// One row per model, one column per thread count: median latency in ms.
void print_table(const BenchArgs& a, const std::vector<int>& threads, const std::vector<nlohmann::json>& results) {
  std::vector<std::string> head = {"model", "inputs"};
  for (size_t t = 0; t < threads.size(); ++t) {
    const int dop = results[t]["intra"].get<int>();
    head.push_back(threads[t] == 0 ? fmt::format("default ({})", dop)
                                   : fmt::format("{} thread{}", threads[t], threads[t] == 1 ? "" : "s"));
  }
  std::vector<std::vector<std::string>> rows;
  for (size_t m = 0; m < a.models.size(); ++m) {
    const nlohmann::json& first = results[m * threads.size()];
    std::string inputs;
    for (const auto& [name, shape] : first["inputs"].items())
      inputs += fmt::format("{}{}={}", inputs.empty() ? "" : " ", name, shape.get<std::string>());
    std::vector<std::string> row = {std::filesystem::path(a.models[m]).stem().string(), inputs};
    for (size_t t = 0; t < threads.size(); ++t)
      row.push_back(fmt::format("{:.2f}", results[m * threads.size() + t]["latency_ms"]["p50"].get<double>()));
    rows.push_back(row);
  }
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) {
    width[c] = head[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < cells.size(); ++c)
      out += c < 2 ? fmt::format("{:<{}}  ", cells[c], width[c]) : fmt::format("{:>{}}  ", cells[c], width[c]);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    fmt::print("{}\n", out);
  };
  fmt::print("median latency (ms) of {} runs after {} warm-up, intra-op threads per column; kernels {}\n", a.runs,
             a.warmup, isa_level_name(active_isa_level()));
  line(head);
  std::string rule;
  for (size_t c = 0; c < width.size(); ++c) rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
  fmt::print("{}\n", rule);
  for (const auto& r : rows) line(r);
}

void bench_command(const BenchArgs& a) {
  if (a.runs < 1) throw Error(StatusCode::kInvalidArgument, fmt::format("--runs {}: expected at least 1", a.runs));
  if (a.warmup < 0) throw Error(StatusCode::kInvalidArgument, fmt::format("--warmup {}: expected 0 or more", a.warmup));
  if (a.concurrency < 1 || a.concurrency > 256)
    throw Error(StatusCode::kInvalidArgument, fmt::format("--concurrency {}: expected 1 to 256", a.concurrency));
  check_timeout(a.timeout_ms);
  if (a.pause_every < 0 || a.pause_ms < 0 || a.pause_ms > 60000)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--pause-every {} --pause-ms {}: expected a run count >= 0 and 0 to 60000 ms",
                            a.pause_every, a.pause_ms));
  if (a.flush_mb < 0 || a.flush_mb > 4096)
    throw Error(StatusCode::kInvalidArgument, fmt::format("--flush-cache-mb {}: expected 0 to 4096", a.flush_mb));
  if ((a.pause_every > 0 || a.flush_mb > 0) && a.concurrency != 1)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("--pause-every / --flush-cache-mb with --concurrency {}: they need a single caller",
                            a.concurrency));
  const bool single = a.models.size() == 1;
  if (!single && !a.inputs.empty())
    throw Error(StatusCode::kInvalidArgument,
                "--input is for one model; with several models the inputs are random (give shapes with "
                "--shape MODEL:NAME=DIMS)");
  const bool table = a.table || !single || !a.threads.empty();
  const std::vector<int> threads = a.threads.empty() ? std::vector<int>{a.threading.intra} : parse_threads(a.threads);
  // Load every model first so that a wrong --shape fails before any timing.
  std::vector<std::vector<std::string>> shapes(a.models.size());
  std::vector<std::string> described(a.models.size());
  for (size_t m = 0; m < a.models.size(); ++m) {
    auto session = InferenceSession::create(a.models[m], session_options(a.threading));
    shapes[m] = shapes_for(a.models[m], *session, a.shapes, single);
    described[m] = describe_inputs(*session);
  }
  check_shapes_used(a, shapes, described);
  const bool progress = table && isatty(STDERR_FILENO);
  std::vector<nlohmann::json> results;
  for (size_t m = 0; m < a.models.size(); ++m)
    for (int t : threads) {
      ThreadingFlags flags = a.threading;
      if (!a.threads.empty()) {
        flags.intra = t;
        flags.intra_opt = nullptr;  // --threads wins over --options too
      }
      if (progress)
        fmt::print(stderr, "\r  timing {} at {} ...\x1b[K", std::filesystem::path(a.models[m]).filename().string(),
                   t == 0 ? std::string("the default thread count") : fmt::format("{} thread(s)", t));
      results.push_back(bench_one(a.models[m], a, flags, shapes[m]));
    }
  if (progress) fmt::print(stderr, "\r\x1b[K");
  if (a.json) {
    fmt::print("{}\n", table ? nlohmann::json(results).dump() : results[0].dump());
    return;
  }
  if (table) print_table(a, threads, results);
  else print_report(results[0]);
}

}  // namespace

void add_model_commands(CLI::App& app) {
  auto run_args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Run a model once and write its outputs");
  run->add_option("model", run_args->model, "ONNX model file")->required();
  run->add_option("--input", run_args->inputs, "NAME=FILE (.npy or TensorProto .pb), repeatable");
  run->add_option("--output-dir", run_args->output_dir,
                  "write each output as DIR/<name>.npy (strings as numpy unicode, sequences as DIR/<name>/0.npy, 1.npy...)");
  run->add_option("--timeout-ms", run_args->timeout_ms, "fail the run after this many milliseconds (0 = no limit)");
  add_threading_flags(run, run_args->threading);
  run->callback([run_args] { run_command(*run_args); });

  auto bench_args = std::make_shared<BenchArgs>();
  auto* bench = app.add_subcommand(
      "bench", "Time one or more models: latency percentiles, throughput, CPU per inference; with several "
               "models or --threads, a table of median latencies printed by spindle");
  bench->add_option("model", bench_args->models, "ONNX model file(s)")->required();
  bench->add_option("--input", bench_args->inputs, "NAME=FILE (.npy or .pb), repeatable; other inputs are random");
  bench->add_option("--shape", bench_args->shapes,
                    "[MODEL:]NAME=1x3x224x224 for random inputs with dynamic dimensions; MODEL (file stem) picks "
                    "one model");
  bench->add_option("--threads", bench_args->threads,
                    "intra-op thread counts to compare, e.g. 0,1,2 (0 = the default); overrides --intra");
  bench->add_option("--runs", bench_args->runs, "timed runs");
  bench->add_option("--warmup", bench_args->warmup, "untimed runs first");
  bench->add_option("--concurrency", bench_args->concurrency, "threads calling run at once");
  bench->add_flag("--json", bench_args->json, "print JSON (an array of objects in table mode)");
  bench->add_flag("--table", bench_args->table, "print the table even for one model and one thread count");
  bench->add_option("--timeout-ms", bench_args->timeout_ms, "fail any run that takes longer (0 = no limit)");
  bench->add_option("--pause-every", bench_args->pause_every,
                    "sleep --pause-ms before every N-th timed run, so runs come in series after idle gaps (0 = never)");
  bench->add_option("--pause-ms", bench_args->pause_ms, "length of those pauses (default 250; not timed)");
  bench->add_option("--flush-cache-mb", bench_args->flush_mb,
                    "read this many MiB before every timed run (not timed; the CPU per inference includes it), so runs "
                    "start with cold caches (0 = never)");
  add_threading_flags(bench, bench_args->threading);
  bench->callback([bench_args] { bench_command(*bench_args); });
}

}  // namespace spindle::cli
