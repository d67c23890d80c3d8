// onnxruntime_cxx_inline.h — the definitions of onnxruntime_cxx_api.h's
// methods, each a call of one or a few C API slots. Included by
// onnxruntime_cxx_api.h; do not include it alone.
#pragma once

namespace Ort {

inline std::vector<std::string> GetAvailableProviders() {
  char** providers = nullptr;
  int count = 0;
  ThrowOnError(GetApi().GetAvailableProviders(&providers, &count));
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out.emplace_back(providers[i]);
  ThrowOnError(GetApi().ReleaseAvailableProviders(providers, count));
  return out;
}

// ---- Status ----
inline Status::Status(const Exception& e) : Base{GetApi().CreateStatus(e.GetOrtErrorCode(), e.what())} {}
inline Status::Status(const std::exception& e) : Base{GetApi().CreateStatus(ORT_FAIL, e.what())} {}
inline Status::Status(const char* message, OrtErrorCode code) : Base{GetApi().CreateStatus(code, message)} {}
inline std::string Status::GetErrorMessage() const { return p_ ? GetApi().GetErrorMessage(p_) : std::string(); }
inline OrtErrorCode Status::GetErrorCode() const { return p_ ? GetApi().GetErrorCode(p_) : ORT_OK; }

// ---- ThreadingOptions ----
inline ThreadingOptions::ThreadingOptions() { ThrowOnError(GetApi().CreateThreadingOptions(&p_)); }
inline ThreadingOptions& ThreadingOptions::SetGlobalIntraOpNumThreads(int n) {
  ThrowOnError(GetApi().SetGlobalIntraOpNumThreads(p_, n));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalInterOpNumThreads(int n) {
  ThrowOnError(GetApi().SetGlobalInterOpNumThreads(p_, n));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalSpinControl(int allow_spinning) {
  ThrowOnError(GetApi().SetGlobalSpinControl(p_, allow_spinning));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalDenormalAsZero() {
  ThrowOnError(GetApi().SetGlobalDenormalAsZero(p_));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalIntraOpThreadAffinity(const char* affinity_string) {
  ThrowOnError(GetApi().SetGlobalIntraOpThreadAffinity(p_, affinity_string));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalCustomCreateThreadFn(OrtCustomCreateThreadFn fn) {
  ThrowOnError(GetApi().SetGlobalCustomCreateThreadFn(p_, fn));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalCustomThreadCreationOptions(void* options) {
  ThrowOnError(GetApi().SetGlobalCustomThreadCreationOptions(p_, options));
  return *this;
}
inline ThreadingOptions& ThreadingOptions::SetGlobalCustomJoinThreadFn(OrtCustomJoinThreadFn fn) {
  ThrowOnError(GetApi().SetGlobalCustomJoinThreadFn(p_, fn));
  return *this;
}

// ---- Env ----
inline Env::Env(OrtLoggingLevel logging_level, const char* logid) {
  ThrowOnError(GetApi().CreateEnv(logging_level, logid, &p_));
  ThrowOnError(GetApi().SetLanguageProjection(p_, ORT_PROJECTION_CPLUSPLUS));
}
inline Env::Env(OrtLoggingLevel logging_level, const char* logid, OrtLoggingFunction logging_function,
                void* logger_param) {
  ThrowOnError(GetApi().CreateEnvWithCustomLogger(logging_function, logger_param, logging_level, logid, &p_));
  ThrowOnError(GetApi().SetLanguageProjection(p_, ORT_PROJECTION_CPLUSPLUS));
}
inline Env::Env(const OrtThreadingOptions* tp_options, OrtLoggingLevel logging_level, const char* logid) {
  ThrowOnError(GetApi().CreateEnvWithGlobalThreadPools(logging_level, logid, tp_options, &p_));
  ThrowOnError(GetApi().SetLanguageProjection(p_, ORT_PROJECTION_CPLUSPLUS));
}
inline Env::Env(const OrtThreadingOptions* tp_options, OrtLoggingFunction logging_function, void* logger_param,
                OrtLoggingLevel logging_level, const char* logid) {
  ThrowOnError(GetApi().CreateEnvWithCustomLoggerAndGlobalThreadPools(logging_function, logger_param, logging_level,
                                                                      logid, tp_options, &p_));
  ThrowOnError(GetApi().SetLanguageProjection(p_, ORT_PROJECTION_CPLUSPLUS));
}
inline Env& Env::EnableTelemetryEvents() {
  ThrowOnError(GetApi().EnableTelemetryEvents(p_));
  return *this;
}
inline Env& Env::DisableTelemetryEvents() {
  ThrowOnError(GetApi().DisableTelemetryEvents(p_));
  return *this;
}
inline Env& Env::UpdateEnvWithCustomLogLevel(OrtLoggingLevel level) {
  ThrowOnError(GetApi().UpdateEnvWithCustomLogLevel(p_, level));
  return *this;
}

// ---- RunOptions ----
inline RunOptions::RunOptions() { ThrowOnError(GetApi().CreateRunOptions(&p_)); }
inline RunOptions& RunOptions::SetRunLogVerbosityLevel(int level) {
  ThrowOnError(GetApi().RunOptionsSetRunLogVerbosityLevel(p_, level));
  return *this;
}
inline int RunOptions::GetRunLogVerbosityLevel() const {
  int level = 0;
  ThrowOnError(GetApi().RunOptionsGetRunLogVerbosityLevel(p_, &level));
  return level;
}
inline RunOptions& RunOptions::SetRunLogSeverityLevel(int level) {
  ThrowOnError(GetApi().RunOptionsSetRunLogSeverityLevel(p_, level));
  return *this;
}
inline int RunOptions::GetRunLogSeverityLevel() const {
  int level = 0;
  ThrowOnError(GetApi().RunOptionsGetRunLogSeverityLevel(p_, &level));
  return level;
}
inline RunOptions& RunOptions::SetRunTag(const char* run_tag) {
  ThrowOnError(GetApi().RunOptionsSetRunTag(p_, run_tag));
  return *this;
}
inline const char* RunOptions::GetRunTag() const {
  const char* tag = nullptr;
  ThrowOnError(GetApi().RunOptionsGetRunTag(p_, &tag));
  return tag;
}
inline RunOptions& RunOptions::AddConfigEntry(const char* key, const char* value) {
  ThrowOnError(GetApi().AddRunConfigEntry(p_, key, value));
  return *this;
}
inline const char* RunOptions::GetConfigEntry(const char* key) { return GetApi().GetRunConfigEntry(p_, key); }
inline RunOptions& RunOptions::SetTerminate() {
  ThrowOnError(GetApi().RunOptionsSetTerminate(p_));
  return *this;
}
inline RunOptions& RunOptions::UnsetTerminate() {
  ThrowOnError(GetApi().RunOptionsUnsetTerminate(p_));
  return *this;
}

// ---- SessionOptions ----
inline SessionOptions::SessionOptions() { ThrowOnError(GetApi().CreateSessionOptions(&p_)); }

namespace detail {

template <typename T>
SessionOptions ConstSessionOptionsImpl<T>::Clone() const {
  OrtSessionOptions* out = nullptr;
  ThrowOnError(GetApi().CloneSessionOptions(this->p_, &out));
  return SessionOptions{out};
}
template <typename T>
std::string ConstSessionOptionsImpl<T>::GetConfigEntry(const char* key) const {
  size_t size = 0;
  ThrowOnError(GetApi().GetSessionConfigEntry(this->p_, key, nullptr, &size));
  std::string out(size, '\0');
  ThrowOnError(GetApi().GetSessionConfigEntry(this->p_, key, &out[0], &size));
  out.resize(size > 0 ? size - 1 : 0);  // size counts the terminating NUL
  return out;
}
template <typename T>
bool ConstSessionOptionsImpl<T>::HasConfigEntry(const char* key) const {
  int out = 0;
  ThrowOnError(GetApi().HasSessionConfigEntry(this->p_, key, &out));
  return out != 0;
}
template <typename T>
std::string ConstSessionOptionsImpl<T>::GetConfigEntryOrDefault(const char* key, const std::string& def) const {
  return HasConfigEntry(key) ? GetConfigEntry(key) : def;
}

#define ORT_CXX_SO_SETTER(NAME, PARAMS, CALL)                                   \
  template <typename T>                                                         \
  SessionOptionsImpl<T>& SessionOptionsImpl<T>::NAME PARAMS {                   \
    ThrowOnError(GetApi().CALL);                                                \
    return *this;                                                               \
  }

ORT_CXX_SO_SETTER(SetIntraOpNumThreads, (int n), SetIntraOpNumThreads(this->p_, n))
ORT_CXX_SO_SETTER(SetInterOpNumThreads, (int n), SetInterOpNumThreads(this->p_, n))
ORT_CXX_SO_SETTER(SetGraphOptimizationLevel, (GraphOptimizationLevel level),
                  SetSessionGraphOptimizationLevel(this->p_, level))
ORT_CXX_SO_SETTER(SetDeterministicCompute, (bool value), SetDeterministicCompute(this->p_, value))
ORT_CXX_SO_SETTER(EnableCpuMemArena, (), EnableCpuMemArena(this->p_))
ORT_CXX_SO_SETTER(DisableCpuMemArena, (), DisableCpuMemArena(this->p_))
ORT_CXX_SO_SETTER(SetOptimizedModelFilePath, (const ORTCHAR_T* path), SetOptimizedModelFilePath(this->p_, path))
ORT_CXX_SO_SETTER(EnableProfiling, (const ORTCHAR_T* prefix), EnableProfiling(this->p_, prefix))
ORT_CXX_SO_SETTER(DisableProfiling, (), DisableProfiling(this->p_))
ORT_CXX_SO_SETTER(EnableMemPattern, (), EnableMemPattern(this->p_))
ORT_CXX_SO_SETTER(DisableMemPattern, (), DisableMemPattern(this->p_))
ORT_CXX_SO_SETTER(SetExecutionMode, (ExecutionMode mode), SetSessionExecutionMode(this->p_, mode))
ORT_CXX_SO_SETTER(SetLoadCancellationFlag, (bool value), SessionOptionsSetLoadCancellationFlag(this->p_, value))
ORT_CXX_SO_SETTER(SetLogId, (const char* logid), SetSessionLogId(this->p_, logid))
ORT_CXX_SO_SETTER(SetLogSeverityLevel, (int level), SetSessionLogSeverityLevel(this->p_, level))
ORT_CXX_SO_SETTER(Add, (OrtCustomOpDomain * domain), AddCustomOpDomain(this->p_, domain))
ORT_CXX_SO_SETTER(DisablePerSessionThreads, (), DisablePerSessionThreads(this->p_))
ORT_CXX_SO_SETTER(AddConfigEntry, (const char* key, const char* value), AddSessionConfigEntry(this->p_, key, value))
ORT_CXX_SO_SETTER(AddFreeDimensionOverrideByName, (const char* name, int64_t value),
                  AddFreeDimensionOverrideByName(this->p_, name, value))
ORT_CXX_SO_SETTER(AddFreeDimensionOverride, (const char* denotation, int64_t value),
                  AddFreeDimensionOverride(this->p_, denotation, value))
ORT_CXX_SO_SETTER(AddInitializer, (const char* name, const OrtValue* value), AddInitializer(this->p_, name, value))
ORT_CXX_SO_SETTER(SetCustomCreateThreadFn, (OrtCustomCreateThreadFn fn),
                  SessionOptionsSetCustomCreateThreadFn(this->p_, fn))
ORT_CXX_SO_SETTER(SetCustomThreadCreationOptions, (void* options),
                  SessionOptionsSetCustomThreadCreationOptions(this->p_, options))
ORT_CXX_SO_SETTER(SetCustomJoinThreadFn, (OrtCustomJoinThreadFn fn), SessionOptionsSetCustomJoinThreadFn(this->p_, fn))
ORT_CXX_SO_SETTER(RegisterCustomOpsLibrary, (const ORTCHAR_T* library_name),
                  RegisterCustomOpsLibrary_V2(this->p_, library_name))
ORT_CXX_SO_SETTER(RegisterCustomOpsUsingFunction, (const char* function_name),
                  RegisterCustomOpsUsingFunction(this->p_, function_name))
#undef ORT_CXX_SO_SETTER

template <typename T>
SessionOptionsImpl<T>& SessionOptionsImpl<T>::AddExternalInitializers(const std::vector<std::string>& names,
                                                                     const std::vector<Value>& ort_values) {
  if (names.size() != ort_values.size())
    ORT_CXX_API_THROW("AddExternalInitializers: there must be as many values as names", ORT_INVALID_ARGUMENT);
  std::vector<const char*> name_ptrs;
  std::vector<const OrtValue*> value_ptrs;
  name_ptrs.reserve(names.size());
  value_ptrs.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    value_ptrs.push_back(ort_values[i]);
  }
  ThrowOnError(GetApi().AddExternalInitializers(this->p_, name_ptrs.data(), value_ptrs.data(), names.size()));
  return *this;
}

template <typename T>
SessionOptionsImpl<T>& SessionOptionsImpl<T>::AddExternalInitializersFromFilesInMemory(
    const std::vector<std::basic_string<ORTCHAR_T>>& file_names, const std::vector<char*>& buffer_array,
    const std::vector<size_t>& file_lengths) {
  const size_t n = file_names.size();
  if (buffer_array.size() != n || file_lengths.size() != n)
    ORT_CXX_API_THROW("AddExternalInitializersFromFilesInMemory: there must be as many buffers and lengths as file names",
                      ORT_INVALID_ARGUMENT);
  std::vector<const ORTCHAR_T*> name_ptrs;
  name_ptrs.reserve(n);
  for (const auto& name : file_names) name_ptrs.push_back(name.c_str());
  ThrowOnError(GetApi().AddExternalInitializersFromFilesInMemory(this->p_, name_ptrs.data(), buffer_array.data(),
                                                                 file_lengths.data(), n));
  return *this;
}

template <typename T>
SessionOptionsImpl<T>& SessionOptionsImpl<T>::AppendExecutionProvider(
    const std::string& provider_name, const std::unordered_map<std::string, std::string>& provider_options) {
  std::vector<const char*> keys, values;
  keys.reserve(provider_options.size());
  values.reserve(provider_options.size());
  for (const auto& kv : provider_options) {
    keys.push_back(kv.first.c_str());
    values.push_back(kv.second.c_str());
  }
  ThrowOnError(GetApi().SessionOptionsAppendExecutionProvider(this->p_, provider_name.c_str(), keys.data(),
                                                              values.data(), keys.size()));
  return *this;
}

}  // namespace detail

// ---- ModelMetadata ----
#define ORT_CXX_METADATA_STRING(NAME, SLOT)                                           \
  inline AllocatedStringPtr ModelMetadata::NAME(OrtAllocator* allocator) const {      \
    char* out = nullptr;                                                              \
    ThrowOnError(GetApi().SLOT(p_, allocator, &out));                                 \
    return AllocatedStringPtr(out, detail::AllocatedFree(allocator));                 \
  }
ORT_CXX_METADATA_STRING(GetProducerNameAllocated, ModelMetadataGetProducerName)
ORT_CXX_METADATA_STRING(GetGraphNameAllocated, ModelMetadataGetGraphName)
ORT_CXX_METADATA_STRING(GetDomainAllocated, ModelMetadataGetDomain)
ORT_CXX_METADATA_STRING(GetDescriptionAllocated, ModelMetadataGetDescription)
ORT_CXX_METADATA_STRING(GetGraphDescriptionAllocated, ModelMetadataGetGraphDescription)
#undef ORT_CXX_METADATA_STRING

inline std::vector<AllocatedStringPtr> ModelMetadata::GetCustomMetadataMapKeysAllocated(OrtAllocator* allocator) const {
  char** keys = nullptr;
  int64_t count = 0;
  ThrowOnError(GetApi().ModelMetadataGetCustomMetadataMapKeys(p_, allocator, &keys, &count));
  std::vector<AllocatedStringPtr> out;
  if (keys == nullptr) return out;
  AllocatedStringPtr array_guard(reinterpret_cast<char*>(keys), detail::AllocatedFree(allocator));
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.emplace_back(keys[i], detail::AllocatedFree(allocator));
  return out;
}
inline AllocatedStringPtr ModelMetadata::LookupCustomMetadataMapAllocated(const char* key,
                                                                          OrtAllocator* allocator) const {
  char* out = nullptr;
  ThrowOnError(GetApi().ModelMetadataLookupCustomMetadataMap(p_, allocator, key, &out));
  return AllocatedStringPtr(out, detail::AllocatedFree(allocator));
}
inline int64_t ModelMetadata::GetVersion() const {
  int64_t out = 0;
  ThrowOnError(GetApi().ModelMetadataGetVersion(p_, &out));
  return out;
}

// ---- MemoryInfo ----
inline MemoryInfo MemoryInfo::CreateCpu(OrtAllocatorType type, OrtMemType mem_type) {
  OrtMemoryInfo* p = nullptr;
  ThrowOnError(GetApi().CreateCpuMemoryInfo(type, mem_type, &p));
  return MemoryInfo{p};
}
inline MemoryInfo::MemoryInfo(const char* name, OrtAllocatorType type, int id, OrtMemType mem_type) {
  ThrowOnError(GetApi().CreateMemoryInfo(name, type, id, mem_type, &p_));
}

namespace detail {
template <typename T>
std::string ConstMemoryInfoImpl<T>::GetAllocatorName() const {
  const char* name = nullptr;
  ThrowOnError(GetApi().MemoryInfoGetName(this->p_, &name));
  return name;
}
template <typename T>
OrtAllocatorType ConstMemoryInfoImpl<T>::GetAllocatorType() const {
  OrtAllocatorType out;
  ThrowOnError(GetApi().MemoryInfoGetType(this->p_, &out));
  return out;
}
template <typename T>
int ConstMemoryInfoImpl<T>::GetDeviceId() const {
  int out = 0;
  ThrowOnError(GetApi().MemoryInfoGetId(this->p_, &out));
  return out;
}
template <typename T>
OrtMemoryInfoDeviceType ConstMemoryInfoImpl<T>::GetDeviceType() const {
  OrtMemoryInfoDeviceType out;
  GetApi().MemoryInfoGetDeviceType(this->p_, &out);
  return out;
}
template <typename T>
OrtMemType ConstMemoryInfoImpl<T>::GetMemoryType() const {
  OrtMemType out;
  ThrowOnError(GetApi().MemoryInfoGetMemType(this->p_, &out));
  return out;
}
template <typename T>
template <typename U>
bool ConstMemoryInfoImpl<T>::operator==(const ConstMemoryInfoImpl<U>& o) const {
  int cmp = -1;
  ThrowOnError(GetApi().CompareMemoryInfo(this->p_, o, &cmp));
  return cmp == 0;
}
}  // namespace detail

// ---- allocators ----
inline MemoryAllocation::MemoryAllocation(OrtAllocator* allocator, void* p, size_t size)
    : allocator_(allocator), p_(p), size_(size) {}
inline MemoryAllocation::~MemoryAllocation() {
  if (p_ != nullptr) GetApi().AllocatorFree(allocator_, p_);
}
inline MemoryAllocation::MemoryAllocation(MemoryAllocation&& o) noexcept
    : allocator_(o.allocator_), p_(o.p_), size_(o.size_) {
  o.p_ = nullptr;
  o.size_ = 0;
}
inline MemoryAllocation& MemoryAllocation::operator=(MemoryAllocation&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) GetApi().AllocatorFree(allocator_, p_);
    allocator_ = o.allocator_;
    p_ = o.p_;
    size_ = o.size_;
    o.p_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

namespace detail {
template <typename T>
void* AllocatorImpl<T>::Alloc(size_t size) {
  void* out = nullptr;
  ThrowOnError(GetApi().AllocatorAlloc(this->p_, size, &out));
  return out;
}
template <typename T>
MemoryAllocation AllocatorImpl<T>::GetAllocation(size_t size) {
  void* out = nullptr;
  ThrowOnError(GetApi().AllocatorAlloc(this->p_, size, &out));
  return MemoryAllocation(this->p_, out, size);
}
template <typename T>
void AllocatorImpl<T>::Free(void* p) {
  ThrowOnError(GetApi().AllocatorFree(this->p_, p));
}
template <typename T>
ConstMemoryInfo AllocatorImpl<T>::GetInfo() const {
  const OrtMemoryInfo* out = nullptr;
  ThrowOnError(GetApi().AllocatorGetInfo(this->p_, &out));
  return ConstMemoryInfo{out};
}
}  // namespace detail

inline AllocatorWithDefaultOptions::AllocatorWithDefaultOptions() {
  ThrowOnError(GetApi().GetAllocatorWithDefaultOptions(&this->p_));
}
inline Allocator::Allocator(const Session& session, const OrtMemoryInfo* info) {
  ThrowOnError(GetApi().CreateAllocator(session, info, &this->p_));
}

// ---- type infos ----
inline TensorTypeAndShapeInfo::TensorTypeAndShapeInfo(ONNXTensorElementDataType element_type,
                                                      const std::vector<int64_t>& dims,
                                                      const std::vector<std::string>* symbolic_dims) {
  ThrowOnError(GetApi().CreateTensorTypeAndShapeInfo(&p_));
  ThrowOnError(GetApi().SetTensorElementType(p_, element_type));
  ThrowOnError(GetApi().SetDimensions(p_, dims.data(), dims.size()));
  if (symbolic_dims) {
    std::vector<const char*> names;
    names.reserve(symbolic_dims->size());
    for (const auto& s : *symbolic_dims) names.push_back(s.c_str());
    ThrowOnError(GetApi().SetSymbolicDimensions(p_, names.data(), names.size()));
  }
}

namespace detail {
template <typename T>
ONNXTensorElementDataType TensorTypeAndShapeInfoImpl<T>::GetElementType() const {
  ONNXTensorElementDataType out;
  ThrowOnError(GetApi().GetTensorElementType(this->p_, &out));
  return out;
}
template <typename T>
size_t TensorTypeAndShapeInfoImpl<T>::GetElementCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().GetTensorShapeElementCount(this->p_, &out));
  return out;
}
template <typename T>
size_t TensorTypeAndShapeInfoImpl<T>::GetDimensionsCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().GetDimensionsCount(this->p_, &out));
  return out;
}
template <typename T>
void TensorTypeAndShapeInfoImpl<T>::GetDimensions(int64_t* values, size_t count) const {
  ThrowOnError(GetApi().GetDimensions(this->p_, values, count));
}
template <typename T>
void TensorTypeAndShapeInfoImpl<T>::GetSymbolicDimensions(const char** values, size_t count) const {
  ThrowOnError(GetApi().GetSymbolicDimensions(this->p_, values, count));
}
template <typename T>
std::vector<const char*> TensorTypeAndShapeInfoImpl<T>::GetSymbolicDimensions() const {
  std::vector<const char*> out(GetDimensionsCount(), nullptr);
  if (!out.empty()) ThrowOnError(GetApi().GetSymbolicDimensions(this->p_, out.data(), out.size()));
  return out;
}
template <typename T>
bool TensorTypeAndShapeInfoImpl<T>::HasShape() const {
  return GetApi().TensorTypeAndShape_HasShape(this->p_);
}
template <typename T>
std::vector<int64_t> TensorTypeAndShapeInfoImpl<T>::GetShape() const {
  std::vector<int64_t> out(GetDimensionsCount(), -1);
  if (!out.empty()) ThrowOnError(GetApi().GetDimensions(this->p_, out.data(), out.size()));  // a scalar: none
  return out;
}

template <typename T>
TypeInfo SequenceTypeInfoImpl<T>::GetSequenceElementType() const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().GetSequenceElementType(this->p_, &out));
  return TypeInfo{out};
}
template <typename T>
ONNXTensorElementDataType MapTypeInfoImpl<T>::GetMapKeyType() const {
  ONNXTensorElementDataType out;
  ThrowOnError(GetApi().GetMapKeyType(this->p_, &out));
  return out;
}
template <typename T>
TypeInfo MapTypeInfoImpl<T>::GetMapValueType() const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().GetMapValueType(this->p_, &out));
  return TypeInfo{out};
}
template <typename T>
TypeInfo OptionalTypeInfoImpl<T>::GetOptionalElementType() const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().GetOptionalContainedTypeInfo(this->p_, &out));
  return TypeInfo{out};
}

template <typename T>
ConstTensorTypeAndShapeInfo TypeInfoImpl<T>::GetTensorTypeAndShapeInfo() const {
  const OrtTensorTypeAndShapeInfo* out = nullptr;
  ThrowOnError(GetApi().CastTypeInfoToTensorInfo(this->p_, &out));
  if (out == nullptr) ORT_CXX_API_THROW("the type is not a tensor's", ORT_INVALID_ARGUMENT);
  return ConstTensorTypeAndShapeInfo{out};
}
template <typename T>
ConstSequenceTypeInfo TypeInfoImpl<T>::GetSequenceTypeInfo() const {
  const OrtSequenceTypeInfo* out = nullptr;
  ThrowOnError(GetApi().CastTypeInfoToSequenceTypeInfo(this->p_, &out));
  if (out == nullptr) ORT_CXX_API_THROW("the type is not a sequence's", ORT_INVALID_ARGUMENT);
  return ConstSequenceTypeInfo{out};
}
template <typename T>
ConstMapTypeInfo TypeInfoImpl<T>::GetMapTypeInfo() const {
  const OrtMapTypeInfo* out = nullptr;
  ThrowOnError(GetApi().CastTypeInfoToMapTypeInfo(this->p_, &out));
  if (out == nullptr) ORT_CXX_API_THROW("the type is not a map's", ORT_INVALID_ARGUMENT);
  return ConstMapTypeInfo{out};
}
template <typename T>
ConstOptionalTypeInfo TypeInfoImpl<T>::GetOptionalTypeInfo() const {
  const OrtOptionalTypeInfo* out = nullptr;
  ThrowOnError(GetApi().CastTypeInfoToOptionalTypeInfo(this->p_, &out));
  if (out == nullptr) ORT_CXX_API_THROW("the type is not an optional's", ORT_INVALID_ARGUMENT);
  return ConstOptionalTypeInfo{out};
}
template <typename T>
ONNXType TypeInfoImpl<T>::GetONNXType() const {
  ONNXType out;
  ThrowOnError(GetApi().GetOnnxTypeFromTypeInfo(this->p_, &out));
  return out;
}

// ---- values ----
template <typename T>
size_t ConstValueImpl<T>::GetCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().GetValueCount(this->p_, &out));
  return out;
}
template <typename T>
Value ConstValueImpl<T>::GetValue(int index, OrtAllocator* allocator) const {
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().GetValue(this->p_, index, allocator, &out));
  return Value{out};
}
template <typename T>
bool ConstValueImpl<T>::IsTensor() const {
  int out = 0;
  ThrowOnError(GetApi().IsTensor(this->p_, &out));
  return out != 0;
}
template <typename T>
bool ConstValueImpl<T>::HasValue() const {
  int out = 0;
  ThrowOnError(GetApi().HasValue(this->p_, &out));
  return out != 0;
}
template <typename T>
TypeInfo ConstValueImpl<T>::GetTypeInfo() const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().GetTypeInfo(this->p_, &out));
  return TypeInfo{out};
}
template <typename T>
TensorTypeAndShapeInfo ConstValueImpl<T>::GetTensorTypeAndShapeInfo() const {
  OrtTensorTypeAndShapeInfo* out = nullptr;
  ThrowOnError(GetApi().GetTensorTypeAndShape(this->p_, &out));
  return TensorTypeAndShapeInfo{out};
}
template <typename T>
ConstMemoryInfo ConstValueImpl<T>::GetTensorMemoryInfo() const {
  const OrtMemoryInfo* out = nullptr;
  ThrowOnError(GetApi().GetTensorMemoryInfo(this->p_, &out));
  return ConstMemoryInfo{out};
}
template <typename T>
size_t ConstValueImpl<T>::GetTensorSizeInBytes() const {
  size_t out = 0;
  ThrowOnError(GetApi().GetTensorSizeInBytes(this->p_, &out));
  return out;
}
template <typename T>
template <typename R>
const R* ConstValueImpl<T>::GetTensorData() const {
  const void* out = nullptr;
  ThrowOnError(GetApi().GetTensorData(this->p_, &out));
  return static_cast<const R*>(out);
}
template <typename T>
const void* ConstValueImpl<T>::GetTensorRawData() const {
  const void* out = nullptr;
  ThrowOnError(GetApi().GetTensorData(this->p_, &out));
  return out;
}
template <typename T>
size_t ConstValueImpl<T>::GetStringTensorDataLength() const {
  size_t out = 0;
  ThrowOnError(GetApi().GetStringTensorDataLength(this->p_, &out));
  return out;
}
template <typename T>
size_t ConstValueImpl<T>::GetStringTensorElementLength(size_t element_index) const {
  size_t out = 0;
  ThrowOnError(GetApi().GetStringTensorElementLength(this->p_, element_index, &out));
  return out;
}
template <typename T>
void ConstValueImpl<T>::GetStringTensorContent(void* buffer, size_t buffer_length, size_t* offsets,
                                               size_t offsets_count) const {
  ThrowOnError(GetApi().GetStringTensorContent(this->p_, buffer, buffer_length, offsets, offsets_count));
}
template <typename T>
void ConstValueImpl<T>::GetStringTensorElement(size_t buffer_length, size_t element_index, void* buffer) const {
  ThrowOnError(GetApi().GetStringTensorElement(this->p_, buffer_length, element_index, buffer));
}
template <typename T>
std::string ConstValueImpl<T>::GetStringTensorElement(size_t element_index) const {
  const size_t length = GetStringTensorElementLength(element_index);
  std::string out(length, '\0');
  if (length > 0) ThrowOnError(GetApi().GetStringTensorElement(this->p_, length, element_index, &out[0]));
  return out;
}

template <typename T>
template <typename R>
R* ValueImpl<T>::GetTensorMutableData() {
  void* out = nullptr;
  ThrowOnError(GetApi().GetTensorMutableData(this->p_, &out));
  return static_cast<R*>(out);
}
template <typename T>
void* ValueImpl<T>::GetTensorMutableRawData() {
  void* out = nullptr;
  ThrowOnError(GetApi().GetTensorMutableData(this->p_, &out));
  return out;
}
template <typename T>
template <typename R>
R& ValueImpl<T>::At(const std::vector<int64_t>& location) {
  const std::vector<int64_t> shape = this->GetTensorTypeAndShapeInfo().GetShape();
  if (location.size() != shape.size())
    ORT_CXX_API_THROW("At: the location has " + std::to_string(location.size()) + " indices, the tensor " +
                          std::to_string(shape.size()) + " dimensions",
                      ORT_INVALID_ARGUMENT);
  int64_t offset = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (location[i] < 0 || location[i] >= shape[i])
      ORT_CXX_API_THROW("At: index " + std::to_string(location[i]) + " of dimension " + std::to_string(i) +
                            " is outside [0, " + std::to_string(shape[i]) + ")",
                        ORT_INVALID_ARGUMENT);
    offset = offset * shape[i] + location[i];
  }
  return GetTensorMutableData<R>()[offset];
}
template <typename T>
void ValueImpl<T>::FillStringTensor(const char* const* s, size_t s_len) {
  ThrowOnError(GetApi().FillStringTensor(this->p_, s, s_len));
}
template <typename T>
void ValueImpl<T>::FillStringTensorElement(const char* s, size_t index) {
  ThrowOnError(GetApi().FillStringTensorElement(this->p_, s, index));
}
template <typename T>
char* ValueImpl<T>::GetResizedStringTensorElementBuffer(size_t index, size_t buffer_length) {
  char* out = nullptr;
  ThrowOnError(GetApi().GetResizedStringTensorElementBuffer(this->p_, index, buffer_length, &out));
  return out;
}
}  // namespace detail

template <typename T>
Value Value::CreateTensor(const OrtMemoryInfo* info, T* p_data, size_t p_data_element_count, const int64_t* shape,
                          size_t shape_len) {
  return CreateTensor(info, static_cast<void*>(p_data), p_data_element_count * sizeof(T), shape, shape_len,
                      TypeToTensorType<T>::type);
}
inline Value Value::CreateTensor(const OrtMemoryInfo* info, void* p_data, size_t p_data_byte_count,
                                 const int64_t* shape, size_t shape_len, ONNXTensorElementDataType type) {
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().CreateTensorWithDataAsOrtValue(info, p_data, p_data_byte_count, shape, shape_len, type, &out));
  return Value{out};
}
template <typename T>
Value Value::CreateTensor(OrtAllocator* allocator, const int64_t* shape, size_t shape_len) {
  return CreateTensor(allocator, shape, shape_len, TypeToTensorType<T>::type);
}
inline Value Value::CreateTensor(OrtAllocator* allocator, const int64_t* shape, size_t shape_len,
                                 ONNXTensorElementDataType type) {
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().CreateTensorAsOrtValue(allocator, shape, shape_len, type, &out));
  return Value{out};
}
inline Value Value::CreateSequence(const std::vector<Value>& values) {
  std::vector<const OrtValue*> handles;
  handles.reserve(values.size());
  for (const auto& v : values) handles.push_back(v);
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().CreateValue(handles.data(), handles.size(), ONNX_TYPE_SEQUENCE, &out));
  return Value{out};
}
inline Value Value::CreateMap(const Value& keys, const Value& values) {
  const OrtValue* handles[2] = {keys, values};
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().CreateValue(handles, 2, ONNX_TYPE_MAP, &out));
  return Value{out};
}

// ---- sessions ----
inline Session::Session(const Env& env, const ORTCHAR_T* model_path, const SessionOptions& options) {
  ThrowOnError(GetApi().CreateSession(env, model_path, options, &this->p_));
}
inline Session::Session(const Env& env, const void* model_data, size_t model_data_length,
                        const SessionOptions& options) {
  ThrowOnError(GetApi().CreateSessionFromArray(env, model_data, model_data_length, options, &this->p_));
}

namespace detail {
template <typename T>
size_t ConstSessionImpl<T>::GetInputCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().SessionGetInputCount(this->p_, &out));
  return out;
}
template <typename T>
size_t ConstSessionImpl<T>::GetOutputCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().SessionGetOutputCount(this->p_, &out));
  return out;
}
template <typename T>
size_t ConstSessionImpl<T>::GetOverridableInitializerCount() const {
  size_t out = 0;
  ThrowOnError(GetApi().SessionGetOverridableInitializerCount(this->p_, &out));
  return out;
}
template <typename T>
AllocatedStringPtr ConstSessionImpl<T>::GetInputNameAllocated(size_t index, OrtAllocator* allocator) const {
  char* out = nullptr;
  ThrowOnError(GetApi().SessionGetInputName(this->p_, index, allocator, &out));
  return AllocatedStringPtr(out, AllocatedFree(allocator));
}
template <typename T>
AllocatedStringPtr ConstSessionImpl<T>::GetOutputNameAllocated(size_t index, OrtAllocator* allocator) const {
  char* out = nullptr;
  ThrowOnError(GetApi().SessionGetOutputName(this->p_, index, allocator, &out));
  return AllocatedStringPtr(out, AllocatedFree(allocator));
}
template <typename T>
AllocatedStringPtr ConstSessionImpl<T>::GetOverridableInitializerNameAllocated(size_t index,
                                                                              OrtAllocator* allocator) const {
  char* out = nullptr;
  ThrowOnError(GetApi().SessionGetOverridableInitializerName(this->p_, index, allocator, &out));
  return AllocatedStringPtr(out, AllocatedFree(allocator));
}
template <typename T>
std::vector<std::string> ConstSessionImpl<T>::GetInputNames() const {
  AllocatorWithDefaultOptions allocator;
  std::vector<std::string> out;
  const size_t n = GetInputCount();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(GetInputNameAllocated(i, allocator).get());
  return out;
}
template <typename T>
std::vector<std::string> ConstSessionImpl<T>::GetOutputNames() const {
  AllocatorWithDefaultOptions allocator;
  std::vector<std::string> out;
  const size_t n = GetOutputCount();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.emplace_back(GetOutputNameAllocated(i, allocator).get());
  return out;
}
template <typename T>
uint64_t ConstSessionImpl<T>::GetProfilingStartTimeNs() const {
  uint64_t out = 0;
  ThrowOnError(GetApi().SessionGetProfilingStartTimeNs(this->p_, &out));
  return out;
}
template <typename T>
ModelMetadata ConstSessionImpl<T>::GetModelMetadata() const {
  OrtModelMetadata* out = nullptr;
  ThrowOnError(GetApi().SessionGetModelMetadata(this->p_, &out));
  return ModelMetadata{out};
}
template <typename T>
TypeInfo ConstSessionImpl<T>::GetInputTypeInfo(size_t index) const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().SessionGetInputTypeInfo(this->p_, index, &out));
  return TypeInfo{out};
}
template <typename T>
TypeInfo ConstSessionImpl<T>::GetOutputTypeInfo(size_t index) const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().SessionGetOutputTypeInfo(this->p_, index, &out));
  return TypeInfo{out};
}
template <typename T>
TypeInfo ConstSessionImpl<T>::GetOverridableInitializerTypeInfo(size_t index) const {
  OrtTypeInfo* out = nullptr;
  ThrowOnError(GetApi().SessionGetOverridableInitializerTypeInfo(this->p_, index, &out));
  return TypeInfo{out};
}

// An Ort::Value holds exactly one OrtValue* and nothing else, so an array of
// them is an array of handles.
static_assert(sizeof(Value) == sizeof(OrtValue*), "Ort::Value is one handle");

template <typename T>
std::vector<Value> SessionImpl<T>::Run(const RunOptions& run_options, const char* const* input_names,
                                       const Value* input_values, size_t input_count,
                                       const char* const* output_names, size_t output_count) {
  std::vector<Value> outputs;
  outputs.reserve(output_count);
  for (size_t i = 0; i < output_count; ++i) outputs.emplace_back(nullptr);
  Run(run_options, input_names, input_values, input_count, output_names, outputs.data(), output_count);
  return outputs;
}
template <typename T>
void SessionImpl<T>::Run(const RunOptions& run_options, const char* const* input_names, const Value* input_values,
                         size_t input_count, const char* const* output_names, Value* output_values,
                         size_t output_count) {
  auto inputs = reinterpret_cast<const OrtValue* const*>(input_values);
  auto outputs = reinterpret_cast<OrtValue**>(output_values);
  ThrowOnError(GetApi().Run(this->p_, run_options, input_names, inputs, input_count, output_names, output_count,
                            outputs));
}
template <typename T>
void SessionImpl<T>::Run(const RunOptions& run_options, const IoBinding& io_binding) {
  ThrowOnError(GetApi().RunWithBinding(this->p_, run_options, io_binding));
}
template <typename T>
void SessionImpl<T>::RunAsync(const RunOptions& run_options, const char* const* input_names,
                              const Value* input_values, size_t input_count, const char* const* output_names,
                              Value* output_values, size_t output_count, RunAsyncCallbackFn callback,
                              void* user_data) {
  auto inputs = reinterpret_cast<const OrtValue* const*>(input_values);
  auto outputs = reinterpret_cast<OrtValue**>(output_values);
  ThrowOnError(GetApi().RunAsync(this->p_, run_options, input_names, inputs, input_count, output_names, output_count,
                                 outputs, callback, user_data));
}
template <typename T>
AllocatedStringPtr SessionImpl<T>::EndProfilingAllocated(OrtAllocator* allocator) {
  char* out = nullptr;
  ThrowOnError(GetApi().SessionEndProfiling(this->p_, allocator, &out));
  return AllocatedStringPtr(out, AllocatedFree(allocator));
}
}  // namespace detail

// ---- custom op domains ----
inline CustomOpDomain::CustomOpDomain(const char* domain) {
  ThrowOnError(GetApi().CreateCustomOpDomain(domain, &p_));
}
inline void CustomOpDomain::Add(const OrtCustomOp* op) { ThrowOnError(GetApi().CustomOpDomain_Add(p_, op)); }

// ---- custom kernels ----
namespace detail {
template <typename T>
KernelInfo KernelInfoImpl<T>::Copy() const {
  OrtKernelInfo* copy = nullptr;
  ThrowOnError(GetApi().CopyKernelInfo(this->p_, &copy));
  return KernelInfo{copy};
}
template <typename T>
template <typename R>
R KernelInfoImpl<T>::GetAttribute(const char* name) const {
  if constexpr (std::is_same_v<R, float>) {
    float v = 0;
    ThrowOnError(GetApi().KernelInfoGetAttribute_float(this->p_, name, &v));
    return v;
  } else if constexpr (std::is_same_v<R, int64_t>) {
    int64_t v = 0;
    ThrowOnError(GetApi().KernelInfoGetAttribute_int64(this->p_, name, &v));
    return v;
  } else {
    static_assert(std::is_same_v<R, std::string>, "GetAttribute takes float, int64_t or std::string");
    size_t size = 0;
    ThrowOnError(GetApi().KernelInfoGetAttribute_string(this->p_, name, nullptr, &size));
    std::string v(size, '\0');
    ThrowOnError(GetApi().KernelInfoGetAttribute_string(this->p_, name, &v[0], &size));
    v.resize(size > 0 ? size - 1 : 0);
    return v;
  }
}
template <typename T>
template <typename R>
std::vector<R> KernelInfoImpl<T>::GetAttributes(const char* name) const {
  size_t size = 0;
  std::vector<R> v;
  if constexpr (std::is_same_v<R, float>) {
    ThrowOnError(GetApi().KernelInfoGetAttributeArray_float(this->p_, name, nullptr, &size));
    v.resize(size);
    ThrowOnError(GetApi().KernelInfoGetAttributeArray_float(this->p_, name, v.data(), &size));
  } else if constexpr (std::is_same_v<R, std::string>) {
    AllocatorWithDefaultOptions allocator;
    char** strings = nullptr;
    ThrowOnError(GetApi().KernelInfoGetAttributeArray_string(this->p_, name, allocator, &strings, &size));
    for (size_t i = 0; i < size; ++i) {
      v.emplace_back(strings[i]);
      allocator.Free(strings[i]);
    }
    allocator.Free(strings);
  } else {
    static_assert(std::is_same_v<R, int64_t>, "GetAttributes takes float, int64_t or std::string");
    ThrowOnError(GetApi().KernelInfoGetAttributeArray_int64(this->p_, name, nullptr, &size));
    v.resize(size);
    ThrowOnError(GetApi().KernelInfoGetAttributeArray_int64(this->p_, name, v.data(), &size));
  }
  return v;
}
template <typename T>
Value KernelInfoImpl<T>::GetTensorAttribute(const char* name, OrtAllocator* allocator) const {
  OrtValue* out = nullptr;
  ThrowOnError(GetApi().KernelInfoGetAttribute_tensor(this->p_, name, allocator, &out));
  return Value{out};
}
template <typename T>
ConstValue KernelInfoImpl<T>::GetTensorConstantInput(size_t index, int* is_constant) const {
  const OrtValue* out = nullptr;
  ThrowOnError(GetApi().KernelInfoGetConstantInput_tensor(this->p_, index, is_constant, &out));
  return ConstValue{out};
}
template <typename T>
size_t KernelInfoImpl<T>::GetInputCount() const {
  size_t n = 0;
  ThrowOnError(GetApi().KernelInfo_GetInputCount(this->p_, &n));
  return n;
}
template <typename T>
size_t KernelInfoImpl<T>::GetOutputCount() const {
  size_t n = 0;
  ThrowOnError(GetApi().KernelInfo_GetOutputCount(this->p_, &n));
  return n;
}
// Reads a string the C API hands out by size query, then copy.
template <typename F>
std::string KernelInfoString(F get) {
  size_t size = 0;
  ThrowOnError(get(nullptr, &size));
  std::string v(size, '\0');
  ThrowOnError(get(&v[0], &size));
  v.resize(size > 0 ? size - 1 : 0);
  return v;
}
template <typename T>
std::string KernelInfoImpl<T>::GetInputName(size_t index) const {
  return KernelInfoString([&](char* out, size_t* size) { return GetApi().KernelInfo_GetInputName(this->p_, index, out, size); });
}
template <typename T>
std::string KernelInfoImpl<T>::GetOutputName(size_t index) const {
  return KernelInfoString([&](char* out, size_t* size) { return GetApi().KernelInfo_GetOutputName(this->p_, index, out, size); });
}
template <typename T>
std::string KernelInfoImpl<T>::GetNodeName() const {
  return KernelInfoString([&](char* out, size_t* size) { return GetApi().KernelInfo_GetNodeName(this->p_, out, size); });
}
template <typename T>
Logger KernelInfoImpl<T>::GetLogger() const {
  const OrtLogger* out = nullptr;
  ThrowOnError(GetApi().KernelInfo_GetLogger(this->p_, &out));
  return Logger{out};
}
}  // namespace detail

inline ShapeInferContext::ShapeInferContext(const OrtApi* ort_api, OrtShapeInferContext* ctx)
    : ort_api_(ort_api), ctx_(ctx) {
  size_t count = 0;
  ThrowOnError(ort_api_->ShapeInferContext_GetInputCount(ctx_, &count));
  for (size_t i = 0; i < count; ++i) {
    OrtTensorTypeAndShapeInfo* info = nullptr;  // the context's
    ThrowOnError(ort_api_->ShapeInferContext_GetInputTypeShape(ctx_, i, &info));
    size_t rank = 0;
    ThrowOnError(ort_api_->GetDimensionsCount(info, &rank));
    std::vector<int64_t> dims(rank);
    std::vector<const char*> symbols(rank, nullptr);
    if (rank) {
      ThrowOnError(ort_api_->GetDimensions(info, dims.data(), rank));
      ThrowOnError(ort_api_->GetSymbolicDimensions(info, symbols.data(), rank));
    }
    Shape shape;
    for (size_t d = 0; d < rank; ++d) {
      if (symbols[d] && *symbols[d])
        shape.emplace_back(symbols[d]);
      else
        shape.emplace_back(dims[d]);
    }
    input_shapes_.push_back(std::move(shape));
  }
}
inline Status ShapeInferContext::SetOutputShape(size_t index, const Shape& shape, ONNXTensorElementDataType type) {
  OrtTensorTypeAndShapeInfo* raw = nullptr;
  if (OrtStatus* st = ort_api_->CreateTensorTypeAndShapeInfo(&raw)) return Status{st};
  std::unique_ptr<OrtTensorTypeAndShapeInfo, void (*)(OrtTensorTypeAndShapeInfo*)> info(
      raw, [](OrtTensorTypeAndShapeInfo* p) { GetApi().ReleaseTensorTypeAndShapeInfo(p); });
  std::vector<int64_t> dims;
  std::vector<const char*> symbols;
  for (const auto& d : shape) {
    dims.push_back(d.IsInt() ? d.AsInt() : -1);
    symbols.push_back(d.IsInt() ? "" : d.AsSym());
  }
  if (OrtStatus* st = ort_api_->SetTensorElementType(info.get(), type)) return Status{st};
  if (OrtStatus* st = ort_api_->SetDimensions(info.get(), dims.data(), dims.size())) return Status{st};
  if (OrtStatus* st = ort_api_->SetSymbolicDimensions(info.get(), symbols.data(), symbols.size())) return Status{st};
  return Status{ort_api_->ShapeInferContext_SetOutputTypeShape(ctx_, index, info.get())};
}
inline const OrtOpAttr* ShapeInferContext::GetAttrHdl(const char* attr_name) const {
  const OrtOpAttr* attr = nullptr;
  ThrowOnError(ort_api_->ShapeInferContext_GetAttribute(ctx_, attr_name, &attr));
  return attr;
}
// The attribute's bytes: the size first, then the contents.
inline std::vector<char> ShapeInferContext::ReadAttr(const char* attr_name, OrtOpAttrType type) const {
  const OrtOpAttr* attr = GetAttrHdl(attr_name);
  size_t size = 0;
  Status probe{ort_api_->ReadOpAttr(attr, type, nullptr, 0, &size)};  // an error that reports the size
  std::vector<char> bytes(size);
  if (size) ThrowOnError(ort_api_->ReadOpAttr(attr, type, bytes.data(), bytes.size(), &size));
  else if (!probe.IsOK()) ThrowOnError(probe);
  return bytes;
}
inline int64_t ShapeInferContext::GetAttrInt(const char* attr_name) {
  int64_t value = 0;
  size_t size = 0;
  ThrowOnError(ort_api_->ReadOpAttr(GetAttrHdl(attr_name), ORT_OP_ATTR_INT, &value, sizeof value, &size));
  return value;
}
inline float ShapeInferContext::GetAttrFloat(const char* attr_name) {
  float value = 0;
  size_t size = 0;
  ThrowOnError(ort_api_->ReadOpAttr(GetAttrHdl(attr_name), ORT_OP_ATTR_FLOAT, &value, sizeof value, &size));
  return value;
}
inline ShapeInferContext::Ints ShapeInferContext::GetAttrInts(const char* attr_name) {
  std::vector<char> bytes = ReadAttr(attr_name, ORT_OP_ATTR_INTS);
  Ints out(bytes.size() / sizeof(int64_t));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(int64_t));
  return out;
}
inline ShapeInferContext::Floats ShapeInferContext::GetAttrFloats(const char* attr_name) {
  std::vector<char> bytes = ReadAttr(attr_name, ORT_OP_ATTR_FLOATS);
  Floats out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}
inline std::string ShapeInferContext::GetAttrString(const char* attr_name) {
  std::vector<char> bytes = ReadAttr(attr_name, ORT_OP_ATTR_STRING);
  return std::string(bytes.data(), bytes.size());
}
inline ShapeInferContext::Strings ShapeInferContext::GetAttrStrings(const char* attr_name) {
  std::vector<char> bytes = ReadAttr(attr_name, ORT_OP_ATTR_STRINGS);
  Strings out;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t end = std::find(bytes.begin() + static_cast<std::ptrdiff_t>(at), bytes.end(), '\0') - bytes.begin();
    out.emplace_back(bytes.data() + at, end - at);
    at = end + 1;
  }
  return out;
}

inline Logger::Logger(const OrtLogger* logger) : logger_(logger) {
  ThrowOnError(GetApi().Logger_GetLoggingSeverityLevel(logger, &cached_severity_level_));
}
inline Status Logger::LogMessage(OrtLoggingLevel log_severity_level, const ORTCHAR_T* file_path, int line_number,
                                 const char* func_name, const char* message) const noexcept {
  return Status{GetApi().Logger_LogMessage(logger_, log_severity_level, message, file_path, line_number, func_name)};
}
inline Logger KernelContext::GetLogger() const {
  const OrtLogger* out = nullptr;
  ThrowOnError(GetApi().KernelContext_GetLogger(ctx_, &out));
  return Logger{out};
}

inline size_t KernelContext::GetInputCount() const {
  size_t n = 0;
  ThrowOnError(GetApi().KernelContext_GetInputCount(ctx_, &n));
  return n;
}
inline size_t KernelContext::GetOutputCount() const {
  size_t n = 0;
  ThrowOnError(GetApi().KernelContext_GetOutputCount(ctx_, &n));
  return n;
}
inline ConstValue KernelContext::GetInput(size_t index) const {
  const OrtValue* v = nullptr;
  ThrowOnError(GetApi().KernelContext_GetInput(ctx_, index, &v));
  return ConstValue{v};
}
inline UnownedValue KernelContext::GetOutput(size_t index, const int64_t* dim_values, size_t dim_count) const {
  OrtValue* v = nullptr;
  ThrowOnError(GetApi().KernelContext_GetOutput(ctx_, index, dim_values, dim_count, &v));
  return UnownedValue{v};
}
inline UnownedValue KernelContext::GetOutput(size_t index, const std::vector<int64_t>& dims) const {
  return GetOutput(index, dims.data(), dims.size());
}
inline OrtAllocator* KernelContext::GetAllocator(const OrtMemoryInfo& memory_info) const {
  OrtAllocator* a = nullptr;
  ThrowOnError(GetApi().KernelContext_GetAllocator(ctx_, &memory_info, &a));
  return a;
}
inline void KernelContext::ParallelFor(void (*fn)(void*, size_t), size_t total, size_t num_batch, void* usr_data) const {
  ThrowOnError(GetApi().KernelContext_ParallelFor(ctx_, fn, total, num_batch, usr_data));
}

// ---- IO binding ----
inline IoBinding::IoBinding(Session& session) { ThrowOnError(GetApi().CreateIoBinding(session, &this->p_)); }

namespace detail {
template <typename T>
std::vector<std::string> ConstIoBindingImpl<T>::GetOutputNames() const {
  AllocatorWithDefaultOptions allocator;
  return GetOutputNames(allocator);
}
template <typename T>
std::vector<std::string> ConstIoBindingImpl<T>::GetOutputNames(OrtAllocator* allocator) const {
  char* buffer = nullptr;
  size_t* lengths = nullptr;
  size_t count = 0;
  ThrowOnError(GetApi().GetBoundOutputNames(this->p_, allocator, &buffer, &lengths, &count));
  std::vector<std::string> out;
  if (count == 0) return out;
  AllocatedStringPtr buffer_guard(buffer, AllocatedFree(allocator));
  AllocatedStringPtr lengths_guard(reinterpret_cast<char*>(lengths), AllocatedFree(allocator));
  out.reserve(count);
  size_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    out.emplace_back(buffer + offset, lengths[i]);
    offset += lengths[i];
  }
  return out;
}
template <typename T>
std::vector<Value> ConstIoBindingImpl<T>::GetOutputValues() const {
  AllocatorWithDefaultOptions allocator;
  return GetOutputValues(allocator);
}
template <typename T>
std::vector<Value> ConstIoBindingImpl<T>::GetOutputValues(OrtAllocator* allocator) const {
  OrtValue** values = nullptr;
  size_t count = 0;
  ThrowOnError(GetApi().GetBoundOutputValues(this->p_, allocator, &values, &count));
  std::vector<Value> out;
  if (count == 0) return out;
  AllocatedStringPtr array_guard(reinterpret_cast<char*>(values), AllocatedFree(allocator));
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.emplace_back(values[i]);
  return out;
}
template <typename T>
void IoBindingImpl<T>::BindInput(const char* name, const Value& value) {
  ThrowOnError(GetApi().BindInput(this->p_, name, value));
}
template <typename T>
void IoBindingImpl<T>::BindOutput(const char* name, const Value& value) {
  ThrowOnError(GetApi().BindOutput(this->p_, name, value));
}
template <typename T>
void IoBindingImpl<T>::BindOutput(const char* name, const OrtMemoryInfo* memory_info) {
  ThrowOnError(GetApi().BindOutputToDevice(this->p_, name, memory_info));
}
template <typename T>
void IoBindingImpl<T>::ClearBoundInputs() {
  GetApi().ClearBoundInputs(this->p_);
}
template <typename T>
void IoBindingImpl<T>::ClearBoundOutputs() {
  GetApi().ClearBoundOutputs(this->p_);
}
template <typename T>
void IoBindingImpl<T>::SynchronizeInputs() {
  ThrowOnError(GetApi().SynchronizeBoundInputs(this->p_));
}
template <typename T>
void IoBindingImpl<T>::SynchronizeOutputs() {
  ThrowOnError(GetApi().SynchronizeBoundOutputs(this->p_));
}
}  // namespace detail

// ---- operators run from custom kernels ----
inline OpAttr::OpAttr(const char* name, const void* data, int len, OrtOpAttrType type) {
  ThrowOnError(GetApi().CreateOpAttr(name, data, len, type, &p_));
}
inline Op Op::Create(const OrtKernelInfo* info, const char* op_name, const char* domain, int version,
                     const char** type_constraint_names, const ONNXTensorElementDataType* type_constraint_values,
                     size_t type_constraint_count, const OpAttr* attr_values, size_t attr_count, size_t input_count,
                     size_t output_count) {
  static_assert(sizeof(OpAttr) == sizeof(OrtOpAttr*), "OpAttr is one pointer wide");
  OrtOp* op = nullptr;
  ThrowOnError(GetApi().CreateOp(info, op_name, domain, version, type_constraint_names, type_constraint_values,
                                 static_cast<int>(type_constraint_count),
                                 reinterpret_cast<const OrtOpAttr* const*>(attr_values), static_cast<int>(attr_count),
                                 static_cast<int>(input_count), static_cast<int>(output_count), &op));
  return Op{op};
}
inline void Op::Invoke(const OrtKernelContext* context, const Value* input_values, size_t input_count,
                       Value* output_values, size_t output_count) {
  static_assert(sizeof(Value) == sizeof(OrtValue*), "Value is one pointer wide");
  ThrowOnError(GetApi().InvokeOp(context, p_, reinterpret_cast<const OrtValue* const*>(input_values),
                                 static_cast<int>(input_count), reinterpret_cast<OrtValue* const*>(output_values),
                                 static_cast<int>(output_count)));
}
inline void Op::Invoke(const OrtKernelContext* context, const OrtValue* const* input_values, size_t input_count,
                       OrtValue* const* output_values, size_t output_count) {
  ThrowOnError(GetApi().InvokeOp(context, p_, input_values, static_cast<int>(input_count), output_values,
                                 static_cast<int>(output_count)));
}

}  // namespace Ort
