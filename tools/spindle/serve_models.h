// serve_models.h — the model repository of spindle serve: every version of
// every model as a session on the process's shared pools, each with its
// bounded FIFO queue of requests and its runner threads, and the metrics.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "spindle/environment.h"
#include "spindle/session.h"

namespace spindle::cli::serve {

using Clock = std::chrono::steady_clock;

// A Prometheus histogram (seconds).
class Histogram {
 public:
  void observe(double seconds);
  // "name_bucket{labels,le=...} n" lines, _sum and _count.
  std::string text(const std::string& name, const std::string& labels) const;

 private:
  static constexpr double kBounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                       0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,     10};
  mutable std::mutex mu_;
  uint64_t counts_[std::size(kBounds) + 1] = {};
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct ModelMetrics {
  std::atomic<uint64_t> requests{0}, successes{0};
  // Gauges: requests waiting for a run (in the queue, or in a batch being
  // gathered); requests in a run (or about to start one).
  std::atomic<int64_t> queued{0}, in_run{0};
  std::mutex mu;
  std::map<std::string, uint64_t> failures;  // by reason
  Histogram queue, compute, request;
  std::map<int64_t, uint64_t> batch_runs;  // runs by batch size (rows), under mu
  void fail(const std::string& reason);
  void count_batch(int64_t rows);
};

// Limits compute to a number of runs at once, process-wide (all models).
class RunSlots {
 public:
  explicit RunSlots(int n) : free_(n) {}
  void acquire();
  void release();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

// One run of a model version, for one request or a batch of them.
struct RunControl {
  RunOptions options;
  int waiting = 0;  // requests whose clients still wait for this run (under the version's mutex)
};

// One request in a model's queue.
struct Job {
  Feeds feeds;
  std::vector<std::string> outputs;
  std::optional<Clock::time_point> deadline;
  Clock::time_point enqueued, started;
  // Under the model version's mutex: where the request is, whether its client
  // stopped waiting (timeout, cancel), and its run once it has one.
  enum class Stage { kQueued, kGathered, kRunning } stage = Stage::kQueued;
  bool withdrawn = false;
  std::shared_ptr<RunControl> run;
  // Set by the runner when done.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::vector<Tensor> values;
};

// Dynamic batching: requests queued together are concatenated along their
// first dimension, run once and their outputs split back. Off when
// max_batch_size < 2 or the model lacks a dynamic first dimension on every
// input and output.
struct BatchConfig {
  int max_batch_size = 0;                 // rows per run at most
  int64_t max_queue_delay_us = 0;         // how long the oldest request waits for others
  std::vector<int64_t> preferred_sizes;   // a batch of one of these sizes runs at once
};

struct ModelConfig {
  SessionOptions options;
  int max_queue = 0;  // 0 = the server's --max-queue
  int instances = 1;  // runner threads
  BatchConfig batching;
};
// DIR/<name>/config.json; defaults when the file is absent. Throws Error naming the file.
ModelConfig read_model_config(const std::string& path);

class ModelVersion {
 public:
  ModelVersion(std::string name, std::string version, std::unique_ptr<InferenceSession> session, int max_queue,
               int instances, BatchConfig batching, RunSlots& slots, std::shared_ptr<ModelMetrics> metrics);
  ~ModelVersion();  // drains the queue, joins the runners

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const InferenceSession& session() const { return *session_; }
  // Whether queued requests are batched (the config asks and the model allows).
  bool batching() const { return batching_; }
  // The rows (first dimension) a request may bring at most: the config's
  // max_batch_size for a model whose inputs all have a dynamic first
  // dimension; 0 = no limit.
  int64_t max_rows() const { return max_rows_; }
  ModelMetrics& metrics() { return *metrics_; }
  // false when the queue is full or the model is being unloaded.
  bool enqueue(const std::shared_ptr<Job>& job);
  // What withdraw() did with a request whose client stopped waiting.
  enum class Withdrawn {
    kWaiting,     // it left the queue, or the batch being gathered
    kRunning,     // its run goes on for the other requests of its batch
    kRunStopped,  // it was the last request its run served: the run is told to stop
  };
  Withdrawn withdraw(const std::shared_ptr<Job>& job);
  // Stops accepting; the queued jobs still run. The destructor waits for them.
  void stop_accepting();

 private:
  void runner();
  // Adds to `batch` the requests behind it that fit, waiting up to the delay.
  void gather(std::unique_lock<std::mutex>& lock, std::vector<std::shared_ptr<Job>>& batch);
  void run_batch(const std::vector<std::shared_ptr<Job>>& batch, RunControl& control);
  // One run of the jobs' feeds concatenated; false (and nothing set) when the
  // run fails or its outputs do not split back along the batch dimension.
  bool run_concatenated(const std::vector<std::shared_ptr<Job>>& jobs, RunOptions& options, Status& status);
  void run_one(Job& job, RunOptions& options);
  bool withdrawn(const Job& job);
  std::string name_, version_;
  std::unique_ptr<InferenceSession> session_;
  size_t max_queue_;
  BatchConfig batch_config_;
  std::atomic<bool> batching_{false};
  int64_t max_rows_ = 0;
  RunSlots& slots_;
  std::shared_ptr<ModelMetrics> metrics_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool accepting_ = true;
  bool stopping_ = false;
  std::vector<std::thread> runners_;
};

struct VersionState {
  std::string name, version, state, reason;
};

class Repository {
 public:
  Repository(std::string dir, Environment& env, int default_max_queue, int concurrent_runs);
  // Loads every version of the model (again, when loaded); throws Error.
  void load(const std::string& name);
  // Throws Error (kNotFound) when the model is not loaded.
  void unload(const std::string& name);
  void load_all();
  void unload_all();
  // version empty = the highest version. Null when absent.
  std::shared_ptr<ModelVersion> find(const std::string& name, const std::string& version) const;
  std::vector<std::string> versions(const std::string& name) const;
  // Every model directory in the repository and the loaded versions' states.
  std::vector<VersionState> index() const;
  bool all_ready() const;
  std::string metrics_text() const;

 private:
  std::shared_ptr<ModelMetrics> metrics_for(const std::string& name, const std::string& version);
  std::string dir_;
  Environment& env_;
  int default_max_queue_;
  RunSlots slots_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::map<int64_t, std::shared_ptr<ModelVersion>>> models_;
  std::map<std::string, std::string> failed_;  // name -> why the last load failed
  mutable std::mutex metrics_mu_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<ModelMetrics>> metrics_;
};

// What every transport does with a request once parsed. Each throws
// HttpError (serve_protocol.h) with the status and failure reason.
//
// The model (and version; empty = the highest) a request names, or 404
// naming what is absent and the loaded versions.
std::shared_ptr<ModelVersion> find_model(const Repository& repo, const std::string& name, const std::string& version);

// Puts a request in the model version's queue and waits for its outputs.
// `deadline` is the request's timeout (`timeout_us` after its arrival): past
// it the request leaves the queue (or the batch being gathered); running in
// a batch it is answered at once and the batch goes on for the others; its
// run stops between nodes when no request of it is left waiting. While it
// waits, `abandoned` (when given) is asked every 50 ms whether the client has
// gone; then it is cancelled the same way. Throws 400 (more rows than the
// model's max_batch_size, or inputs the run refused), 429 (queue full), 504
// (timeout), 499 (abandoned), 500.
std::vector<Tensor> run_request(ModelVersion& m, Feeds feeds, std::vector<std::string> outputs,
                                std::optional<Clock::time_point> deadline, int64_t timeout_us,
                                const std::function<bool()>& abandoned = {});

// Calls `handle` for one infer request of a model version and counts it in
// the version's metrics: a success, or a failure by reason (rethrown), and
// its end-to-end time from `arrived`.
void count_request(ModelMetrics& metrics, Clock::time_point arrived, const std::function<void()>& handle);

}  // namespace spindle::cli::serve
