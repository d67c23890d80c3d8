// onnxruntime_cxx_api.h — ONNX Runtime's C++ API (namespace Ort) for spindle's
// libonnxruntime.so.1: a header-only layer over the C API of
// onnxruntime_c_api.h. Every object holds one C handle; the owning classes
// release it when destroyed and are move-only. A call whose C status is an
// error throws Ort::Exception with the status's code and message (define
// ORT_NO_EXCEPTIONS to abort instead). docs/capi.md lists what the library
// implements; a call it does not implement throws with ORT_NOT_IMPLEMENTED.
//
// The naming scheme, as in ONNX Runtime:
//   Ort::X           owns an OrtX* (released by its destructor)
//   Ort::ConstX      a non-owning view of a const OrtX* (const methods only)
//   Ort::UnownedX    a non-owning view of an OrtX* (all methods)
// and detail::XImpl<T> / detail::ConstXImpl<T> hold the methods for them all.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnxruntime_c_api.h"
#include "onnxruntime_float16.h"

namespace Ort {

/// An error status of the C API, thrown by the C++ API.
struct Exception : std::exception {
  Exception(std::string&& message, OrtErrorCode code) : message_{std::move(message)}, code_{code} {}
  Exception(const std::string& message, OrtErrorCode code) : message_{message}, code_{code} {}
  OrtErrorCode GetOrtErrorCode() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
  OrtErrorCode code_;
};

#ifdef ORT_NO_EXCEPTIONS
#define ORT_CXX_API_THROW(string, code)                            \
  do {                                                             \
    std::fprintf(stderr, "%s\n", Ort::Exception(string, code).what()); \
    std::abort();                                                  \
  } while (false)
#else
#define ORT_CXX_API_THROW(string, code) throw Ort::Exception(string, code)
#endif

/// The C API table, fetched once per program from OrtGetApiBase(). With
/// ORT_API_MANUAL_INIT defined (a library loaded by hand) the program calls
/// Ort::InitApi(api) before anything else instead.
template <typename T>
struct Global {
  static const OrtApi* api_;
};

#ifdef ORT_API_MANUAL_INIT
template <typename T>
const OrtApi* Global<T>::api_{};
#else
template <typename T>
const OrtApi* Global<T>::api_ = OrtGetApiBase()->GetApi(ORT_API_VERSION);
#endif

/// Points the C++ API at a table.
inline void InitApi(const OrtApi* api) noexcept { Global<void>::api_ = api; }
#ifndef ORT_API_MANUAL_INIT
inline void InitApi() noexcept { InitApi(OrtGetApiBase()->GetApi(ORT_API_VERSION)); }
#endif

/// The C API table the C++ API calls.
inline const OrtApi& GetApi() noexcept {
#ifndef ORT_API_MANUAL_INIT
  // A global object's constructor may run before api_'s initializer (the
  // order across translation units is unspecified): fetch it here then.
  if (Global<void>::api_ == nullptr) InitApi();
#endif
  return *Global<void>::api_;
}

/// "1.30.0" for spindle's library.
inline std::string GetVersionString() { return OrtGetApiBase()->GetVersionString(); }
inline std::string GetBuildInfoString() { return GetApi().GetBuildInfoString(); }
std::vector<std::string> GetAvailableProviders();

/// Throws Ort::Exception for an error status (and releases it).
inline void ThrowOnError(OrtStatus* status) {
  if (status) {
    std::string message(GetApi().GetErrorMessage(status));
    const OrtErrorCode code = GetApi().GetErrorCode(status);
    GetApi().ReleaseStatus(status);
    ORT_CXX_API_THROW(std::move(message), code);
  }
}


// ---- release functions of each handle type ----
#define ORT_CXX_DEFINE_RELEASE(NAME) \
  inline void OrtRelease(Ort##NAME* ptr) { GetApi().Release##NAME(ptr); }

ORT_CXX_DEFINE_RELEASE(Allocator)
ORT_CXX_DEFINE_RELEASE(MemoryInfo)
ORT_CXX_DEFINE_RELEASE(CustomOpDomain)
ORT_CXX_DEFINE_RELEASE(ThreadingOptions)
ORT_CXX_DEFINE_RELEASE(Env)
ORT_CXX_DEFINE_RELEASE(RunOptions)
ORT_CXX_DEFINE_RELEASE(Session)
ORT_CXX_DEFINE_RELEASE(SessionOptions)
ORT_CXX_DEFINE_RELEASE(TensorTypeAndShapeInfo)
ORT_CXX_DEFINE_RELEASE(SequenceTypeInfo)
ORT_CXX_DEFINE_RELEASE(MapTypeInfo)
ORT_CXX_DEFINE_RELEASE(TypeInfo)
ORT_CXX_DEFINE_RELEASE(Value)
ORT_CXX_DEFINE_RELEASE(ModelMetadata)
ORT_CXX_DEFINE_RELEASE(IoBinding)
ORT_CXX_DEFINE_RELEASE(ArenaCfg)
ORT_CXX_DEFINE_RELEASE(Status)
ORT_CXX_DEFINE_RELEASE(KeyValuePairs)
ORT_CXX_DEFINE_RELEASE(KernelInfo)
ORT_CXX_DEFINE_RELEASE(OpAttr)
ORT_CXX_DEFINE_RELEASE(Op)
#undef ORT_CXX_DEFINE_RELEASE

namespace detail {

/// Owns a T* and releases it; move-only.
template <typename T>
struct Base {
  using contained_type = T;

  constexpr Base() = default;
  constexpr explicit Base(contained_type* p) noexcept : p_{p} {}
  ~Base() { OrtRelease(p_); }

  Base(const Base&) = delete;
  Base& operator=(const Base&) = delete;
  Base(Base&& v) noexcept : p_{v.p_} { v.p_ = nullptr; }
  Base& operator=(Base&& v) noexcept {
    if (this != &v) {
      OrtRelease(p_);
      p_ = v.release();
    }
    return *this;
  }

  constexpr operator contained_type*() const noexcept { return p_; }
  /// Gives up ownership: the caller releases the handle.
  contained_type* release() {
    T* p = p_;
    p_ = nullptr;
    return p;
  }

 protected:
  contained_type* p_{};
};

/// A const T* that is never released (the owner lives elsewhere).
template <typename T>
struct Base<const T> {
  using contained_type = const T;

  constexpr Base() = default;
  constexpr explicit Base(contained_type* p) noexcept : p_{p} {}
  ~Base() = default;

  Base(const Base&) = default;
  Base& operator=(const Base&) = default;
  Base(Base&& v) noexcept : p_{v.p_} { v.p_ = nullptr; }
  Base& operator=(Base&& v) noexcept {
    p_ = v.p_;
    v.p_ = nullptr;
    return *this;
  }

  constexpr operator contained_type*() const noexcept { return p_; }

 protected:
  contained_type* p_{};
};

/// A non-owning T* (mutable methods allowed, never released).
template <typename T>
struct Unowned {
  using Type = T;
};

}  // namespace detail

// Forward declarations of the owning classes the impls return.
struct AllocatorWithDefaultOptions;
struct Env;
struct TypeInfo;
struct Value;
struct ModelMetadata;
struct SessionOptions;
struct TensorTypeAndShapeInfo;
struct MemoryInfo;

namespace detail {

// Unowned<X> as a base: holds the pointer without releasing it.
template <typename T>
struct UnownedBase {
  using contained_type = T;
  constexpr UnownedBase() = default;
  constexpr explicit UnownedBase(contained_type* p) noexcept : p_{p} {}
  constexpr operator contained_type*() const noexcept { return p_; }

 protected:
  contained_type* p_{};
};

// Selects the storage: Base<T> owns, Unowned<T> and Unowned<const T> do not.
template <typename T>
struct Storage {
  using type = Base<T>;
};
template <typename T>
struct Storage<Unowned<T>> {
  using type = UnownedBase<T>;
};

template <typename T>
using StorageT = typename Storage<T>::type;

}  // namespace detail

/// Frees a string the API allocated, with the allocator that allocated it.
namespace detail {
struct AllocatedFree {
  OrtAllocator* allocator_;
  explicit AllocatedFree(OrtAllocator* allocator) : allocator_(allocator) {}
  void operator()(void* ptr) const {
    if (ptr) allocator_->Free(allocator_, ptr);
  }
};
}  // namespace detail

/// A string allocated by the API (names, metadata), freed when it goes out of scope.
using AllocatedStringPtr = std::unique_ptr<char, detail::AllocatedFree>;

/// An owned status: empty (nullptr) means success.
struct Status : detail::Base<OrtStatus> {
  using Base = detail::Base<OrtStatus>;
  Status() = default;
  explicit Status(std::nullptr_t) noexcept {}
  explicit Status(OrtStatus* status) noexcept : Base{status} {}
  explicit Status(const Exception& e);
  explicit Status(const std::exception& e);
  Status(const char* message, OrtErrorCode code);

  std::string GetErrorMessage() const;
  OrtErrorCode GetErrorCode() const;
  bool IsOK() const noexcept { return p_ == nullptr; }
};

inline void ThrowOnError(const Status& st) {
  if (!st.IsOK()) ORT_CXX_API_THROW(st.GetErrorMessage(), st.GetErrorCode());
}

/// Element type of a tensor of T.
template <typename T>
struct TypeToTensorType;
#define ORT_CXX_TENSOR_TYPE(T, E) \
  template <>                     \
  struct TypeToTensorType<T> {    \
    static constexpr ONNXTensorElementDataType type = E; \
  };
ORT_CXX_TENSOR_TYPE(float, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
ORT_CXX_TENSOR_TYPE(Float16_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16)
ORT_CXX_TENSOR_TYPE(BFloat16_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16)
ORT_CXX_TENSOR_TYPE(double, ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE)
ORT_CXX_TENSOR_TYPE(int8_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8)
ORT_CXX_TENSOR_TYPE(int16_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16)
ORT_CXX_TENSOR_TYPE(int32_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32)
ORT_CXX_TENSOR_TYPE(int64_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
ORT_CXX_TENSOR_TYPE(uint8_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8)
ORT_CXX_TENSOR_TYPE(uint16_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16)
ORT_CXX_TENSOR_TYPE(uint32_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32)
ORT_CXX_TENSOR_TYPE(uint64_t, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64)
ORT_CXX_TENSOR_TYPE(bool, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL)
ORT_CXX_TENSOR_TYPE(std::string, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING)
#undef ORT_CXX_TENSOR_TYPE

/// Global thread pool settings for Env(const OrtThreadingOptions*, ...).
struct ThreadingOptions : detail::Base<OrtThreadingOptions> {
  ThreadingOptions();
  ThreadingOptions& SetGlobalIntraOpNumThreads(int intra_op_num_threads);
  ThreadingOptions& SetGlobalInterOpNumThreads(int inter_op_num_threads);
  ThreadingOptions& SetGlobalSpinControl(int allow_spinning);
  ThreadingOptions& SetGlobalDenormalAsZero();
  ThreadingOptions& SetGlobalIntraOpThreadAffinity(const char* affinity_string);
  ThreadingOptions& SetGlobalCustomCreateThreadFn(OrtCustomCreateThreadFn ort_custom_create_thread_fn);
  ThreadingOptions& SetGlobalCustomThreadCreationOptions(void* ort_custom_thread_creation_options);
  ThreadingOptions& SetGlobalCustomJoinThreadFn(OrtCustomJoinThreadFn ort_custom_join_thread_fn);
};

/// The environment: logging and, when created with threading options, the
/// global thread pools. Create it before sessions and destroy it after them.
struct Env : detail::Base<OrtEnv> {
  explicit Env(std::nullptr_t) {}
  Env(OrtLoggingLevel logging_level = ORT_LOGGING_LEVEL_WARNING, const char* logid = "");
  Env(OrtLoggingLevel logging_level, const char* logid, OrtLoggingFunction logging_function, void* logger_param);
  Env(const OrtThreadingOptions* tp_options, OrtLoggingLevel logging_level = ORT_LOGGING_LEVEL_WARNING,
      const char* logid = "");
  Env(const OrtThreadingOptions* tp_options, OrtLoggingFunction logging_function, void* logger_param,
      OrtLoggingLevel logging_level = ORT_LOGGING_LEVEL_WARNING, const char* logid = "");
  explicit Env(OrtEnv* p) : Base<OrtEnv>{p} {}

  Env& EnableTelemetryEvents();
  Env& DisableTelemetryEvents();
  Env& UpdateEnvWithCustomLogLevel(OrtLoggingLevel log_severity_level);
};

/// Per-run settings: tag, log level, config entries, termination.
struct RunOptions : detail::Base<OrtRunOptions> {
  explicit RunOptions(std::nullptr_t) {}
  RunOptions();

  RunOptions& SetRunLogVerbosityLevel(int level);
  int GetRunLogVerbosityLevel() const;
  RunOptions& SetRunLogSeverityLevel(int level);
  int GetRunLogSeverityLevel() const;
  RunOptions& SetRunTag(const char* run_tag);
  const char* GetRunTag() const;
  RunOptions& AddConfigEntry(const char* config_key, const char* config_value);
  const char* GetConfigEntry(const char* config_key);
  /// Makes runs using these options stop early with an error.
  RunOptions& SetTerminate();
  RunOptions& UnsetTerminate();
};

namespace detail {

template <typename T>
struct ConstSessionOptionsImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  SessionOptions Clone() const;
  std::string GetConfigEntry(const char* config_key) const;
  bool HasConfigEntry(const char* config_key) const;
  std::string GetConfigEntryOrDefault(const char* config_key, const std::string& def) const;
};

template <typename T>
struct SessionOptionsImpl : ConstSessionOptionsImpl<T> {
  using B = ConstSessionOptionsImpl<T>;
  using B::B;

  SessionOptionsImpl& SetIntraOpNumThreads(int intra_op_num_threads);
  SessionOptionsImpl& SetInterOpNumThreads(int inter_op_num_threads);
  SessionOptionsImpl& SetGraphOptimizationLevel(GraphOptimizationLevel graph_optimization_level);
  SessionOptionsImpl& SetDeterministicCompute(bool value);
  SessionOptionsImpl& EnableCpuMemArena();
  SessionOptionsImpl& DisableCpuMemArena();
  SessionOptionsImpl& SetOptimizedModelFilePath(const ORTCHAR_T* optimized_model_file);
  SessionOptionsImpl& EnableProfiling(const ORTCHAR_T* profile_file_prefix);
  SessionOptionsImpl& DisableProfiling();
  SessionOptionsImpl& EnableMemPattern();
  SessionOptionsImpl& DisableMemPattern();
  SessionOptionsImpl& SetExecutionMode(ExecutionMode execution_mode);
  SessionOptionsImpl& SetLoadCancellationFlag(bool value);
  SessionOptionsImpl& SetLogId(const char* logid);
  SessionOptionsImpl& SetLogSeverityLevel(int level);
  SessionOptionsImpl& Add(OrtCustomOpDomain* custom_op_domain);
  /// The session runs on its env's global thread pools.
  SessionOptionsImpl& DisablePerSessionThreads();
  SessionOptionsImpl& AddConfigEntry(const char* config_key, const char* config_value);
  /// Fixes the symbolic dimension named dim_name to dim_value.
  SessionOptionsImpl& AddFreeDimensionOverrideByName(const char* dim_name, int64_t dim_value);
  SessionOptionsImpl& AddFreeDimensionOverride(const char* dim_denotation, int64_t dim_value);
  /// The session uses ort_val (which must outlive it) in place of the model's initializer `name`.
  SessionOptionsImpl& AddInitializer(const char* name, const OrtValue* ort_val);
  /// The same for each name and value (the values must outlive the session).
  SessionOptionsImpl& AddExternalInitializers(const std::vector<std::string>& names, const std::vector<Value>& ort_values);
  /// The model's external data files, given as buffers the program holds while the session is created.
  SessionOptionsImpl& AddExternalInitializersFromFilesInMemory(const std::vector<std::basic_string<ORTCHAR_T>>& file_names,
                                                               const std::vector<char*>& buffer_array,
                                                               const std::vector<size_t>& file_lengths);
  SessionOptionsImpl& AppendExecutionProvider(const std::string& provider_name,
                                              const std::unordered_map<std::string, std::string>& provider_options = {});
  SessionOptionsImpl& SetCustomCreateThreadFn(OrtCustomCreateThreadFn ort_custom_create_thread_fn);
  SessionOptionsImpl& SetCustomThreadCreationOptions(void* ort_custom_thread_creation_options);
  SessionOptionsImpl& SetCustomJoinThreadFn(OrtCustomJoinThreadFn ort_custom_join_thread_fn);
  SessionOptionsImpl& RegisterCustomOpsLibrary(const ORTCHAR_T* library_name);
  SessionOptionsImpl& RegisterCustomOpsUsingFunction(const char* function_name);
};

}  // namespace detail

using ConstSessionOptions = detail::ConstSessionOptionsImpl<detail::Unowned<const OrtSessionOptions>>;
using UnownedSessionOptions = detail::SessionOptionsImpl<detail::Unowned<OrtSessionOptions>>;

/// Options a session is created with.
struct SessionOptions : detail::SessionOptionsImpl<OrtSessionOptions> {
  explicit SessionOptions(std::nullptr_t) {}
  SessionOptions();
  explicit SessionOptions(OrtSessionOptions* p) : SessionOptionsImpl<OrtSessionOptions>{p} {}
  UnownedSessionOptions GetUnowned() const { return UnownedSessionOptions{this->p_}; }
  ConstSessionOptions GetConst() const { return ConstSessionOptions{this->p_}; }
};

/// The model's metadata (ModelProto fields and metadata_props).
struct ModelMetadata : detail::Base<OrtModelMetadata> {
  explicit ModelMetadata(std::nullptr_t) {}
  explicit ModelMetadata(OrtModelMetadata* p) : Base<OrtModelMetadata>{p} {}

  AllocatedStringPtr GetProducerNameAllocated(OrtAllocator* allocator) const;
  AllocatedStringPtr GetGraphNameAllocated(OrtAllocator* allocator) const;
  AllocatedStringPtr GetDomainAllocated(OrtAllocator* allocator) const;
  AllocatedStringPtr GetDescriptionAllocated(OrtAllocator* allocator) const;
  AllocatedStringPtr GetGraphDescriptionAllocated(OrtAllocator* allocator) const;
  std::vector<AllocatedStringPtr> GetCustomMetadataMapKeysAllocated(OrtAllocator* allocator) const;
  /// nullptr when the key is absent.
  AllocatedStringPtr LookupCustomMetadataMapAllocated(const char* key, OrtAllocator* allocator) const;
  int64_t GetVersion() const;
};

namespace detail {

template <typename T>
struct ConstMemoryInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  std::string GetAllocatorName() const;
  OrtAllocatorType GetAllocatorType() const;
  int GetDeviceId() const;
  OrtMemoryInfoDeviceType GetDeviceType() const;
  OrtMemType GetMemoryType() const;
  template <typename U>
  bool operator==(const ConstMemoryInfoImpl<U>& o) const;
};

}  // namespace detail

using ConstMemoryInfo = detail::ConstMemoryInfoImpl<detail::Unowned<const OrtMemoryInfo>>;

/// Where a tensor's memory lives (spindle: always the CPU).
struct MemoryInfo : detail::ConstMemoryInfoImpl<OrtMemoryInfo> {
  static MemoryInfo CreateCpu(OrtAllocatorType type, OrtMemType mem_type);
  explicit MemoryInfo(std::nullptr_t) {}
  explicit MemoryInfo(OrtMemoryInfo* p) : ConstMemoryInfoImpl<OrtMemoryInfo>{p} {}
  MemoryInfo(const char* name, OrtAllocatorType type, int id, OrtMemType mem_type);
  ConstMemoryInfo GetConst() const { return ConstMemoryInfo{this->p_}; }
};

/// Memory from an allocator, freed with it.
struct MemoryAllocation {
  MemoryAllocation(OrtAllocator* allocator, void* p, size_t size);
  ~MemoryAllocation();
  MemoryAllocation(const MemoryAllocation&) = delete;
  MemoryAllocation& operator=(const MemoryAllocation&) = delete;
  MemoryAllocation(MemoryAllocation&&) noexcept;
  MemoryAllocation& operator=(MemoryAllocation&&) noexcept;

  void* get() { return p_; }
  size_t size() const { return size_; }

 private:
  OrtAllocator* allocator_;
  void* p_;
  size_t size_;
};

namespace detail {

template <typename T>
struct AllocatorImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  void* Alloc(size_t size);
  MemoryAllocation GetAllocation(size_t size);
  void Free(void* p);
  ConstMemoryInfo GetInfo() const;
};

}  // namespace detail

using UnownedAllocator = detail::AllocatorImpl<detail::Unowned<OrtAllocator>>;

/// The process-wide CPU allocator (never released).
struct AllocatorWithDefaultOptions : detail::AllocatorImpl<detail::Unowned<OrtAllocator>> {
  explicit AllocatorWithDefaultOptions(std::nullptr_t) {}
  AllocatorWithDefaultOptions();
};

struct Session;

/// An allocator of a session for the given memory info.
struct Allocator : detail::AllocatorImpl<OrtAllocator> {
  explicit Allocator(std::nullptr_t) {}
  Allocator(const Session& session, const OrtMemoryInfo* info);
};

namespace detail {

template <typename T>
struct TensorTypeAndShapeInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  ONNXTensorElementDataType GetElementType() const;
  /// Product of the dimensions (-1 when one of them is unknown).
  size_t GetElementCount() const;
  size_t GetDimensionsCount() const;
  void GetDimensions(int64_t* values, size_t values_count) const;
  void GetSymbolicDimensions(const char** values, size_t values_count) const;
  std::vector<const char*> GetSymbolicDimensions() const;
  bool HasShape() const;
  /// The dimensions; -1 for a symbolic or unknown one.
  std::vector<int64_t> GetShape() const;
};

}  // namespace detail

using ConstTensorTypeAndShapeInfo = detail::TensorTypeAndShapeInfoImpl<detail::Unowned<const OrtTensorTypeAndShapeInfo>>;

/// Element type and shape of a tensor (owned).
struct TensorTypeAndShapeInfo : detail::TensorTypeAndShapeInfoImpl<OrtTensorTypeAndShapeInfo> {
  using Base = detail::TensorTypeAndShapeInfoImpl<OrtTensorTypeAndShapeInfo>;
  explicit TensorTypeAndShapeInfo(std::nullptr_t) {}
  explicit TensorTypeAndShapeInfo(OrtTensorTypeAndShapeInfo* p) : Base{p} {}
  TensorTypeAndShapeInfo(ONNXTensorElementDataType element_type, const std::vector<int64_t>& dims,
                         const std::vector<std::string>* symbolic_dims = nullptr);
  ConstTensorTypeAndShapeInfo GetConst() const { return ConstTensorTypeAndShapeInfo{this->p_}; }
};

namespace detail {

template <typename T>
struct SequenceTypeInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;
  /// Type of the sequence's elements.
  TypeInfo GetSequenceElementType() const;
};

template <typename T>
struct MapTypeInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;
  /// Element type of the map's keys.
  ONNXTensorElementDataType GetMapKeyType() const;
  /// Type of the map's values.
  TypeInfo GetMapValueType() const;
};

template <typename T>
struct OptionalTypeInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;
  TypeInfo GetOptionalElementType() const;
};

template <typename T>
struct TypeInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  /// Throws unless the type is a tensor's.
  ConstTensorTypeAndShapeInfo GetTensorTypeAndShapeInfo() const;
  SequenceTypeInfoImpl<Unowned<const OrtSequenceTypeInfo>> GetSequenceTypeInfo() const;
  OptionalTypeInfoImpl<Unowned<const OrtOptionalTypeInfo>> GetOptionalTypeInfo() const;
  MapTypeInfoImpl<Unowned<const OrtMapTypeInfo>> GetMapTypeInfo() const;
  ONNXType GetONNXType() const;
};

}  // namespace detail

using ConstSequenceTypeInfo = detail::SequenceTypeInfoImpl<detail::Unowned<const OrtSequenceTypeInfo>>;
using ConstOptionalTypeInfo = detail::OptionalTypeInfoImpl<detail::Unowned<const OrtOptionalTypeInfo>>;
using ConstMapTypeInfo = detail::MapTypeInfoImpl<detail::Unowned<const OrtMapTypeInfo>>;
using ConstTypeInfo = detail::TypeInfoImpl<detail::Unowned<const OrtTypeInfo>>;

/// The type of an input, an output or a value (owned).
struct TypeInfo : detail::TypeInfoImpl<OrtTypeInfo> {
  using Base = detail::TypeInfoImpl<OrtTypeInfo>;
  explicit TypeInfo(std::nullptr_t) {}
  explicit TypeInfo(OrtTypeInfo* p) : Base{p} {}
  ConstTypeInfo GetConst() const { return ConstTypeInfo{this->p_}; }
};

namespace detail {

template <typename T>
struct ConstValueImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  /// Number of elements of a sequence (or 2 for a map).
  size_t GetCount() const;
  /// Element `index` of a sequence, as a new value.
  Value GetValue(int index, OrtAllocator* allocator) const;

  bool IsTensor() const;
  /// false for an empty optional.
  bool HasValue() const;

  TypeInfo GetTypeInfo() const;
  TensorTypeAndShapeInfo GetTensorTypeAndShapeInfo() const;
  ConstMemoryInfo GetTensorMemoryInfo() const;
  size_t GetTensorSizeInBytes() const;

  template <typename R>
  const R* GetTensorData() const;
  const void* GetTensorRawData() const;

  /// Total bytes of all strings of a string tensor.
  size_t GetStringTensorDataLength() const;
  size_t GetStringTensorElementLength(size_t element_index) const;
  /// All strings concatenated into buffer, with each one's start offset.
  void GetStringTensorContent(void* buffer, size_t buffer_length, size_t* offsets, size_t offsets_count) const;
  void GetStringTensorElement(size_t buffer_length, size_t element_index, void* buffer) const;
  std::string GetStringTensorElement(size_t element_index) const;
};

template <typename T>
struct ValueImpl : ConstValueImpl<T> {
  using B = ConstValueImpl<T>;
  using B::B;

  template <typename R>
  R* GetTensorMutableData();
  void* GetTensorMutableRawData();
  /// The element at a multi-dimensional index (row-major).
  template <typename R>
  R& At(const std::vector<int64_t>& location);

  void FillStringTensor(const char* const* s, size_t s_len);
  void FillStringTensorElement(const char* s, size_t index);
  /// A buffer of length_in_bytes for string element `index` (to be written).
  char* GetResizedStringTensorElementBuffer(size_t index, size_t buffer_length);
};

}  // namespace detail

using ConstValue = detail::ConstValueImpl<detail::Unowned<const OrtValue>>;
using UnownedValue = detail::ValueImpl<detail::Unowned<OrtValue>>;

/// A tensor, sequence or optional value (owned).
struct Value : detail::ValueImpl<OrtValue> {
  using Base = detail::ValueImpl<OrtValue>;
  explicit Value(std::nullptr_t) {}
  explicit Value(OrtValue* p) : Base{p} {}
  Value(Value&&) = default;
  Value& operator=(Value&&) = default;

  ConstValue GetConst() const { return ConstValue{this->p_}; }
  UnownedValue GetUnowned() const { return UnownedValue{this->p_}; }

  /// A tensor over the caller's buffer (not copied; it must outlive the value).
  template <typename T>
  static Value CreateTensor(const OrtMemoryInfo* info, T* p_data, size_t p_data_element_count, const int64_t* shape,
                            size_t shape_len);
  static Value CreateTensor(const OrtMemoryInfo* info, void* p_data, size_t p_data_byte_count, const int64_t* shape,
                            size_t shape_len, ONNXTensorElementDataType type);
  /// A tensor whose memory the allocator provides.
  template <typename T>
  static Value CreateTensor(OrtAllocator* allocator, const int64_t* shape, size_t shape_len);
  static Value CreateTensor(OrtAllocator* allocator, const int64_t* shape, size_t shape_len,
                            ONNXTensorElementDataType type);
  /// A sequence of the given tensors (copied).
  static Value CreateSequence(const std::vector<Value>& values);
  /// A map from 1-D keys (int64 or string) and as many values (keys sorted).
  static Value CreateMap(const Value& keys, const Value& values);
};

struct IoBinding;

/// A domain of custom operators: session options take it with Add(domain)
/// (the operators added must outlive the sessions using them).
struct CustomOpDomain : detail::Base<OrtCustomOpDomain> {
  explicit CustomOpDomain(std::nullptr_t) {}
  explicit CustomOpDomain(const char* domain);
  void Add(const OrtCustomOp* op);
};

struct KernelInfo;

/// A custom kernel's logger (KernelInfo / KernelContext GetLogger): the
/// session's log, at its severity and with its log id.
struct Logger {
  Logger() = default;
  explicit Logger(std::nullptr_t) {}
  explicit Logger(const OrtLogger* logger);
  OrtLoggingLevel GetLoggingSeverityLevel() const noexcept { return cached_severity_level_; }
  Status LogMessage(OrtLoggingLevel log_severity_level, const ORTCHAR_T* file_path, int line_number,
                    const char* func_name, const char* message) const noexcept;

 private:
  const OrtLogger* logger_ = nullptr;
  OrtLoggingLevel cached_severity_level_ = ORT_LOGGING_LEVEL_WARNING;
};

/// Logs `message` when `severity` reaches the logger's level (throws
/// Ort::Exception when logging fails; the _NOEXCEPT form ignores it).
#define ORT_CXX_LOG(logger, severity, message)                                                             \
  do {                                                                                                     \
    if ((severity) >= (logger).GetLoggingSeverityLevel())                                                  \
      Ort::ThrowOnError((logger).LogMessage((severity), __FILE__, __LINE__, static_cast<const char*>(__FUNCTION__), \
                                            (message)));                                                   \
  } while (false)
#define ORT_CXX_LOG_NOEXCEPT(logger, severity, message)                                                    \
  do {                                                                                                     \
    if ((severity) >= (logger).GetLoggingSeverityLevel())                                                  \
      static_cast<void>((logger).LogMessage((severity), __FILE__, __LINE__,                                \
                                            static_cast<const char*>(__FUNCTION__), (message)));           \
  } while (false)

/// What a C++ custom op's `static Ort::Status InferOutputShape(Ort::ShapeInferContext&)`
/// sees (CustomOpBase installs it as the op's InferOutputShapeFn): its
/// inputs' shapes (each dimension a number or a symbol; empty when the
/// runtime does not know the shape), its attributes, and the type and shape
/// it sets for each output.
struct ShapeInferContext {
  struct SymbolicInteger {
    SymbolicInteger(int64_t i) : i_(i), is_int_(true) {}
    SymbolicInteger(const char* s) : s_(s), is_int_(false) {}
    bool IsInt() const { return is_int_; }
    int64_t AsInt() const { return i_; }
    const char* AsSym() const { return s_; }
    bool operator==(const SymbolicInteger& other) const {
      if (is_int_ != other.is_int_) return false;
      return is_int_ ? i_ == other.i_ : std::string(s_) == other.s_;
    }
    static constexpr int INVALID_INT_DIM = -2;

   private:
    union {
      int64_t i_;
      const char* s_;
    };
    bool is_int_;
  };
  using Shape = std::vector<SymbolicInteger>;
  using Ints = std::vector<int64_t>;
  using Floats = std::vector<float>;
  using Strings = std::vector<std::string>;

  ShapeInferContext(const OrtApi* ort_api, OrtShapeInferContext* ctx);
  const Shape& GetInputShape(size_t index) const { return input_shapes_.at(index); }
  size_t GetInputCount() const { return input_shapes_.size(); }
  Status SetOutputShape(size_t index, const Shape& shape,
                        ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  int64_t GetAttrInt(const char* attr_name);
  Ints GetAttrInts(const char* attr_name);
  float GetAttrFloat(const char* attr_name);
  Floats GetAttrFloats(const char* attr_name);
  std::string GetAttrString(const char* attr_name);
  Strings GetAttrStrings(const char* attr_name);

 private:
  const OrtOpAttr* GetAttrHdl(const char* attr_name) const;
  std::vector<char> ReadAttr(const char* attr_name, OrtOpAttrType type) const;
  const OrtApi* ort_api_;
  OrtShapeInferContext* ctx_;
  std::vector<Shape> input_shapes_;
};

namespace detail {
/// What a custom kernel is told about its node when it is created.
template <typename T>
struct KernelInfoImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  KernelInfo Copy() const;
  /// Attribute `name` as float, int64_t or std::string (throws when missing).
  template <typename R>
  R GetAttribute(const char* name) const;
  /// A list attribute as float, int64_t or std::string values.
  template <typename R>
  std::vector<R> GetAttributes(const char* name) const;
  /// A tensor attribute as a new value.
  Value GetTensorAttribute(const char* name, OrtAllocator* allocator) const;
  /// Input `index` when it is a constant initializer (*is_constant 1), else an empty value.
  ConstValue GetTensorConstantInput(size_t index, int* is_constant) const;

  size_t GetInputCount() const;
  size_t GetOutputCount() const;
  std::string GetInputName(size_t index) const;
  std::string GetOutputName(size_t index) const;
  std::string GetNodeName() const;
  /// The session's logger, valid for the kernel's lifetime.
  Logger GetLogger() const;
};
}  // namespace detail

using ConstKernelInfo = detail::KernelInfoImpl<detail::Unowned<const OrtKernelInfo>>;

/// An owned copy of a kernel info (KernelInfo::Copy).
struct KernelInfo : detail::KernelInfoImpl<OrtKernelInfo> {
  explicit KernelInfo(std::nullptr_t) {}
  explicit KernelInfo(OrtKernelInfo* info) : detail::KernelInfoImpl<OrtKernelInfo>(info) {}
  ConstKernelInfo GetConst() const { return ConstKernelInfo{this->p_}; }
};

/// An attribute of an operator made with Op::Create.
struct OpAttr : detail::Base<OrtOpAttr> {
  OpAttr() = default;
  explicit OpAttr(OrtOpAttr* p) : detail::Base<OrtOpAttr>(p) {}
  /// data: one int64_t or float (INT, FLOAT), len of them (INTS, FLOATS), len characters (STRING) or len C strings (STRINGS).
  OpAttr(const char* name, const void* data, int len, OrtOpAttrType type);
};

/// A built-in operator run from inside a custom kernel.
struct Op : detail::Base<OrtOp> {
  explicit Op(std::nullptr_t) {}
  explicit Op(OrtOp* p) : detail::Base<OrtOp>(p) {}
  static Op Create(const OrtKernelInfo* info, const char* op_name, const char* domain, int version,
                   const char** type_constraint_names, const ONNXTensorElementDataType* type_constraint_values,
                   size_t type_constraint_count, const OpAttr* attr_values, size_t attr_count, size_t input_count,
                   size_t output_count);
  /// Computes the operator on the inputs into the outputs (values of the kernel's context).
  void Invoke(const OrtKernelContext* context, const Value* input_values, size_t input_count, Value* output_values,
              size_t output_count);
  void Invoke(const OrtKernelContext* context, const OrtValue* const* input_values, size_t input_count,
              OrtValue* const* output_values, size_t output_count);
};

/// A custom kernel's view of one compute: inputs, outputs allocated by
/// shape, and the session's intra-op pool (ParallelFor).
struct KernelContext {
  explicit KernelContext(OrtKernelContext* context) : ctx_(context) {}
  size_t GetInputCount() const;
  size_t GetOutputCount() const;
  /// Input `index` (a null value when an optional input is absent).
  ConstValue GetInput(size_t index) const;
  /// Allocates output `index` with the given shape.
  UnownedValue GetOutput(size_t index, const int64_t* dim_values, size_t dim_count) const;
  UnownedValue GetOutput(size_t index, const std::vector<int64_t>& dims) const;
  OrtAllocator* GetAllocator(const OrtMemoryInfo& memory_info) const;
  OrtKernelContext* GetOrtKernelContext() const { return ctx_; }
  /// The session's logger.
  Logger GetLogger() const;
  /// Calls fn(usr_data, i) for every i in [0, total), split into at most
  /// num_batch batches (0: no limit) run on the session's intra-op pool.
  void ParallelFor(void (*fn)(void*, size_t), size_t total, size_t num_batch, void* usr_data) const;

 private:
  OrtKernelContext* ctx_;
};

/// The highest opset version a custom op serves by default.
constexpr int MAX_CUSTOM_OP_END_VER = 2147483647;

/// Fills an OrtCustomOp from the methods of TOp (the operator) and TKernel
/// (its kernel). TOp defines GetName(), GetInputTypeCount(), GetInputType(i),
/// GetOutputTypeCount(), GetOutputType(i) and CreateKernel(api, info)
/// returning a new TKernel whose Compute(OrtKernelContext*) runs it. With
/// WithStatus, TOp defines CreateKernelV2(api, info, void** kernel) and
/// TKernel ComputeV2(OrtKernelContext*), both returning an OrtStatusPtr.
/// TOp may redefine the other methods below.
template <typename TOp, typename TKernel, bool WithStatus = false>
struct CustomOpBase : OrtCustomOp {
  CustomOpBase() {
    OrtCustomOp::version = ORT_API_VERSION;
    OrtCustomOp::GetName = [](const OrtCustomOp* op) { return static_cast<const TOp*>(op)->GetName(); };
    OrtCustomOp::GetExecutionProviderType = [](const OrtCustomOp* op) {
      return static_cast<const TOp*>(op)->GetExecutionProviderType();
    };
    OrtCustomOp::GetInputTypeCount = [](const OrtCustomOp* op) { return static_cast<const TOp*>(op)->GetInputTypeCount(); };
    OrtCustomOp::GetInputType = [](const OrtCustomOp* op, size_t i) { return static_cast<const TOp*>(op)->GetInputType(i); };
    OrtCustomOp::GetOutputTypeCount = [](const OrtCustomOp* op) { return static_cast<const TOp*>(op)->GetOutputTypeCount(); };
    OrtCustomOp::GetOutputType = [](const OrtCustomOp* op, size_t i) { return static_cast<const TOp*>(op)->GetOutputType(i); };
    OrtCustomOp::GetInputCharacteristic = [](const OrtCustomOp* op, size_t i) {
      return static_cast<const TOp*>(op)->GetInputCharacteristic(i);
    };
    OrtCustomOp::GetOutputCharacteristic = [](const OrtCustomOp* op, size_t i) {
      return static_cast<const TOp*>(op)->GetOutputCharacteristic(i);
    };
    OrtCustomOp::GetInputMemoryType = [](const OrtCustomOp* op, size_t i) {
      return static_cast<const TOp*>(op)->GetInputMemoryType(i);
    };
    OrtCustomOp::GetVariadicInputMinArity = [](const OrtCustomOp* op) {
      return static_cast<const TOp*>(op)->GetVariadicInputMinArity();
    };
    OrtCustomOp::GetVariadicInputHomogeneity = [](const OrtCustomOp* op) {
      return static_cast<int>(static_cast<const TOp*>(op)->GetVariadicInputHomogeneity());
    };
    OrtCustomOp::GetVariadicOutputMinArity = [](const OrtCustomOp* op) {
      return static_cast<const TOp*>(op)->GetVariadicOutputMinArity();
    };
    OrtCustomOp::GetVariadicOutputHomogeneity = [](const OrtCustomOp* op) {
      return static_cast<int>(static_cast<const TOp*>(op)->GetVariadicOutputHomogeneity());
    };
    if constexpr (WithStatus) {
      OrtCustomOp::CreateKernel = nullptr;
      OrtCustomOp::KernelCompute = nullptr;
      OrtCustomOp::CreateKernelV2 = [](const OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info,
                                       void** kernel) -> OrtStatusPtr {
        return static_cast<const TOp*>(op)->CreateKernelV2(*api, info, kernel);
      };
      OrtCustomOp::KernelComputeV2 = [](void* kernel, OrtKernelContext* context) -> OrtStatusPtr {
        return static_cast<TKernel*>(kernel)->ComputeV2(context);
      };
    } else {
      OrtCustomOp::CreateKernelV2 = nullptr;
      OrtCustomOp::KernelComputeV2 = nullptr;
      OrtCustomOp::CreateKernel = [](const OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info) -> void* {
        return static_cast<const TOp*>(op)->CreateKernel(*api, info);
      };
      OrtCustomOp::KernelCompute = [](void* kernel, OrtKernelContext* context) {
        static_cast<TKernel*>(kernel)->Compute(context);
      };
    }
    OrtCustomOp::KernelDestroy = [](void* kernel) { delete static_cast<TKernel*>(kernel); };
    SetShapeInferFn<TOp>(0);
    OrtCustomOp::GetStartVersion = [](const OrtCustomOp* op) { return static_cast<const TOp*>(op)->start_ver_; };
    OrtCustomOp::GetEndVersion = [](const OrtCustomOp* op) { return static_cast<const TOp*>(op)->end_ver_; };
    OrtCustomOp::GetMayInplace = nullptr;
    OrtCustomOp::ReleaseMayInplace = nullptr;
    OrtCustomOp::GetAliasMap = nullptr;
    OrtCustomOp::ReleaseAliasMap = nullptr;
  }

  /// NULL: the CPU.
  const char* GetExecutionProviderType() const { return nullptr; }

 private:
  // An op with `static Ort::Status InferOutputShape(Ort::ShapeInferContext&)`
  // gets it as its InferOutputShapeFn; the others get none.
  template <typename C>
  decltype(&C::InferOutputShape) SetShapeInferFn(decltype(&C::InferOutputShape)) {
    OrtCustomOp::InferOutputShapeFn = [](const OrtCustomOp*, OrtShapeInferContext* ort_ctx) -> OrtStatusPtr {
      try {
        ShapeInferContext ctx(&GetApi(), ort_ctx);
        return C::InferOutputShape(ctx).release();
      } catch (const Exception& e) {
        return GetApi().CreateStatus(e.GetOrtErrorCode(), e.what());
      }
    };
    return {};
  }
  template <typename C>
  void SetShapeInferFn(...) {
    OrtCustomOp::InferOutputShapeFn = nullptr;
  }

 public:
  OrtCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t) const { return INPUT_OUTPUT_REQUIRED; }
  OrtCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t) const { return INPUT_OUTPUT_REQUIRED; }
  OrtMemType GetInputMemoryType(size_t) const { return OrtMemTypeDefault; }
  int GetVariadicInputMinArity() const { return 1; }
  bool GetVariadicInputHomogeneity() const { return true; }
  int GetVariadicOutputMinArity() const { return 1; }
  bool GetVariadicOutputHomogeneity() const { return true; }

 protected:
  int start_ver_ = 1;
  int end_ver_ = MAX_CUSTOM_OP_END_VER;
};

namespace detail {

template <typename T>
struct ConstSessionImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  size_t GetInputCount() const;
  size_t GetOutputCount() const;
  size_t GetOverridableInitializerCount() const;

  AllocatedStringPtr GetInputNameAllocated(size_t index, OrtAllocator* allocator) const;
  AllocatedStringPtr GetOutputNameAllocated(size_t index, OrtAllocator* allocator) const;
  AllocatedStringPtr GetOverridableInitializerNameAllocated(size_t index, OrtAllocator* allocator) const;
  std::vector<std::string> GetInputNames() const;
  std::vector<std::string> GetOutputNames() const;

  uint64_t GetProfilingStartTimeNs() const;
  ModelMetadata GetModelMetadata() const;

  TypeInfo GetInputTypeInfo(size_t index) const;
  TypeInfo GetOutputTypeInfo(size_t index) const;
  TypeInfo GetOverridableInitializerTypeInfo(size_t index) const;
};

template <typename T>
struct SessionImpl : ConstSessionImpl<T> {
  using B = ConstSessionImpl<T>;
  using B::B;

  /// Runs the model: feeds by name, the named outputs returned in order.
  std::vector<Value> Run(const RunOptions& run_options, const char* const* input_names, const Value* input_values,
                         size_t input_count, const char* const* output_names, size_t output_count);
  /// Runs the model into the caller's output values (empty ones are filled in).
  void Run(const RunOptions& run_options, const char* const* input_names, const Value* input_values,
           size_t input_count, const char* const* output_names, Value* output_values, size_t output_count);
  /// Runs with the inputs and outputs bound to `io_binding`.
  void Run(const RunOptions& run_options, const IoBinding& io_binding);
  /// Runs on the inter-op pool; callback(user_data, outputs, count, status) when done.
  void RunAsync(const RunOptions& run_options, const char* const* input_names, const Value* input_values,
                size_t input_count, const char* const* output_names, Value* output_values, size_t output_count,
                RunAsyncCallbackFn callback, void* user_data);

  /// Ends profiling; the name of the file written.
  AllocatedStringPtr EndProfilingAllocated(OrtAllocator* allocator);
};

}  // namespace detail

using ConstSession = detail::ConstSessionImpl<detail::Unowned<const OrtSession>>;
using UnownedSession = detail::SessionImpl<detail::Unowned<OrtSession>>;

/// A loaded model.
struct Session : detail::SessionImpl<OrtSession> {
  using Base = detail::SessionImpl<OrtSession>;
  explicit Session(std::nullptr_t) {}
  explicit Session(OrtSession* p) : Base{p} {}
  /// Loads the model file at model_path.
  Session(const Env& env, const ORTCHAR_T* model_path, const SessionOptions& options);
  /// Loads the model from memory (the bytes are not kept).
  Session(const Env& env, const void* model_data, size_t model_data_length, const SessionOptions& options);

  ConstSession GetConst() const { return ConstSession{this->p_}; }
  UnownedSession GetUnowned() const { return UnownedSession{this->p_}; }
};

namespace detail {

template <typename T>
struct ConstIoBindingImpl : StorageT<T> {
  using B = StorageT<T>;
  using B::B;

  std::vector<std::string> GetOutputNames() const;
  std::vector<std::string> GetOutputNames(OrtAllocator* allocator) const;
  std::vector<Value> GetOutputValues() const;
  std::vector<Value> GetOutputValues(OrtAllocator* allocator) const;
};

template <typename T>
struct IoBindingImpl : ConstIoBindingImpl<T> {
  using B = ConstIoBindingImpl<T>;
  using B::B;

  void BindInput(const char* name, const Value& value);
  void BindOutput(const char* name, const Value& value);
  void BindOutput(const char* name, const OrtMemoryInfo* memory_info);
  void ClearBoundInputs();
  void ClearBoundOutputs();
  void SynchronizeInputs();
  void SynchronizeOutputs();
};

}  // namespace detail

using ConstIoBinding = detail::ConstIoBindingImpl<detail::Unowned<const OrtIoBinding>>;
using UnownedIoBinding = detail::IoBindingImpl<detail::Unowned<OrtIoBinding>>;

/// Inputs and outputs bound to a session ahead of Run(run_options, binding):
/// an output bound to a Value is written into it, one bound to a MemoryInfo
/// is allocated by the run (and then stays bound).
struct IoBinding : detail::IoBindingImpl<OrtIoBinding> {
  explicit IoBinding(std::nullptr_t) {}
  explicit IoBinding(Session& session);
  ConstIoBinding GetConst() const { return ConstIoBinding{this->p_}; }
  UnownedIoBinding GetUnowned() const { return UnownedIoBinding{this->p_}; }
};

}  // namespace Ort

#include "onnxruntime_cxx_inline.h"
