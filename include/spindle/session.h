// spindle/session.h — loading and running ONNX models (ONNX Runtime shaped).
//
//   spindle::SessionOptions opts;
//   opts.intra_op_num_threads = 2;                       // N counts the caller
//   opts.execution_mode = spindle::ExecutionMode::kParallel;
//   opts.intra_op.allow_spinning = false;   // or add_config_entry("session.intra_op.allow_spinning", "0")
//   auto session = spindle::InferenceSession::create("model.onnx", opts);
//   auto outputs = session->run({{"x", tensor}});
//
// Errors are spindle::Error exceptions carrying a StatusCode and a message
// that names the file, input, key or node and what was expected. A failed
// run leaves the session usable. run() may be called from many threads at
// once on one session.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spindle/custom_op.h"
#include "spindle/environment.h"
#include "spindle/model_metadata.h"
#include "spindle/status.h"
#include "spindle/tensor.h"
#include "spindle/tensor_info.h"
#include "spindle/thread_pool.h"
#include "spindle/threading_options.h"

namespace spindle {

enum class ExecutionMode { kSequential, kParallel };
enum class GraphOptimizationLevel { kDisableAll = 0, kBasic = 1, kExtended = 2, kAll = 99 };

// The names every front end uses for these settings (options JSON, the
// command line, the Node.js binding): "sequential" / "parallel" and
// "disable" / "basic" / "extended" / "all". parse_* return nullopt for any
// other string; the *_names lists are for error messages and help text.
std::string_view execution_mode_name(ExecutionMode mode);
std::optional<ExecutionMode> parse_execution_mode(std::string_view name);
std::string_view optimization_level_name(GraphOptimizationLevel level);
std::optional<GraphOptimizationLevel> parse_optimization_level(std::string_view name);
const std::vector<std::string>& execution_mode_names();
const std::vector<std::string>& optimization_level_names();

// Session configuration keys (SessionOptions::add_config_entry), as in ONNX
// Runtime. Each key is parsed into a typed field of SessionOptions (named
// beside it) by the one table in src/session/config_keys.cpp; the strings
// are an input format only. docs/options.md lists every key.
namespace config_keys {
inline constexpr const char* kIntraOpAllowSpinning = "session.intra_op.allow_spinning";   // intra_op.allow_spinning
inline constexpr const char* kInterOpAllowSpinning = "session.inter_op.allow_spinning";   // inter_op.allow_spinning
inline constexpr const char* kIntraOpSpinDurationUs = "session.intra_op.spin_duration_us";  // intra_op.spin_duration
inline constexpr const char* kInterOpSpinDurationUs = "session.inter_op.spin_duration_us";  // inter_op.spin_duration
inline constexpr const char* kIntraOpSpinBackoffMax = "session.intra_op.spin_backoff_max";  // intra_op.spin_backoff_max
inline constexpr const char* kInterOpSpinBackoffMax = "session.inter_op.spin_backoff_max";  // inter_op.spin_backoff_max
inline constexpr const char* kIntraOpThreadAffinities = "session.intra_op_thread_affinities";  // intra_op.affinities
inline constexpr const char* kIntraOpNumaNode = "session.intra_op.numa_node";  // intra_op.numa_node (spindle's key)
// Limits of each run (clean RESOURCE_EXHAUSTED errors naming the node and
// the size). Bytes; 0 = no limit. Defaults: half of the machine's physical
// memory per tensor, three quarters for all the tensors a run holds at once.
inline constexpr const char* kMaxTensorBytes = "session.max_tensor_bytes";  // max_tensor_bytes
inline constexpr const char* kMaxRunBytes = "session.max_run_bytes";        // max_run_bytes
// Iterations of a Loop that has no trip count (only a condition); 0 = no
// cap. Default 1000000.
inline constexpr const char* kMaxLoopIterations = "session.max_loop_iterations";  // max_loop_iterations
// Limits of loading a model (session creation; spindle's keys). Nodes once
// model-local functions are expanded, over the main graph and every
// subgraph (0 = no cap; default 1000000), and milliseconds for the whole
// creation: parsing, inlining, optimizing, packing (0 = none, the default).
// Past either, creation fails with RESOURCE_EXHAUSTED naming the key.
inline constexpr const char* kMaxGraphNodes = "session.max_graph_nodes";  // max_graph_nodes
// Optimizer passes not to run, by name, comma-separated ("ConstantFolding,
// NchwcTransformer"); an unknown name is an error listing the passes.
// (ONNX Runtime's key; Python's disabled_optimizers sets it.)
inline constexpr const char* kDisableOptimizers = "optimization.disable_specified_optimizers";  // disabled_optimizers
inline constexpr const char* kLoadTimeoutMs = "session.load_timeout_ms";  // load_timeout_ms
// Directory of a model's external data files when the model is given as
// bytes (create_from_bytes); without it such a model is refused. Files must
// lie inside it. (ONNX Runtime's key.)
inline constexpr const char* kExternalDataDir = "session.model_external_initializers_file_folder_path";
// "1": kernels keep constant weights as given instead of packing them into
// their GEMM layout at session creation (less memory, slower runs).
inline constexpr const char* kDisablePrepacking = "session.disable_prepacking";  // disable_prepacking
// "1": flush-to-zero and denormals-are-zero on every thread of a run.
inline constexpr const char* kSetDenormalAsZero = "session.set_denormal_as_zero";  // set_denormal_as_zero
// "1" (spindle's default): idle workers stop spinning when the last run ends.
inline constexpr const char* kForceSpinningStop = "session.force_spinning_stop";  // force_spinning_stop
// ONNX Runtime's shrinking block sizes; accepted, no effect (docs/options.md).
inline constexpr const char* kDynamicBlockBase = "session.dynamic_block_base";  // dynamic_block_base
// With optimized_model_filepath: the file, beside the optimized model,
// receiving its initializers of at least kOptimizedModelExternalMinBytes
// bytes (default 1024) instead of the model itself. (ONNX Runtime's keys.)
inline constexpr const char* kOptimizedModelExternalFile =
    "session.optimized_model_external_initializers_file_name";  // optimized_model_external_file
inline constexpr const char* kOptimizedModelExternalMinBytes =
    "session.optimized_model_external_initializers_min_size_in_bytes";  // optimized_model_external_min_bytes
// The keys spindle acts on, in table order.
std::vector<std::string> all();
// ONNX Runtime keys spindle accepts without acting on them (a one-time
// warning on stderr names each).
std::vector<std::string> accepted_without_effect();
}  // namespace config_keys

// Everything a SessionOptions holds; the typed fields are the settings.
// (SessionOptions adds ONNX Runtime's intra_op_num_threads /
// inter_op_num_threads spellings on top, see below.)
struct SessionSettings {
  // The two pools' settings. intra_op.num_threads counts the caller; 0 = the
  // count given to set_num_threads on the session's Environment before the
  // session was created, else the physical cores available (workers pinned
  // one per core). inter_op is used in parallel mode only (0 = physical
  // cores available). See spindle/threading_options.h for every field.
  ThreadingOptions intra_op{.name = "intra_op"};
  ThreadingOptions inter_op{.name = "inter_op"};
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::kAll;
  // false: use the Environment's global pools and create none.
  bool use_per_session_threads = true;
  // Custom thread creation for every pool thread of this session (ONNX
  // Runtime's session-level names); filled into both pools when resolved.
  CreateThreadFn custom_create_thread_fn = nullptr;
  JoinThreadFn custom_join_thread_fn = nullptr;
  void* custom_thread_creation_options = nullptr;
  // Operators defined by the application (spindle/custom_op.h), consulted
  // before the built-in ones; not part of an options file.
  CustomOpDomains custom_op_domains;
  // Profiling, as ONNX Runtime's enable_profiling: every run is recorded and
  // InferenceSession::end_profiling() writes them as one Chrome trace file
  // named <profile_file_prefix>_<date>_<time>.json (spindle profile's format).
  bool enable_profiling = false;
  std::string profile_file_prefix = "spindle_profile";
  // Logging, as ONNX Runtime's log_severity_level and logid: this session's
  // messages (creation: threads, optimizer passes, kernel choices; one-time
  // warnings) at this severity and above reach the log (stderr, or the sink
  // set with spindle/logging.h), tagged with log_id. 0 verbose, 1 info,
  // 2 warning, 3 error, 4 fatal; -1 = the process default (SPINDLE_LOG_LEVEL,
  // else warning).
  int log_severity_level = -1;
  std::string log_id;
  // As ONNX Runtime's optimized_model_filepath: session creation writes the
  // graph the optimizer produced to this path as an ONNX model (spindle's
  // fused operators in the "spindle" domains, weights in their original
  // layout), which spindle loads back without repeating the passes already
  // applied. Empty: nothing is written. A path that cannot be written fails
  // session creation naming it.
  std::string optimized_model_filepath;
  // Initializers supplied by the program (ONNX Runtime's AddInitializer,
  // AddExternalInitializers): each replaces the main graph's initializer of
  // that name, which must have the same element type and shape (else
  // creation fails naming it); a name the model has no initializer of is
  // left unused (one set may serve several models). The tensor is shared, not copied: one
  // over the caller's memory (Tensor::borrow) reads it for the session's
  // lifetime, so that memory must outlive the session. Not part of
  // an options file.
  std::map<std::string, Tensor> initializers;

  // Set by the config keys named in config_keys (or directly).
  std::optional<int64_t> max_tensor_bytes;     // unset = half the physical memory; 0 = no limit
  std::optional<int64_t> max_run_bytes;        // unset = 3/4 of the physical memory; 0 = no limit
  std::optional<int64_t> max_loop_iterations;  // unset = 1000000; 0 = no cap
  std::optional<int64_t> max_graph_nodes;      // unset = 1000000; 0 = no cap
  int64_t load_timeout_ms = 0;                 // 0 = no limit
  std::vector<std::string> disabled_optimizers;  // optimizer passes not to run, by name
  std::string external_data_dir;               // empty: none
  bool disable_prepacking = false;
  bool set_denormal_as_zero = false;
  bool force_spinning_stop = true;  // ONNX Runtime's default is "0"; see docs/options.md
  int dynamic_block_base = 0;       // accepted, no effect: block boundaries depend on shapes only
  std::string optimized_model_external_file;       // empty: every initializer inside the optimized model
  int64_t optimized_model_external_min_bytes = 1024;
  // ONNX Runtime keys accepted without effect, as written (config_entry reads them back).
  std::map<std::string, std::string> inert_config_entries;
};

struct SessionOptions : SessionSettings {
  // ONNX Runtime's spellings of intra_op.num_threads and
  // inter_op.num_threads: the same ints, not copies
  // (`opts.intra_op_num_threads = 2` sets intra_op.num_threads).
  int& intra_op_num_threads = intra_op.num_threads;
  int& inter_op_num_threads = inter_op.num_threads;

  SessionOptions() = default;
  SessionOptions(const SessionOptions& o) : SessionSettings(o) {}
  SessionOptions& operator=(const SessionOptions& o) {
    SessionSettings::operator=(o);
    return *this;
  }

  // Parses VALUE into the typed field KEY names (config_keys), now: an
  // unknown key (with the closest known one), or a bad value, throws an
  // Error naming the key and the value. ONNX Runtime keys spindle does not
  // act on are kept as written, with a one-time warning on stderr.
  SessionOptions& add_config_entry(const std::string& key, const std::string& value);
  // KEY's value as the typed fields hold it ("1", "0-3;5"); nullopt when it
  // is at its default (or not a key).
  std::optional<std::string> config_entry(const std::string& key) const;
  // Every key whose field is not at its default, KEY -> VALUE.
  std::map<std::string, std::string> config_entries() const;

  // Options files (`spindle tune --out`, `spindle run|bench --options`): a
  // JSON object {"intra_op_num_threads": 2, "inter_op_num_threads": 1,
  // "execution_mode": "sequential" | "parallel", "graph_optimization_level":
  // "disable" | "basic" | "extended" | "all", "config": {KEY: VALUE}}; every
  // field optional. Unknown fields and bad values are errors naming them.
  // Custom thread callbacks and custom operators are not part of a file.
  static SessionOptions from_json(const std::string& json, const std::string& origin = "options");
  static SessionOptions from_file(const std::string& path);
  std::string to_json() const;
  void save(const std::string& path) const;

  // The checks session creation makes of the options alone, without a
  // model: thread counts not negative, custom_create_thread_fn and
  // custom_join_thread_fn set together and not differing from a pool's own
  // create_thread, limits (max_*) not negative. Returns the error create()
  // would throw, with the same message naming the field and the value
  // (bindings use it to reject a bad value when it is set).
  Status validate() const;
};

struct RunOptions {
  // Set from any thread to cancel runs using these options; they fail with
  // StatusCode::kCancelled and the session stays usable.
  std::atomic<bool> terminate{false};
  // A run that takes longer fails with RESOURCE_EXHAUSTED (checked between
  // nodes and Loop/Scan iterations); 0 = no limit.
  int64_t timeout_ms = 0;
  // What the run logs (a failure at error, a cancellation at warning) is
  // filtered at this severity (0 verbose .. 4 fatal, ONNX Runtime's
  // run_log_severity_level); -1: the session's log_severity_level.
  int log_severity_level = -1;
  // The run's log id when not empty (else the session's log_id).
  std::string run_tag;
};

using Feeds = std::vector<std::pair<std::string, Tensor>>;

// Timing of one run (spindle profile): one event per node, on the thread
// that ran it, and one per parallel_for block of its kernel, on the thread
// that ran the block. Times are microseconds since the run started. Nodes
// inside If / Loop / Scan subgraphs have events too, one per run of their
// subgraph (per iteration), inside their parent's span on its thread.
struct NodeEvent {
  // Top level: position in the optimized graph. Inside a subgraph: a number
  // past those, unique within the run. BlockEvent::node_index refers to it.
  int node_index;
  std::string node_name;
  std::string op_type;
  int thread_id;  // Linux tid
  double start_us, duration_us;
  int parent_index = -1;  // node_index of the control-flow node that ran this one; -1 at top level
  std::string scope;      // "" at top level, else the path to it: "If/then_branch", "Loop/body/If/else_branch"
};
struct BlockEvent {
  int node_index;
  int thread_id;  // Linux tid
  double start_us, duration_us;
};
struct RunProfile {
  std::vector<NodeEvent> nodes;
  std::vector<BlockEvent> blocks;
};
// One profiled run placed on a common timeline (offset of its start, µs);
// InferenceSession::chrome_trace draws a list of them.
struct ProfiledRun {
  double offset_us = 0;
  RunProfile profile;
};

class InferenceSession {
 public:
  // From a file; env = nullptr means the default Environment (used for its
  // global pools when use_per_session_threads is false).
  static std::unique_ptr<InferenceSession> create(const std::string& model_path, const SessionOptions& options = {},
                                                  Environment* env = nullptr);
  static std::unique_ptr<InferenceSession> create_from_bytes(std::span<const uint8_t> model, const SessionOptions& options = {},
                                                             Environment* env = nullptr);
  // Waits for outstanding run_async requests, then stops the session's own
  // pools before anything their tasks touch is freed (global pools live on
  // with the Environment and the other sessions that share them).
  ~InferenceSession();

  const std::vector<TensorInfo>& inputs() const;
  // Initializers the model also lists as inputs (IR version 4 and later), in
  // model order: a run may feed them by name (the feed wins); without a feed
  // the model's initializer is used. Not among inputs().
  const std::vector<TensorInfo>& overridable_initializers() const;
  const std::vector<TensorInfo>& outputs() const;
  const ModelMetadata& model_metadata() const;

  // Runs the model. output_names empty = all outputs, in model order.
  std::vector<Tensor> run(const Feeds& feeds, const std::vector<std::string>& output_names = {},
                          RunOptions* run_options = nullptr);
  // Same, on the inter-op pool (the session's own in parallel mode, else the
  // default Environment's); the callback gets the status and outputs.
  // run_options (may be null; the caller keeps it alive until the callback
  // returns) bound the run as they bound run(): terminate, timeout_ms. The
  // session's destructor waits until every callback has returned, so a
  // session may be destroyed with requests outstanding; a callback may also
  // destroy its own session (the last outstanding request then frees it).
  void run_async(Feeds feeds, std::vector<std::string> output_names,
                 std::function<void(Status, std::vector<Tensor>)> callback, RunOptions* run_options = nullptr);
  // Same as run(), recording node and block events into `profile`.
  std::vector<Tensor> run_profiled(const Feeds& feeds, RunProfile& profile);
  // With SessionOptions::enable_profiling: writes the runs recorded so far as
  // a Chrome trace file, clears them and returns the file's path.
  std::string end_profiling();
  // Chrome trace event JSON (chrome://tracing, Perfetto) of runs recorded
  // with run_profiled, the format end_profiling writes: one track per
  // thread; node spans, parallel_for blocks ("parallel_for") and the waits of
  // each node's thread between its own blocks. The calling thread is named
  // "caller", this session's intra-op workers "intra-op worker", any other
  // thread "inter-op thread"; the process is named process_name.
  std::string chrome_trace(const std::vector<ProfiledRun>& runs, const std::string& process_name) const;

  // The session's intra-op pool (custom ops may call parallel_for on it).
  // Valid while the session lives, whatever set_num_threads does meanwhile.
  ThreadPool* intra_op_pool();
  // What this session resolved: threads, mode, spinning, placement, what is ignored.
  std::string threading_info() const;
  // Nodes after optimization and the optimizer's counts.
  int num_nodes() const;
  std::string optimization_summary() const;

  struct Impl;

 private:
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spindle
