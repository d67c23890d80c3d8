// api.cpp — ONNX Runtime's C API (include/onnxruntime/onnxruntime_c_api.h)
// over spindle's C++ API. Each Ort* handle is a small struct holding the
// spindle object; every entry point catches exceptions and turns them into
// an OrtStatus. Slots spindle does not implement answer ORT_NOT_IMPLEMENTED
// naming the function (docs/capi.md lists the subset).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "onnxruntime/onnxruntime_c_api.h"
#include "spindle/environment.h"
#include "spindle/session.h"
#include "spindle/status.h"
#include "spindle/tensor.h"
#include "session/denormals.h"

// ---------------------------------------------------------------- handles

struct OrtStatus {
  OrtErrorCode code;
  std::string message;
};

struct OrtThreadingOptions {
  int intra_threads = 0, inter_threads = 0;
  bool allow_spinning = true;
  bool denormal_as_zero = false;
  std::string intra_affinity;
  OrtCustomCreateThreadFn create_fn = nullptr;
  OrtCustomJoinThreadFn join_fn = nullptr;
  void* create_options = nullptr;
};

struct OrtEnv {
  std::shared_ptr<spindle::Environment> env;  // null: the default Environment
  bool global_pools = false;
  OrtLoggingLevel level = ORT_LOGGING_LEVEL_WARNING;
  std::string logid;
};

struct OrtSessionOptions {
  spindle::SessionOptions opts;
  std::map<std::string, std::string> entries;  // as added, for Get/HasSessionConfigEntry
  std::string log_id;
  int log_severity = 2, log_verbosity = 0;
  bool mem_pattern = true, cpu_arena = true;
  OrtCustomCreateThreadFn create_fn = nullptr;
  OrtCustomJoinThreadFn join_fn = nullptr;
  void* create_options = nullptr;
  // AddFreeDimensionOverrideByName: symbolic dimension name -> its value.
  std::map<std::string, int64_t> dim_overrides;
};

struct OrtSession {
  std::unique_ptr<spindle::InferenceSession> session;
  std::shared_ptr<spindle::Environment> env;  // keeps the global pools' Environment alive
  std::map<std::string, int64_t> dim_overrides;
};

struct OrtValue {
  spindle::Tensor tensor;
};

struct OrtMemoryInfo {
  std::string name = "Cpu";
  OrtAllocatorType type = OrtDeviceAllocator;
  int id = 0;
  OrtMemType mem_type = OrtMemTypeDefault;
};

struct OrtRunOptions {
  spindle::RunOptions run;
  int severity = 2, verbosity = 0;
  std::map<std::string, std::string> entries;
};

struct OrtTensorTypeAndShapeInfo {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  std::vector<int64_t> dims;
  std::vector<std::string> names;  // symbolic dimension names ("" when none)
  bool has_shape = true;
};

struct OrtSequenceTypeInfo;
struct OrtOptionalTypeInfo;

// A value's type: a tensor (`tensor`), a sequence (`sequence`: its element
// type) or an optional (`optional`: what it holds). Immutable once built, so
// copies share the parts.
struct OrtTypeInfo {
  ONNXType type = ONNX_TYPE_UNKNOWN;
  OrtTensorTypeAndShapeInfo tensor;
  std::string denotation;
  std::shared_ptr<OrtSequenceTypeInfo> sequence;
  std::shared_ptr<OrtOptionalTypeInfo> optional;
};

struct OrtSequenceTypeInfo {
  OrtTypeInfo element;
};

struct OrtOptionalTypeInfo {
  OrtTypeInfo contained;
};

// Ordered string pairs; keys unique (adding an existing key replaces its value).
struct OrtKeyValuePairs {
  std::vector<std::string> keys, values;
  std::vector<const char*> key_ptrs, value_ptrs;  // views for GetKeyValuePairs
  void sync() {
    key_ptrs.clear();
    value_ptrs.clear();
    for (size_t i = 0; i < keys.size(); ++i) {
      key_ptrs.push_back(keys[i].c_str());
      value_ptrs.push_back(values[i].c_str());
    }
  }
};

struct OrtModelMetadata {
  spindle::ModelMetadata meta;
};

namespace {

// ---------------------------------------------------------------- statuses

OrtStatus* make_status(OrtErrorCode code, std::string message) {
  return new (std::nothrow) OrtStatus{code, std::move(message)};
}

OrtStatus* not_implemented(const char* name) {
  return make_status(ORT_NOT_IMPLEMENTED, std::string(name) + " is not implemented by spindle's ONNX Runtime C API");
}

OrtStatus* index_error(const char* fn, size_t index, size_t count) {
  return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) + " is out of range; there are " + std::to_string(count));
}

OrtStatus* null_argument(const char* fn, const char* arg) {
  return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": argument '" + arg + "' is NULL");
}

// What a spindle failure becomes. `creating` is true while a session is
// created (a missing file is ORT_NO_SUCHFILE, an unparsable one
// ORT_INVALID_PROTOBUF); in a run an unknown name is a bad argument.
OrtErrorCode code_of(const spindle::Status& s, bool creating) {
  using spindle::StatusCode;
  switch (s.code()) {
    case StatusCode::kOk: return ORT_OK;
    case StatusCode::kInvalidArgument:
      if (creating && (s.message().find("not a valid ONNX model") != std::string::npos ||
                       s.message().find("protobuf") != std::string::npos))
        return ORT_INVALID_PROTOBUF;
      return ORT_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return creating ? ORT_NO_SUCHFILE : ORT_INVALID_ARGUMENT;
    case StatusCode::kFailedPrecondition: return ORT_FAIL;
    case StatusCode::kUnsupported: return ORT_NOT_IMPLEMENTED;
    case StatusCode::kCancelled: return ORT_FAIL;
    case StatusCode::kRuntimeError: return ORT_RUNTIME_EXCEPTION;
    case StatusCode::kInternal: return ORT_FAIL;
    case StatusCode::kResourceExhausted: return ORT_RUNTIME_EXCEPTION;
  }
  return ORT_FAIL;
}

OrtStatus* from_status(const spindle::Status& s, bool creating = false) {
  if (s.is_ok()) return nullptr;
  return make_status(code_of(s, creating), s.message());
}

#define API_BEGIN try {
#define API_END_CTX(creating)                                                         \
  }                                                                                    \
  catch (const spindle::Error& e) {                                                    \
    return from_status(e.status(), creating);                                          \
  }                                                                                    \
  catch (const std::bad_alloc&) {                                                      \
    return make_status(ORT_FAIL, "out of memory");                                     \
  }                                                                                    \
  catch (const std::exception& e) {                                                    \
    return make_status(ORT_RUNTIME_EXCEPTION, e.what());                               \
  }                                                                                    \
  catch (...) {                                                                        \
    return make_status(ORT_RUNTIME_EXCEPTION, "unknown exception");                    \
  }                                                                                    \
  return nullptr;
#define API_END API_END_CTX(false)
#define CHECK_ARG(fn, arg) \
  if (!(arg)) return null_argument(fn, #arg)

// ---------------------------------------------------------------- types

bool dtype_from_ort(ONNXTensorElementDataType t, spindle::DataType* out) {
  if (t <= ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED || t > ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 ||
      t == ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128)
    return false;
  *out = static_cast<spindle::DataType>(t);
  return true;
}

ONNXTensorElementDataType dtype_to_ort(spindle::DataType t) { return static_cast<ONNXTensorElementDataType>(t); }

OrtStatus* unsupported_type(const char* fn, ONNXTensorElementDataType t) {
  return make_status(ORT_NOT_IMPLEMENTED, std::string(fn) + ": element type " + std::to_string(static_cast<int>(t)) +
                                              " is not supported (spindle supports float, double, float16, bool, "
                                              "string and the 8-64 bit integers)");
}

// A graph input's or output's type; dimensions named in `overrides` read
// as their fixed value (no longer symbolic), as ONNX Runtime reports them.
// A sequence of `dtype` tensors (their shapes unknown).
OrtTypeInfo sequence_type(spindle::DataType dtype) {
  OrtTypeInfo seq;
  seq.type = ONNX_TYPE_SEQUENCE;
  seq.sequence = std::make_shared<OrtSequenceTypeInfo>();
  seq.sequence->element.type = ONNX_TYPE_TENSOR;
  seq.sequence->element.tensor.type = dtype_to_ort(dtype);
  seq.sequence->element.tensor.has_shape = false;
  return seq;
}

OrtTypeInfo* type_info_of(const spindle::TensorInfo& info, const std::map<std::string, int64_t>& overrides) {
  if (info.is_sequence || info.is_optional) {
    OrtTypeInfo core;
    if (info.is_sequence) {
      core = sequence_type(info.dtype);
    } else {
      spindle::TensorInfo plain = info;
      plain.is_optional = false;
      std::unique_ptr<OrtTypeInfo> t(type_info_of(plain, overrides));
      core = *t;
    }
    if (!info.is_optional) return new OrtTypeInfo(std::move(core));
    auto* ti = new OrtTypeInfo;
    ti->type = ONNX_TYPE_OPTIONAL;
    ti->optional = std::make_shared<OrtOptionalTypeInfo>();
    ti->optional->contained = std::move(core);
    return ti;
  }
  auto* ti = new OrtTypeInfo;
  ti->type = ONNX_TYPE_TENSOR;
  ti->tensor.type = dtype_to_ort(info.dtype);
  ti->tensor.dims = info.shape;
  ti->tensor.names.assign(info.shape.size(), "");
  for (size_t i = 0; i < info.dim_names.size() && i < info.shape.size(); ++i) {
    auto it = overrides.find(info.dim_names[i]);
    if (it != overrides.end() && ti->tensor.dims[i] < 0) {
      ti->tensor.dims[i] = it->second;
    } else {
      ti->tensor.names[i] = info.dim_names[i];
    }
  }
  return ti;
}

OrtTensorTypeAndShapeInfo* shape_info_of(const spindle::Tensor& t) {
  auto* info = new OrtTensorTypeAndShapeInfo;
  info->type = dtype_to_ort(t.dtype());
  info->dims = t.shape();
  info->names.assign(t.shape().size(), "");
  return info;
}

// ---------------------------------------------------------------- allocator

const OrtMemoryInfo kCpuInfo{};

void* ORT_API_CALL cpu_alloc(OrtAllocator*, size_t size) {
  size_t bytes = (std::max<size_t>(size, 1) + 63) / 64 * 64;
  return std::aligned_alloc(64, bytes);
}
void ORT_API_CALL cpu_free(OrtAllocator*, void* p) { std::free(p); }
const OrtMemoryInfo* ORT_API_CALL cpu_info(const OrtAllocator*) { return &kCpuInfo; }
void* ORT_API_CALL cpu_reserve(OrtAllocator* a, size_t size) { return cpu_alloc(a, size); }

OrtAllocator make_cpu_allocator() {
  OrtAllocator a{};
  a.version = ORT_API_VERSION;
  a.Alloc = cpu_alloc;
  a.Free = cpu_free;
  a.Info = cpu_info;
  a.Reserve = cpu_reserve;
  return a;
}
OrtAllocator g_default_allocator = make_cpu_allocator();

char* copy_string(OrtAllocator* allocator, const std::string& s) {
  auto* p = static_cast<char*>(allocator->Alloc(allocator, s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// ---------------------------------------------------------------- custom threads

// ORT's thread callbacks return an OrtCustomThreadHandle; spindle's hooks
// take void* callbacks. A context (interned, never freed: pools may outlive
// the options that named it) carries the user's pair; each created thread
// gets a record remembering its handle and the join function.
struct ThreadHooks {
  OrtCustomCreateThreadFn create;
  OrtCustomJoinThreadFn join;
  void* options;
};
struct ThreadRecord {
  OrtCustomThreadHandle handle;
  OrtCustomJoinThreadFn join;
};

ThreadHooks* intern_hooks(OrtCustomCreateThreadFn c, OrtCustomJoinThreadFn j, void* o) {
  static std::mutex mu;
  static std::deque<ThreadHooks> all;
  std::lock_guard<std::mutex> lock(mu);
  for (auto& h : all)
    if (h.create == c && h.join == j && h.options == o) return &h;
  all.push_back({c, j, o});
  return &all.back();
}

void* create_thread_trampoline(void* ctx, spindle::ThreadWorkFn work, void* arg) {
  auto* hooks = static_cast<ThreadHooks*>(ctx);
  OrtCustomThreadHandle h = hooks->create(hooks->options, work, arg);
  if (!h) return nullptr;
  return new ThreadRecord{h, hooks->join};
}

void join_thread_trampoline(void* handle) {
  auto* rec = static_cast<ThreadRecord*>(handle);
  rec->join(rec->handle);
  delete rec;
}

OrtStatus* hooks_check(const char* fn, OrtCustomCreateThreadFn c, OrtCustomJoinThreadFn j) {
  if ((c == nullptr) != (j == nullptr))
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) +
                                                 ": a custom create-thread function needs a custom join-thread "
                                                 "function and the other way round; set both or neither");
  return nullptr;
}

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

OrtStatus* make_env(const char* fn, OrtLoggingLevel level, const char* logid, const OrtThreadingOptions* tp, OrtEnv** out) {
  API_BEGIN
  if (!out) return null_argument(fn, "out");
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
  *out = env.release();
  API_END
}

OrtStatus* ORT_API_CALL CreateEnv(OrtLoggingLevel level, const char* logid, OrtEnv** out) noexcept {
  return make_env("CreateEnv", level, logid, nullptr, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithCustomLogger(OrtLoggingFunction, void*, OrtLoggingLevel level, const char* logid,
                                                  OrtEnv** out) noexcept {
  return make_env("CreateEnvWithCustomLogger", level, logid, nullptr, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithGlobalThreadPools(OrtLoggingLevel level, const char* logid,
                                                       const OrtThreadingOptions* tp, OrtEnv** out) noexcept {
  if (!tp) return null_argument("CreateEnvWithGlobalThreadPools", "tp_options");
  return make_env("CreateEnvWithGlobalThreadPools", level, logid, tp, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithCustomLoggerAndGlobalThreadPools(OrtLoggingFunction, void*, OrtLoggingLevel level,
                                                                      const char* logid, const OrtThreadingOptions* tp,
                                                                      OrtEnv** out) noexcept {
  if (!tp) return null_argument("CreateEnvWithCustomLoggerAndGlobalThreadPools", "tp_options");
  return make_env("CreateEnvWithCustomLoggerAndGlobalThreadPools", level, logid, tp, out);
}
OrtStatus* ORT_API_CALL CreateEnvWithOptions(const OrtEnvCreationOptions* options, OrtEnv** out) noexcept {
  CHECK_ARG("CreateEnvWithOptions", options);
  if (options->version < 1 || options->version > ORT_API_VERSION)
    return make_status(ORT_INVALID_ARGUMENT, "CreateEnvWithOptions: options version " + std::to_string(options->version) +
                                                 "; expected 1 to " + std::to_string(ORT_API_VERSION));
  // Environment config entries are ONNX Runtime's (allocators, EP
  // libraries); spindle has none of its own and does not read them.
  return make_env("CreateEnvWithOptions", static_cast<OrtLoggingLevel>(options->logging_severity_level), options->log_id,
                  options->threading_options, out);
}
void ORT_API_CALL ReleaseEnv(OrtEnv* env) noexcept { delete env; }
OrtStatus* ORT_API_CALL EnableTelemetryEvents(const OrtEnv*) noexcept { return nullptr; }
OrtStatus* ORT_API_CALL DisableTelemetryEvents(const OrtEnv*) noexcept { return nullptr; }
OrtStatus* ORT_API_CALL SetLanguageProjection(const OrtEnv* env, OrtLanguageProjection) noexcept {
  CHECK_ARG("SetLanguageProjection", env);
  return nullptr;
}
OrtStatus* ORT_API_CALL UpdateEnvWithCustomLogLevel(OrtEnv* env, OrtLoggingLevel level) noexcept {
  CHECK_ARG("UpdateEnvWithCustomLogLevel", env);
  env->level = level;
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
OrtStatus* ORT_API_CALL SetSessionExecutionMode(OrtSessionOptions* o, ExecutionMode mode) noexcept {
  CHECK_ARG("SetSessionExecutionMode", o);
  if (mode != ORT_SEQUENTIAL && mode != ORT_PARALLEL)
    return make_status(ORT_INVALID_ARGUMENT, "SetSessionExecutionMode: mode " + std::to_string(static_cast<int>(mode)) + "; expected ORT_SEQUENTIAL (0) or ORT_PARALLEL (1)");
  o->opts.execution_mode = mode == ORT_PARALLEL ? spindle::ExecutionMode::kParallel : spindle::ExecutionMode::kSequential;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSessionExecutionMode(const OrtSessionOptions* o, ExecutionMode* out) noexcept {
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
OrtStatus* ORT_API_CALL SetSessionLogId(OrtSessionOptions* o, const char* id) noexcept {
  CHECK_ARG("SetSessionLogId", o);
  API_BEGIN
  o->log_id = id ? id : "";
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
  o->log_severity = v;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetSessionGraphOptimizationLevel(OrtSessionOptions* o, GraphOptimizationLevel level) noexcept {
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
OrtStatus* ORT_API_CALL AddFreeDimensionOverrideByName(OrtSessionOptions* o, const char* name, int64_t value) noexcept {
  CHECK_ARG("AddFreeDimensionOverrideByName", o);
  CHECK_ARG("AddFreeDimensionOverrideByName", name);
  if (value < 0)
    return make_status(ORT_INVALID_ARGUMENT, std::string("AddFreeDimensionOverrideByName: '") + name + "' set to " +
                                                 std::to_string(value) + "; expected 0 or more");
  API_BEGIN
  o->dim_overrides[name] = value;
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

// ---------------------------------------------------------------- sessions

OrtStatus* finish_session(const OrtEnv* env, const OrtSessionOptions* options, OrtSession** out,
                          const std::function<std::unique_ptr<spindle::InferenceSession>(const spindle::SessionOptions&,
                                                                                         spindle::Environment*)>& make) {
  spindle::SessionOptions opts = options ? options->opts : spindle::SessionOptions{};
  if (!opts.use_per_session_threads) {
    // As in ONNX Runtime, a session on the global pools ignores its own
    // thread settings (the pools were configured on the OrtEnv).
    opts.intra_op = spindle::ThreadingOptions{.name = "intra_op"};
    opts.inter_op = spindle::ThreadingOptions{.name = "inter_op"};
    opts.set_denormal_as_zero = false;
  } else if (options) {
    if (OrtStatus* s = hooks_check("CreateSession", options->create_fn, options->join_fn)) return s;
    if (options->create_fn) {
      opts.custom_create_thread_fn = create_thread_trampoline;
      opts.custom_join_thread_fn = join_thread_trampoline;
      opts.custom_thread_creation_options = intern_hooks(options->create_fn, options->join_fn, options->create_options);
    }
  }
  auto session = std::make_unique<OrtSession>();
  session->env = env ? env->env : nullptr;
  session->session = make(opts, session->env.get());
  if (options) session->dim_overrides = options->dim_overrides;
  *out = session.release();
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateSession(const OrtEnv* env, const ORTCHAR_T* path, const OrtSessionOptions* options,
                                      OrtSession** out) noexcept {
  CHECK_ARG("CreateSession", env);
  CHECK_ARG("CreateSession", path);
  CHECK_ARG("CreateSession", out);
  API_BEGIN
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_status(ORT_NO_SUCHFILE, std::string("Load model from ") + path + " failed: file does not exist");
  return finish_session(env, options, out, [&](const spindle::SessionOptions& o, spindle::Environment* e) {
    return spindle::InferenceSession::create(path, o, e);
  });
  API_END_CTX(true)
}
OrtStatus* ORT_API_CALL CreateSessionFromArray(const OrtEnv* env, const void* data, size_t len,
                                               const OrtSessionOptions* options, OrtSession** out) noexcept {
  CHECK_ARG("CreateSessionFromArray", env);
  CHECK_ARG("CreateSessionFromArray", data);
  CHECK_ARG("CreateSessionFromArray", out);
  API_BEGIN
  return finish_session(env, options, out, [&](const spindle::SessionOptions& o, spindle::Environment* e) {
    return spindle::InferenceSession::create_from_bytes(std::span<const uint8_t>(static_cast<const uint8_t*>(data), len), o, e);
  });
  API_END_CTX(true)
}
void ORT_API_CALL ReleaseSession(OrtSession* s) noexcept { delete s; }

// The feeds and output names of a run, checked.
OrtStatus* prepare_run(const char* fn, OrtSession* session, const char* const* input_names, const OrtValue* const* inputs,
                       size_t input_len, const char* const* output_names, size_t output_len, OrtValue** outputs,
                       spindle::Feeds& feeds, std::vector<std::string>& names) {
  if (!session) return null_argument(fn, "session");
  if (input_len && (!input_names || !inputs)) return null_argument(fn, !input_names ? "input_names" : "inputs");
  if (!output_names) return null_argument(fn, "output_names");
  if (!outputs) return null_argument(fn, "outputs");
  if (output_len == 0) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output_names_len is 0; name at least one output");
  feeds.reserve(input_len);
  for (size_t i = 0; i < input_len; ++i) {
    if (!input_names[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input name " + std::to_string(i) + " is NULL");
    if (!inputs[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": input '" + input_names[i] + "' is NULL");
    feeds.emplace_back(input_names[i], inputs[i]->tensor);
  }
  // Free dimensions fixed by AddFreeDimensionOverrideByName must be fed at that size.
  if (!session->dim_overrides.empty()) {
    for (const auto& [name, tensor] : feeds) {
      for (const auto& info : session->session->inputs()) {
        if (info.name != name || !tensor.is_tensor()) continue;
        for (size_t d = 0; d < info.dim_names.size() && d < tensor.shape().size() && d < info.shape.size(); ++d) {
          auto it = session->dim_overrides.find(info.dim_names[d]);
          if (it != session->dim_overrides.end() && info.shape[d] < 0 && tensor.shape()[d] != it->second)
            return make_status(ORT_INVALID_ARGUMENT,
                               std::string(fn) + ": input '" + name + "' has " + std::to_string(tensor.shape()[d]) +
                                   " at dimension " + std::to_string(d) + " ('" + it->first +
                                   "'), which the session options fix at " + std::to_string(it->second));
        }
      }
    }
  }
  for (size_t i = 0; i < output_len; ++i) {
    if (!output_names[i]) return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": output name " + std::to_string(i) + " is NULL");
    names.emplace_back(output_names[i]);
  }
  return nullptr;
}

// Hands a run's results out. Pre-allocated outputs are filled in place; the
// others get new values that own their memory (an output passed through
// from a borrowed feed is copied).
OrtStatus* deliver(const char* fn, const std::vector<std::string>& names, std::vector<spindle::Tensor>& results,
                   OrtValue** outputs) {
  for (size_t i = 0; i < names.size() && i < results.size(); ++i) {
    spindle::Tensor& r = results[i];
    if (outputs[i]) {
      spindle::Tensor& dst = outputs[i]->tensor;
      if (dst.dtype() != r.dtype() || dst.shape() != r.shape() || !dst.is_tensor() || !r.is_tensor())
        return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value given for output '" + names[i] + "' is " +
                                                     dst.describe() + "; the output is " + r.describe());
      if (r.dtype() == spindle::DataType::kString) {
        const auto* src = static_cast<const std::string*>(r.raw_data());
        auto* d = static_cast<std::string*>(dst.raw_mutable_data());
        for (int64_t k = 0; k < r.numel(); ++k) d[k] = src[k];
      } else {
        spindle::Tensor c = r.is_contiguous() ? r : r.clone();
        if (c.nbytes()) std::memcpy(dst.raw_mutable_data(), c.raw_data(), c.nbytes());
      }
      continue;
    }
    // The caller may write into an output: one whose buffer is also held
    // elsewhere (a constant the session keeps, a feed passed through) is copied.
    if (r.is_tensor() && r.defined() &&
        ((r.buffer() && (!r.buffer()->owned() || r.buffer().use_count() > 1)) || !r.is_contiguous()))
      r = r.clone();
    outputs[i] = new OrtValue{std::move(r)};
  }
  return nullptr;
}

OrtStatus* ORT_API_CALL Run(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names,
                            const OrtValue* const* inputs, size_t input_len, const char* const* output_names,
                            size_t output_len, OrtValue** outputs) noexcept {
  API_BEGIN
  spindle::Feeds feeds;
  std::vector<std::string> names;
  if (OrtStatus* s = prepare_run("Run", session, input_names, inputs, input_len, output_names, output_len, outputs, feeds, names))
    return s;
  auto results = session->session->run(feeds, names, run_options ? const_cast<spindle::RunOptions*>(&run_options->run) : nullptr);
  return deliver("Run", names, results, outputs);
  API_END
}

// RunAsync: the run goes to the inter-op pool (InferenceSession::run_async);
// on completion the outputs are written to `outputs` (which the caller keeps
// alive until then) and the callback gets them with a status it releases.
OrtStatus* ORT_API_CALL RunAsync(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names,
                                 const OrtValue* const* inputs, size_t input_len, const char* const* output_names,
                                 size_t output_len, OrtValue** outputs, RunAsyncCallbackFn callback,
                                 void* user_data) noexcept {
  CHECK_ARG("RunAsync", callback);
  API_BEGIN
  spindle::Feeds feeds;
  std::vector<std::string> names;
  if (OrtStatus* s = prepare_run("RunAsync", session, input_names, inputs, input_len, output_names, output_len, outputs,
                                 feeds, names))
    return s;
  auto shared_names = std::make_shared<std::vector<std::string>>(names);
  session->session->run_async(
      std::move(feeds), std::move(names),
      [shared_names, outputs, output_len, callback, user_data](spindle::Status status, std::vector<spindle::Tensor> results) {
        OrtStatus* st = from_status(status);
        if (!st) {
          try {
            st = deliver("RunAsync", *shared_names, results, outputs);
          } catch (const std::exception& e) {
            st = make_status(ORT_RUNTIME_EXCEPTION, e.what());
          }
        }
        callback(user_data, outputs, output_len, st);
      },
      run_options ? const_cast<spindle::RunOptions*>(&run_options->run) : nullptr);
  API_END
}

// ---------------------------------------------------------------- sequences

OrtStatus* ORT_API_CALL GetValueCount(const OrtValue* v, size_t* out) noexcept {
  CHECK_ARG("GetValueCount", v);
  CHECK_ARG("GetValueCount", out);
  if (!v->tensor.is_sequence())
    return make_status(ORT_INVALID_ARGUMENT, "GetValueCount: the value is not a sequence (maps are not supported)");
  *out = v->tensor.sequence_items().size();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetValue(const OrtValue* v, int index, OrtAllocator*, OrtValue** out) noexcept {
  CHECK_ARG("GetValue", v);
  CHECK_ARG("GetValue", out);
  if (!v->tensor.is_sequence())
    return make_status(ORT_INVALID_ARGUMENT, "GetValue: the value is not a sequence (maps are not supported)");
  API_BEGIN
  const auto& items = v->tensor.sequence_items();
  if (index < 0 || static_cast<size_t>(index) >= items.size()) return index_error("GetValue", static_cast<size_t>(index), items.size());
  *out = new OrtValue{items[static_cast<size_t>(index)]};
  API_END
}
OrtStatus* ORT_API_CALL CreateValue(const OrtValue* const* in, size_t n, enum ONNXType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateValue", out);
  if (type != ONNX_TYPE_SEQUENCE)
    return make_status(ORT_NOT_IMPLEMENTED, "CreateValue: only sequences (ONNX_TYPE_SEQUENCE) are supported; spindle has no maps");
  if (n == 0) return make_status(ORT_INVALID_ARGUMENT, "CreateValue: a sequence needs at least one tensor (its element type)");
  CHECK_ARG("CreateValue", in);
  API_BEGIN
  std::vector<spindle::Tensor> items;
  for (size_t i = 0; i < n; ++i) {
    if (!in[i] || !in[i]->tensor.is_tensor() || !in[i]->tensor.defined())
      return make_status(ORT_INVALID_ARGUMENT, "CreateValue: item " + std::to_string(i) + " is not a tensor");
    items.push_back(in[i]->tensor);
  }
  const spindle::DataType dt = items[0].dtype();
  *out = new OrtValue{spindle::Tensor::sequence(dt, std::move(items))};
  API_END
}

OrtStatus* ORT_API_CALL SessionGetInputCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetInputCount", s);
  CHECK_ARG("SessionGetInputCount", out);
  *out = s->session->inputs().size();
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetOutputCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetOutputCount", s);
  CHECK_ARG("SessionGetOutputCount", out);
  *out = s->session->outputs().size();
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerCount(const OrtSession* s, size_t* out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerCount", s);
  CHECK_ARG("SessionGetOverridableInitializerCount", out);
  *out = 0;  // spindle does not let feeds override initializers
  return nullptr;
}
// spindle lets no feed override an initializer: there are none to name.
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerName", s);
  CHECK_ARG("SessionGetOverridableInitializerName", a);
  CHECK_ARG("SessionGetOverridableInitializerName", out);
  return index_error("SessionGetOverridableInitializerName", index, 0);
}
OrtStatus* ORT_API_CALL SessionGetOverridableInitializerTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetOverridableInitializerTypeInfo", s);
  CHECK_ARG("SessionGetOverridableInitializerTypeInfo", out);
  return index_error("SessionGetOverridableInitializerTypeInfo", index, 0);
}
// Every input and output lives in CPU memory.
OrtStatus* memory_infos(const char* fn, const OrtSession* s, const OrtMemoryInfo** out, size_t n, size_t count) {
  if (!s) return null_argument(fn, "session");
  if (n && !out) return null_argument(fn, "memory_info");
  if (n != count)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": room for " + std::to_string(n) + " entries; the model has " +
                                                 std::to_string(count));
  for (size_t i = 0; i < n; ++i) out[i] = &kCpuInfo;
  return nullptr;
}
OrtStatus* ORT_API_CALL SessionGetMemoryInfoForInputs(const OrtSession* s, const OrtMemoryInfo** out, size_t n) noexcept {
  return memory_infos("SessionGetMemoryInfoForInputs", s, out, n, s ? s->session->inputs().size() : 0);
}
OrtStatus* ORT_API_CALL SessionGetMemoryInfoForOutputs(const OrtSession* s, const OrtMemoryInfo** out, size_t n) noexcept {
  return memory_infos("SessionGetMemoryInfoForOutputs", s, out, n, s ? s->session->outputs().size() : 0);
}
OrtStatus* ORT_API_CALL SessionGetInputTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetInputTypeInfo", s);
  CHECK_ARG("SessionGetInputTypeInfo", out);
  API_BEGIN
  const auto& v = s->session->inputs();
  if (index >= v.size()) return index_error("SessionGetInputTypeInfo", index, v.size());
  *out = type_info_of(v[index], s->dim_overrides);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetOutputTypeInfo(const OrtSession* s, size_t index, OrtTypeInfo** out) noexcept {
  CHECK_ARG("SessionGetOutputTypeInfo", s);
  CHECK_ARG("SessionGetOutputTypeInfo", out);
  API_BEGIN
  const auto& v = s->session->outputs();
  if (index >= v.size()) return index_error("SessionGetOutputTypeInfo", index, v.size());
  *out = type_info_of(v[index], s->dim_overrides);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetInputName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetInputName", s);
  CHECK_ARG("SessionGetInputName", a);
  CHECK_ARG("SessionGetInputName", out);
  API_BEGIN
  const auto& v = s->session->inputs();
  if (index >= v.size()) return index_error("SessionGetInputName", index, v.size());
  *out = copy_string(a, v[index].name);
  API_END
}
OrtStatus* ORT_API_CALL SessionGetOutputName(const OrtSession* s, size_t index, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionGetOutputName", s);
  CHECK_ARG("SessionGetOutputName", a);
  CHECK_ARG("SessionGetOutputName", out);
  API_BEGIN
  const auto& v = s->session->outputs();
  if (index >= v.size()) return index_error("SessionGetOutputName", index, v.size());
  *out = copy_string(a, v[index].name);
  API_END
}
OrtStatus* ORT_API_CALL SessionEndProfiling(OrtSession* s, OrtAllocator* a, char** out) noexcept {
  CHECK_ARG("SessionEndProfiling", s);
  CHECK_ARG("SessionEndProfiling", a);
  CHECK_ARG("SessionEndProfiling", out);
  API_BEGIN
  *out = copy_string(a, s->session->end_profiling());
  API_END
}
OrtStatus* ORT_API_CALL SessionGetModelMetadata(const OrtSession* s, OrtModelMetadata** out) noexcept {
  CHECK_ARG("SessionGetModelMetadata", s);
  CHECK_ARG("SessionGetModelMetadata", out);
  API_BEGIN
  *out = new OrtModelMetadata{s->session->model_metadata()};
  API_END
}

// ---------------------------------------------------------------- model metadata

#define METADATA_STRING(Fn, field)                                                                 \
  OrtStatus* ORT_API_CALL Fn(const OrtModelMetadata* m, OrtAllocator* a, char** out) noexcept {   \
    CHECK_ARG(#Fn, m);                                                                             \
    CHECK_ARG(#Fn, a);                                                                             \
    CHECK_ARG(#Fn, out);                                                                           \
    API_BEGIN                                                                                      \
    *out = copy_string(a, m->meta.field);                                                          \
    API_END                                                                                        \
  }
METADATA_STRING(ModelMetadataGetProducerName, producer_name)
METADATA_STRING(ModelMetadataGetGraphName, graph_name)
METADATA_STRING(ModelMetadataGetDomain, domain)
METADATA_STRING(ModelMetadataGetDescription, description)
METADATA_STRING(ModelMetadataGetGraphDescription, graph_description)
OrtStatus* ORT_API_CALL ModelMetadataGetVersion(const OrtModelMetadata* m, int64_t* out) noexcept {
  CHECK_ARG("ModelMetadataGetVersion", m);
  CHECK_ARG("ModelMetadataGetVersion", out);
  *out = m->meta.version;
  return nullptr;
}
OrtStatus* ORT_API_CALL ModelMetadataLookupCustomMetadataMap(const OrtModelMetadata* m, OrtAllocator* a, const char* key,
                                                             char** out) noexcept {
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", m);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", a);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", key);
  CHECK_ARG("ModelMetadataLookupCustomMetadataMap", out);
  API_BEGIN
  auto it = m->meta.custom_metadata_map.find(key);
  *out = it == m->meta.custom_metadata_map.end() ? nullptr : copy_string(a, it->second);
  API_END
}
OrtStatus* ORT_API_CALL ModelMetadataGetCustomMetadataMapKeys(const OrtModelMetadata* m, OrtAllocator* a, char*** keys,
                                                              int64_t* num_keys) noexcept {
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", m);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", a);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", keys);
  CHECK_ARG("ModelMetadataGetCustomMetadataMapKeys", num_keys);
  API_BEGIN
  const auto& map = m->meta.custom_metadata_map;
  *num_keys = static_cast<int64_t>(map.size());
  *keys = nullptr;
  if (map.empty()) return nullptr;
  auto** arr = static_cast<char**>(a->Alloc(a, map.size() * sizeof(char*)));
  if (!arr) throw std::bad_alloc();
  size_t i = 0;
  for (const auto& [k, v] : map) arr[i++] = copy_string(a, k);
  *keys = arr;
  API_END
}
void ORT_API_CALL ReleaseModelMetadata(OrtModelMetadata* m) noexcept { delete m; }

// ---------------------------------------------------------------- run options

OrtStatus* ORT_API_CALL CreateRunOptions(OrtRunOptions** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateRunOptions", out);
  *out = new OrtRunOptions;
  API_END
}
void ORT_API_CALL ReleaseRunOptions(OrtRunOptions* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL RunOptionsSetRunLogVerbosityLevel(OrtRunOptions* r, int v) noexcept { CHECK_ARG("RunOptionsSetRunLogVerbosityLevel", r); r->verbosity = v; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsSetRunLogSeverityLevel(OrtRunOptions* r, int v) noexcept { CHECK_ARG("RunOptionsSetRunLogSeverityLevel", r); r->severity = v; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsGetRunLogVerbosityLevel(const OrtRunOptions* r, int* out) noexcept { CHECK_ARG("RunOptionsGetRunLogVerbosityLevel", r); CHECK_ARG("RunOptionsGetRunLogVerbosityLevel", out); *out = r->verbosity; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsGetRunLogSeverityLevel(const OrtRunOptions* r, int* out) noexcept { CHECK_ARG("RunOptionsGetRunLogSeverityLevel", r); CHECK_ARG("RunOptionsGetRunLogSeverityLevel", out); *out = r->severity; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsSetRunTag(OrtRunOptions* r, const char* tag) noexcept {
  CHECK_ARG("RunOptionsSetRunTag", r);
  API_BEGIN
  r->run.run_tag = tag ? tag : "";
  API_END
}
OrtStatus* ORT_API_CALL RunOptionsGetRunTag(const OrtRunOptions* r, const char** out) noexcept {
  CHECK_ARG("RunOptionsGetRunTag", r);
  CHECK_ARG("RunOptionsGetRunTag", out);
  *out = r->run.run_tag.c_str();
  return nullptr;
}
OrtStatus* ORT_API_CALL RunOptionsSetTerminate(OrtRunOptions* r) noexcept { CHECK_ARG("RunOptionsSetTerminate", r); r->run.terminate = true; return nullptr; }
OrtStatus* ORT_API_CALL RunOptionsUnsetTerminate(OrtRunOptions* r) noexcept { CHECK_ARG("RunOptionsUnsetTerminate", r); r->run.terminate = false; return nullptr; }
OrtStatus* ORT_API_CALL AddRunConfigEntry(OrtRunOptions* r, const char* key, const char* value) noexcept {
  CHECK_ARG("AddRunConfigEntry", r);
  CHECK_ARG("AddRunConfigEntry", key);
  CHECK_ARG("AddRunConfigEntry", value);
  API_BEGIN
  r->entries[key] = value;  // kept and read back; spindle's runs take no per-run keys
  API_END
}
const char* ORT_API_CALL GetRunConfigEntry(const OrtRunOptions* r, const char* key) noexcept {
  if (!r || !key) return nullptr;
  auto it = r->entries.find(key);
  return it == r->entries.end() ? nullptr : it->second.c_str();
}

// ---------------------------------------------------------------- memory info and allocators

OrtStatus* ORT_API_CALL CreateCpuMemoryInfo(OrtAllocatorType type, OrtMemType mem_type, OrtMemoryInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateCpuMemoryInfo", out);
  *out = new OrtMemoryInfo{"Cpu", type, 0, mem_type};
  API_END
}
OrtStatus* ORT_API_CALL CreateMemoryInfo(const char* name, OrtAllocatorType type, int id, OrtMemType mem_type,
                                         OrtMemoryInfo** out) noexcept {
  CHECK_ARG("CreateMemoryInfo", name);
  CHECK_ARG("CreateMemoryInfo", out);
  API_BEGIN
  // Any device name describes memory; only "Cpu" memory can hold a tensor
  // (CreateTensorWithDataAsOrtValue, CreateAllocator refuse the others).
  *out = new OrtMemoryInfo{name, type, id, mem_type};
  API_END
}
void ORT_API_CALL ReleaseMemoryInfo(OrtMemoryInfo* p) noexcept {
  if (p != &kCpuInfo) delete p;
}
OrtStatus* ORT_API_CALL CompareMemoryInfo(const OrtMemoryInfo* a, const OrtMemoryInfo* b, int* out) noexcept {
  CHECK_ARG("CompareMemoryInfo", a);
  CHECK_ARG("CompareMemoryInfo", b);
  CHECK_ARG("CompareMemoryInfo", out);
  *out = (a->name == b->name && a->type == b->type && a->id == b->id && a->mem_type == b->mem_type) ? 0 : -1;
  return nullptr;
}
OrtStatus* ORT_API_CALL MemoryInfoGetName(const OrtMemoryInfo* p, const char** out) noexcept { CHECK_ARG("MemoryInfoGetName", p); CHECK_ARG("MemoryInfoGetName", out); *out = p->name.c_str(); return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetId(const OrtMemoryInfo* p, int* out) noexcept { CHECK_ARG("MemoryInfoGetId", p); CHECK_ARG("MemoryInfoGetId", out); *out = p->id; return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetMemType(const OrtMemoryInfo* p, OrtMemType* out) noexcept { CHECK_ARG("MemoryInfoGetMemType", p); CHECK_ARG("MemoryInfoGetMemType", out); *out = p->mem_type; return nullptr; }
OrtStatus* ORT_API_CALL MemoryInfoGetType(const OrtMemoryInfo* p, OrtAllocatorType* out) noexcept { CHECK_ARG("MemoryInfoGetType", p); CHECK_ARG("MemoryInfoGetType", out); *out = p->type; return nullptr; }
void ORT_API_CALL MemoryInfoGetDeviceType(const OrtMemoryInfo*, OrtMemoryInfoDeviceType* out) noexcept {
  if (out) *out = OrtMemoryInfoDeviceType_CPU;
}
OrtDeviceMemoryType ORT_API_CALL MemoryInfoGetDeviceMemType(const OrtMemoryInfo*) noexcept { return OrtDeviceMemoryType_DEFAULT; }
uint32_t ORT_API_CALL MemoryInfoGetVendorId(const OrtMemoryInfo*) noexcept { return 0; }

OrtStatus* ORT_API_CALL GetAllocatorWithDefaultOptions(OrtAllocator** out) noexcept {
  CHECK_ARG("GetAllocatorWithDefaultOptions", out);
  *out = &g_default_allocator;
  return nullptr;
}
OrtStatus* ORT_API_CALL CreateAllocator(const OrtSession* s, const OrtMemoryInfo* info, OrtAllocator** out) noexcept {
  CHECK_ARG("CreateAllocator", s);
  CHECK_ARG("CreateAllocator", info);
  CHECK_ARG("CreateAllocator", out);
  API_BEGIN
  if (info->name != "Cpu") return make_status(ORT_NOT_IMPLEMENTED, "CreateAllocator: spindle has CPU memory only");
  *out = new OrtAllocator(make_cpu_allocator());
  API_END
}
void ORT_API_CALL ReleaseAllocator(OrtAllocator* a) noexcept {
  if (a != &g_default_allocator) delete a;
}
OrtStatus* ORT_API_CALL AllocatorAlloc(OrtAllocator* a, size_t size, void** out) noexcept {
  CHECK_ARG("AllocatorAlloc", a);
  CHECK_ARG("AllocatorAlloc", out);
  *out = a->Alloc(a, size);
  if (!*out) return make_status(ORT_FAIL, "AllocatorAlloc: out of memory allocating " + std::to_string(size) + " bytes");
  return nullptr;
}
OrtStatus* ORT_API_CALL AllocatorFree(OrtAllocator* a, void* p) noexcept {
  CHECK_ARG("AllocatorFree", a);
  a->Free(a, p);
  return nullptr;
}
OrtStatus* ORT_API_CALL AllocatorGetInfo(const OrtAllocator* a, const OrtMemoryInfo** out) noexcept {
  CHECK_ARG("AllocatorGetInfo", a);
  CHECK_ARG("AllocatorGetInfo", out);
  *out = a->Info(a);
  return nullptr;
}

// ---------------------------------------------------------------- values

OrtStatus* shape_error(const char* fn, const int64_t* shape, size_t len) {
  if (len && !shape) return null_argument(fn, "shape");
  for (size_t i = 0; i < len; ++i)
    if (shape[i] < 0)
      return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": dimension " + std::to_string(i) + " is " +
                                                   std::to_string(shape[i]) + "; dimensions must be 0 or more");
  if (!spindle::checked_numel(std::span<const int64_t>(shape, len)))
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the shape's element count overflows int64");
  return nullptr;
}

OrtStatus* ORT_API_CALL CreateTensorWithDataAsOrtValue(const OrtMemoryInfo* info, void* data, size_t data_len,
                                                       const int64_t* shape, size_t shape_len,
                                                       ONNXTensorElementDataType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateTensorWithDataAsOrtValue", info);
  CHECK_ARG("CreateTensorWithDataAsOrtValue", out);
  if (OrtStatus* s = shape_error("CreateTensorWithDataAsOrtValue", shape, shape_len)) return s;
  spindle::DataType dt;
  if (!dtype_from_ort(type, &dt)) return unsupported_type("CreateTensorWithDataAsOrtValue", type);
  if (dt == spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, "CreateTensorWithDataAsOrtValue: string tensors cannot wrap user memory; use CreateTensorAsOrtValue and FillStringTensor");
  if (info->name != "Cpu") return make_status(ORT_NOT_IMPLEMENTED, "CreateTensorWithDataAsOrtValue: spindle has CPU memory only");
  API_BEGIN
  spindle::Shape dims(shape, shape + shape_len);
  const size_t need = spindle::checked_nbytes(spindle::shape_numel(dims), spindle::dtype_size(dt));
  if (data_len < need)
    return make_status(ORT_INVALID_ARGUMENT, "CreateTensorWithDataAsOrtValue: the buffer holds " + std::to_string(data_len) +
                                                 " bytes; shape " + spindle::shape_to_string(dims) + " of " + spindle::dtype_name(dt) +
                                                 " needs " + std::to_string(need));
  if (need && !data) return null_argument("CreateTensorWithDataAsOrtValue", "p_data");
  *out = new OrtValue{spindle::Tensor::borrow(dt, std::move(dims), data)};
  API_END
}
OrtStatus* ORT_API_CALL CreateTensorAsOrtValue(OrtAllocator* a, const int64_t* shape, size_t shape_len,
                                               ONNXTensorElementDataType type, OrtValue** out) noexcept {
  CHECK_ARG("CreateTensorAsOrtValue", a);
  CHECK_ARG("CreateTensorAsOrtValue", out);
  if (OrtStatus* s = shape_error("CreateTensorAsOrtValue", shape, shape_len)) return s;
  spindle::DataType dt;
  if (!dtype_from_ort(type, &dt)) return unsupported_type("CreateTensorAsOrtValue", type);
  API_BEGIN
  *out = new OrtValue{spindle::Tensor(dt, spindle::Shape(shape, shape + shape_len))};
  API_END
}
void ORT_API_CALL ReleaseValue(OrtValue* v) noexcept { delete v; }

OrtStatus* ORT_API_CALL IsTensor(const OrtValue* v, int* out) noexcept {
  CHECK_ARG("IsTensor", v);
  CHECK_ARG("IsTensor", out);
  *out = v->tensor.is_tensor() && v->tensor.defined() ? 1 : 0;
  return nullptr;
}
OrtStatus* ORT_API_CALL HasValue(const OrtValue* v, int* out) noexcept {
  CHECK_ARG("HasValue", v);
  CHECK_ARG("HasValue", out);
  *out = v->tensor.is_optional() ? (v->tensor.optional_value() != nullptr) : v->tensor.defined();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetValueType(const OrtValue* v, ONNXType* out) noexcept {
  CHECK_ARG("GetValueType", v);
  CHECK_ARG("GetValueType", out);
  const auto& t = v->tensor;
  *out = t.is_optional() ? ONNX_TYPE_OPTIONAL : t.is_sequence() ? ONNX_TYPE_SEQUENCE : t.defined() ? ONNX_TYPE_TENSOR : ONNX_TYPE_UNKNOWN;
  return nullptr;
}
OrtStatus* tensor_only(const char* fn, const OrtValue* v) {
  if (!v) return null_argument(fn, "value");
  if (!v->tensor.is_tensor() || !v->tensor.defined())
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the value is not a tensor");
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorMutableData(OrtValue* v, void** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorMutableData", v)) return s;
  CHECK_ARG("GetTensorMutableData", out);
  *out = v->tensor.raw_mutable_data();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorData(const OrtValue* v, const void** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorData", v)) return s;
  CHECK_ARG("GetTensorData", out);
  *out = v->tensor.raw_data();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorTypeAndShape(const OrtValue* v, OrtTensorTypeAndShapeInfo** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorTypeAndShape", v)) return s;
  CHECK_ARG("GetTensorTypeAndShape", out);
  API_BEGIN
  *out = shape_info_of(v->tensor);
  API_END
}
OrtStatus* ORT_API_CALL GetTypeInfo(const OrtValue* v, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetTypeInfo", v);
  CHECK_ARG("GetTypeInfo", out);
  API_BEGIN
  const spindle::Tensor& t = v->tensor;
  auto* ti = new OrtTypeInfo;
  if (t.is_sequence()) {
    *ti = sequence_type(t.dtype());
  } else if (t.is_optional()) {
    ti->type = ONNX_TYPE_OPTIONAL;
    ti->optional = std::make_shared<OrtOptionalTypeInfo>();
    if (t.optional_of_sequence()) {
      ti->optional->contained = sequence_type(t.dtype());
    } else {
      ti->optional->contained.type = ONNX_TYPE_TENSOR;
      ti->optional->contained.tensor.type = dtype_to_ort(t.dtype());
      ti->optional->contained.tensor.has_shape = false;
    }
  } else if (t.defined()) {
    ti->type = ONNX_TYPE_TENSOR;
    ti->tensor.type = dtype_to_ort(t.dtype());
    ti->tensor.dims = t.shape();
    ti->tensor.names.assign(ti->tensor.dims.size(), "");
  }
  *out = ti;
  API_END
}
OrtStatus* ORT_API_CALL GetTensorMemoryInfo(const OrtValue* v, const OrtMemoryInfo** out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorMemoryInfo", v)) return s;
  CHECK_ARG("GetTensorMemoryInfo", out);
  *out = &kCpuInfo;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetTensorSizeInBytes(const OrtValue* v, size_t* out) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorSizeInBytes", v)) return s;
  CHECK_ARG("GetTensorSizeInBytes", out);
  if (v->tensor.dtype() == spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, "GetTensorSizeInBytes: a string tensor has no fixed byte size; use GetStringTensorDataLength");
  API_BEGIN
  *out = v->tensor.nbytes();
  API_END
}
OrtStatus* ORT_API_CALL GetTensorElementTypeAndShapeDataReference(const OrtValue* v, ONNXTensorElementDataType* type,
                                                                  const int64_t** shape, size_t* count) noexcept {
  if (OrtStatus* s = tensor_only("GetTensorElementTypeAndShapeDataReference", v)) return s;
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", type);
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", shape);
  CHECK_ARG("GetTensorElementTypeAndShapeDataReference", count);
  *type = dtype_to_ort(v->tensor.dtype());
  *shape = v->tensor.shape().data();
  *count = v->tensor.shape().size();
  return nullptr;
}

// String tensors: elements are std::string objects in the tensor's buffer.
OrtStatus* string_tensor(const char* fn, const OrtValue* v) {
  if (OrtStatus* s = tensor_only(fn, v)) return s;
  if (v->tensor.dtype() != spindle::DataType::kString)
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": the tensor is " + v->tensor.describe() + ", not a string tensor");
  return nullptr;
}
std::string* strings_of(OrtValue* v) { return static_cast<std::string*>(v->tensor.raw_mutable_data()); }
const std::string* strings_of(const OrtValue* v) { return static_cast<const std::string*>(v->tensor.raw_data()); }

OrtStatus* ORT_API_CALL FillStringTensor(OrtValue* v, const char* const* s, size_t len) noexcept {
  if (OrtStatus* st = string_tensor("FillStringTensor", v)) return st;
  API_BEGIN
  const auto n = static_cast<size_t>(v->tensor.numel());
  if (len != n)
    return make_status(ORT_INVALID_ARGUMENT, "FillStringTensor: " + std::to_string(len) + " strings for a tensor of " + std::to_string(n) + " elements");
  if (n && !s) return null_argument("FillStringTensor", "s");
  std::string* d = strings_of(v);
  for (size_t i = 0; i < n; ++i) d[i] = s[i] ? s[i] : "";
  API_END
}
OrtStatus* ORT_API_CALL FillStringTensorElement(OrtValue* v, const char* s, size_t index) noexcept {
  if (OrtStatus* st = string_tensor("FillStringTensorElement", v)) return st;
  CHECK_ARG("FillStringTensorElement", s);
  API_BEGIN
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("FillStringTensorElement", index, v->tensor.numel());
  strings_of(v)[index] = s;
  API_END
}
OrtStatus* ORT_API_CALL GetResizedStringTensorElementBuffer(OrtValue* v, size_t index, size_t length, char** out) noexcept {
  if (OrtStatus* st = string_tensor("GetResizedStringTensorElementBuffer", v)) return st;
  CHECK_ARG("GetResizedStringTensorElementBuffer", out);
  API_BEGIN
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetResizedStringTensorElementBuffer", index, v->tensor.numel());
  std::string& e = strings_of(v)[index];
  e.resize(length);
  *out = e.data();
  API_END
}
OrtStatus* ORT_API_CALL GetStringTensorDataLength(const OrtValue* v, size_t* out) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorDataLength", v)) return st;
  CHECK_ARG("GetStringTensorDataLength", out);
  API_BEGIN
  size_t total = 0;
  const std::string* d = strings_of(v);
  for (int64_t i = 0; i < v->tensor.numel(); ++i) total += d[i].size();
  *out = total;
  API_END
}
OrtStatus* ORT_API_CALL GetStringTensorElementLength(const OrtValue* v, size_t index, size_t* out) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorElementLength", v)) return st;
  CHECK_ARG("GetStringTensorElementLength", out);
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetStringTensorElementLength", index, v->tensor.numel());
  *out = strings_of(v)[index].size();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetStringTensorElement(const OrtValue* v, size_t s_len, size_t index, void* s) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorElement", v)) return st;
  if (index >= static_cast<size_t>(v->tensor.numel())) return index_error("GetStringTensorElement", index, v->tensor.numel());
  const std::string& e = strings_of(v)[index];
  if (s_len < e.size())
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorElement: the buffer holds " + std::to_string(s_len) + " bytes; the element has " + std::to_string(e.size()));
  if (!e.empty()) {
    CHECK_ARG("GetStringTensorElement", s);
    std::memcpy(s, e.data(), e.size());
  }
  return nullptr;
}
OrtStatus* ORT_API_CALL GetStringTensorContent(const OrtValue* v, void* s, size_t s_len, size_t* offsets,
                                               size_t offsets_len) noexcept {
  if (OrtStatus* st = string_tensor("GetStringTensorContent", v)) return st;
  API_BEGIN
  const auto n = static_cast<size_t>(v->tensor.numel());
  if (offsets_len != n)
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorContent: " + std::to_string(offsets_len) + " offsets for a tensor of " + std::to_string(n) + " elements");
  const std::string* d = strings_of(v);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += d[i].size();
  if (s_len < total)
    return make_status(ORT_INVALID_ARGUMENT, "GetStringTensorContent: the buffer holds " + std::to_string(s_len) + " bytes; the strings need " + std::to_string(total));
  if (n && !offsets) return null_argument("GetStringTensorContent", "offsets");
  if (total && !s) return null_argument("GetStringTensorContent", "s");
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    offsets[i] = at;
    if (!d[i].empty()) std::memcpy(static_cast<char*>(s) + at, d[i].data(), d[i].size());
    at += d[i].size();
  }
  API_END
}

// ---------------------------------------------------------------- type and shape info

OrtStatus* ORT_API_CALL CreateTensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo** out) noexcept {
  API_BEGIN
  CHECK_ARG("CreateTensorTypeAndShapeInfo", out);
  *out = new OrtTensorTypeAndShapeInfo;
  API_END
}
void ORT_API_CALL ReleaseTensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo* p) noexcept { delete p; }
OrtStatus* ORT_API_CALL SetTensorElementType(OrtTensorTypeAndShapeInfo* i, ONNXTensorElementDataType t) noexcept {
  CHECK_ARG("SetTensorElementType", i);
  i->type = t;
  return nullptr;
}
OrtStatus* ORT_API_CALL SetDimensions(OrtTensorTypeAndShapeInfo* i, const int64_t* dims, size_t n) noexcept {
  CHECK_ARG("SetDimensions", i);
  if (n) CHECK_ARG("SetDimensions", dims);
  API_BEGIN
  i->dims.assign(dims, dims + n);
  i->names.resize(n);
  API_END
}
OrtStatus* ORT_API_CALL GetTensorElementType(const OrtTensorTypeAndShapeInfo* i, ONNXTensorElementDataType* out) noexcept {
  CHECK_ARG("GetTensorElementType", i);
  CHECK_ARG("GetTensorElementType", out);
  *out = i->type;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDimensionsCount(const OrtTensorTypeAndShapeInfo* i, size_t* out) noexcept {
  CHECK_ARG("GetDimensionsCount", i);
  CHECK_ARG("GetDimensionsCount", out);
  *out = i->dims.size();
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDimensions(const OrtTensorTypeAndShapeInfo* i, int64_t* values, size_t n) noexcept {
  CHECK_ARG("GetDimensions", i);
  if (n) CHECK_ARG("GetDimensions", values);
  for (size_t k = 0; k < n && k < i->dims.size(); ++k) values[k] = i->dims[k];
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSymbolicDimensions(const OrtTensorTypeAndShapeInfo* i, const char** names, size_t n) noexcept {
  CHECK_ARG("GetSymbolicDimensions", i);
  if (n) CHECK_ARG("GetSymbolicDimensions", names);
  for (size_t k = 0; k < n; ++k) names[k] = k < i->names.size() ? i->names[k].c_str() : "";
  return nullptr;
}
OrtStatus* ORT_API_CALL SetSymbolicDimensions(OrtTensorTypeAndShapeInfo* i, const char** names, size_t n) noexcept {
  CHECK_ARG("SetSymbolicDimensions", i);
  if (n) CHECK_ARG("SetSymbolicDimensions", names);
  API_BEGIN
  i->names.assign(n, "");
  for (size_t k = 0; k < n; ++k) i->names[k] = names[k] ? names[k] : "";
  API_END
}
OrtStatus* ORT_API_CALL GetTensorShapeElementCount(const OrtTensorTypeAndShapeInfo* i, size_t* out) noexcept {
  CHECK_ARG("GetTensorShapeElementCount", i);
  CHECK_ARG("GetTensorShapeElementCount", out);
  // A dynamic (negative) dimension makes the count unknown: SIZE_MAX, as
  // ONNX Runtime's -1 read as size_t.
  for (int64_t d : i->dims) {
    if (d < 0) {
      *out = static_cast<size_t>(-1);
      return nullptr;
    }
  }
  auto count = spindle::checked_numel(i->dims);
  if (!count) return make_status(ORT_INVALID_ARGUMENT, "GetTensorShapeElementCount: the element count overflows int64");
  *out = static_cast<size_t>(*count);
  return nullptr;
}
bool ORT_API_CALL TensorTypeAndShape_HasShape(const OrtTensorTypeAndShapeInfo* i) noexcept { return i && i->has_shape; }
OrtStatus* ORT_API_CALL CastTypeInfoToTensorInfo(const OrtTypeInfo* t, const OrtTensorTypeAndShapeInfo** out) noexcept {
  CHECK_ARG("CastTypeInfoToTensorInfo", t);
  CHECK_ARG("CastTypeInfoToTensorInfo", out);
  *out = t->type == ONNX_TYPE_TENSOR ? &t->tensor : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetOnnxTypeFromTypeInfo(const OrtTypeInfo* t, ONNXType* out) noexcept {
  CHECK_ARG("GetOnnxTypeFromTypeInfo", t);
  CHECK_ARG("GetOnnxTypeFromTypeInfo", out);
  *out = t->type;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetDenotationFromTypeInfo(const OrtTypeInfo* t, const char** const out, size_t* len) noexcept {
  CHECK_ARG("GetDenotationFromTypeInfo", t);
  CHECK_ARG("GetDenotationFromTypeInfo", out);
  CHECK_ARG("GetDenotationFromTypeInfo", len);
  *out = t->denotation.c_str();
  *len = t->denotation.size();
  return nullptr;
}
void ORT_API_CALL ReleaseTypeInfo(OrtTypeInfo* p) noexcept { delete p; }
// spindle has no map values: a type info is never a map's, so the cast
// gives NULL, as ONNX Runtime's does for any other kind.
OrtStatus* ORT_API_CALL CastTypeInfoToMapTypeInfo(const OrtTypeInfo* t, const OrtMapTypeInfo** out) noexcept {
  CHECK_ARG("CastTypeInfoToMapTypeInfo", t);
  CHECK_ARG("CastTypeInfoToMapTypeInfo", out);
  *out = nullptr;
  return nullptr;
}
// The casts return a part of the type info (released with it); NULL for another kind.
OrtStatus* ORT_API_CALL CastTypeInfoToSequenceTypeInfo(const OrtTypeInfo* t, const OrtSequenceTypeInfo** out) noexcept {
  CHECK_ARG("CastTypeInfoToSequenceTypeInfo", t);
  CHECK_ARG("CastTypeInfoToSequenceTypeInfo", out);
  *out = t->type == ONNX_TYPE_SEQUENCE ? t->sequence.get() : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetSequenceElementType(const OrtSequenceTypeInfo* s, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetSequenceElementType", s);
  CHECK_ARG("GetSequenceElementType", out);
  API_BEGIN
  *out = new OrtTypeInfo(s->element);
  API_END
}
OrtStatus* ORT_API_CALL CastTypeInfoToOptionalTypeInfo(const OrtTypeInfo* t, const OrtOptionalTypeInfo** out) noexcept {
  CHECK_ARG("CastTypeInfoToOptionalTypeInfo", t);
  CHECK_ARG("CastTypeInfoToOptionalTypeInfo", out);
  *out = t->type == ONNX_TYPE_OPTIONAL ? t->optional.get() : nullptr;
  return nullptr;
}
OrtStatus* ORT_API_CALL GetOptionalContainedTypeInfo(const OrtOptionalTypeInfo* o, OrtTypeInfo** out) noexcept {
  CHECK_ARG("GetOptionalContainedTypeInfo", o);
  CHECK_ARG("GetOptionalContainedTypeInfo", out);
  API_BEGIN
  *out = new OrtTypeInfo(o->contained);
  API_END
}

// ---------------------------------------------------------------- key-value pairs
// These slots return no status: on a NULL argument (or out of memory in
// CreateKeyValuePairs, which then sets *out to NULL) they do nothing.

void ORT_API_CALL CreateKeyValuePairs(OrtKeyValuePairs** out) noexcept {
  if (out) *out = new (std::nothrow) OrtKeyValuePairs;
}
void ORT_API_CALL AddKeyValuePair(OrtKeyValuePairs* kvps, const char* key, const char* value) noexcept {
  if (!kvps || !key || !value) return;
  try {
    for (size_t i = 0; i < kvps->keys.size(); ++i)
      if (kvps->keys[i] == key) {
        kvps->values[i] = value;
        kvps->sync();
        return;
      }
    kvps->keys.emplace_back(key);
    kvps->values.emplace_back(value);
    kvps->sync();
  } catch (...) {
  }
}
const char* ORT_API_CALL GetKeyValue(const OrtKeyValuePairs* kvps, const char* key) noexcept {
  if (!kvps || !key) return nullptr;
  for (size_t i = 0; i < kvps->keys.size(); ++i)
    if (kvps->keys[i] == key) return kvps->values[i].c_str();
  return nullptr;
}
void ORT_API_CALL GetKeyValuePairs(const OrtKeyValuePairs* kvps, const char* const** keys, const char* const** values,
                                   size_t* num_entries) noexcept {
  if (!kvps || !keys || !values || !num_entries) return;
  *keys = kvps->key_ptrs.data();
  *values = kvps->value_ptrs.data();
  *num_entries = kvps->keys.size();
}
void ORT_API_CALL RemoveKeyValuePair(OrtKeyValuePairs* kvps, const char* key) noexcept {
  if (!kvps || !key) return;
  for (size_t i = 0; i < kvps->keys.size(); ++i)
    if (kvps->keys[i] == key) {
      kvps->keys.erase(kvps->keys.begin() + static_cast<std::ptrdiff_t>(i));
      kvps->values.erase(kvps->values.begin() + static_cast<std::ptrdiff_t>(i));
      kvps->sync();
      return;
    }
}
void ORT_API_CALL ReleaseKeyValuePairs(OrtKeyValuePairs* kvps) noexcept { delete kvps; }

// ---------------------------------------------------------------- providers, build info

OrtStatus* ORT_API_CALL GetAvailableProviders(char*** out, int* len) noexcept {
  CHECK_ARG("GetAvailableProviders", out);
  CHECK_ARG("GetAvailableProviders", len);
  auto** arr = static_cast<char**>(std::malloc(sizeof(char*)));
  if (!arr) return make_status(ORT_FAIL, "out of memory");
  arr[0] = strdup("CPUExecutionProvider");
  *out = arr;
  *len = 1;
  return nullptr;
}
OrtStatus* ORT_API_CALL ReleaseAvailableProviders(char** ptr, int len) noexcept {
  if (ptr) {
    for (int i = 0; i < len; ++i) std::free(ptr[i]);
    std::free(ptr);
  }
  return nullptr;
}
const char* ORT_API_CALL GetBuildInfoString() noexcept { return "spindle (ONNX Runtime 1.30 C API)"; }

// ---------------------------------------------------------------- fallbacks for every slot

template <class R>
R stub_value() {
  if constexpr (!std::is_void_v<R>) return R{};
}

#define SPINDLE_ORT_STATUS_SLOT(name, params) \
  OrtStatus* ORT_API_CALL stub_##name params noexcept { return not_implemented(#name); }
// Objects of classes spindle never creates cannot reach their Release: no-op.
#define SPINDLE_ORT_RELEASE_SLOT(name, params) \
  void ORT_API_CALL stub_##name params noexcept {}
// Slots that return no status return NULL / 0 / nothing.
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params) \
  ret ORT_API_CALL stub_##name params noexcept { return stub_value<ret>(); }
#include "capi/slots.inc"
#undef SPINDLE_ORT_STATUS_SLOT
#undef SPINDLE_ORT_RELEASE_SLOT
#undef SPINDLE_ORT_VALUE_SLOT

OrtApi make_api() {
  OrtApi api{};
#define SPINDLE_ORT_STATUS_SLOT(name, params) api.name = stub_##name;
#define SPINDLE_ORT_RELEASE_SLOT(name, params) api.name = stub_##name;
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params) api.name = stub_##name;
#include "capi/slots.inc"
#undef SPINDLE_ORT_STATUS_SLOT
#undef SPINDLE_ORT_RELEASE_SLOT
#undef SPINDLE_ORT_VALUE_SLOT
#define SET(name) api.name = name;
  SET(CreateStatus) SET(GetErrorCode) SET(GetErrorMessage) SET(ReleaseStatus)
  SET(CreateEnv) SET(CreateEnvWithCustomLogger) SET(CreateEnvWithGlobalThreadPools)
  SET(CreateEnvWithCustomLoggerAndGlobalThreadPools) SET(CreateEnvWithOptions) SET(ReleaseEnv) SET(EnableTelemetryEvents)
  SET(DisableTelemetryEvents) SET(SetLanguageProjection) SET(UpdateEnvWithCustomLogLevel)
  SET(CreateThreadingOptions) SET(ReleaseThreadingOptions) SET(SetGlobalIntraOpNumThreads)
  SET(SetGlobalInterOpNumThreads) SET(SetGlobalSpinControl) SET(SetGlobalDenormalAsZero)
  SET(SetGlobalIntraOpThreadAffinity) SET(SetGlobalCustomCreateThreadFn) SET(SetGlobalCustomThreadCreationOptions)
  SET(SetGlobalCustomJoinThreadFn)
  SET(CreateSessionOptions) SET(CloneSessionOptions) SET(ReleaseSessionOptions) SET(SetSessionExecutionMode)
  SET(GetSessionExecutionMode) SET(EnableProfiling) SET(DisableProfiling) SET(EnableMemPattern) SET(DisableMemPattern)
  SET(GetMemPatternEnabled) SET(EnableCpuMemArena) SET(DisableCpuMemArena) SET(SetSessionLogId)
  SET(SetSessionLogVerbosityLevel) SET(SetSessionLogSeverityLevel) SET(SetSessionGraphOptimizationLevel)
  SET(SetIntraOpNumThreads) SET(SetInterOpNumThreads) SET(AddSessionConfigEntry) SET(HasSessionConfigEntry)
  SET(GetSessionConfigEntry) SET(DisablePerSessionThreads) SET(AddFreeDimensionOverrideByName) SET(SetDeterministicCompute)
  SET(SessionOptionsSetCustomCreateThreadFn) SET(SessionOptionsSetCustomThreadCreationOptions)
  SET(SessionOptionsSetCustomJoinThreadFn) SET(SessionOptionsAppendExecutionProvider)
  SET(CreateSession) SET(CreateSessionFromArray) SET(ReleaseSession) SET(Run) SET(RunAsync) SET(SessionGetInputCount)
  SET(GetValueCount) SET(GetValue) SET(CreateValue)
  SET(SessionGetOutputCount) SET(SessionGetOverridableInitializerCount) SET(SessionGetOverridableInitializerName)
  SET(SessionGetOverridableInitializerTypeInfo) SET(SessionGetMemoryInfoForInputs) SET(SessionGetMemoryInfoForOutputs) SET(SessionGetInputTypeInfo)
  SET(SessionGetOutputTypeInfo) SET(SessionGetInputName) SET(SessionGetOutputName) SET(SessionEndProfiling)
  SET(SessionGetModelMetadata)
  SET(ModelMetadataGetProducerName) SET(ModelMetadataGetGraphName) SET(ModelMetadataGetDomain)
  SET(ModelMetadataGetDescription) SET(ModelMetadataGetGraphDescription) SET(ModelMetadataGetVersion)
  SET(ModelMetadataLookupCustomMetadataMap) SET(ModelMetadataGetCustomMetadataMapKeys) SET(ReleaseModelMetadata)
  SET(CreateRunOptions) SET(ReleaseRunOptions) SET(RunOptionsSetRunLogVerbosityLevel)
  SET(RunOptionsSetRunLogSeverityLevel) SET(RunOptionsGetRunLogVerbosityLevel) SET(RunOptionsGetRunLogSeverityLevel)
  SET(RunOptionsSetRunTag) SET(RunOptionsGetRunTag) SET(RunOptionsSetTerminate) SET(RunOptionsUnsetTerminate)
  SET(AddRunConfigEntry) SET(GetRunConfigEntry)
  SET(CreateCpuMemoryInfo) SET(CreateMemoryInfo) SET(ReleaseMemoryInfo) SET(CompareMemoryInfo)
  SET(MemoryInfoGetName) SET(MemoryInfoGetId) SET(MemoryInfoGetMemType) SET(MemoryInfoGetType)
  SET(MemoryInfoGetDeviceType) SET(MemoryInfoGetDeviceMemType) SET(MemoryInfoGetVendorId)
  SET(GetAllocatorWithDefaultOptions) SET(CreateAllocator) SET(ReleaseAllocator) SET(AllocatorAlloc)
  SET(AllocatorFree) SET(AllocatorGetInfo)
  SET(CreateTensorWithDataAsOrtValue) SET(CreateTensorAsOrtValue) SET(ReleaseValue) SET(IsTensor) SET(HasValue)
  SET(GetValueType) SET(GetTensorMutableData) SET(GetTensorData) SET(GetTensorTypeAndShape) SET(GetTypeInfo)
  SET(GetTensorMemoryInfo) SET(GetTensorSizeInBytes) SET(GetTensorElementTypeAndShapeDataReference)
  SET(FillStringTensor) SET(FillStringTensorElement) SET(GetResizedStringTensorElementBuffer)
  SET(GetStringTensorDataLength) SET(GetStringTensorElementLength) SET(GetStringTensorElement)
  SET(GetStringTensorContent)
  SET(CreateTensorTypeAndShapeInfo) SET(ReleaseTensorTypeAndShapeInfo) SET(SetTensorElementType) SET(SetDimensions)
  SET(GetTensorElementType) SET(GetDimensionsCount) SET(GetDimensions) SET(GetSymbolicDimensions)
  SET(SetSymbolicDimensions) SET(GetTensorShapeElementCount) SET(TensorTypeAndShape_HasShape)
  SET(CastTypeInfoToTensorInfo) SET(GetOnnxTypeFromTypeInfo) SET(GetDenotationFromTypeInfo) SET(ReleaseTypeInfo)
  SET(CastTypeInfoToMapTypeInfo) SET(CastTypeInfoToSequenceTypeInfo) SET(GetSequenceElementType)
  SET(CastTypeInfoToOptionalTypeInfo) SET(GetOptionalContainedTypeInfo)
  SET(CreateKeyValuePairs) SET(AddKeyValuePair) SET(GetKeyValue) SET(GetKeyValuePairs) SET(RemoveKeyValuePair)
  SET(ReleaseKeyValuePairs)
  SET(GetAvailableProviders) SET(ReleaseAvailableProviders) SET(GetBuildInfoString)
#undef SET
  return api;
}

const OrtApi g_api = make_api();

const OrtApi* ORT_API_CALL GetApi(uint32_t version) noexcept {
  // Every version from 1 to 30 is a prefix of this one table.
  return version >= 1 && version <= ORT_API_VERSION ? &g_api : nullptr;
}
const char* ORT_API_CALL GetVersionString() noexcept { return "1.30.0"; }

const OrtApiBase g_api_base = {GetApi, GetVersionString};

}  // namespace

extern "C" {

ORT_EXPORT const OrtApiBase* ORT_API_CALL OrtGetApiBase(void) noexcept { return &g_api_base; }

ORT_EXPORT OrtStatus* ORT_API_CALL OrtSessionOptionsAppendExecutionProvider_CPU(OrtSessionOptions* options,
                                                                                int) noexcept {
  if (!options) return null_argument("OrtSessionOptionsAppendExecutionProvider_CPU", "options");
  return nullptr;
}

}  // extern "C"
