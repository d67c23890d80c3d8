// model_common.h — what the model commands (run, bench, tune, profile) share:
// threading flags, inputs, timing helpers. Defined in model_commands.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "spindle/session.h"

namespace spindle::cli {

struct ThreadingFlags {
  std::string options_file;
  int intra = 0;
  int inter = 0;
  std::string mode = "sequential";
  // Unset = not given (the options file or the default decides).
  std::optional<bool> spin;
  std::optional<int64_t> spin_duration_us;
  std::optional<int> spin_backoff_max;
  std::string affinity;
  std::string opt_level = "all";
  std::vector<std::string> config;
  std::optional<int64_t> max_tensor_bytes, max_run_bytes, max_loop_iterations;  // session limits
  std::optional<int64_t> max_graph_nodes, load_timeout_ms;                        // load limits
  std::string optimized_model;  // write the optimized graph there (optimized_model_filepath)
  std::string log_level;        // the session's log_severity_level, by name or 0-4
  // Set by add_threading_flags: which flags were given (they override --options).
  CLI::Option* intra_opt = nullptr;
  CLI::Option* inter_opt = nullptr;
  CLI::Option* mode_opt = nullptr;
  CLI::Option* opt_level_opt = nullptr;
};

// --options FILE --intra N --inter N --mode M --spin 0|1 --spin-duration-us N
// --spin-backoff-max N --affinity S --opt-level L --config K=V, and the run
// limits --max-tensor-bytes N --max-run-bytes N --max-loop-iterations N, the load limits
// --max-graph-nodes N --load-timeout-ms N, and --optimized-model PATH --log-level L
void add_threading_flags(CLI::App* cmd, ThreadingFlags& f);
// The flags set SessionOptions' typed fields directly (--config goes through
// the config-key table, as add_config_entry does).
SessionOptions session_options(const ThreadingFlags& f);

std::pair<std::string, std::string> split_assignment(const std::string& s, const std::string& flag);
// --input NAME=FILE (.npy or .pb); with the session, a .pb file is read as
// the kind of value the input is (tensor, sequence or optional).
Feeds read_inputs(const std::vector<std::string>& specs, const InferenceSession* session = nullptr);
// "x (float32 1x3xHxW), ..." for error messages.
std::string describe_inputs(const InferenceSession& s);
// Random inputs for every model input not in `feeds`; --shape NAME=DIMS specs
// (a NAME the model lacks is an error naming its inputs).
void fill_random_inputs(const InferenceSession& s, Feeds& feeds, const std::vector<std::string>& shape_specs);
// Process CPU time (user + system, all threads), seconds.
double cpu_seconds();
// Nearest-rank percentile p (0..100) of v (not empty).
double percentile(std::vector<double> v, double p);

}  // namespace spindle::cli
