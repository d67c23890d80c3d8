// capi_internal.h — what the files of ONNX Runtime's C API over spindle
// share: the Ort* handle structs, statuses and the exception-to-status
// macros, element-type mapping, type infos, the default CPU allocator and the
// custom-thread trampolines. Each api_*.cpp implements one group of slots
// and fills them into the table (set_*_slots); api.cpp builds the table.
#pragma once

#include <algorithm>
#include <cctype>
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

#include "io/external_memory.h"
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
  bool custom_logger = false;  // set the process's log sink (restored to stderr on release)
  // Memory (by name) with an allocator registered for sessions to share;
  // spindle's sessions plan their own memory, so this is bookkeeping only.
  std::map<std::string, int> shared_allocators;
};

// An arena configuration (CreateArenaCfg, CreateArenaCfgV2): kept, not acted on.
struct OrtArenaCfg {
  std::map<std::string, size_t> values;
};

// Free dimensions the session options fix: by symbolic name
// (AddFreeDimensionOverrideByName) or by denotation (AddFreeDimensionOverride,
// upper-cased: matched without regard to case, as ONNX Runtime does).
struct DimOverrides {
  std::map<std::string, int64_t> by_name, by_denotation;
  bool empty() const { return by_name.empty() && by_denotation.empty(); }
  // The size fixed for dimension d of `info`, or -1; dimensions the model
  // gives a size keep it.
  int64_t find(const spindle::TensorInfo& info, size_t d) const {
    if (d >= info.shape.size() || info.shape[d] >= 0) return -1;
    if (d < info.dim_names.size()) {
      auto it = by_name.find(info.dim_names[d]);
      if (it != by_name.end()) return it->second;
    }
    if (d < info.dim_denotations.size() && !by_denotation.empty()) {
      auto it = by_denotation.find(upper(info.dim_denotations[d]));
      if (it != by_denotation.end()) return it->second;
    }
    return -1;
  }
  static std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
  }
};

struct OrtSessionOptions {
  spindle::SessionOptions opts;
  std::map<std::string, std::string> entries;  // as added, for Get/HasSessionConfigEntry
  int log_verbosity = 0;  // log id and severity: opts.log_id, opts.log_severity_level
  bool mem_pattern = true, cpu_arena = true;
  OrtCustomCreateThreadFn create_fn = nullptr;
  OrtCustomJoinThreadFn join_fn = nullptr;
  void* create_options = nullptr;
  DimOverrides dim_overrides;
  // AddExternalInitializersFromFilesInMemory: the program's buffers, read
  // while a session is created.
  spindle::io::ExternalFiles external_files;
};

struct OrtSession {
  std::unique_ptr<spindle::InferenceSession> session;
  std::shared_ptr<spindle::Environment> env;  // keeps the global pools' Environment alive
  DimOverrides dim_overrides;
};

struct OrtMapValue;

// A value: a tensor, a sequence of tensors or an optional (`tensor`, as
// spindle's runs take and give them), or, built through the API only, a map
// (`map`) or a sequence of maps (`maps`; `tensor` is then undefined).
struct OrtValue {
  spindle::Tensor tensor;
  std::shared_ptr<const OrtMapValue> map;
  std::shared_ptr<const std::vector<OrtValue>> maps;
  // Memory of the caller's that a deleter frees with the last copy of the
  // value (CreateTensorWithDataAndDeleterAsOrtValue).
  std::shared_ptr<void> owner;
};

// A map: 1-D keys (int64 or string) sorted, each once, and 1-D values of
// the same length.
struct OrtMapValue {
  spindle::Tensor keys, values;
};

struct OrtMemoryInfo {
  std::string name = "Cpu";
  OrtAllocatorType type = OrtDeviceAllocator;
  int id = 0;
  OrtMemType mem_type = OrtMemTypeDefault;
};

struct OrtRunOptions {
  spindle::RunOptions run;  // run.log_severity_level: RunOptionsSetRunLogSeverityLevel's (-1: the session's)
  int verbosity = 0;
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
struct OrtMapTypeInfo;

// A value's type: a tensor (`tensor`), a sequence (`sequence`: its element
// type), an optional (`optional`: what it holds) or a map (`map`: its key
// and value types). Immutable once built, so copies share the parts.
struct OrtTypeInfo {
  ONNXType type = ONNX_TYPE_UNKNOWN;
  OrtTensorTypeAndShapeInfo tensor;
  std::string denotation;
  std::shared_ptr<OrtSequenceTypeInfo> sequence;
  std::shared_ptr<OrtOptionalTypeInfo> optional;
  std::shared_ptr<OrtMapTypeInfo> map;
};

struct OrtSequenceTypeInfo {
  OrtTypeInfo element;
};

struct OrtMapTypeInfo {
  ONNXTensorElementDataType key = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  OrtTypeInfo value;
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

// A domain of ONNX Runtime custom ops as added: AddCustomOpDomain turns it
// into a spindle::CustomOpDomain of adapters (api_custom_ops.cpp).
struct OrtCustomOpDomain {
  std::string name;
  std::vector<const OrtCustomOp*> ops;
};


namespace spindle::capi {


// ---------------------------------------------------------------- statuses

inline OrtStatus* make_status(OrtErrorCode code, std::string message) {
  return new (std::nothrow) OrtStatus{code, std::move(message)};
}

inline OrtStatus* not_implemented(const char* name) {
  return make_status(ORT_NOT_IMPLEMENTED, std::string(name) + " is not implemented by spindle's ONNX Runtime C API");
}

inline OrtStatus* index_error(const char* fn, size_t index, size_t count) {
  return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": index " + std::to_string(index) + " is out of range; there are " + std::to_string(count));
}

inline OrtStatus* null_argument(const char* fn, const char* arg) {
  return make_status(ORT_INVALID_ARGUMENT, std::string(fn) + ": argument '" + arg + "' is NULL");
}

// What a spindle failure becomes. `creating` is true while a session is
// created (a missing file is ORT_NO_SUCHFILE, an unparsable one
// ORT_INVALID_PROTOBUF); in a run an unknown name is a bad argument.
inline OrtErrorCode code_of(const spindle::Status& s, bool creating) {
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

inline OrtStatus* from_status(const spindle::Status& s, bool creating = false) {
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

// ---------------------------------------------------------------- runs

// The feeds and output names of a run (Run, RunAsync, RunWithBinding), checked.
OrtStatus* prepare_run(const char* fn, OrtSession* session, const char* const* input_names, const OrtValue* const* inputs,
                       size_t input_len, const char* const* output_names, size_t output_len, OrtValue** outputs,
                       Feeds& feeds, std::vector<std::string>& names);

// Hands a run's results out: a non-NULL outputs[i] (pre-allocated, or bound)
// is written in place after all of them are checked (same element type and
// shape, else nothing is written); a NULL one gets a new value.
OrtStatus* deliver(const char* fn, const std::vector<std::string>& names, std::vector<Tensor>& results, OrtValue** outputs);

// The error for a value spindle cannot feed to a run (a map), or NULL.
OrtStatus* feed_error(const char* fn, const char* name, const OrtValue* value);

// ---------------------------------------------------------------- types

inline bool dtype_from_ort(ONNXTensorElementDataType t, spindle::DataType* out) {
  if (t <= ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED || t > ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 ||
      t == ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64 || t == ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128)
    return false;
  *out = static_cast<spindle::DataType>(t);
  return true;
}

inline ONNXTensorElementDataType dtype_to_ort(spindle::DataType t) { return static_cast<ONNXTensorElementDataType>(t); }

inline OrtStatus* unsupported_type(const char* fn, ONNXTensorElementDataType t) {
  return make_status(ORT_NOT_IMPLEMENTED, std::string(fn) + ": element type " + std::to_string(static_cast<int>(t)) +
                                              " is not supported (spindle supports float, double, float16, bfloat16, "
                                              "bool, string and the 8-64 bit integers)");
}

// A graph input's or output's type; dimensions named in `overrides` read
// as their fixed value (no longer symbolic), as ONNX Runtime reports them.
// A sequence of `dtype` tensors (their shapes unknown).
inline OrtTypeInfo sequence_type(spindle::DataType dtype) {
  OrtTypeInfo seq;
  seq.type = ONNX_TYPE_SEQUENCE;
  seq.sequence = std::make_shared<OrtSequenceTypeInfo>();
  seq.sequence->element.type = ONNX_TYPE_TENSOR;
  seq.sequence->element.tensor.type = dtype_to_ort(dtype);
  seq.sequence->element.tensor.has_shape = false;
  return seq;
}

inline OrtTypeInfo* type_info_of(const spindle::TensorInfo& info, const DimOverrides& overrides) {
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
  for (size_t i = 0; i < info.shape.size(); ++i) {
    const int64_t fixed = overrides.find(info, i);
    if (fixed >= 0) {
      ti->tensor.dims[i] = fixed;
    } else if (i < info.dim_names.size()) {
      ti->tensor.names[i] = info.dim_names[i];
    }
  }
  return ti;
}

inline OrtTensorTypeAndShapeInfo* shape_info_of(const spindle::Tensor& t) {
  auto* info = new OrtTensorTypeAndShapeInfo;
  info->type = dtype_to_ort(t.dtype());
  info->dims = t.shape();
  info->names.assign(t.shape().size(), "");
  return info;
}

// ---------------------------------------------------------------- allocator

inline const OrtMemoryInfo kCpuInfo{};

inline void* ORT_API_CALL cpu_alloc(OrtAllocator*, size_t size) {
  size_t bytes = (std::max<size_t>(size, 1) + 63) / 64 * 64;
  return std::aligned_alloc(64, bytes);
}
inline void ORT_API_CALL cpu_free(OrtAllocator*, void* p) { std::free(p); }
inline const OrtMemoryInfo* ORT_API_CALL cpu_info(const OrtAllocator*) { return &kCpuInfo; }
inline void* ORT_API_CALL cpu_reserve(OrtAllocator* a, size_t size) { return cpu_alloc(a, size); }

inline OrtAllocator make_cpu_allocator() {
  OrtAllocator a{};
  a.version = ORT_API_VERSION;
  a.Alloc = cpu_alloc;
  a.Free = cpu_free;
  a.Info = cpu_info;
  a.Reserve = cpu_reserve;
  return a;
}
inline OrtAllocator g_default_allocator = make_cpu_allocator();

inline char* copy_string(OrtAllocator* allocator, const std::string& s) {
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

inline ThreadHooks* intern_hooks(OrtCustomCreateThreadFn c, OrtCustomJoinThreadFn j, void* o) {
  static std::mutex mu;
  static std::deque<ThreadHooks> all;
  std::lock_guard<std::mutex> lock(mu);
  for (auto& h : all)
    if (h.create == c && h.join == j && h.options == o) return &h;
  all.push_back({c, j, o});
  return &all.back();
}

inline void* create_thread_trampoline(void* ctx, spindle::ThreadWorkFn work, void* arg) {
  auto* hooks = static_cast<ThreadHooks*>(ctx);
  OrtCustomThreadHandle h = hooks->create(hooks->options, work, arg);
  if (!h) return nullptr;
  return new ThreadRecord{h, hooks->join};
}

inline void join_thread_trampoline(void* handle) {
  auto* rec = static_cast<ThreadRecord*>(handle);
  rec->join(rec->handle);
  delete rec;
}

inline OrtStatus* hooks_check(const char* fn, OrtCustomCreateThreadFn c, OrtCustomJoinThreadFn j) {
  if ((c == nullptr) != (j == nullptr))
    return make_status(ORT_INVALID_ARGUMENT, std::string(fn) +
                                                 ": a custom create-thread function needs a custom join-thread "
                                                 "function and the other way round; set both or neither");
  return nullptr;
}


// Each group of slots, filled into the table by the file that implements it.
void set_env_slots(OrtApi& api);
void set_session_options_slots(OrtApi& api);
void set_session_slots(OrtApi& api);
void set_value_slots(OrtApi& api);
void set_custom_op_slots(OrtApi& api);
void set_binding_slots(OrtApi& api);
void set_op_slots(OrtApi& api);

// The table every caller gets (api.cpp), handed to custom-op libraries.
const OrtApiBase* api_base();

// Loads a library of ONNX Runtime custom ops and adds the domains its
// RegisterCustomOps registers to `options` (RegisterCustomOpsLibrary_V2 for
// spindle's own SessionOptions; the Python module's register_custom_ops_library).
Status register_custom_ops_library(SessionOptions& options, const std::string& path);

// Makes the custom ops of ONNX Runtime's C API in `opts` the session's: their
// kernels' loggers (KernelInfo_GetLogger, KernelContext_GetLogger) log at
// opts' severity with its log id. The options the program holds keep theirs.
void bind_custom_op_logging(SessionOptions& opts);

}  // namespace spindle::capi
