// api_session_options.cpp — ONNX Runtime's C API over spindle: session options.
#include "capi/capi_internal.h"

namespace spindle::capi {
namespace {

// ---------------------------------------------------------------- session options

OrtStatus* ORT_API_CALL CreateSessionOptions(OrtSessionOptions** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateSessionOptions", out);
  *out = new OrtSessionOptions;
  API_END
}
OrtStatus* ORT_API_CALL CloneSessionOptions(const OrtSessionOptions* in, OrtSessionOptions** out) noexcept {
  API_BEGIN
  CHECK_ARG("CloneSessionOptions", in);
  CHECK_ARG("CloneSessionOptions", out);
  *out = new OrtSessionOptions(*in);
  API_END
}
void ORT_API_CALL ReleaseSessionOptions(OrtSessionOptions* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL SetSessionExecutionMode(OrtSessionOptions* o, ::ExecutionMode mode) noexcept {
  CHECK_ARG("SetSessionExecutionMode", o);
  if (mode != ORT_SEQUENTIAL && mode != ORT_PARALLEL)
    return make_status(ORT_INVALID_ARGUMENT, "SetSessionExecutionMode: mode " + std::to_string(static_cast<int>(mode)) + "; expected ORT_SEQUENTIAL (0) or ORT_PARALLEL (1)");
  o->opts.execution_mode = mode == ORT_PARALLEL ? spindle::ExecutionMode::kParallel : spindle::ExecutionMode::kSequential;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSessionExecutionMode(const OrtSessionOptions* o, ::ExecutionMode* out) noexcept {
  CHECK_ARG("GetSessionExecutionMode", o);
  CHECK_ARG("GetSessionExecutionMode", out);
  *out = o->opts.execution_mode == spindle::ExecutionMode::kParallel ? ORT_PARALLEL : ORT_SEQUENTIAL;
  return nullptr;
}
OrtStatus* ORT_API_CALL EnableProfiling(OrtSessionOptions* o, const ORTCHAR_T* prefix) noexcept {
  CHECK_ARG("EnableProfiling", o);
  API_BEGIN
  o->opts.enable_profiling = true;
  if (prefix && *prefix) o->opts.profile_file_prefix = prefix;
  API_END
}
OrtStatus* ORT_API_CALL DisableProfiling(OrtSessionOptions* o) noexcept {
  CHECK_ARG("DisableProfiling", o);
  o->opts.enable_profiling = false;
  return nullptr;
}
// Memory patterns and the CPU arena are ONNX Runtime allocation strategies;
// spindle plans its buffers its own way. The flags are kept and read back.
OrtStatus* ORT_API_CALL EnableMemPattern(OrtSessionOptions* o) noexcept { CHECK_ARG("EnableMemPattern", o); o->mem_pattern = true; return nullptr; }
OrtStatus* ORT_API_CALL DisableMemPattern(OrtSessionOptions* o) noexcept { CHECK_ARG("DisableMemPattern", o); o->mem_pattern = false; return nullptr; }
OrtStatus* ORT_API_CALL GetMemPatternEnabled(const OrtSessionOptions* o, int* out) noexcept {
  CHECK_ARG("GetMemPatternEnabled", o);
  CHECK_ARG("GetMemPatternEnabled", out);
  *out = o->mem_pattern ? 1 : 0;
  return nullptr;
}
OrtStatus* ORT_API_CALL EnableCpuMemArena(OrtSessionOptions* o) noexcept { CHECK_ARG("EnableCpuMemArena", o); o->cpu_arena = true; return nullptr; }
OrtStatus* ORT_API_CALL DisableCpuMemArena(OrtSessionOptions* o) noexcept { CHECK_ARG("DisableCpuMemArena", o); o->cpu_arena = false; return nullptr; }
OrtStatus* ORT_API_CALL SetOptimizedModelFilePath(OrtSessionOptions* o, const ORTCHAR_T* path) noexcept {
  CHECK_ARG("SetOptimizedModelFilePath", o);
  API_BEGIN
  o->opts.optimized_model_filepath = path ? path : "";
  API_END
}
OrtStatus* ORT_API_CALL SetSessionLogId(OrtSessionOptions* o, const char* id) noexcept {
  CHECK_ARG("SetSessionLogId", o);
  API_BEGIN
  o->opts.log_id = id ? id : "";
  API_END
}
OrtStatus* ORT_API_CALL SetSessionLogVerbosityLevel(OrtSessionOptions* o, int v) noexcept {
  CHECK_ARG("SetSessionLogVerbosityLevel", o);
  o->log_verbosity = v;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetSessionLogSeverityLevel(OrtSessionOptions* o, int v) noexcept {
  CHECK_ARG("SetSessionLogSeverityLevel", o);
  if (v < 0 || v > 4) return make_status(ORT_INVALID_ARGUMENT, "SetSessionLogSeverityLevel: level " + std::to_string(v) + "; expected 0 (verbose) to 4 (fatal)");
  o->opts.log_severity_level = v;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetSessionGraphOptimizationLevel(OrtSessionOptions* o, ::GraphOptimizationLevel level) noexcept {
  CHECK_ARG("SetSessionGraphOptimizationLevel", o);
  using L = spindle::GraphOptimizationLevel;
  switch (level) {
    case ORT_DISABLE_ALL: o->opts.graph_optimization_level = L::kDisableAll; break;
    case ORT_ENABLE_BASIC: o->opts.graph_optimization_level = L::kBasic; break;
    case ORT_ENABLE_EXTENDED: o->opts.graph_optimization_level = L::kExtended; break;
    // ONNX Runtime's layout level adds the NCHWc rewrite, which spindle makes at kAll.
    case ORT_ENABLE_LAYOUT:
    case ORT_ENABLE_ALL: o->opts.graph_optimization_level = L::kAll; break;
    default:
      return make_status(ORT_INVALID_ARGUMENT, "SetSessionGraphOptimizationLevel: level " + std::to_string(static_cast<int>(level)) +
                                                   "; expected 0, 1, 2, 3 or 99");
  }
  return nullptr;
}
OrtStatus* ORT_API_CALL SetIntraOpNumThreads(OrtSessionOptions* o, int n) noexcept {
  CHECK_ARG("SetIntraOpNumThreads", o);
  if (n < 0) return make_status(ORT_INVALID_ARGUMENT, "SetIntraOpNumThreads: " + std::to_string(n) + " threads; expected 0 (automatic) or more");
  o->opts.intra_op_num_threads = n;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetInterOpNumThreads(OrtSessionOptions* o, int n) noexcept {
  CHECK_ARG("SetInterOpNumThreads", o);
  if (n < 0) return make_status(ORT_INVALID_ARGUMENT, "SetInterOpNumThreads: " + std::to_string(n) + " threads; expected 0 (automatic) or more");
  o->opts.inter_op_num_threads = n;
  return nullptr;
}
OrtStatus* ORT_API_CALL AddSessionConfigEntry(OrtSessionOptions* o, const char* key, const char* value) noexcept {
  CHECK_ARG("AddSessionConfigEntry", o);
  CHECK_ARG("AddSessionConfigEntry", key);
  CHECK_ARG("AddSessionConfigEntry", value);
  API_BEGIN
  o->opts.add_config_entry(key, value);
  o->entries[key] = value;
  API_END
}
OrtStatus* ORT_API_CALL HasSessionConfigEntry(const OrtSessionOptions* o, const char* key, int* out) noexcept {
  CHECK_ARG("HasSessionConfigEntry", o);
  CHECK_ARG("HasSessionConfigEntry", key);
  CHECK_ARG("HasSessionConfigEntry", out);
  *out = o->entries.count(key) ? 1 : 0;
  return nullptr;
}
// ONNX Runtime's two-call protocol: value NULL asks for the size (with the
// terminating zero); a buffer too small fails with the size needed.
OrtStatus* copy_out(const char* fn, const std::string& s, char* value, size_t* size) {
  const size_t need = s.size() + 1;
  if (!value) {
    *size = need;
    return nullptr;
  }
  if (*size < need) {
    *size = need;
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the buffer holds " + std::to_string(*size) +
                                                 " bytes; the value needs " + std::to_string(need));
  }
  std::memcpy(value, s.c_str(), need);
  *size = need;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSessionConfigEntry(const OrtSessionOptions* o, const char* key, char* value, size_t* size) noexcept {
  CHECK_ARG("GetSessionConfigEntry", o);
  CHECK_ARG("GetSessionConfigEntry", key);
  CHECK_ARG("GetSessionConfigEntry", size);
  API_BEGIN
  auto it = o->entries.find(key);
  if (it == o->entries.end())
    return make_status(ORT_INVALID_ARGUMENT, std::string("GetSessionConfigEntry: no entry for key '") + key + "'");
  return copy_out("GetSessionConfigEntry", it->second, value, size);
  API_END
}
// Both overrides fill one of two maps, keyed by the dimension's name or
// by its denotation (upper-cased, as ONNX writes them).
OrtStatus* add_dim_override(const char* fn, OrtSessionOptions* o, const char* key, int64_t value, bool denotation) noexcept {
  CHECK_ARG(fn, o);
  if (!key) return null_argument(fn, denotation ? "dim_denotation" : "dim_name");
  if (value < 0)
    return make_status(ORT_INVALID_ARGUMENT,
                       std::string(fn) + ": '" + key + "' set to " + std::to_string(value) + "; expected 0 or more");
  API_BEGIN
  if (denotation)
    o->dim_overrides.by_denotation[DimOverrides::upper(key)] = value;
  else
    o->dim_overrides.by_name[key] = value;
  API_END
}
OrtStatus* ORT_API_CALL AddFreeDimensionOverrideByName(OrtSessionOptions* o, const char* name, int64_t value) noexcept {
  return add_dim_override("AddFreeDimensionOverrideByName", o, name, value, false);
}
OrtStatus* ORT_API_CALL AddFreeDimensionOverride(OrtSessionOptions* o, const char* denotation, int64_t value) noexcept {
  return add_dim_override("AddFreeDimensionOverride", o, denotation, value, true);
}
// The model's external data files, held by the program: read from its
// buffers while a session is created (they may be freed afterwards).
OrtStatus* ORT_API_CALL AddExternalInitializersFromFilesInMemory(OrtSessionOptions* o, const ORTCHAR_T* const* names,
                                                                 char* const* buffers, const size_t* lengths,
                                                                 size_t n) noexcept {
  const char* fn = "AddExternalInitializersFromFilesInMemory";
  CHECK_ARG(fn, o);
  if (n && (!names || !buffers || !lengths))
    return null_argument(fn, !names     ? "external_initializer_file_names"
                             : !buffers ? "external_initializer_file_buffer_array"
                                        : "external_initializer_file_lengths");
  for (size_t i = 0; i < n; ++i) {
    if (!names[i] || !*names[i])
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": file name " + std::to_string(i) + " is NULL or empty");
    if (!buffers[i] && lengths[i])
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the buffer of '" + names[i] + "' is NULL, its length " +
                                                   std::to_string(lengths[i]));
  }
  API_BEGIN
  for (size_t i = 0; i < n; ++i)
    o->external_files[names[i]] = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(buffers[i]), lengths[i]);
  API_END
}
OrtStatus* ORT_API_CALL DisablePerSessionThreads(OrtSessionOptions* o) noexcept {
  CHECK_ARG("DisablePerSessionThreads", o);
  o->opts.use_per_session_threads = false;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetDeterministicCompute(OrtSessionOptions* o, bool) noexcept {
  // spindle's results do not depend on thread counts or timing: always deterministic.
  CHECK_ARG("SetDeterministicCompute", o);
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionOptionsSetCustomCreateThreadFn(OrtSessionOptions* o, OrtCustomCreateThreadFn fn) noexcept {
  CHECK_ARG("SessionOptionsSetCustomCreateThreadFn", o);
  o->create_fn = fn;
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionOptionsSetCustomThreadCreationOptions(OrtSessionOptions* o, void* options) noexcept {
  CHECK_ARG("SessionOptionsSetCustomThreadCreationOptions", o);
  o->create_options = options;
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionOptionsSetCustomJoinThreadFn(OrtSessionOptions* o, OrtCustomJoinThreadFn fn) noexcept {
  CHECK_ARG("SessionOptionsSetCustomJoinThreadFn", o);
  o->join_fn = fn;
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionOptionsAppendExecutionProvider(OrtSessionOptions* o, const char* name, const char* const*,
                                                              const char* const*, size_t) noexcept {
  CHECK_ARG("SessionOptionsAppendExecutionProvider", o);
  CHECK_ARG("SessionOptionsAppendExecutionProvider", name);
  if (std::string(name) == "CPU" || std::string(name) == "CPUExecutionProvider") return nullptr;
  return make_status(ORT_NOT_IMPLEMENTED, std::string("SessionOptionsAppendExecutionProvider: execution provider '") + name +
                                              "' is not available; spindle runs on the CPU only");
}

// An initializer the program supplies for `name`: a tensor value, a name not
// given before (the session checks it against the model's initializer).
OrtStatus* initializer_check(const char* fn, const OrtSessionOptions* o, const char* name, const OrtValue* val) {
  if (!name) return null_argument(fn, "name");
  if (!val) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value for '" + name + "' is NULL");
  if (val->map || val->maps || !val->tensor.is_tensor() || !val->tensor.defined())
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value for '" + name + "' is not a tensor");
  if (o->opts.initializers.count(name))
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": a value for the initializer '" + name + "' was already added");
  return nullptr;
}
// Shared, not copied: the caller's buffer must outlive the sessions (as ONNX Runtime documents).
OrtStatus* ORT_API_CALL AddInitializer(OrtSessionOptions* o, const char* name, const OrtValue* val) noexcept {
  CHECK_ARG("AddInitializer", o);
  API_BEGIN
  if (OrtStatus* s = initializer_check("AddInitializer", o, name, val)) return s;
  o->opts.initializers.emplace(name, val->tensor);
  API_END
}
// Copied when added: the caller may free the values once the session exists
// (ONNX Runtime copies them at creation).
OrtStatus* ORT_API_CALL AddExternalInitializers(OrtSessionOptions* o, const char* const* names, const OrtValue* const* values,
                                                size_t n) noexcept {
  CHECK_ARG("AddExternalInitializers", o);
  if (n && !names) return null_argument("AddExternalInitializers", "initializer_names");
  if (n && !values) return null_argument("AddExternalInitializers", "initializers");
  API_BEGIN
  std::map<std::string, spindle::Tensor> added;
  for (size_t i = 0; i < n; ++i) {
    if (OrtStatus* s = initializer_check("AddExternalInitializers", o, names[i], values[i])) return s;
    if (!added.emplace(names[i], values[i]->tensor.clone()).second)
      return make_status(ORT_INVALID_ARGUMENT, std::string("AddExternalInitializers: '") + names[i] + "' is named twice");
  }
  o->opts.initializers.merge(added);
  API_END
}

// The entries added (AddSessionConfigEntry), in a new set of pairs the caller releases.
OrtStatus* ORT_API_CALL GetSessionOptionsConfigEntries(const OrtSessionOptions* o, OrtKeyValuePairs** out) noexcept {
  CHECK_ARG("GetSessionOptionsConfigEntries", o);
  CHECK_ARG("GetSessionOptionsConfigEntries", out);
  API_BEGIN
  auto kvps = std::make_unique<OrtKeyValuePairs>();
  for (const auto& [key, value] : o->entries) {
    kvps->keys.push_back(key);
    kvps->values.push_back(value);
  }
  kvps->sync();
  *out = kvps.release();
  API_END
}

}  // namespace

void set_session_options_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateSessionOptions) SET(CloneSessionOptions) SET(ReleaseSessionOptions) SET(SetSessionExecutionMode) SET(GetSessionExecutionMode) SET(EnableProfiling) SET(DisableProfiling) SET(SetOptimizedModelFilePath) SET(EnableMemPattern) SET(DisableMemPattern) SET(GetMemPatternEnabled) SET(EnableCpuMemArena) SET(DisableCpuMemArena) SET(SetSessionLogId) SET(SetSessionLogVerbosityLevel) SET(SetSessionLogSeverityLevel) SET(SetSessionGraphOptimizationLevel) SET(SetIntraOpNumThreads) SET(SetInterOpNumThreads) SET(AddSessionConfigEntry) SET(HasSessionConfigEntry) SET(GetSessionConfigEntry) SET(DisablePerSessionThreads) SET(AddFreeDimensionOverrideByName) SET(AddFreeDimensionOverride) SET(AddExternalInitializersFromFilesInMemory) SET(SetDeterministicCompute) SET(SessionOptionsSetCustomCreateThreadFn) SET(SessionOptionsSetCustomThreadCreationOptions) SET(SessionOptionsSetCustomJoinThreadFn) SET(SessionOptionsAppendExecutionProvider) SET(GetSessionOptionsConfigEntries) SET(AddInitializer) SET(AddExternalInitializers)
#undef SET
}

}  // namespace spindle::capi
