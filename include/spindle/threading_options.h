// spindle/threading_options.h — the typed settings of one thread pool.
//
// One ThreadingOptions describes an intra-op pool or an inter-op pool. The
// ONNX Runtime config keys (session.intra_op.allow_spinning, ...) are parsed
// into these fields of SessionOptions::intra_op / inter_op when they are
// added (the table in src/session/config_keys.cpp, docs/options.md); strings
// are an input format, never a second place where settings live.
//
// Glossary used across the threading layer:
//   dop          degree of parallelism of an intra-op pool, counting the caller
//                (intra_op_num_threads = dop; the pool owns dop - 1 workers).
//   num_workers  threads the pool owns; never counts the caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spindle/status.h"

namespace spindle {

// A set of logical processors (OS indices). Placement is this value type;
// affinity strings are parsed into it once, at the edge.
class CpuSet {
 public:
  CpuSet() = default;
  explicit CpuSet(std::vector<int> cpus);

  static CpuSet single(int cpu) { return CpuSet({cpu}); }

  const std::vector<int>& cpus() const { return cpus_; }  // sorted, unique
  bool empty() const { return cpus_.empty(); }
  bool contains(int cpu) const;
  bool is_subset_of(const CpuSet& other) const;
  // "0-3,6"
  std::string to_string() const;

  friend bool operator==(const CpuSet&, const CpuSet&) = default;

 private:
  std::vector<int> cpus_;
};

// Custom thread creation, with ONNX Runtime's shape (OrtCustomCreateThreadFn /
// OrtCustomJoinThreadFn): create_thread must start a thread that calls
// work(arg) once and return a handle that join_thread later joins.
using ThreadWorkFn = void (*)(void* arg);
using CreateThreadFn = void* (*)(void* custom_options, ThreadWorkFn work, void* arg);
using JoinThreadFn = void (*)(void* handle);

// Spinning default: how long an idle worker polls for new work before it
// parks. Chosen to cover the gaps between the nodes of one run (a few to tens
// of microseconds) while keeping idle burn after a run below 1 ms per 100 ms;
// checked by bench/threading (idle_burn and dispatch_after_gap).
inline constexpr std::chrono::microseconds kDefaultSpinDuration{100};

// Upper bound on any thread count (intra-op, inter-op, set_num_threads,
// environment variables); beyond it a request is taken as a mistake.
inline constexpr int kMaxThreadCount = 1024;

struct ThreadingOptions {
  // Intra-op: total threads including the caller (N means N-1 workers).
  // Inter-op: the number of pool threads. 0 = automatic: the physical cores
  // this process may use (affinity mask and cgroup quota, see topology.h).
  // Takes effect when the pool is created.
  int num_threads = 0;

  // Idle workers spin before they park. false = park at once.
  bool allow_spinning = true;

  // The spin window; unset = kDefaultSpinDuration (1 ms in a run, intra-op
  // pool); 0 = no spinning. The pool calibrates its pauses at creation.
  std::optional<std::chrono::microseconds> spin_duration;

  // Cap of the exponential pause backoff per spin iteration (1, 2, 4, ...).
  // A power of two; other values are rounded down. The total spin time is kept.
  int spin_backoff_max = 1;

  // One CpuSet per worker (exactly num_threads - 1 entries for intra-op, the
  // caller is never pinned; num_threads entries for inter-op). Empty = default
  // placement: with automatic num_threads, one worker per physical core; with
  // an explicit num_threads, nothing is pinned.
  std::vector<CpuSet> affinities;

  // Restrict default placement to one NUMA node (-1 = any node).
  int numa_node = -1;

  // Custom thread creation and join; both or neither.
  CreateThreadFn create_thread = nullptr;
  JoinThreadFn join_thread = nullptr;
  void* custom_thread_options = nullptr;

  // Per-worker prologue and epilogue, run on the worker itself with its index.
  std::function<void(int)> on_worker_start;
  std::function<void(int)> on_worker_stop;

  // Which pool this describes; used in error messages ("intra_op", "inter_op").
  std::string name = "intra_op";
};

// Parses "1,2;3,4" / "0-3;5": ';' separates threads, ',' lists processors of
// one thread, "a-b" is an inclusive range. `key` names the setting in errors.
Result<std::vector<CpuSet>> parse_affinity_string(const std::string& key, const std::string& value);

// Strict parsers for config values; errors name the key, the value and what
// was expected.
Result<int64_t> parse_int_value(const std::string& key, const std::string& value, int64_t min, int64_t max);
Result<bool> parse_bool_value(const std::string& key, const std::string& value);

}  // namespace spindle
