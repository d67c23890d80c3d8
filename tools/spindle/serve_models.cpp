// serve_models.cpp — model repository, per-model queues and runners, and
// metrics of spindle serve (see serve_models.h).
#include "serve_models.h"

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve_protocol.h"

namespace spindle::cli::serve {
namespace fs = std::filesystem;

void Histogram::observe(double seconds) {
  std::lock_guard lock(mu_);
  size_t i = 0;
  while (i < std::size(kBounds) && seconds > kBounds[i]) ++i;
  ++counts_[i];
  sum_ += seconds;
  ++count_;
}

std::string Histogram::text(const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mu_);
  std::string s;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < std::size(kBounds); ++i) {
    cumulative += counts_[i];
    s += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, kBounds[i], cumulative);
  }
  s += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels, count_);
  s += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {}\n", name, labels, sum_, name, labels, count_);
  return s;
}

void ModelMetrics::fail(const std::string& reason) {
  std::lock_guard lock(mu);
  ++failures[reason];
}

void ModelMetrics::count_batch(int64_t rows) {
  std::lock_guard lock(mu);
  ++batch_runs[rows];
}

void RunSlots::acquire() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return free_ > 0; });
  --free_;
}

void RunSlots::release() {
  {
    std::lock_guard lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

ModelConfig read_model_config(const std::string& path) {
  ModelConfig c;
  c.options.use_per_session_threads = false;
  std::error_code ec;
  if (!fs::exists(path, ec)) return c;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (1u << 20))
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: not a regular file of at most 1 MiB", path));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
  if (!j.is_object()) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: expected a JSON object", path));
  auto take_count = [&](const char* key, int& out, int min) {
    auto it = j.find(key);
    if (it == j.end()) return;
    if (!it->is_number_integer() || it->get<int64_t>() < min || it->get<int64_t>() > 1000000)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: \"{}\" is {}, expected an integer from {} to 1000000", path, key, it->dump(), min));
    out = it->get<int>();
    j.erase(it);
  };
  take_count("max_queue", c.max_queue, 1);
  take_count("instance_count", c.instances, 1);
  // Dynamic batching, named as Triton's model configuration names it:
  // "max_batch_size": N, "dynamic_batching": {"max_queue_delay_microseconds": D,
  // "preferred_batch_size": [..]}; "max_queue_delay_us" is the short form.
  take_count("max_batch_size", c.batching.max_batch_size, 0);
  int delay = 0;
  take_count("max_queue_delay_us", delay, 0);
  if (auto it = j.find("dynamic_batching"); it != j.end()) {
    if (!it->is_object())
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: \"dynamic_batching\" is {}, expected an object", path, it->dump()));
    for (const auto& [key, v] : it->items()) {
      if (key == "max_queue_delay_microseconds" && v.is_number_integer() && v.get<int64_t>() >= 0 &&
          v.get<int64_t>() <= 1000000) {
        delay = v.get<int>();
      } else if (key == "preferred_batch_size" && v.is_array() &&
                 std::all_of(v.begin(), v.end(), [](const nlohmann::json& n) {
                   return n.is_number_integer() && n.get<int64_t>() >= 1 && n.get<int64_t>() <= 1000000;
                 })) {
        for (const auto& n : v) c.batching.preferred_sizes.push_back(n.get<int64_t>());
      } else {
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("{}: \"dynamic_batching\": \"{}\" is {}; expected \"max_queue_delay_microseconds\" "
                                "(an integer from 0 to 1000000) or \"preferred_batch_size\" (a list of positive integers)",
                                path, key, v.dump()));
      }
    }
    j.erase(it);
  }
  c.batching.max_queue_delay_us = delay;
  // The rest is an options file (spindle tune --out). Thread settings (counts,
  // spinning, affinities) are the process's: every model shares its pools.
  bool thread_settings = j.contains("intra_op_num_threads") || j.contains("inter_op_num_threads");
  if (auto it = j.find("config"); it != j.end() && it->is_object())
    for (const auto& [key, v] : it->items())
      thread_settings = thread_settings || key.rfind("session.intra_op", 0) == 0 || key.rfind("session.inter_op", 0) == 0;
  c.options = SessionOptions::from_json(j.dump(), path);
  if (thread_settings)
    std::fprintf(stderr,
                 "spindle serve: %s: thread settings ignored; all models share the server's pools (--threads)\n",
                 path.c_str());
  c.options.intra_op = ThreadingOptions{.name = "intra_op"};
  c.options.inter_op = ThreadingOptions{.name = "inter_op"};
  c.options.use_per_session_threads = false;
  return c;
}

namespace {
// Why a model cannot be batched along its first dimension; empty when it can.
std::string unbatchable(const InferenceSession& session) {
  auto check = [](const std::vector<TensorInfo>& infos, const char* kind) -> std::string {
    for (const TensorInfo& t : infos) {
      if (t.is_sequence || t.is_optional || t.dtype == DataType::kString)
        return fmt::format("{} '{}' is not a numeric tensor", kind, t.name);
      if (t.shape.empty() || t.shape[0] != -1)
        return fmt::format("{} '{}' has no dynamic first dimension", kind, t.name);
    }
    return "";
  };
  std::string why = check(session.inputs(), "input");
  return why.empty() ? check(session.outputs(), "output") : why;
}

// The rows (first dimension) a request brings to a batch; -1 when its feeds
// are not tensors sharing one first dimension.
int64_t batch_rows(const Job& job) {
  int64_t rows = -1;
  for (const auto& [name, t] : job.feeds) {
    if (!t.is_tensor() || t.dtype() == DataType::kString || t.rank() < 1) return -1;
    if (rows >= 0 && t.dim(0) != rows) return -1;
    rows = t.dim(0);
  }
  return rows;
}

// Whether two requests can share a run: the same inputs with the same types
// and trailing dimensions, and the same requested outputs.
bool compatible(const Job& a, const Job& b) {
  if (a.outputs != b.outputs || a.feeds.size() != b.feeds.size()) return false;
  for (size_t i = 0; i < a.feeds.size(); ++i) {
    const Tensor& x = a.feeds[i].second;
    const Tensor& y = b.feeds[i].second;
    if (a.feeds[i].first != b.feeds[i].first || x.dtype() != y.dtype() || x.rank() != y.rank() ||
        !std::equal(x.shape().begin() + 1, x.shape().end(), y.shape().begin() + 1))
      return false;
  }
  return true;
}

void finish(Job& job, Status status, std::vector<Tensor> values) {
  {
    std::lock_guard lock(job.mu);
    job.status = std::move(status);
    job.values = std::move(values);
    job.done = true;
  }
  job.cv.notify_all();
}
}  // namespace

ModelVersion::ModelVersion(std::string name, std::string version, std::unique_ptr<InferenceSession> session,
                           int max_queue, int instances, BatchConfig batching, RunSlots& slots,
                           std::shared_ptr<ModelMetrics> metrics)
    : name_(std::move(name)),
      version_(std::move(version)),
      session_(std::move(session)),
      max_queue_(static_cast<size_t>(max_queue)),
      batch_config_(std::move(batching)),
      slots_(slots),
      metrics_(std::move(metrics)) {
  if (batch_config_.max_batch_size > 0) {
    const std::string why = unbatchable(*session_);
    if (why.empty()) {
      max_rows_ = batch_config_.max_batch_size;
      batching_ = max_rows_ > 1;
    } else if (batch_config_.max_batch_size > 1) {
      std::fprintf(stderr, "spindle serve: model '%s' version %s: dynamic batching off: %s\n", name_.c_str(),
                   version_.c_str(), why.c_str());
    }
  }
  for (int i = 0; i < instances; ++i) runners_.emplace_back([this] { runner(); });
}

ModelVersion::~ModelVersion() {
  {
    std::lock_guard lock(mu_);
    accepting_ = false;
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : runners_) t.join();
}

bool ModelVersion::enqueue(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard lock(mu_);
    if (!accepting_ || queue_.size() >= max_queue_) return false;
    job->enqueued = Clock::now();
    queue_.push_back(job);
    ++metrics_->queued;
  }
  cv_.notify_one();
  return true;
}

ModelVersion::Withdrawn ModelVersion::withdraw(const std::shared_ptr<Job>& job) {
  std::lock_guard lock(mu_);
  if (job->withdrawn) return Withdrawn::kWaiting;
  job->withdrawn = true;
  switch (job->stage) {
    case Job::Stage::kQueued:
      if (auto it = std::find(queue_.begin(), queue_.end(), job); it != queue_.end()) queue_.erase(it);
      --metrics_->queued;
      return Withdrawn::kWaiting;
    case Job::Stage::kGathered:
      --metrics_->queued;
      return Withdrawn::kWaiting;  // the runner leaves it out of the batch
    case Job::Stage::kRunning:
      break;
  }
  if (--job->run->waiting > 0) return Withdrawn::kRunning;
  job->run->options.terminate = true;
  return Withdrawn::kRunStopped;
}

bool ModelVersion::withdrawn(const Job& job) {
  std::lock_guard lock(mu_);
  return job.withdrawn;
}

void ModelVersion::stop_accepting() {
  std::lock_guard lock(mu_);
  accepting_ = false;
}

void ModelVersion::runner() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch;
    auto control = std::make_shared<RunControl>();
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued job has run
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
      batch[0]->stage = Job::Stage::kGathered;
      if (batching_) gather(lock, batch);
      // Requests withdrawn while the batch gathered have had their answer.
      std::erase_if(batch, [](const std::shared_ptr<Job>& job) { return job->withdrawn; });
      if (batch.empty()) continue;
      for (const auto& job : batch) {
        job->stage = Job::Stage::kRunning;
        job->run = control;
      }
      control->waiting = static_cast<int>(batch.size());
      metrics_->queued -= static_cast<int64_t>(batch.size());
      metrics_->in_run += static_cast<int64_t>(batch.size());
    }
    run_batch(batch, *control);
    metrics_->in_run -= static_cast<int64_t>(batch.size());
  }
}

void ModelVersion::gather(std::unique_lock<std::mutex>& lock, std::vector<std::shared_ptr<Job>>& batch) {
  const int64_t max_rows = batch_config_.max_batch_size;
  if (const int64_t first = batch_rows(*batch[0]); first < 1 || first >= max_rows) return;
  const Clock::time_point until = batch[0]->enqueued + std::chrono::microseconds(batch_config_.max_queue_delay_us);
  const auto& preferred = batch_config_.preferred_sizes;
  for (;;) {
    // A request withdrawn while it waited here leaves room for others.
    std::erase_if(batch, [](const std::shared_ptr<Job>& job) { return job->withdrawn; });
    if (batch.empty()) return;
    int64_t rows = 0;
    for (const auto& job : batch) rows += batch_rows(*job);
    // In arrival order: the first request that does not fit ends the batch.
    while (!queue_.empty() && rows < max_rows) {
      const std::shared_ptr<Job>& next = queue_.front();
      const int64_t r = batch_rows(*next);
      if (r < 1 || rows + r > max_rows || !compatible(*batch[0], *next)) return;
      rows += r;
      next->stage = Job::Stage::kGathered;
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    if (rows >= max_rows || stopping_ || std::find(preferred.begin(), preferred.end(), rows) != preferred.end() ||
        Clock::now() >= until)
      return;
    cv_.wait_until(lock, until);
  }
}

void ModelVersion::run_one(Job& job, RunOptions& options) {
  Status status;
  std::vector<Tensor> values;
  // Rounded up: a run stopped by its time limit has passed the deadline.
  const int64_t left_ms =
      job.deadline ? std::chrono::ceil<std::chrono::milliseconds>(*job.deadline - Clock::now()).count() : 0;
  options.timeout_ms = job.deadline ? std::max<int64_t>(left_ms, 1) : 0;
  try {
    values = session_->run(job.feeds, job.outputs, &options);
  } catch (const Error& e) {
    status = e.status();
  } catch (const std::bad_alloc&) {
    status = resource_exhausted("out of memory");
  } catch (const std::exception& e) {
    status = runtime_error(e.what());
  }
  finish(job, std::move(status), std::move(values));
}

bool ModelVersion::run_concatenated(const std::vector<std::shared_ptr<Job>>& jobs, RunOptions& options,
                                    Status& status) {
  std::vector<int64_t> rows;
  int64_t total = 0;
  for (const auto& job : jobs) total += rows.emplace_back(batch_rows(*job));
  Feeds feeds;
  for (size_t i = 0; i < jobs[0]->feeds.size(); ++i) {
    const Tensor& first = jobs[0]->feeds[i].second;
    Shape shape = first.shape();
    shape[0] = total;
    Tensor t(first.dtype(), shape);
    char* dst = static_cast<char*>(t.raw_mutable_data());
    for (const auto& job : jobs) {
      const Tensor& part = job->feeds[i].second;
      const Tensor c = part.is_contiguous() ? part : part.clone();
      if (c.nbytes()) std::memcpy(dst, c.raw_data(), c.nbytes());
      dst += c.nbytes();
    }
    feeds.emplace_back(jobs[0]->feeds[i].first, std::move(t));
  }
  // The run stops at the last deadline; without one when any request has none.
  options.timeout_ms = 0;
  std::optional<Clock::time_point> last;
  for (const auto& job : jobs) {
    if (!job->deadline) {
      last.reset();
      break;
    }
    last = std::max(last.value_or(*job->deadline), *job->deadline);
  }
  if (last) options.timeout_ms = std::max<int64_t>(
      std::chrono::ceil<std::chrono::milliseconds>(*last - Clock::now()).count(), 1);
  std::vector<Tensor> values;
  try {
    values = session_->run(feeds, jobs[0]->outputs, &options);
  } catch (const Error& e) {
    status = e.status();
    return false;
  } catch (const std::bad_alloc&) {
    status = resource_exhausted("out of memory");
    return false;
  } catch (const std::exception& e) {
    status = runtime_error(e.what());
    return false;
  }
  for (Tensor& v : values) {
    if (!v.is_tensor() || v.rank() < 1 || v.dim(0) != total) {
      status = invalid_argument(fmt::format("output {} does not have the batch's {} rows", v.describe(), total));
      return false;
    }
    if (!v.is_contiguous()) v = v.clone();
  }
  // Each request's outputs are its rows of the batch's, sharing their buffers.
  std::vector<std::vector<Tensor>> split(jobs.size());
  for (const Tensor& v : values) {
    const size_t row_bytes = total ? v.nbytes() / static_cast<size_t>(total) : 0;
    const size_t base = v.nbytes() ? static_cast<size_t>(static_cast<const char*>(v.raw_data()) -
                                                         static_cast<const char*>(v.buffer()->data()))
                                   : 0;
    int64_t at = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      Shape shape = v.shape();
      shape[0] = rows[j];
      split[j].push_back(row_bytes ? Tensor(v.dtype(), shape, v.buffer(), base + static_cast<size_t>(at) * row_bytes)
                                   : Tensor(v.dtype(), shape));
      at += rows[j];
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) finish(*jobs[j], Status(), std::move(split[j]));
  return true;
}

void ModelVersion::run_batch(const std::vector<std::shared_ptr<Job>>& batch, RunControl& control) {
  slots_.acquire();
  const Clock::time_point started = Clock::now();
  // The requests still waiting for their outputs; the others are answered
  // already and get no run (finished here so that nothing waits on them).
  auto live_jobs = [&](const std::vector<std::shared_ptr<Job>>& jobs) {
    std::vector<std::shared_ptr<Job>> live;
    for (const auto& job : jobs) {
      if (withdrawn(*job))
        finish(*job, Status(StatusCode::kCancelled, "the request timed out or was cancelled before its run started"), {});
      else if (job->deadline && *job->deadline <= Clock::now())
        finish(*job, Status(StatusCode::kCancelled, "the request's timeout passed while it waited in the queue"), {});
      else
        live.push_back(job);
    }
    return live;
  };
  for (const auto& job : batch) {
    job->started = started;
    metrics_->queue.observe(std::chrono::duration<double>(started - job->enqueued).count());
  }
  const std::vector<std::shared_ptr<Job>> live = live_jobs(batch);
  int64_t rows = 0;
  for (const auto& job : live) rows += std::max<int64_t>(batch_rows(*job), 0);
  // Counted before the run: a client that has its outputs sees its batch counted.
  if (batching_ && !live.empty()) metrics_->count_batch(rows);
  if (live.size() == 1) {
    run_one(*live[0], control.options);
  } else if (live.size() > 1) {
    Status status;
    if (!run_concatenated(live, control.options, status)) {
      // Stopped (every request withdrawn, or every deadline passed): each
      // request gets the run's error. Otherwise a model whose graph fixes the
      // batch (a Reshape to 1 x ...) fails batched but not alone: batching
      // stops for this version and every request runs alone.
      const bool out_of_time = std::all_of(live.begin(), live.end(), [](const std::shared_ptr<Job>& job) {
        return job->deadline && *job->deadline <= Clock::now();
      });
      if (status.code() == StatusCode::kCancelled || out_of_time) {
        for (const auto& job : live) finish(*job, status, {});
      } else {
        if (batching_.exchange(false))
          std::fprintf(stderr,
                       "spindle serve: model '%s' version %s: dynamic batching off: a batched run failed: %s\n",
                       name_.c_str(), version_.c_str(), status.message().c_str());
        for (const auto& job : live_jobs(live)) run_one(*job, control.options);
      }
    }
  }
  if (!live.empty()) metrics_->compute.observe(std::chrono::duration<double>(Clock::now() - started).count());
  slots_.release();
}

Repository::Repository(std::string dir, Environment& env, int default_max_queue, int concurrent_runs)
    : dir_(std::move(dir)), env_(env), default_max_queue_(default_max_queue), slots_(concurrent_runs) {}

std::shared_ptr<ModelMetrics> Repository::metrics_for(const std::string& name, const std::string& version) {
  std::lock_guard lock(metrics_mu_);
  auto& m = metrics_[{name, version}];
  if (!m) m = std::make_shared<ModelMetrics>();
  return m;
}

void Repository::load(const std::string& name) {
  const fs::path model_dir = fs::path(dir_) / name;
  std::error_code ec;
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      !fs::is_directory(model_dir, ec))
    throw Error(StatusCode::kNotFound, fmt::format("no model '{}' in the repository {}", name, dir_));
  std::map<int64_t, std::shared_ptr<ModelVersion>> loaded;
  try {
    const ModelConfig config = read_model_config((model_dir / "config.json").string());
    for (const auto& entry : fs::directory_iterator(model_dir)) {
      const std::string v = entry.path().filename().string();
      if (!entry.is_directory() || v.empty() || v.size() > 18 ||
          !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
        continue;
      const fs::path file = entry.path() / "model.onnx";
      if (!fs::is_regular_file(file, ec)) continue;
      auto session = InferenceSession::create(file.string(), config.options, &env_);
      loaded[std::stoll(v)] = std::make_shared<ModelVersion>(
          name, std::to_string(std::stoll(v)), std::move(session),
          config.max_queue ? config.max_queue : default_max_queue_, config.instances, config.batching, slots_,
          metrics_for(name, std::to_string(std::stoll(v))));
    }
    if (loaded.empty())
      throw Error(StatusCode::kNotFound,
                  fmt::format("model '{}' has no version: expected {}/<version>/model.onnx", name, model_dir.string()));
  } catch (const Error& e) {
    std::unique_lock lock(mu_);
    failed_[name] = e.what();
    throw;
  }
  std::map<int64_t, std::shared_ptr<ModelVersion>> old;
  {
    std::unique_lock lock(mu_);
    old = std::exchange(models_[name], std::move(loaded));
    failed_.erase(name);
  }
  for (auto& [v, m] : old) m->stop_accepting();
  // `old` drains and joins here, outside the lock.
}

void Repository::unload(const std::string& name) {
  std::map<int64_t, std::shared_ptr<ModelVersion>> old;
  {
    std::unique_lock lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) throw Error(StatusCode::kNotFound, fmt::format("model '{}' is not loaded", name));
    old = std::move(it->second);
    models_.erase(it);
  }
  for (auto& [v, m] : old) m->stop_accepting();
}

void Repository::load_all() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec))
    throw Error(StatusCode::kNotFound, fmt::format("model repository {} is not a directory", dir_));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) load(n);
}

void Repository::unload_all() {
  std::map<std::string, std::map<int64_t, std::shared_ptr<ModelVersion>>> old;
  {
    std::unique_lock lock(mu_);
    old.swap(models_);
  }
  for (auto& [n, versions] : old)
    for (auto& [v, m] : versions) m->stop_accepting();
}

std::shared_ptr<ModelVersion> Repository::find(const std::string& name, const std::string& version) const {
  std::shared_lock lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || it->second.empty()) return nullptr;
  if (version.empty()) return it->second.rbegin()->second;
  for (const auto& [v, m] : it->second)
    if (m->version() == version) return m;
  return nullptr;
}

std::vector<std::string> Repository::versions(const std::string& name) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  if (auto it = models_.find(name); it != models_.end())
    for (const auto& [v, m] : it->second) out.push_back(m->version());
  return out;
}

std::vector<VersionState> Repository::index() const {
  std::vector<VersionState> out;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  std::shared_lock lock(mu_);
  for (const std::string& n : names) {
    auto it = models_.find(n);
    if (it != models_.end()) {
      for (const auto& [v, m] : it->second) out.push_back({n, m->version(), "READY", ""});
    } else {
      auto f = failed_.find(n);
      out.push_back({n, "", "UNAVAILABLE", f != failed_.end() ? f->second : "unloaded"});
    }
  }
  return out;
}

bool Repository::all_ready() const {
  std::shared_lock lock(mu_);
  return failed_.empty();
}

namespace {
// A Prometheus label value: backslash, double quote and newline escaped.
std::string label(const std::string& v) {
  std::string s;
  for (char c : v) {
    if (c == '\\' || c == '"') s += '\\';
    if (c == '\n') s += "\\n";
    else s += c;
  }
  return s;
}
}  // namespace

std::string Repository::metrics_text() const {
  std::lock_guard lock(metrics_mu_);
  std::string s;
  s += "# HELP spindle_serve_requests_total Infer requests that named a loaded model version.\n"
       "# TYPE spindle_serve_requests_total counter\n";
  for (const auto& [k, m] : metrics_)
    s += fmt::format("spindle_serve_requests_total{{model=\"{}\",version=\"{}\"}} {}\n", label(k.first), label(k.second),
                     m->requests.load());
  s += "# HELP spindle_serve_request_success_total Infer requests answered with outputs.\n"
       "# TYPE spindle_serve_request_success_total counter\n";
  for (const auto& [k, m] : metrics_)
    s += fmt::format("spindle_serve_request_success_total{{model=\"{}\",version=\"{}\"}} {}\n", label(k.first), label(k.second),
                     m->successes.load());
  const std::pair<const char*, std::atomic<int64_t> ModelMetrics::*> gauges[] = {
      {"spindle_serve_queued_requests", &ModelMetrics::queued}, {"spindle_serve_requests_in_run", &ModelMetrics::in_run}};
  const char* gauge_help[] = {"Requests waiting for a run: in the queue, or in a batch being gathered.",
                              "Requests in a run, or about to start one."};
  for (size_t g = 0; g < std::size(gauges); ++g) {
    s += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", gauges[g].first, gauge_help[g], gauges[g].first);
    for (const auto& [k, m] : metrics_)
      s += fmt::format("{}{{model=\"{}\",version=\"{}\"}} {}\n", gauges[g].first, label(k.first), label(k.second),
                       ((*m).*gauges[g].second).load());
  }
  // Counters under a third label, one line per key of a map in the metrics.
  auto keyed = [&](const char* metric, const char* help, const char* key_label, const auto ModelMetrics::*counts) {
    s += fmt::format("# HELP {} {}\n# TYPE {} counter\n", metric, help, metric);
    for (const auto& [k, m] : metrics_) {
      std::lock_guard mlock(m->mu);
      for (const auto& [key, n] : (*m).*counts)
        s += fmt::format("{}{{model=\"{}\",version=\"{}\",{}=\"{}\"}} {}\n", metric, label(k.first), label(k.second),
                         key_label, key, n);
    }
  };
  keyed("spindle_serve_request_failures_total", "Failed infer requests by reason.", "reason", &ModelMetrics::failures);
  keyed("spindle_serve_batch_runs_total", "Runs by batch size (rows; dynamic batching).", "batch_size",
        &ModelMetrics::batch_runs);
  const std::pair<const char*, Histogram ModelMetrics::*> histograms[] = {
      {"spindle_serve_queue_seconds", &ModelMetrics::queue},
      {"spindle_serve_compute_seconds", &ModelMetrics::compute},
      {"spindle_serve_request_seconds", &ModelMetrics::request}};
  const char* help[] = {"Time from enqueue to the start of the run.", "Time of the run.",
                        "Time from the request's arrival to its response (end to end)."};
  for (size_t h = 0; h < std::size(histograms); ++h) {
    s += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", histograms[h].first, help[h], histograms[h].first);
    for (const auto& [k, m] : metrics_)
      s += ((*m).*histograms[h].second)
               .text(histograms[h].first, fmt::format("model=\"{}\",version=\"{}\"", label(k.first), label(k.second)));
  }
  return s;
}

std::shared_ptr<ModelVersion> find_model(const Repository& repo, const std::string& name, const std::string& version) {
  if (auto m = repo.find(name, version)) return m;
  const std::vector<std::string> versions = repo.versions(name);
  if (versions.empty()) throw HttpError(404, "not_found", fmt::format("unknown model '{}' (not loaded)", name));
  std::string list;
  for (const std::string& v : versions) list += fmt::format("{}{}", list.empty() ? "" : ", ", v);
  throw HttpError(404, "not_found",
                  fmt::format("model '{}' has no version '{}' (loaded versions: {})", name, version, list));
}

std::vector<Tensor> run_request(ModelVersion& m, Feeds feeds, std::vector<std::string> outputs,
                                std::optional<Clock::time_point> deadline, int64_t timeout_us,
                                const std::function<bool()>& abandoned) {
  auto job = std::make_shared<Job>();
  job->feeds = std::move(feeds);
  job->outputs = std::move(outputs);
  job->deadline = deadline;
  if (const int64_t rows = batch_rows(*job); m.max_rows() > 0 && rows > m.max_rows())
    throw HttpError(400, "bad_request",
                    fmt::format("the request's batch size {} (the first dimension of its inputs) is more than model "
                                "'{}' version {} takes: max_batch_size {}; send at most {} rows per request",
                                rows, m.name(), m.version(), m.max_rows(), m.max_rows()));
  if (!m.enqueue(job))
    throw HttpError(429, "queue_full",
                    fmt::format("model '{}' version {}: the request queue is full or the model is unloading; retry later",
                                m.name(), m.version()));
  std::unique_lock lock(job->mu);
  bool gone = false;
  if (deadline || abandoned) {
    for (;;) {
      Clock::time_point until = deadline ? *deadline : Clock::now() + std::chrono::milliseconds(50);
      if (abandoned) until = std::min(until, Clock::now() + std::chrono::milliseconds(50));
      if (job->cv.wait_until(lock, until, [&] { return job->done; })) break;
      const bool timed_out = deadline && Clock::now() >= *deadline;
      if (!timed_out && !(abandoned && abandoned())) continue;
      gone = !timed_out;
      lock.unlock();
      const ModelVersion::Withdrawn w = m.withdraw(job);
      if (w == ModelVersion::Withdrawn::kWaiting) {
        if (gone) throw HttpError(499, "cancelled", "the client cancelled the request while it waited in the queue");
        throw HttpError(504, "timeout",
                        fmt::format("the request's timeout ({} us) passed while it waited in the queue", timeout_us));
      }
      if (w == ModelVersion::Withdrawn::kRunning) {
        if (gone) throw HttpError(499, "cancelled", "the client cancelled the request while its batch ran");
        throw HttpError(504, "timeout",
                        fmt::format("the request's timeout ({} us) passed while its batch ran; the batch's other "
                                    "requests go on",
                                    timeout_us));
      }
      lock.lock();  // its run stops between nodes: wait for it
      break;
    }
  }
  job->cv.wait(lock, [&] { return job->done; });
  const Status& st = job->status;
  if (!st.is_ok()) {
    if (gone) throw HttpError(499, "cancelled", fmt::format("the client cancelled the request: {}", st.message()));
    if (deadline && Clock::now() >= *deadline)
      throw HttpError(504, "timeout", fmt::format("the request's timeout ({} us) passed: {}", timeout_us, st.message()));
    if (st.code() == StatusCode::kInvalidArgument) throw HttpError(400, "bad_request", st.message());
    throw HttpError(500, "run_error", st.message());
  }
  return std::move(job->values);
}

void count_request(ModelMetrics& metrics, Clock::time_point arrived, const std::function<void()>& handle) {
  ++metrics.requests;
  auto observe = [&] { metrics.request.observe(std::chrono::duration<double>(Clock::now() - arrived).count()); };
  try {
    handle();
  } catch (const HttpError& e) {
    metrics.fail(e.reason);
    observe();
    throw;
  } catch (const Error&) {
    metrics.fail("bad_request");
    observe();
    throw;
  } catch (const std::exception&) {
    metrics.fail("internal");
    observe();
    throw;
  }
  ++metrics.successes;
  observe();
}

}  // namespace spindle::cli::serve
