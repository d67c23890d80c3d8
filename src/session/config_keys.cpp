// config_keys.cpp — the one table of session config keys.
//
// Every ONNX Runtime session config key spindle knows appears here once,
// with the typed SessionOptions field it sets, its parser and its printer.
// add_config_entry (C++, the bindings, the CLI's --config, JSON options
// files) parses through this table when the entry is added; nothing later
// reads strings. Keys spindle does not act on are ONNX Runtime's real keys
// (from onnxruntime_session_options_config_keys.h, checked against the
// strings in onnxruntime 1.30's library): accepted, kept as written, with a
// one-time warning naming them. Anything else is an error with the closest
// known key.
#include "session/config_keys.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "common/log.h"
#include "graph/graph.h"
#include "spindle/session.h"

namespace spindle {

namespace {

// One row: parse sets the field from the value (errors name the key and the
// value), print gives the field's value back as a config string.
struct KeyRow {
  const char* key;
  std::function<Status(SessionSettings&, const std::string& key, const std::string& value)> parse;
  std::function<std::string(const SessionSettings&)> print;
  std::function<bool(const SessionSettings&)> is_default;
};

// A field accessor is a generic lambda returning a reference to the field of
// a (const or not) SessionSettings; the default is the field of a
// default-constructed SessionSettings, so each default is written once, at
// the field.
template <class Field>
bool at_default(const SessionSettings& s, Field field) {
  static const SessionSettings defaults;
  return field(s) == field(defaults);
}

template <class Field>
KeyRow bool_key(const char* key, Field field) {
  return {key,
          [field](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
            SPINDLE_ASSIGN_OR_RETURN(field(s), parse_bool_value(k, v));
            return Status::ok();
          },
          [field](const SessionSettings& s) { return std::string(field(s) ? "1" : "0"); },
          [field](const SessionSettings& s) { return at_default(s, field); }};
}

template <class Field>
KeyRow int_key(const char* key, int64_t min, int64_t max, Field field) {
  return {key,
          [field, min, max](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
            SPINDLE_ASSIGN_OR_RETURN(int64_t n, parse_int_value(k, v, min, max));
            field(s) = static_cast<std::remove_reference_t<decltype(field(s))>>(n);
            return Status::ok();
          },
          [field](const SessionSettings& s) { return std::to_string(field(s)); },
          [field](const SessionSettings& s) { return at_default(s, field); }};
}

// std::optional<int64_t> fields: unset = the default the field documents.
template <class Field>
KeyRow optional_int_key(const char* key, int64_t min, int64_t max, Field field) {
  return {key,
          [field, min, max](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
            SPINDLE_ASSIGN_OR_RETURN(field(s), parse_int_value(k, v, min, max));
            return Status::ok();
          },
          [field](const SessionSettings& s) { return field(s) ? std::to_string(*field(s)) : std::string(); },
          [field](const SessionSettings& s) { return !field(s).has_value(); }};
}

template <class Field>
KeyRow spin_duration_key(const char* key, Field field) {
  return {key,
          [field](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
            SPINDLE_ASSIGN_OR_RETURN(int64_t us, parse_int_value(k, v, 0, 10'000'000));
            field(s) = std::chrono::microseconds(us);
            return Status::ok();
          },
          [field](const SessionSettings& s) { return field(s) ? std::to_string(field(s)->count()) : std::string(); },
          [field](const SessionSettings& s) { return !field(s).has_value(); }};
}

const std::vector<KeyRow>& table() {
  static const std::vector<KeyRow> rows = [] {
    std::vector<KeyRow> r;
    r.push_back(bool_key(config_keys::kIntraOpAllowSpinning, [](auto& s) -> auto& { return s.intra_op.allow_spinning; }));
    r.push_back(bool_key(config_keys::kInterOpAllowSpinning, [](auto& s) -> auto& { return s.inter_op.allow_spinning; }));
    r.push_back(spin_duration_key(config_keys::kIntraOpSpinDurationUs, [](auto& s) -> auto& { return s.intra_op.spin_duration; }));
    r.push_back(spin_duration_key(config_keys::kInterOpSpinDurationUs, [](auto& s) -> auto& { return s.inter_op.spin_duration; }));
    r.push_back(int_key(config_keys::kIntraOpSpinBackoffMax, 1, 1 << 20,
                        [](auto& s) -> auto& { return s.intra_op.spin_backoff_max; }));
    r.push_back(int_key(config_keys::kInterOpSpinBackoffMax, 1, 1 << 20,
                        [](auto& s) -> auto& { return s.inter_op.spin_backoff_max; }));
    r.push_back({config_keys::kIntraOpThreadAffinities,
                 [](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
                   SPINDLE_ASSIGN_OR_RETURN(s.intra_op.affinities, parse_affinity_string(k, v));
                   return Status::ok();
                 },
                 [](const SessionSettings& s) {
                   std::vector<std::string> parts;
                   for (const CpuSet& c : s.intra_op.affinities) parts.push_back(c.to_string());
                   return fmt::format("{}", fmt::join(parts, ";"));
                 },
                 [](const SessionSettings& s) { return s.intra_op.affinities.empty(); }});
    r.push_back(int_key(config_keys::kIntraOpNumaNode, -1, 1023, [](auto& s) -> auto& { return s.intra_op.numa_node; }));
    r.push_back(optional_int_key(config_keys::kMaxTensorBytes, 0, INT64_MAX, [](auto& s) -> auto& { return s.max_tensor_bytes; }));
    r.push_back(optional_int_key(config_keys::kMaxRunBytes, 0, INT64_MAX, [](auto& s) -> auto& { return s.max_run_bytes; }));
    r.push_back(optional_int_key(config_keys::kMaxLoopIterations, 0, INT64_MAX,
                                 [](auto& s) -> auto& { return s.max_loop_iterations; }));
    r.push_back(optional_int_key(config_keys::kMaxGraphNodes, 0, INT64_MAX, [](auto& s) -> auto& { return s.max_graph_nodes; }));
    r.push_back(int_key(config_keys::kLoadTimeoutMs, 0, INT64_MAX, [](auto& s) -> auto& { return s.load_timeout_ms; }));
    r.push_back({config_keys::kDisableOptimizers,
                 [](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
                   std::vector<std::string> names;
                   for (size_t at = 0; at <= v.size();) {
                     const size_t comma = std::min(v.find(',', at), v.size());
                     std::string name = v.substr(at, comma - at);
                     name.erase(0, name.find_first_not_of(" \t"));
                     name.erase(name.find_last_not_of(" \t") + 1);
                     if (!name.empty()) names.push_back(std::move(name));
                     at = comma + 1;
                   }
                   SPINDLE_RETURN_IF_ERROR(graph::check_pass_names(names, k));
                   s.disabled_optimizers = std::move(names);
                   return Status::ok();
                 },
                 [](const SessionSettings& s) { return fmt::format("{}", fmt::join(s.disabled_optimizers, ",")); },
                 [](const SessionSettings& s) { return s.disabled_optimizers.empty(); }});
    r.push_back({config_keys::kExternalDataDir,
                 [](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
                   std::error_code ec;
                   if (v.empty() || !std::filesystem::is_directory(v, ec))
                     return invalid_argument(fmt::format("{} = '{}': expected an existing directory", k, v));
                   s.external_data_dir = v;
                   return Status::ok();
                 },
                 [](const SessionSettings& s) { return s.external_data_dir; },
                 [](const SessionSettings& s) { return s.external_data_dir.empty(); }});
    r.push_back(bool_key(config_keys::kDisablePrepacking, [](auto& s) -> auto& { return s.disable_prepacking; }));
    r.push_back(bool_key(config_keys::kSetDenormalAsZero, [](auto& s) -> auto& { return s.set_denormal_as_zero; }));
    r.push_back(bool_key(config_keys::kForceSpinningStop, [](auto& s) -> auto& { return s.force_spinning_stop; }));
    r.push_back(int_key(config_keys::kDynamicBlockBase, 0, 1 << 20, [](auto& s) -> auto& { return s.dynamic_block_base; }));
    r.push_back({config_keys::kOptimizedModelExternalFile,
                 [](SessionSettings& s, const std::string& k, const std::string& v) -> Status {
                   // A plain file name: the loader reads external data only
                   // from inside the model's folder.
                   const bool plain = !v.empty() && v != "." && v != ".." &&
                                      std::all_of(v.begin(), v.end(), [](char c) {
                                        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                                               c == '-';
                                      });
                   if (!plain)
                     return invalid_argument(fmt::format("{} = '{}': expected a file name without a directory "
                                                         "(letters, digits, '.', '_', '-'; the file is written beside "
                                                         "the optimized model)",
                                                         k, v));
                   s.optimized_model_external_file = v;
                   return Status::ok();
                 },
                 [](const SessionSettings& s) { return s.optimized_model_external_file; },
                 [](const SessionSettings& s) { return s.optimized_model_external_file.empty(); }});
    r.push_back(int_key(config_keys::kOptimizedModelExternalMinBytes, 0, INT64_MAX,
                        [](auto& s) -> auto& { return s.optimized_model_external_min_bytes; }));
    return r;
  }();
  return rows;
}

// ONNX Runtime's keys that spindle accepts and does not act on.
const std::vector<std::string>& inert_keys() {
  static const std::vector<std::string> keys = {
      "session.use_env_allocators",
      "session.load_model_format",
      "session.save_model_format",
      "session.disable_quant_qdq",
      "session.disable_double_qdq_remover",
      "session.enable_quant_qdq_cleanup",
      "session.disable_aot_function_inlining",
      "session.use_device_allocator_for_initializers",
      "session.use_ort_model_bytes_directly",
      "session.use_ort_model_bytes_for_initializers",
      "session.qdqisint8allowed",
      "session.x64quantprecision",
      "session.strict_shape_type_inference",
      "session.allow_released_opsets_only",
      "session.node_partition_config_file",
      "session.debug_layout_transformation",
      "session.disable_cpu_ep_fallback",
      "session.save_external_prepacked_constant_initializers",
      "session.collect_node_memory_stats_to_file",
      "session.disable_model_compile",
      "session.fail_on_suboptimal_compiled_model",
      "session.graph_optimizations_loop_level",
      "session.qdq_matmulnbits_accuracy_level",
      "session.enable_dq_matmulnbits_fusion",
      "optimization.enable_gelu_approximation",
      "optimization.enable_cast_chain_elimination",
      "optimization.minimal_build_optimizations",
      "ep.context_enable",
      "ep.context_file_path",
      "ep.context_embed_mode",
      "ep.nnapi.partitioning_stop_ops",
      "mlas.disable_kleidiai",
  };
  return keys;
}

const KeyRow* find_row(const std::string& key) {
  for (const KeyRow& row : table())
    if (key == row.key) return &row;
  return nullptr;
}

bool is_inert(const std::string& key) {
  const auto& keys = inert_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::mutex warned_mu;
std::set<std::string> warned;  // inert keys warned about in this process

void warn_once(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(warned_mu);
    if (!warned.insert(key).second) return;
  }
  SPINDLE_LOG(logging::process_logger(), kWarning,
              "session config key '{}' (value '{}') is an ONNX Runtime setting spindle accepts without acting on it",
              key, value);
}

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

std::vector<std::string> config_keys::all() {
  std::vector<std::string> keys;
  for (const KeyRow& row : table()) keys.emplace_back(row.key);
  return keys;
}

std::vector<std::string> config_keys::accepted_without_effect() { return inert_keys(); }

Status parse_config_entry(SessionSettings& s, const std::string& key, const std::string& value) {
  if (const KeyRow* row = find_row(key)) return row->parse(s, key, value);
  if (is_inert(key)) {
    s.inert_config_entries[key] = value;
    warn_once(key, value);
    return Status::ok();
  }
  std::vector<std::string> known = config_keys::all();
  return invalid_argument(fmt::format("unknown session config key '{}' (value '{}'); did you mean '{}'? known keys: {}",
                                      key, value, closest(key, known), fmt::join(known, ", ")));
}

SessionOptions& SessionOptions::add_config_entry(const std::string& key, const std::string& value) {
  parse_config_entry(*this, key, value).throw_if_error();
  return *this;
}

std::optional<std::string> SessionOptions::config_entry(const std::string& key) const {
  if (const KeyRow* row = find_row(key)) {
    if (row->is_default(*this)) return std::nullopt;
    return row->print(*this);
  }
  auto it = inert_config_entries.find(key);
  if (it == inert_config_entries.end()) return std::nullopt;
  return it->second;
}

std::map<std::string, std::string> SessionOptions::config_entries() const {
  std::map<std::string, std::string> entries = inert_config_entries;
  for (const KeyRow& row : table())
    if (!row.is_default(*this)) entries[row.key] = row.print(*this);
  return entries;
}

namespace detail {
void forget_config_warnings() {
  std::lock_guard<std::mutex> lock(warned_mu);
  warned.clear();
}
}  // namespace detail

}  // namespace spindle
