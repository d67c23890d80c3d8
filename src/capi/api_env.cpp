// api_env.cpp — ONNX Runtime's C API over spindle: status slots, environments and global thread pools.
#include "capi/capi_internal.h"

#include "spindle/logging.h"

namespace spindle::capi {
namespace {

// ---------------------------------------------------------------- status slots

OrtStatus* ORT_API_CALL CreateStatus(OrtErrorCode code, const char* msg) noexcept {
  return make_status(code, msg ? msg : "");
}
OrtErrorCode ORT_API_CALL GetErrorCode(const OrtStatus* status) noexcept { return status ? status->code : ORT_OK; }
const char* ORT_API_CALL GetErrorMessage(const OrtStatus* status) noexcept {
  return status ? status->message.c_str() : "";
}
void ORT_API_CALL ReleaseStatus(OrtStatus* s) noexcept { delete s; }

// ---------------------------------------------------------------- env

OrtStatus* check_level(const char* fn, OrtLoggingLevel level) {
  if (level < ORT_LOGGING_LEVEL_VERBOSE || level > ORT_LOGGING_LEVEL_FATAL)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": logging level " + std::to_string(static_cast<int>(level)) +
                                                 "; expected 0 (verbose) to 4 (fatal)");
  return nullptr;
}

// The environment's level becomes the process default of spindle's log; a
// custom logger receives every message instead of stderr (the environment's
// log id stands for messages outside a session).
OrtStatus* make_env(const char* fn, OrtLoggingLevel level, const char* logid, const OrtThreadingOptions* tp, OrtEnv** out,
                    OrtLoggingFunction log_fn = nullptr, void* log_param = nullptr) {
  API_BEGIN
  if (!out) return null_argument(fn, "out");
  if (OrtStatus* bad = check_level(fn, level)) return bad;
  auto env = std::make_unique<OrtEnv>();
  env->level = level;
  env->logid = logid ? logid : "";
  if (tp) {
    spindle::ThreadingOptions intra{.name = "intra_op"}, inter{.name = "inter_op"};
    intra.num_threads = tp->intra_threads;
    inter.num_threads = tp->inter_threads;
    intra.allow_spinning = inter.allow_spinning = tp->allow_spinning;
    if (!tp->intra_affinity.empty()) {
      auto aff = spindle::parse_affinity_string("SetGlobalIntraOpThreadAffinity", tp->intra_affinity);
      if (!aff.is_ok()) return from_status(aff.status());
      intra.affinities = aff.value();
    }
    if (tp->create_fn) {
      ThreadHooks* hooks = intern_hooks(tp->create_fn, tp->join_fn, tp->create_options);
      for (auto* o : {&intra, &inter}) {
        o->create_thread = create_thread_trampoline;
        o->join_thread = join_thread_trampoline;
        o->custom_thread_options = hooks;
      }
    }
    if (tp->denormal_as_zero)
      for (auto* o : {&intra, &inter}) o->on_worker_start = [](int) { spindle::set_denormals_as_zero_on_this_thread(); };
    auto created = spindle::Environment::create(std::move(intra), std::move(inter));
    if (!created.is_ok()) return from_status(created.status());
    env->env = std::move(created).value();
    env->global_pools = true;
  }
  spindle::set_default_log_severity(static_cast<spindle::LogSeverity>(level));
  if (log_fn) {
    spindle::set_log_sink([log_fn, log_param, env_id = env->logid](const spindle::LogMessage& m) {
      const std::string category(m.category), id(m.log_id.empty() ? std::string_view(env_id) : m.log_id),
          location(m.code_location), message(m.message);
      log_fn(log_param, static_cast<OrtLoggingLevel>(m.severity), category.c_str(), id.c_str(), location.c_str(),
             message.c_str());
    });
    env->custom_logger = true;
  }
  *out = env.release();
  API_END
}

OrtStatus* ORT_API_CALL CreateEnv(OrtLoggingLevel level, const char* logid, OrtEnv** out) noexcept {
  return make_env("CreateEnv", level, logid, nullptr, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithCustomLogger(OrtLoggingFunction log_fn, void* param, OrtLoggingLevel level,
                                                  const char* logid, OrtEnv** out) noexcept {
  if (!log_fn) return null_argument("CreateEnvWithCustomLogger", "logging_function");
  return make_env("CreateEnvWithCustomLogger", level, logid, nullptr, out, log_fn, param);
}
OrtStatus* ORT_API_CALL CreateEnvWithGlobalThreadPools(OrtLoggingLevel level, const char* logid,
                                                       const OrtThreadingOptions* tp, OrtEnv** out) noexcept {
  if (!tp) return null_argument("CreateEnvWithGlobalThreadPools", "tp_options");
  return make_env("CreateEnvWithGlobalThreadPools", level, logid, tp, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithCustomLoggerAndGlobalThreadPools(OrtLoggingFunction log_fn, void* param,
                                                                      OrtLoggingLevel level, const char* logid,
                                                                      const OrtThreadingOptions* tp, OrtEnv** out) noexcept {
  if (!log_fn) return null_argument("CreateEnvWithCustomLoggerAndGlobalThreadPools", "logging_function");
  if (!tp) return null_argument("CreateEnvWithCustomLoggerAndGlobalThreadPools", "tp_options");
  return make_env("CreateEnvWithCustomLoggerAndGlobalThreadPools", level, logid, tp, out, log_fn, param);
}
OrtStatus* ORT_API_CALL CreateEnvWithOptions(const OrtEnvCreationOptions* options, OrtEnv** out) noexcept {
  CHECK_ARG("CreateEnvWithOptions", options);
  if (options->version < 1 || options->version > ORT_API_VERSION)
    return make_status(ORT_INVALID_ARGUMENT, "CreateEnvWithOptions: options version " + std::to_string(options->version) +
                                                 "; expected 1 to " + std::to_string(ORT_API_VERSION));
  // Environment config entries are ONNX Runtime's (allocators, EP
  // libraries); spindle has none of its own and does not read them.
  return make_env("CreateEnvWithOptions", static_cast<OrtLoggingLevel>(options->logging_severity_level), options->log_id,
                  options->threading_options, out, options->custom_logging_function, options->custom_logging_param);
}
void ORT_API_CALL ReleaseEnv(OrtEnv* env) noexcept {
  if (env && env->custom_logger) spindle::set_log_sink(nullptr);
  delete env;
}
OrtStatus* ORT_API_CALL EnableTelemetryEvents(const OrtEnv*) noexcept { return nullptr; }
OrtStatus* ORT_API_CALL DisableTelemetryEvents(const OrtEnv*) noexcept { return nullptr; }
OrtStatus* ORT_API_CALL SetLanguageProjection(const OrtEnv* env, OrtLanguageProjection) noexcept {
  CHECK_ARG("SetLanguageProjection", env);
  return nullptr;
}
OrtStatus* ORT_API_CALL UpdateEnvWithCustomLogLevel(OrtEnv* env, OrtLoggingLevel level) noexcept {
  CHECK_ARG("UpdateEnvWithCustomLogLevel", env);
  if (OrtStatus* bad = check_level("UpdateEnvWithCustomLogLevel", level)) return bad;
  env->level = level;
  spindle::set_default_log_severity(static_cast<spindle::LogSeverity>(level));
  return nullptr;
}

// ---------------------------------------------------------------- threading options

OrtStatus* ORT_API_CALL CreateThreadingOptions(OrtThreadingOptions** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateThreadingOptions", out);
  *out = new OrtThreadingOptions;
  API_END
}
void ORT_API_CALL ReleaseThreadingOptions(OrtThreadingOptions* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL SetGlobalIntraOpNumThreads(OrtThreadingOptions* tp, int n) noexcept {
  CHECK_ARG("SetGlobalIntraOpNumThreads", tp);
  if (n < 0) return make_status(ORT_INVALID_ARGUMENT, "SetGlobalIntraOpNumThreads: " + std::to_string(n) + " threads; expected 0 (automatic) or more");
  tp->intra_threads = n;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalInterOpNumThreads(OrtThreadingOptions* tp, int n) noexcept {
  CHECK_ARG("SetGlobalInterOpNumThreads", tp);
  if (n < 0) return make_status(ORT_INVALID_ARGUMENT, "SetGlobalInterOpNumThreads: " + std::to_string(n) + " threads; expected 0 (automatic) or more");
  tp->inter_threads = n;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalSpinControl(OrtThreadingOptions* tp, int allow_spinning) noexcept {
  CHECK_ARG("SetGlobalSpinControl", tp);
  if (allow_spinning != 0 && allow_spinning != 1)
    return make_status(ORT_INVALID_ARGUMENT, "SetGlobalSpinControl: allow_spinning is " + std::to_string(allow_spinning) + "; expected 0 or 1");
  tp->allow_spinning = allow_spinning != 0;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalDenormalAsZero(OrtThreadingOptions* tp) noexcept {
  CHECK_ARG("SetGlobalDenormalAsZero", tp);
  tp->denormal_as_zero = true;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalIntraOpThreadAffinity(OrtThreadingOptions* tp, const char* affinity) noexcept {
  CHECK_ARG("SetGlobalIntraOpThreadAffinity", tp);
  CHECK_ARG("SetGlobalIntraOpThreadAffinity", affinity);
  API_BEGIN
  auto parsed = spindle::parse_affinity_string("SetGlobalIntraOpThreadAffinity", affinity);
  if (!parsed.is_ok()) return from_status(parsed.status());
  tp->intra_affinity = affinity;
  API_END
}
OrtStatus* ORT_API_CALL SetGlobalCustomCreateThreadFn(OrtThreadingOptions* tp, OrtCustomCreateThreadFn fn) noexcept {
  CHECK_ARG("SetGlobalCustomCreateThreadFn", tp);
  tp->create_fn = fn;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalCustomThreadCreationOptions(OrtThreadingOptions* tp, void* options) noexcept {
  CHECK_ARG("SetGlobalCustomThreadCreationOptions", tp);
  tp->create_options = options;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetGlobalCustomJoinThreadFn(OrtThreadingOptions* tp, OrtCustomJoinThreadFn fn) noexcept {
  CHECK_ARG("SetGlobalCustomJoinThreadFn", tp);
  tp->join_fn = fn;
  return nullptr;
}


// ---------------------------------------------------------------- arenas and shared allocators

constexpr const char* kArenaKeys[] = {"max_mem", "arena_extend_strategy", "initial_chunk_size_bytes",
                                      "max_dead_bytes_per_chunk", "initial_growth_chunk_size_bytes",
                                      "max_power_of_two_extend_bytes"};

OrtStatus* ORT_API_CALL CreateArenaCfg(size_t max_mem, int extend_strategy, int initial_chunk, int max_dead,
                                       OrtArenaCfg** out) noexcept {
  CHECK_ARG("CreateArenaCfg", out);
  API_BEGIN
  auto cfg = std::make_unique<OrtArenaCfg>();
  cfg->values["max_mem"] = max_mem;
  // -1: the default (left out).
  if (extend_strategy >= 0) cfg->values["arena_extend_strategy"] = static_cast<size_t>(extend_strategy);
  if (initial_chunk >= 0) cfg->values["initial_chunk_size_bytes"] = static_cast<size_t>(initial_chunk);
  if (max_dead >= 0) cfg->values["max_dead_bytes_per_chunk"] = static_cast<size_t>(max_dead);
  *out = cfg.release();
  API_END
}
OrtStatus* ORT_API_CALL CreateArenaCfgV2(const char* const* keys, const size_t* values, size_t n, OrtArenaCfg** out) noexcept {
  CHECK_ARG("CreateArenaCfgV2", out);
  if (n) {
    CHECK_ARG("CreateArenaCfgV2", keys);
    CHECK_ARG("CreateArenaCfgV2", values);
  }
  API_BEGIN
  auto cfg = std::make_unique<OrtArenaCfg>();
  for (size_t i = 0; i < n; ++i) {
    if (!keys[i] || std::none_of(std::begin(kArenaKeys), std::end(kArenaKeys), [&](const char* k) { return std::strcmp(k, keys[i]) == 0; })) {
      std::string known;
      for (const char* k : kArenaKeys) known += std::string(known.empty() ? "" : ", ") + k;
      return make_status(ORT_INVALID_ARGUMENT, std::string("CreateArenaCfgV2: unknown key '") + (keys[i] ? keys[i] : "(null)") +
                                                   "'; the keys are " + known);
    }
    cfg->values[keys[i]] = values[i];
  }
  *out = cfg.release();
  API_END
}
void ORT_API_CALL ReleaseArenaCfg(OrtArenaCfg* cfg) noexcept { delete cfg; }

// An allocator shared by the environment's sessions: CPU memory only.
// Registering one again replaces it (as in ONNX Runtime).
OrtStatus* register_shared(const char* fn, OrtEnv* env, const OrtMemoryInfo* info) {
  if (!env) return null_argument(fn, "env");
  if (!info) return null_argument(fn, "mem_info");
  if (info->name != "Cpu")
    return make_status(ORT_NOT_IMPLEMENTED, std::string(fn) + ": memory '" + info->name + "'; spindle has CPU memory only");
  env->shared_allocators[info->name] = 1;
  return nullptr;
}
OrtStatus* ORT_API_CALL CreateAndRegisterAllocator(OrtEnv* env, const OrtMemoryInfo* info, const OrtArenaCfg*) noexcept {
  API_BEGIN
  return register_shared("CreateAndRegisterAllocator", env, info);
  API_END
}
OrtStatus* ORT_API_CALL CreateAndRegisterAllocatorV2(OrtEnv* env, const char* provider, const OrtMemoryInfo* info,
                                                     const OrtArenaCfg*, const char* const*, const char* const*,
                                                     size_t) noexcept {
  CHECK_ARG("CreateAndRegisterAllocatorV2", provider);
  if (std::strcmp(provider, "CPUExecutionProvider") != 0 && std::strcmp(provider, "CPU") != 0)
    return make_status(ORT_NOT_IMPLEMENTED, std::string("CreateAndRegisterAllocatorV2: provider '") + provider +
                                                "'; spindle has the CPU provider only");
  API_BEGIN
  return register_shared("CreateAndRegisterAllocatorV2", env, info);
  API_END
}
OrtStatus* ORT_API_CALL RegisterAllocator(OrtEnv* env, OrtAllocator* allocator) noexcept {
  CHECK_ARG("RegisterAllocator", allocator);
  if (!allocator->Info) return null_argument("RegisterAllocator", "allocator->Info");
  API_BEGIN
  return register_shared("RegisterAllocator", env, allocator->Info(allocator));
  API_END
}
OrtStatus* ORT_API_CALL UnregisterAllocator(OrtEnv* env, const OrtMemoryInfo* info) noexcept {
  CHECK_ARG("UnregisterAllocator", env);
  CHECK_ARG("UnregisterAllocator", info);
  API_BEGIN
  if (!env->shared_allocators.erase(info->name))
    return make_status(ORT_INVALID_ARGUMENT, "UnregisterAllocator: no allocator is registered for memory '" + info->name + "'");
  API_END
}

}  // namespace

void set_env_slots(OrtApi& api) {
#define SET(name) api.name = name;
  SET(CreateStatus) SET(GetErrorCode) SET(GetErrorMessage) SET(ReleaseStatus) SET(CreateEnv) SET(CreateEnvWithCustomLogger) SET(CreateEnvWithGlobalThreadPools) SET(CreateEnvWithCustomLoggerAndGlobalThreadPools) SET(CreateEnvWithOptions) SET(ReleaseEnv) SET(EnableTelemetryEvents) SET(DisableTelemetryEvents) SET(SetLanguageProjection) SET(UpdateEnvWithCustomLogLevel) SET(CreateThreadingOptions) SET(ReleaseThreadingOptions) SET(SetGlobalIntraOpNumThreads) SET(SetGlobalInterOpNumThreads) SET(SetGlobalSpinControl) SET(SetGlobalDenormalAsZero) SET(SetGlobalIntraOpThreadAffinity) SET(SetGlobalCustomCreateThreadFn) SET(SetGlobalCustomThreadCreationOptions) SET(SetGlobalCustomJoinThreadFn) SET(CreateArenaCfg) SET(CreateArenaCfgV2) SET(ReleaseArenaCfg) SET(CreateAndRegisterAllocator) SET(CreateAndRegisterAllocatorV2) SET(RegisterAllocator) SET(UnregisterAllocator)
#undef SET
}

}  // namespace spindle::capi
