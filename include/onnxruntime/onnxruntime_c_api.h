/* onnxruntime/onnxruntime_c_api.h — ONNX Runtime's C API, as spindle provides it.
 *
 * This header declares the interface of ONNX Runtime 1.30's C API (API
 * version 30): the same type names, enum values, function-pointer types and,
 * above all, the same order of the slots of `struct OrtApi`, so that a program
 * compiled against ONNX Runtime's own header runs unchanged on spindle's
 * libonnxruntime.so.1, and a program compiled against this header runs on
 * ONNX Runtime's library. The slot order and count are the binary interface:
 * slots are only ever appended, one block per release (marked below), and
 * tests/capi/ checks the offsets of well-known slots.
 *
 * What spindle implements, and what each unimplemented slot does (a status
 * ORT_NOT_IMPLEMENTED naming the function; slots without a status return
 * NULL, 0 or nothing), is listed in docs/capi.md.
 *
 * Use:
 *   const OrtApi* ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
 *   OrtStatus* st = ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "app", &env);
 *   if (st) { fprintf(stderr, "%s\n", ort->GetErrorMessage(st)); ort->ReleaseStatus(st); }
 *
 * Conventions: a function returning OrtStatus* returns NULL on success, else
 * a status the caller releases with ReleaseStatus. Strings handed out through
 * an OrtAllocator are freed with AllocatorFree on that allocator. Every
 * Release* accepts NULL.
 */
#ifndef SPINDLE_ONNXRUNTIME_C_API_H
#define SPINDLE_ONNXRUNTIME_C_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ORT_API_VERSION 30

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
#define ORT_NOEXCEPT noexcept
#else
#define ORT_NOEXCEPT
#endif

#if defined(__GNUC__)
#define ORT_EXPORT __attribute__((visibility("default")))
#define ORT_MUST_USE_RESULT __attribute__((warn_unused_result))
#else
#define ORT_EXPORT
#define ORT_MUST_USE_RESULT
#endif
/* Calling convention of every function pointer (the platform default on Linux). */
#define ORT_API_CALL
/* Path character type (char on Linux) and the literal macro for it. */
#define ORTCHAR_T char
#ifndef ORT_TSTR
#define ORT_TSTR(X) X
#endif

/* ---- error codes carried by an OrtStatus ---- */
typedef enum OrtErrorCode {
  ORT_OK = 0,
  ORT_FAIL = 1,
  ORT_INVALID_ARGUMENT = 2,
  ORT_NO_SUCHFILE = 3,
  ORT_NO_MODEL = 4,
  ORT_ENGINE_ERROR = 5,
  ORT_RUNTIME_EXCEPTION = 6,
  ORT_INVALID_PROTOBUF = 7,
  ORT_MODEL_LOADED = 8,
  ORT_NOT_IMPLEMENTED = 9,
  ORT_INVALID_GRAPH = 10,
  ORT_EP_FAIL = 11,
  ORT_MODEL_LOAD_CANCELED = 12,
  ORT_MODEL_REQUIRES_COMPILATION = 13,
  ORT_NOT_FOUND = 14,
  ORT_DEVICE_RESET = 15,
} OrtErrorCode;

/* ---- element types (the numbering of onnx's TensorProto.DataType) ---- */
typedef enum ONNXTensorElementDataType {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED = 0,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 = 3,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 = 4,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 = 5,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING = 8,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL = 9,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 = 10,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE = 11,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32 = 12,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 = 13,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64 = 14,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128 = 15,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 = 16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN = 17,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ = 18,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2 = 19,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ = 20,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4 = 21,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4 = 22,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1 = 23,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT2 = 24,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 = 25,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E8M0 = 26,
} ONNXTensorElementDataType;

/* ---- kinds of values (onnx's TypeProto cases) ---- */
typedef enum ONNXType {
  ONNX_TYPE_UNKNOWN = 0,
  ONNX_TYPE_TENSOR = 1,
  ONNX_TYPE_SEQUENCE = 2,
  ONNX_TYPE_MAP = 3,
  ONNX_TYPE_OPAQUE = 4,
  ONNX_TYPE_SPARSETENSOR = 5,
  ONNX_TYPE_OPTIONAL = 6,
} ONNXType;

typedef enum OrtSparseFormat {
  ORT_SPARSE_UNDEFINED = 0,
  ORT_SPARSE_COO = 0x1,
  ORT_SPARSE_CSRC = 0x2,
  ORT_SPARSE_BLOCK_SPARSE = 0x4,
} OrtSparseFormat;

enum OrtSparseIndicesFormat {
  ORT_SPARSE_COO_INDICES = 0,
  ORT_SPARSE_CSR_INNER_INDICES = 1,
  ORT_SPARSE_CSR_OUTER_INDICES = 2,
  ORT_SPARSE_BLOCK_SPARSE_INDICES = 3,
};

/* Minimum severity of the messages shown. */
typedef enum OrtLoggingLevel {
  ORT_LOGGING_LEVEL_VERBOSE = 0,
  ORT_LOGGING_LEVEL_INFO = 1,
  ORT_LOGGING_LEVEL_WARNING = 2,
  ORT_LOGGING_LEVEL_ERROR = 3,
  ORT_LOGGING_LEVEL_FATAL = 4,
} OrtLoggingLevel;

typedef enum OrtOpAttrType {
  ORT_OP_ATTR_UNDEFINED = 0,
  ORT_OP_ATTR_INT = 1,
  ORT_OP_ATTR_INTS = 2,
  ORT_OP_ATTR_FLOAT = 3,
  ORT_OP_ATTR_FLOATS = 4,
  ORT_OP_ATTR_STRING = 5,
  ORT_OP_ATTR_STRINGS = 6,
  ORT_OP_ATTR_GRAPH = 7,
  ORT_OP_ATTR_TENSOR = 8,
} OrtOpAttrType;

typedef enum GraphOptimizationLevel {
  ORT_DISABLE_ALL = 0,
  ORT_ENABLE_BASIC = 1,
  ORT_ENABLE_EXTENDED = 2,
  ORT_ENABLE_LAYOUT = 3,
  ORT_ENABLE_ALL = 99,
} GraphOptimizationLevel;

typedef enum ExecutionMode {
  ORT_SEQUENTIAL = 0,
  ORT_PARALLEL = 1,
} ExecutionMode;

typedef enum OrtLanguageProjection {
  ORT_PROJECTION_C = 0,
  ORT_PROJECTION_CPLUSPLUS = 1,
  ORT_PROJECTION_CSHARP = 2,
  ORT_PROJECTION_PYTHON = 3,
  ORT_PROJECTION_JAVA = 4,
  ORT_PROJECTION_WINML = 5,
  ORT_PROJECTION_NODEJS = 6,
} OrtLanguageProjection;

typedef enum OrtAllocatorType {
  OrtInvalidAllocator = -1,
  OrtDeviceAllocator = 0,
  OrtArenaAllocator = 1,
  OrtReadOnlyAllocator = 2,
} OrtAllocatorType;

typedef enum OrtMemType {
  OrtMemTypeCPUInput = -2,
  OrtMemTypeCPUOutput = -1,
  OrtMemTypeCPU = OrtMemTypeCPUOutput,
  OrtMemTypeDefault = 0,
} OrtMemType;

typedef enum OrtDeviceMemoryType {
  OrtDeviceMemoryType_DEFAULT = 0,
  OrtDeviceMemoryType_HOST_ACCESSIBLE = 5,
} OrtDeviceMemoryType;

typedef enum OrtMemoryInfoDeviceType {
  OrtMemoryInfoDeviceType_CPU = 0,
  OrtMemoryInfoDeviceType_GPU = 1,
  OrtMemoryInfoDeviceType_FPGA = 2,
  OrtMemoryInfoDeviceType_NPU = 3,
} OrtMemoryInfoDeviceType;

typedef enum OrtHardwareDeviceType {
  OrtHardwareDeviceType_CPU = 0,
  OrtHardwareDeviceType_GPU = 1,
  OrtHardwareDeviceType_NPU = 2,
} OrtHardwareDeviceType;

typedef enum OrtExecutionProviderDevicePolicy {
  OrtExecutionProviderDevicePolicy_DEFAULT = 0,
  OrtExecutionProviderDevicePolicy_PREFER_CPU = 1,
  OrtExecutionProviderDevicePolicy_PREFER_NPU = 2,
  OrtExecutionProviderDevicePolicy_PREFER_GPU = 3,
  OrtExecutionProviderDevicePolicy_MAX_PERFORMANCE = 4,
  OrtExecutionProviderDevicePolicy_MAX_EFFICIENCY = 5,
  OrtExecutionProviderDevicePolicy_MIN_OVERALL_POWER = 6,
} OrtExecutionProviderDevicePolicy;

typedef enum OrtCompiledModelCompatibility {
  OrtCompiledModelCompatibility_EP_NOT_APPLICABLE = 0,
  OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL = 1,
  OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION = 2,
  OrtCompiledModelCompatibility_EP_UNSUPPORTED = 3,
} OrtCompiledModelCompatibility;

/* ---- opaque handles: created and released through the API only ---- */
#define ORT_RUNTIME_CLASS(X) \
  struct Ort##X;             \
  typedef struct Ort##X Ort##X
ORT_RUNTIME_CLASS(Env);
ORT_RUNTIME_CLASS(Status); /* NULL means success */
ORT_RUNTIME_CLASS(MemoryInfo);
ORT_RUNTIME_CLASS(IoBinding);
ORT_RUNTIME_CLASS(Session);
ORT_RUNTIME_CLASS(Value);
ORT_RUNTIME_CLASS(RunOptions);
ORT_RUNTIME_CLASS(TypeInfo);
ORT_RUNTIME_CLASS(TensorTypeAndShapeInfo);
ORT_RUNTIME_CLASS(MapTypeInfo);
ORT_RUNTIME_CLASS(SequenceTypeInfo);
ORT_RUNTIME_CLASS(OptionalTypeInfo);
ORT_RUNTIME_CLASS(SessionOptions);
ORT_RUNTIME_CLASS(CustomOpDomain);
ORT_RUNTIME_CLASS(ModelMetadata);
ORT_RUNTIME_CLASS(ThreadPoolParams);
ORT_RUNTIME_CLASS(ThreadingOptions);
ORT_RUNTIME_CLASS(ArenaCfg);
ORT_RUNTIME_CLASS(PrepackedWeightsContainer);
ORT_RUNTIME_CLASS(TensorRTProviderOptionsV2);
ORT_RUNTIME_CLASS(NvTensorRtRtxProviderOptions);
ORT_RUNTIME_CLASS(CUDAProviderOptionsV2);
ORT_RUNTIME_CLASS(CANNProviderOptions);
ORT_RUNTIME_CLASS(DnnlProviderOptions);
ORT_RUNTIME_CLASS(Op);
ORT_RUNTIME_CLASS(OpAttr);
ORT_RUNTIME_CLASS(Logger);
ORT_RUNTIME_CLASS(ShapeInferContext);
ORT_RUNTIME_CLASS(LoraAdapter);
ORT_RUNTIME_CLASS(ValueInfo);
ORT_RUNTIME_CLASS(Node);
ORT_RUNTIME_CLASS(Graph);
ORT_RUNTIME_CLASS(Model);
ORT_RUNTIME_CLASS(ModelCompilationOptions);
ORT_RUNTIME_CLASS(HardwareDevice);
ORT_RUNTIME_CLASS(EpDevice);
ORT_RUNTIME_CLASS(KeyValuePairs);
ORT_RUNTIME_CLASS(SyncStream);
ORT_RUNTIME_CLASS(ExternalInitializerInfo);
ORT_RUNTIME_CLASS(ExternalResourceImporter);
ORT_RUNTIME_CLASS(ExternalMemoryHandle);
ORT_RUNTIME_CLASS(ExternalSemaphoreHandle);
ORT_RUNTIME_CLASS(DeviceEpIncompatibilityDetails);
ORT_RUNTIME_CLASS(EpAssignedSubgraph);
ORT_RUNTIME_CLASS(EpAssignedNode);

typedef OrtStatus* OrtStatusPtr;

/* Structures used through pointers only; spindle does not read their fields
 * (execution providers other than the CPU, kernel info and contexts, the
 * other API tables); struct OrtCustomOp is defined below OrtApi. */
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtCustomOp OrtCustomOp;
typedef struct OrtCUDAProviderOptions OrtCUDAProviderOptions;
typedef struct OrtROCMProviderOptions OrtROCMProviderOptions;
typedef struct OrtTensorRTProviderOptions OrtTensorRTProviderOptions;
typedef struct OrtMIGraphXProviderOptions OrtMIGraphXProviderOptions;
typedef struct OrtOpenVINOProviderOptions OrtOpenVINOProviderOptions;
typedef struct OrtThreadPoolCallbacksConfig OrtThreadPoolCallbacksConfig;
typedef struct OrtTrainingApi OrtTrainingApi;
typedef struct OrtModelEditorApi OrtModelEditorApi;
typedef struct OrtCompileApi OrtCompileApi;
typedef struct OrtEpApi OrtEpApi;
typedef struct OrtInteropApi OrtInteropApi;

/* An allocator: a table a user may also fill in to hand memory to the
 * runtime. version is the API version the table was written for; the fields
 * after Info exist from version 18 (Reserve), 23 (GetStats, AllocOnStream)
 * and 25 (Shrink) on. */
typedef struct OrtAllocator {
  uint32_t version;
  void*(ORT_API_CALL* Alloc)(struct OrtAllocator* this_, size_t size);
  void(ORT_API_CALL* Free)(struct OrtAllocator* this_, void* p);
  const struct OrtMemoryInfo*(ORT_API_CALL* Info)(const struct OrtAllocator* this_);
  void*(ORT_API_CALL* Reserve)(struct OrtAllocator* this_, size_t size);
  OrtStatusPtr(ORT_API_CALL* GetStats)(const struct OrtAllocator* this_, OrtKeyValuePairs** out);
  void*(ORT_API_CALL* AllocOnStream)(struct OrtAllocator* this_, size_t size, OrtSyncStream* stream);
  OrtStatusPtr(ORT_API_CALL* Shrink)(struct OrtAllocator* this_);
} OrtAllocator;

/* A log sink for CreateEnvWithCustomLogger. */
typedef void(ORT_API_CALL* OrtLoggingFunction)(void* param, OrtLoggingLevel severity, const char* category,
                                               const char* logid, const char* code_location, const char* message);

/* Custom pool threads. The runtime calls the create function once per pool
 * worker with the worker's loop (run it on the new thread, then return) and
 * the join function with the handle it returned, when the pool stops. */
typedef void (*OrtThreadWorkerFn)(void* ort_worker_fn_param);
typedef const struct OrtCustomHandleType {
  char __place_holder;
}* OrtCustomThreadHandle;
typedef OrtCustomThreadHandle (*OrtCustomCreateThreadFn)(void* ort_custom_thread_creation_options,
                                                         OrtThreadWorkerFn ort_thread_worker_fn,
                                                         void* ort_worker_fn_param);
typedef void (*OrtCustomJoinThreadFn)(OrtCustomThreadHandle ort_custom_thread_handle);

/* Completion callback of RunAsync: outputs and a status the callee owns. */
typedef void (*RunAsyncCallbackFn)(void* user_data, OrtValue** outputs, size_t num_outputs, OrtStatusPtr status);

typedef OrtStatus*(ORT_API_CALL* EpSelectionDelegate)(const OrtEpDevice** ep_devices, size_t num_devices,
                                                      const OrtKeyValuePairs* model_metadata,
                                                      const OrtKeyValuePairs* runtime_metadata,
                                                      const OrtEpDevice** selected, size_t max_selected,
                                                      size_t* num_selected, void* state);
typedef OrtStatus*(ORT_API_CALL* OrtWriteBufferFunc)(void* state, const void* buffer, size_t buffer_num_bytes);
typedef OrtStatus*(ORT_API_CALL* OrtGetInitializerLocationFunc)(void* state, const char* initializer_name,
                                                                const OrtValue* initializer_value,
                                                                const OrtExternalInitializerInfo* external_info,
                                                                OrtExternalInitializerInfo** new_external_info);
typedef void(ORT_API_CALL* OrtExperimentalFnPtr)(void);

/* CreateEnvWithOptions (API version 23): everything an environment is made
 * from. version is the API version the caller filled it in for. */
typedef struct OrtEnvCreationOptions {
  uint32_t version;
  int32_t logging_severity_level;
  const char* log_id;
  OrtLoggingFunction custom_logging_function; /* may be NULL */
  void* custom_logging_param;
  const OrtThreadingOptions* threading_options; /* NULL: no global pools */
  const OrtKeyValuePairs* config_entries;       /* may be NULL */
} OrtEnvCreationOptions;

struct OrtApi;
typedef struct OrtApi OrtApi;

/* The one exported entry point hands out this pair. */
struct OrtApiBase {
  /* The table of API version `version` (1..ORT_API_VERSION); NULL for a
   * version this library does not know. */
  const OrtApi*(ORT_API_CALL* GetApi)(uint32_t version)ORT_NOEXCEPT;
  /* The ONNX Runtime release this library is compatible with ("1.30.0"). */
  const char*(ORT_API_CALL* GetVersionString)(void)ORT_NOEXCEPT;
};
typedef struct OrtApiBase OrtApiBase;

ORT_EXPORT const OrtApiBase* ORT_API_CALL OrtGetApiBase(void) ORT_NOEXCEPT;

/* The function table. Slot i of version N is slot i of every later version;
 * the comment after each slot is its index. */
struct OrtApi {

  /* ---- slots 0..203: present before API version 11 ---- */
  OrtStatus*(ORT_API_CALL* CreateStatus)(OrtErrorCode code, const char* msg) ORT_NOEXCEPT;  /* 0 */
  OrtErrorCode(ORT_API_CALL* GetErrorCode)(const OrtStatus* status) ORT_NOEXCEPT;  /* 1 */
  const char*(ORT_API_CALL* GetErrorMessage)(const OrtStatus* status) ORT_NOEXCEPT;  /* 2 */
  OrtStatusPtr(ORT_API_CALL* CreateEnv)(OrtLoggingLevel log_severity_level, const char* logid, OrtEnv** out) ORT_NOEXCEPT;  /* 3 */
  OrtStatusPtr(ORT_API_CALL* CreateEnvWithCustomLogger)(OrtLoggingFunction logging_function, void* logger_param, OrtLoggingLevel log_severity_level, const char* logid, OrtEnv** out) ORT_NOEXCEPT;  /* 4 */
  OrtStatusPtr(ORT_API_CALL* EnableTelemetryEvents)(const OrtEnv* env) ORT_NOEXCEPT;  /* 5 */
  OrtStatusPtr(ORT_API_CALL* DisableTelemetryEvents)(const OrtEnv* env) ORT_NOEXCEPT;  /* 6 */
  OrtStatusPtr(ORT_API_CALL* CreateSession)(const OrtEnv* env, const ORTCHAR_T* model_path, const OrtSessionOptions* options, OrtSession** out) ORT_NOEXCEPT;  /* 7 */
  OrtStatusPtr(ORT_API_CALL* CreateSessionFromArray)(const OrtEnv* env, const void* model_data, size_t model_data_length, const OrtSessionOptions* options, OrtSession** out) ORT_NOEXCEPT;  /* 8 */
  OrtStatusPtr(ORT_API_CALL* Run)(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names, const OrtValue* const* inputs, size_t input_len, const char* const* output_names, size_t output_names_len, OrtValue** outputs) ORT_NOEXCEPT;  /* 9 */
  OrtStatusPtr(ORT_API_CALL* CreateSessionOptions)(OrtSessionOptions** options) ORT_NOEXCEPT;  /* 10 */
  OrtStatusPtr(ORT_API_CALL* SetOptimizedModelFilePath)(OrtSessionOptions* options, const ORTCHAR_T* optimized_model_filepath) ORT_NOEXCEPT;  /* 11 */
  OrtStatusPtr(ORT_API_CALL* CloneSessionOptions)(const OrtSessionOptions* in_options, OrtSessionOptions** out_options) ORT_NOEXCEPT;  /* 12 */
  OrtStatusPtr(ORT_API_CALL* SetSessionExecutionMode)(OrtSessionOptions* options, ExecutionMode execution_mode) ORT_NOEXCEPT;  /* 13 */
  OrtStatusPtr(ORT_API_CALL* EnableProfiling)(OrtSessionOptions* options, const ORTCHAR_T* profile_file_prefix) ORT_NOEXCEPT;  /* 14 */
  OrtStatusPtr(ORT_API_CALL* DisableProfiling)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 15 */
  OrtStatusPtr(ORT_API_CALL* EnableMemPattern)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 16 */
  OrtStatusPtr(ORT_API_CALL* DisableMemPattern)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 17 */
  OrtStatusPtr(ORT_API_CALL* EnableCpuMemArena)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 18 */
  OrtStatusPtr(ORT_API_CALL* DisableCpuMemArena)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 19 */
  OrtStatusPtr(ORT_API_CALL* SetSessionLogId)(OrtSessionOptions* options, const char* logid) ORT_NOEXCEPT;  /* 20 */
  OrtStatusPtr(ORT_API_CALL* SetSessionLogVerbosityLevel)(OrtSessionOptions* options, int session_log_verbosity_level) ORT_NOEXCEPT;  /* 21 */
  OrtStatusPtr(ORT_API_CALL* SetSessionLogSeverityLevel)(OrtSessionOptions* options, int session_log_severity_level) ORT_NOEXCEPT;  /* 22 */
  OrtStatusPtr(ORT_API_CALL* SetSessionGraphOptimizationLevel)(OrtSessionOptions* options, GraphOptimizationLevel graph_optimization_level) ORT_NOEXCEPT;  /* 23 */
  OrtStatusPtr(ORT_API_CALL* SetIntraOpNumThreads)(OrtSessionOptions* options, int intra_op_num_threads) ORT_NOEXCEPT;  /* 24 */
  OrtStatusPtr(ORT_API_CALL* SetInterOpNumThreads)(OrtSessionOptions* options, int inter_op_num_threads) ORT_NOEXCEPT;  /* 25 */
  OrtStatusPtr(ORT_API_CALL* CreateCustomOpDomain)(const char* domain, OrtCustomOpDomain** out) ORT_NOEXCEPT;  /* 26 */
  OrtStatusPtr(ORT_API_CALL* CustomOpDomain_Add)(OrtCustomOpDomain* custom_op_domain, const OrtCustomOp* op) ORT_NOEXCEPT;  /* 27 */
  OrtStatusPtr(ORT_API_CALL* AddCustomOpDomain)(OrtSessionOptions* options, OrtCustomOpDomain* custom_op_domain) ORT_NOEXCEPT;  /* 28 */
  OrtStatusPtr(ORT_API_CALL* RegisterCustomOpsLibrary)(OrtSessionOptions* options, const char* library_path, void** library_handle) ORT_NOEXCEPT;  /* 29 */
  OrtStatusPtr(ORT_API_CALL* SessionGetInputCount)(const OrtSession* session, size_t* out) ORT_NOEXCEPT;  /* 30 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOutputCount)(const OrtSession* session, size_t* out) ORT_NOEXCEPT;  /* 31 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOverridableInitializerCount)(const OrtSession* session, size_t* out) ORT_NOEXCEPT;  /* 32 */
  OrtStatusPtr(ORT_API_CALL* SessionGetInputTypeInfo)(const OrtSession* session, size_t index, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 33 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOutputTypeInfo)(const OrtSession* session, size_t index, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 34 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOverridableInitializerTypeInfo)(const OrtSession* session, size_t index, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 35 */
  OrtStatusPtr(ORT_API_CALL* SessionGetInputName)(const OrtSession* session, size_t index, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 36 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOutputName)(const OrtSession* session, size_t index, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 37 */
  OrtStatusPtr(ORT_API_CALL* SessionGetOverridableInitializerName)(const OrtSession* session, size_t index, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 38 */
  OrtStatusPtr(ORT_API_CALL* CreateRunOptions)(OrtRunOptions** out) ORT_NOEXCEPT;  /* 39 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsSetRunLogVerbosityLevel)(OrtRunOptions* options, int log_verbosity_level) ORT_NOEXCEPT;  /* 40 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsSetRunLogSeverityLevel)(OrtRunOptions* options, int log_severity_level) ORT_NOEXCEPT;  /* 41 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsSetRunTag)(OrtRunOptions* options, const char* run_tag) ORT_NOEXCEPT;  /* 42 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsGetRunLogVerbosityLevel)(const OrtRunOptions* options, int* log_verbosity_level) ORT_NOEXCEPT;  /* 43 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsGetRunLogSeverityLevel)(const OrtRunOptions* options, int* log_severity_level) ORT_NOEXCEPT;  /* 44 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsGetRunTag)(const OrtRunOptions* options, const char** run_tag) ORT_NOEXCEPT;  /* 45 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsSetTerminate)(OrtRunOptions* options) ORT_NOEXCEPT;  /* 46 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsUnsetTerminate)(OrtRunOptions* options) ORT_NOEXCEPT;  /* 47 */
  OrtStatusPtr(ORT_API_CALL* CreateTensorAsOrtValue)(OrtAllocator* allocator, const int64_t* shape, size_t shape_len, ONNXTensorElementDataType type, OrtValue** out) ORT_NOEXCEPT;  /* 48 */
  OrtStatusPtr(ORT_API_CALL* CreateTensorWithDataAsOrtValue)(const OrtMemoryInfo* info, void* p_data, size_t p_data_len, const int64_t* shape, size_t shape_len, ONNXTensorElementDataType type, OrtValue** out) ORT_NOEXCEPT;  /* 49 */
  OrtStatusPtr(ORT_API_CALL* IsTensor)(const OrtValue* value, int* out) ORT_NOEXCEPT;  /* 50 */
  OrtStatusPtr(ORT_API_CALL* GetTensorMutableData)(OrtValue* value, void** out) ORT_NOEXCEPT;  /* 51 */
  OrtStatusPtr(ORT_API_CALL* FillStringTensor)(OrtValue* value, const char* const* s, size_t s_len) ORT_NOEXCEPT;  /* 52 */
  OrtStatusPtr(ORT_API_CALL* GetStringTensorDataLength)(const OrtValue* value, size_t* len) ORT_NOEXCEPT;  /* 53 */
  OrtStatusPtr(ORT_API_CALL* GetStringTensorContent)(const OrtValue* value, void* s, size_t s_len, size_t* offsets, size_t offsets_len) ORT_NOEXCEPT;  /* 54 */
  OrtStatusPtr(ORT_API_CALL* CastTypeInfoToTensorInfo)(const OrtTypeInfo* type_info, const OrtTensorTypeAndShapeInfo** out) ORT_NOEXCEPT;  /* 55 */
  OrtStatusPtr(ORT_API_CALL* GetOnnxTypeFromTypeInfo)(const OrtTypeInfo* type_info, enum ONNXType* out) ORT_NOEXCEPT;  /* 56 */
  OrtStatusPtr(ORT_API_CALL* CreateTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo** out) ORT_NOEXCEPT;  /* 57 */
  OrtStatusPtr(ORT_API_CALL* SetTensorElementType)(OrtTensorTypeAndShapeInfo* info, enum ONNXTensorElementDataType type) ORT_NOEXCEPT;  /* 58 */
  OrtStatusPtr(ORT_API_CALL* SetDimensions)(OrtTensorTypeAndShapeInfo* info, const int64_t* dim_values, size_t dim_count) ORT_NOEXCEPT;  /* 59 */
  OrtStatusPtr(ORT_API_CALL* GetTensorElementType)(const OrtTensorTypeAndShapeInfo* info, enum ONNXTensorElementDataType* out) ORT_NOEXCEPT;  /* 60 */
  OrtStatusPtr(ORT_API_CALL* GetDimensionsCount)(const OrtTensorTypeAndShapeInfo* info, size_t* out) ORT_NOEXCEPT;  /* 61 */
  OrtStatusPtr(ORT_API_CALL* GetDimensions)(const OrtTensorTypeAndShapeInfo* info, int64_t* dim_values, size_t dim_values_length) ORT_NOEXCEPT;  /* 62 */
  OrtStatusPtr(ORT_API_CALL* GetSymbolicDimensions)(const OrtTensorTypeAndShapeInfo* info, const char* dim_params[], size_t dim_params_length) ORT_NOEXCEPT;  /* 63 */
  OrtStatusPtr(ORT_API_CALL* GetTensorShapeElementCount)(const OrtTensorTypeAndShapeInfo* info, size_t* out) ORT_NOEXCEPT;  /* 64 */
  OrtStatusPtr(ORT_API_CALL* GetTensorTypeAndShape)(const OrtValue* value, OrtTensorTypeAndShapeInfo** out) ORT_NOEXCEPT;  /* 65 */
  OrtStatusPtr(ORT_API_CALL* GetTypeInfo)(const OrtValue* value, OrtTypeInfo** out) ORT_NOEXCEPT;  /* 66 */
  OrtStatusPtr(ORT_API_CALL* GetValueType)(const OrtValue* value, enum ONNXType* out) ORT_NOEXCEPT;  /* 67 */
  OrtStatusPtr(ORT_API_CALL* CreateMemoryInfo)(const char* name, enum OrtAllocatorType type, int id, enum OrtMemType mem_type, OrtMemoryInfo** out) ORT_NOEXCEPT;  /* 68 */
  OrtStatusPtr(ORT_API_CALL* CreateCpuMemoryInfo)(enum OrtAllocatorType type, enum OrtMemType mem_type, OrtMemoryInfo** out) ORT_NOEXCEPT;  /* 69 */
  OrtStatusPtr(ORT_API_CALL* CompareMemoryInfo)(const OrtMemoryInfo* info1, const OrtMemoryInfo* info2, int* out) ORT_NOEXCEPT;  /* 70 */
  OrtStatusPtr(ORT_API_CALL* MemoryInfoGetName)(const OrtMemoryInfo* ptr, const char** out) ORT_NOEXCEPT;  /* 71 */
  OrtStatusPtr(ORT_API_CALL* MemoryInfoGetId)(const OrtMemoryInfo* ptr, int* out) ORT_NOEXCEPT;  /* 72 */
  OrtStatusPtr(ORT_API_CALL* MemoryInfoGetMemType)(const OrtMemoryInfo* ptr, OrtMemType* out) ORT_NOEXCEPT;  /* 73 */
  OrtStatusPtr(ORT_API_CALL* MemoryInfoGetType)(const OrtMemoryInfo* ptr, OrtAllocatorType* out) ORT_NOEXCEPT;  /* 74 */
  OrtStatusPtr(ORT_API_CALL* AllocatorAlloc)(OrtAllocator* ort_allocator, size_t size, void** out) ORT_NOEXCEPT;  /* 75 */
  OrtStatusPtr(ORT_API_CALL* AllocatorFree)(OrtAllocator* ort_allocator, void* p) ORT_NOEXCEPT;  /* 76 */
  OrtStatusPtr(ORT_API_CALL* AllocatorGetInfo)(const OrtAllocator* ort_allocator, const struct OrtMemoryInfo** out) ORT_NOEXCEPT;  /* 77 */
  OrtStatusPtr(ORT_API_CALL* GetAllocatorWithDefaultOptions)(OrtAllocator** out) ORT_NOEXCEPT;  /* 78 */
  OrtStatusPtr(ORT_API_CALL* AddFreeDimensionOverride)(OrtSessionOptions* options, const char* dim_denotation, int64_t dim_value) ORT_NOEXCEPT;  /* 79 */
  OrtStatusPtr(ORT_API_CALL* GetValue)(const OrtValue* value, int index, OrtAllocator* allocator, OrtValue** out) ORT_NOEXCEPT;  /* 80 */
  OrtStatusPtr(ORT_API_CALL* GetValueCount)(const OrtValue* value, size_t* out) ORT_NOEXCEPT;  /* 81 */
  OrtStatusPtr(ORT_API_CALL* CreateValue)(const OrtValue* const* in, size_t num_values, enum ONNXType value_type, OrtValue** out) ORT_NOEXCEPT;  /* 82 */
  OrtStatusPtr(ORT_API_CALL* CreateOpaqueValue)(const char* domain_name, const char* type_name, const void* data_container, size_t data_container_size, OrtValue** out) ORT_NOEXCEPT;  /* 83 */
  OrtStatusPtr(ORT_API_CALL* GetOpaqueValue)(const char* domain_name, const char* type_name, const OrtValue* in, void* data_container, size_t data_container_size) ORT_NOEXCEPT;  /* 84 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttribute_float)(const OrtKernelInfo* info, const char* name, float* out) ORT_NOEXCEPT;  /* 85 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttribute_int64)(const OrtKernelInfo* info, const char* name, int64_t* out) ORT_NOEXCEPT;  /* 86 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttribute_string)(const OrtKernelInfo* info, const char* name, char* out, size_t* size) ORT_NOEXCEPT;  /* 87 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetInputCount)(const OrtKernelContext* context, size_t* out) ORT_NOEXCEPT;  /* 88 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetOutputCount)(const OrtKernelContext* context, size_t* out) ORT_NOEXCEPT;  /* 89 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetInput)(const OrtKernelContext* context, size_t index, const OrtValue** out) ORT_NOEXCEPT;  /* 90 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetOutput)(OrtKernelContext* context, size_t index, const int64_t* dim_values, size_t dim_count, OrtValue** out) ORT_NOEXCEPT;  /* 91 */
  void(ORT_API_CALL* ReleaseEnv)(OrtEnv* input) ORT_NOEXCEPT;  /* 92 */
  void(ORT_API_CALL* ReleaseStatus)(OrtStatus* input) ORT_NOEXCEPT;  /* 93 */
  void(ORT_API_CALL* ReleaseMemoryInfo)(OrtMemoryInfo* input) ORT_NOEXCEPT;  /* 94 */
  void(ORT_API_CALL* ReleaseSession)(OrtSession* input) ORT_NOEXCEPT;  /* 95 */
  void(ORT_API_CALL* ReleaseValue)(OrtValue* input) ORT_NOEXCEPT;  /* 96 */
  void(ORT_API_CALL* ReleaseRunOptions)(OrtRunOptions* input) ORT_NOEXCEPT;  /* 97 */
  void(ORT_API_CALL* ReleaseTypeInfo)(OrtTypeInfo* input) ORT_NOEXCEPT;  /* 98 */
  void(ORT_API_CALL* ReleaseTensorTypeAndShapeInfo)(OrtTensorTypeAndShapeInfo* input) ORT_NOEXCEPT;  /* 99 */
  void(ORT_API_CALL* ReleaseSessionOptions)(OrtSessionOptions* input) ORT_NOEXCEPT;  /* 100 */
  void(ORT_API_CALL* ReleaseCustomOpDomain)(OrtCustomOpDomain* input) ORT_NOEXCEPT;  /* 101 */
  OrtStatusPtr(ORT_API_CALL* GetDenotationFromTypeInfo)(const OrtTypeInfo* type_info, const char** const denotation, size_t* len) ORT_NOEXCEPT;  /* 102 */
  OrtStatusPtr(ORT_API_CALL* CastTypeInfoToMapTypeInfo)(const OrtTypeInfo* type_info, const OrtMapTypeInfo** out) ORT_NOEXCEPT;  /* 103 */
  OrtStatusPtr(ORT_API_CALL* CastTypeInfoToSequenceTypeInfo)(const OrtTypeInfo* type_info, const OrtSequenceTypeInfo** out) ORT_NOEXCEPT;  /* 104 */
  OrtStatusPtr(ORT_API_CALL* GetMapKeyType)(const OrtMapTypeInfo* map_type_info, enum ONNXTensorElementDataType* out) ORT_NOEXCEPT;  /* 105 */
  OrtStatusPtr(ORT_API_CALL* GetMapValueType)(const OrtMapTypeInfo* map_type_info, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 106 */
  OrtStatusPtr(ORT_API_CALL* GetSequenceElementType)(const OrtSequenceTypeInfo* sequence_type_info, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 107 */
  void(ORT_API_CALL* ReleaseMapTypeInfo)(OrtMapTypeInfo* input) ORT_NOEXCEPT;  /* 108 */
  void(ORT_API_CALL* ReleaseSequenceTypeInfo)(OrtSequenceTypeInfo* input) ORT_NOEXCEPT;  /* 109 */
  OrtStatusPtr(ORT_API_CALL* SessionEndProfiling)(OrtSession* session, OrtAllocator* allocator, char** out) ORT_NOEXCEPT;  /* 110 */
  OrtStatusPtr(ORT_API_CALL* SessionGetModelMetadata)(const OrtSession* session, OrtModelMetadata** out) ORT_NOEXCEPT;  /* 111 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetProducerName)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 112 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetGraphName)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 113 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetDomain)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 114 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetDescription)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 115 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataLookupCustomMetadataMap)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, const char* key, char** value) ORT_NOEXCEPT;  /* 116 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetVersion)(const OrtModelMetadata* model_metadata, int64_t* value) ORT_NOEXCEPT;  /* 117 */
  void(ORT_API_CALL* ReleaseModelMetadata)(OrtModelMetadata* input) ORT_NOEXCEPT;  /* 118 */
  OrtStatusPtr(ORT_API_CALL* CreateEnvWithGlobalThreadPools)(OrtLoggingLevel log_severity_level, const char* logid, const OrtThreadingOptions* tp_options, OrtEnv** out) ORT_NOEXCEPT;  /* 119 */
  OrtStatusPtr(ORT_API_CALL* DisablePerSessionThreads)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 120 */
  OrtStatusPtr(ORT_API_CALL* CreateThreadingOptions)(OrtThreadingOptions** out) ORT_NOEXCEPT;  /* 121 */
  void(ORT_API_CALL* ReleaseThreadingOptions)(OrtThreadingOptions* input) ORT_NOEXCEPT;  /* 122 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetCustomMetadataMapKeys)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char*** keys, int64_t* num_keys) ORT_NOEXCEPT;  /* 123 */
  OrtStatusPtr(ORT_API_CALL* AddFreeDimensionOverrideByName)(OrtSessionOptions* options, const char* dim_name, int64_t dim_value) ORT_NOEXCEPT;  /* 124 */
  OrtStatusPtr(ORT_API_CALL* GetAvailableProviders)(char*** out_ptr, int* provider_length) ORT_NOEXCEPT;  /* 125 */
  OrtStatusPtr(ORT_API_CALL* ReleaseAvailableProviders)(char** ptr, int providers_length) ORT_NOEXCEPT;  /* 126 */
  OrtStatusPtr(ORT_API_CALL* GetStringTensorElementLength)(const OrtValue* value, size_t index, size_t* out) ORT_NOEXCEPT;  /* 127 */
  OrtStatusPtr(ORT_API_CALL* GetStringTensorElement)(const OrtValue* value, size_t s_len, size_t index, void* s) ORT_NOEXCEPT;  /* 128 */
  OrtStatusPtr(ORT_API_CALL* FillStringTensorElement)(OrtValue* value, const char* s, size_t index) ORT_NOEXCEPT;  /* 129 */
  OrtStatusPtr(ORT_API_CALL* AddSessionConfigEntry)(OrtSessionOptions* options, const char* config_key, const char* config_value) ORT_NOEXCEPT;  /* 130 */
  OrtStatusPtr(ORT_API_CALL* CreateAllocator)(const OrtSession* session, const OrtMemoryInfo* mem_info, OrtAllocator** out) ORT_NOEXCEPT;  /* 131 */
  void(ORT_API_CALL* ReleaseAllocator)(OrtAllocator* input) ORT_NOEXCEPT;  /* 132 */
  OrtStatusPtr(ORT_API_CALL* RunWithBinding)(OrtSession* session, const OrtRunOptions* run_options, const OrtIoBinding* binding_ptr) ORT_NOEXCEPT;  /* 133 */
  OrtStatusPtr(ORT_API_CALL* CreateIoBinding)(OrtSession* session, OrtIoBinding** out) ORT_NOEXCEPT;  /* 134 */
  void(ORT_API_CALL* ReleaseIoBinding)(OrtIoBinding* input) ORT_NOEXCEPT;  /* 135 */
  OrtStatusPtr(ORT_API_CALL* BindInput)(OrtIoBinding* binding_ptr, const char* name, const OrtValue* val_ptr) ORT_NOEXCEPT;  /* 136 */
  OrtStatusPtr(ORT_API_CALL* BindOutput)(OrtIoBinding* binding_ptr, const char* name, const OrtValue* val_ptr) ORT_NOEXCEPT;  /* 137 */
  OrtStatusPtr(ORT_API_CALL* BindOutputToDevice)(OrtIoBinding* binding_ptr, const char* name, const OrtMemoryInfo* mem_info_ptr) ORT_NOEXCEPT;  /* 138 */
  OrtStatusPtr(ORT_API_CALL* GetBoundOutputNames)(const OrtIoBinding* binding_ptr, OrtAllocator* allocator, char** buffer, size_t** lengths, size_t* count) ORT_NOEXCEPT;  /* 139 */
  OrtStatusPtr(ORT_API_CALL* GetBoundOutputValues)(const OrtIoBinding* binding_ptr, OrtAllocator* allocator, OrtValue*** output, size_t* output_count) ORT_NOEXCEPT;  /* 140 */
  void(ORT_API_CALL* ClearBoundInputs)(OrtIoBinding* binding_ptr) ORT_NOEXCEPT;  /* 141 */
  void(ORT_API_CALL* ClearBoundOutputs)(OrtIoBinding* binding_ptr) ORT_NOEXCEPT;  /* 142 */
  OrtStatusPtr(ORT_API_CALL* TensorAt)(OrtValue* value, const int64_t* location_values, size_t location_values_count, void** out) ORT_NOEXCEPT;  /* 143 */
  OrtStatusPtr(ORT_API_CALL* CreateAndRegisterAllocator)(OrtEnv* env, const OrtMemoryInfo* mem_info, const OrtArenaCfg* arena_cfg) ORT_NOEXCEPT;  /* 144 */
  OrtStatusPtr(ORT_API_CALL* SetLanguageProjection)(const OrtEnv* ort_env, OrtLanguageProjection projection) ORT_NOEXCEPT;  /* 145 */
  OrtStatusPtr(ORT_API_CALL* SessionGetProfilingStartTimeNs)(const OrtSession* session, uint64_t* out) ORT_NOEXCEPT;  /* 146 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalIntraOpNumThreads)(OrtThreadingOptions* tp_options, int intra_op_num_threads) ORT_NOEXCEPT;  /* 147 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalInterOpNumThreads)(OrtThreadingOptions* tp_options, int inter_op_num_threads) ORT_NOEXCEPT;  /* 148 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalSpinControl)(OrtThreadingOptions* tp_options, int allow_spinning) ORT_NOEXCEPT;  /* 149 */
  OrtStatusPtr(ORT_API_CALL* AddInitializer)(OrtSessionOptions* options, const char* name, const OrtValue* val) ORT_NOEXCEPT;  /* 150 */
  OrtStatusPtr(ORT_API_CALL* CreateEnvWithCustomLoggerAndGlobalThreadPools)(OrtLoggingFunction logging_function, void* logger_param, OrtLoggingLevel log_severity_level, const char* logid, const struct OrtThreadingOptions* tp_options, OrtEnv** out) ORT_NOEXCEPT;  /* 151 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_CUDA)(OrtSessionOptions* options, const OrtCUDAProviderOptions* cuda_options) ORT_NOEXCEPT;  /* 152 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_ROCM)(OrtSessionOptions* options, const OrtROCMProviderOptions* rocm_options) ORT_NOEXCEPT;  /* 153 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_OpenVINO)(OrtSessionOptions* options, const OrtOpenVINOProviderOptions* provider_options) ORT_NOEXCEPT;  /* 154 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalDenormalAsZero)(OrtThreadingOptions* tp_options) ORT_NOEXCEPT;  /* 155 */
  OrtStatusPtr(ORT_API_CALL* CreateArenaCfg)(size_t max_mem, int arena_extend_strategy, int initial_chunk_size_bytes, int max_dead_bytes_per_chunk, OrtArenaCfg** out) ORT_NOEXCEPT;  /* 156 */
  void(ORT_API_CALL* ReleaseArenaCfg)(OrtArenaCfg* input) ORT_NOEXCEPT;  /* 157 */
  OrtStatusPtr(ORT_API_CALL* ModelMetadataGetGraphDescription)(const OrtModelMetadata* model_metadata, OrtAllocator* allocator, char** value) ORT_NOEXCEPT;  /* 158 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_TensorRT)(OrtSessionOptions* options, const OrtTensorRTProviderOptions* tensorrt_options) ORT_NOEXCEPT;  /* 159 */
  OrtStatusPtr(ORT_API_CALL* SetCurrentGpuDeviceId)(int device_id) ORT_NOEXCEPT;  /* 160 */
  OrtStatusPtr(ORT_API_CALL* GetCurrentGpuDeviceId)(int* device_id) ORT_NOEXCEPT;  /* 161 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttributeArray_float)(const OrtKernelInfo* info, const char* name, float* out, size_t* size) ORT_NOEXCEPT;  /* 162 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttributeArray_int64)(const OrtKernelInfo* info, const char* name, int64_t* out, size_t* size) ORT_NOEXCEPT;  /* 163 */
  OrtStatusPtr(ORT_API_CALL* CreateArenaCfgV2)(const char* const* arena_config_keys, const size_t* arena_config_values, size_t num_keys, OrtArenaCfg** out) ORT_NOEXCEPT;  /* 164 */
  OrtStatusPtr(ORT_API_CALL* AddRunConfigEntry)(OrtRunOptions* options, const char* config_key, const char* config_value) ORT_NOEXCEPT;  /* 165 */
  OrtStatusPtr(ORT_API_CALL* CreatePrepackedWeightsContainer)(OrtPrepackedWeightsContainer** out) ORT_NOEXCEPT;  /* 166 */
  void(ORT_API_CALL* ReleasePrepackedWeightsContainer)(OrtPrepackedWeightsContainer* input) ORT_NOEXCEPT;  /* 167 */
  OrtStatusPtr(ORT_API_CALL* CreateSessionWithPrepackedWeightsContainer)(const OrtEnv* env, const ORTCHAR_T* model_path, const OrtSessionOptions* options, OrtPrepackedWeightsContainer* prepacked_weights_container, OrtSession** out) ORT_NOEXCEPT;  /* 168 */
  OrtStatusPtr(ORT_API_CALL* CreateSessionFromArrayWithPrepackedWeightsContainer)(const OrtEnv* env, const void* model_data, size_t model_data_length, const OrtSessionOptions* options, OrtPrepackedWeightsContainer* prepacked_weights_container, OrtSession** out) ORT_NOEXCEPT;  /* 169 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_TensorRT_V2)(OrtSessionOptions* options, const OrtTensorRTProviderOptionsV2* tensorrt_options) ORT_NOEXCEPT;  /* 170 */
  OrtStatusPtr(ORT_API_CALL* CreateTensorRTProviderOptions)(OrtTensorRTProviderOptionsV2** out) ORT_NOEXCEPT;  /* 171 */
  OrtStatusPtr(ORT_API_CALL* UpdateTensorRTProviderOptions)(OrtTensorRTProviderOptionsV2* tensorrt_options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 172 */
  OrtStatusPtr(ORT_API_CALL* GetTensorRTProviderOptionsAsString)(const OrtTensorRTProviderOptionsV2* tensorrt_options, OrtAllocator* allocator, char** ptr) ORT_NOEXCEPT;  /* 173 */
  void(ORT_API_CALL* ReleaseTensorRTProviderOptions)(OrtTensorRTProviderOptionsV2* input) ORT_NOEXCEPT;  /* 174 */
  OrtStatusPtr(ORT_API_CALL* EnableOrtCustomOps)(OrtSessionOptions* options) ORT_NOEXCEPT;  /* 175 */
  OrtStatusPtr(ORT_API_CALL* RegisterAllocator)(OrtEnv* env, OrtAllocator* allocator) ORT_NOEXCEPT;  /* 176 */
  OrtStatusPtr(ORT_API_CALL* UnregisterAllocator)(OrtEnv* env, const OrtMemoryInfo* mem_info) ORT_NOEXCEPT;  /* 177 */
  OrtStatusPtr(ORT_API_CALL* IsSparseTensor)(const OrtValue* value, int* out) ORT_NOEXCEPT;  /* 178 */
  OrtStatusPtr(ORT_API_CALL* CreateSparseTensorAsOrtValue)(OrtAllocator* allocator, const int64_t* dense_shape, size_t dense_shape_len, ONNXTensorElementDataType type, OrtValue** out) ORT_NOEXCEPT;  /* 179 */
  OrtStatusPtr(ORT_API_CALL* FillSparseTensorCoo)(OrtValue* ort_value, const OrtMemoryInfo* data_mem_info, const int64_t* values_shape, size_t values_shape_len, const void* values, const int64_t* indices_data, size_t indices_num) ORT_NOEXCEPT;  /* 180 */
  OrtStatusPtr(ORT_API_CALL* FillSparseTensorCsr)(OrtValue* ort_value, const OrtMemoryInfo* data_mem_info, const int64_t* values_shape, size_t values_shape_len, const void* values, const int64_t* inner_indices_data, size_t inner_indices_num, const int64_t* outer_indices_data, size_t outer_indices_num) ORT_NOEXCEPT;  /* 181 */
  OrtStatusPtr(ORT_API_CALL* FillSparseTensorBlockSparse)(OrtValue* ort_value, const OrtMemoryInfo* data_mem_info, const int64_t* values_shape, size_t values_shape_len, const void* values, const int64_t* indices_shape_data, size_t indices_shape_len, const int32_t* indices_data) ORT_NOEXCEPT;  /* 182 */
  OrtStatusPtr(ORT_API_CALL* CreateSparseTensorWithValuesAsOrtValue)(const OrtMemoryInfo* info, void* p_data, const int64_t* dense_shape, size_t dense_shape_len, const int64_t* values_shape, size_t values_shape_len, ONNXTensorElementDataType type, OrtValue** out) ORT_NOEXCEPT;  /* 183 */
  OrtStatusPtr(ORT_API_CALL* UseCooIndices)(OrtValue* ort_value, int64_t* indices_data, size_t indices_num) ORT_NOEXCEPT;  /* 184 */
  OrtStatusPtr(ORT_API_CALL* UseCsrIndices)(OrtValue* ort_value, int64_t* inner_data, size_t inner_num, int64_t* outer_data, size_t outer_num) ORT_NOEXCEPT;  /* 185 */
  OrtStatusPtr(ORT_API_CALL* UseBlockSparseIndices)(OrtValue* ort_value, const int64_t* indices_shape, size_t indices_shape_len, int32_t* indices_data) ORT_NOEXCEPT;  /* 186 */
  OrtStatusPtr(ORT_API_CALL* GetSparseTensorFormat)(const OrtValue* ort_value, enum OrtSparseFormat* out) ORT_NOEXCEPT;  /* 187 */
  OrtStatusPtr(ORT_API_CALL* GetSparseTensorValuesTypeAndShape)(const OrtValue* ort_value, OrtTensorTypeAndShapeInfo** out) ORT_NOEXCEPT;  /* 188 */
  OrtStatusPtr(ORT_API_CALL* GetSparseTensorValues)(const OrtValue* ort_value, const void** out) ORT_NOEXCEPT;  /* 189 */
  OrtStatusPtr(ORT_API_CALL* GetSparseTensorIndicesTypeShape)(const OrtValue* ort_value, enum OrtSparseIndicesFormat indices_format, OrtTensorTypeAndShapeInfo** out) ORT_NOEXCEPT;  /* 190 */
  OrtStatusPtr(ORT_API_CALL* GetSparseTensorIndices)(const OrtValue* ort_value, enum OrtSparseIndicesFormat indices_format, size_t* num_indices, const void** indices) ORT_NOEXCEPT;  /* 191 */
  OrtStatusPtr(ORT_API_CALL* HasValue)(const OrtValue* value, int* out) ORT_NOEXCEPT;  /* 192 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetGPUComputeStream)(const OrtKernelContext* context, void** out) ORT_NOEXCEPT;  /* 193 */
  OrtStatusPtr(ORT_API_CALL* GetTensorMemoryInfo)(const OrtValue* value, const OrtMemoryInfo** mem_info) ORT_NOEXCEPT;  /* 194 */
  OrtStatusPtr(ORT_API_CALL* GetExecutionProviderApi)(const char* provider_name, uint32_t version, const void** provider_api) ORT_NOEXCEPT;  /* 195 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetCustomCreateThreadFn)(OrtSessionOptions* options, OrtCustomCreateThreadFn ort_custom_create_thread_fn) ORT_NOEXCEPT;  /* 196 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetCustomThreadCreationOptions)(OrtSessionOptions* options, void* ort_custom_thread_creation_options) ORT_NOEXCEPT;  /* 197 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetCustomJoinThreadFn)(OrtSessionOptions* options, OrtCustomJoinThreadFn ort_custom_join_thread_fn) ORT_NOEXCEPT;  /* 198 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalCustomCreateThreadFn)(OrtThreadingOptions* tp_options, OrtCustomCreateThreadFn ort_custom_create_thread_fn) ORT_NOEXCEPT;  /* 199 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalCustomThreadCreationOptions)(OrtThreadingOptions* tp_options, void* ort_custom_thread_creation_options) ORT_NOEXCEPT;  /* 200 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalCustomJoinThreadFn)(OrtThreadingOptions* tp_options, OrtCustomJoinThreadFn ort_custom_join_thread_fn) ORT_NOEXCEPT;  /* 201 */
  OrtStatusPtr(ORT_API_CALL* SynchronizeBoundInputs)(OrtIoBinding* binding_ptr) ORT_NOEXCEPT;  /* 202 */
  OrtStatusPtr(ORT_API_CALL* SynchronizeBoundOutputs)(OrtIoBinding* binding_ptr) ORT_NOEXCEPT;  /* 203 */

  /* ---- added in 1.11 ---- */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_CUDA_V2)(OrtSessionOptions* options, const OrtCUDAProviderOptionsV2* cuda_options) ORT_NOEXCEPT;  /* 204 */
  OrtStatusPtr(ORT_API_CALL* CreateCUDAProviderOptions)(OrtCUDAProviderOptionsV2** out) ORT_NOEXCEPT;  /* 205 */
  OrtStatusPtr(ORT_API_CALL* UpdateCUDAProviderOptions)(OrtCUDAProviderOptionsV2* cuda_options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 206 */
  OrtStatusPtr(ORT_API_CALL* GetCUDAProviderOptionsAsString)(const OrtCUDAProviderOptionsV2* cuda_options, OrtAllocator* allocator, char** ptr) ORT_NOEXCEPT;  /* 207 */
  void(ORT_API_CALL* ReleaseCUDAProviderOptions)(OrtCUDAProviderOptionsV2* input) ORT_NOEXCEPT;  /* 208 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_MIGraphX)(OrtSessionOptions* options, const OrtMIGraphXProviderOptions* migraphx_options) ORT_NOEXCEPT;  /* 209 */

  /* ---- added in 1.12 ---- */
  OrtStatusPtr(ORT_API_CALL* AddExternalInitializers)(OrtSessionOptions* options, const char* const* initializer_names, const OrtValue* const* initializers, size_t num_initializers) ORT_NOEXCEPT;  /* 210 */
  OrtStatusPtr(ORT_API_CALL* CreateOpAttr)(const char* name, const void* data, int len, OrtOpAttrType type, OrtOpAttr** op_attr) ORT_NOEXCEPT;  /* 211 */
  void(ORT_API_CALL* ReleaseOpAttr)(OrtOpAttr* input) ORT_NOEXCEPT;  /* 212 */
  OrtStatusPtr(ORT_API_CALL* CreateOp)(const OrtKernelInfo* info, const char* op_name, const char* domain, int version, const char** type_constraint_names, const ONNXTensorElementDataType* type_constraint_values, int type_constraint_count, const OrtOpAttr* const* attr_values, int attr_count, int input_count, int output_count, OrtOp** ort_op) ORT_NOEXCEPT;  /* 213 */
  OrtStatusPtr(ORT_API_CALL* InvokeOp)(const OrtKernelContext* context, const OrtOp* ort_op, const OrtValue* const* input_values, int input_count, OrtValue* const* output_values, int output_count) ORT_NOEXCEPT;  /* 214 */
  void(ORT_API_CALL* ReleaseOp)(OrtOp* input) ORT_NOEXCEPT;  /* 215 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider)(OrtSessionOptions* options, const char* provider_name, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 216 */
  OrtStatusPtr(ORT_API_CALL* CopyKernelInfo)(const OrtKernelInfo* info, OrtKernelInfo** info_copy) ORT_NOEXCEPT;  /* 217 */
  void(ORT_API_CALL* ReleaseKernelInfo)(OrtKernelInfo* input) ORT_NOEXCEPT;  /* 218 */

  /* ---- added in 1.13 ---- */
  const OrtTrainingApi*(ORT_API_CALL* GetTrainingApi)(uint32_t version) ORT_NOEXCEPT;  /* 219 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_CANN)(OrtSessionOptions* options, const OrtCANNProviderOptions* cann_options) ORT_NOEXCEPT;  /* 220 */
  OrtStatusPtr(ORT_API_CALL* CreateCANNProviderOptions)(OrtCANNProviderOptions** out) ORT_NOEXCEPT;  /* 221 */
  OrtStatusPtr(ORT_API_CALL* UpdateCANNProviderOptions)(OrtCANNProviderOptions* cann_options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 222 */
  OrtStatusPtr(ORT_API_CALL* GetCANNProviderOptionsAsString)(const OrtCANNProviderOptions* cann_options, OrtAllocator* allocator, char** ptr) ORT_NOEXCEPT;  /* 223 */
  void(ORT_API_CALL* ReleaseCANNProviderOptions)(OrtCANNProviderOptions* input) ORT_NOEXCEPT;  /* 224 */

  /* ---- added in 1.14 ---- */
  void(ORT_API_CALL* MemoryInfoGetDeviceType)(const OrtMemoryInfo* ptr, OrtMemoryInfoDeviceType* out) ORT_NOEXCEPT;  /* 225 */
  OrtStatusPtr(ORT_API_CALL* UpdateEnvWithCustomLogLevel)(OrtEnv* ort_env, OrtLoggingLevel log_severity_level) ORT_NOEXCEPT;  /* 226 */
  OrtStatusPtr(ORT_API_CALL* SetGlobalIntraOpThreadAffinity)(OrtThreadingOptions* tp_options, const char* affinity_string) ORT_NOEXCEPT;  /* 227 */
  OrtStatusPtr(ORT_API_CALL* RegisterCustomOpsLibrary_V2)(OrtSessionOptions* options, const ORTCHAR_T* library_name) ORT_NOEXCEPT;  /* 228 */
  OrtStatusPtr(ORT_API_CALL* RegisterCustomOpsUsingFunction)(OrtSessionOptions* options, const char* registration_func_name) ORT_NOEXCEPT;  /* 229 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetInputCount)(const OrtKernelInfo* info, size_t* out) ORT_NOEXCEPT;  /* 230 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOutputCount)(const OrtKernelInfo* info, size_t* out) ORT_NOEXCEPT;  /* 231 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetInputName)(const OrtKernelInfo* info, size_t index, char* out, size_t* size) ORT_NOEXCEPT;  /* 232 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOutputName)(const OrtKernelInfo* info, size_t index, char* out, size_t* size) ORT_NOEXCEPT;  /* 233 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetInputTypeInfo)(const OrtKernelInfo* info, size_t index, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 234 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOutputTypeInfo)(const OrtKernelInfo* info, size_t index, OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 235 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttribute_tensor)(const OrtKernelInfo* info, const char* name, OrtAllocator* allocator, OrtValue** out) ORT_NOEXCEPT;  /* 236 */
  OrtStatusPtr(ORT_API_CALL* HasSessionConfigEntry)(const OrtSessionOptions* options, const char* config_key, int* out) ORT_NOEXCEPT;  /* 237 */
  OrtStatusPtr(ORT_API_CALL* GetSessionConfigEntry)(const OrtSessionOptions* options, const char* config_key, char* config_value, size_t* size) ORT_NOEXCEPT;  /* 238 */

  /* ---- added in 1.15 ---- */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_Dnnl)(OrtSessionOptions* options, const OrtDnnlProviderOptions* dnnl_options) ORT_NOEXCEPT;  /* 239 */
  OrtStatusPtr(ORT_API_CALL* CreateDnnlProviderOptions)(OrtDnnlProviderOptions** out) ORT_NOEXCEPT;  /* 240 */
  OrtStatusPtr(ORT_API_CALL* UpdateDnnlProviderOptions)(OrtDnnlProviderOptions* dnnl_options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 241 */
  OrtStatusPtr(ORT_API_CALL* GetDnnlProviderOptionsAsString)(const OrtDnnlProviderOptions* dnnl_options, OrtAllocator* allocator, char** ptr) ORT_NOEXCEPT;  /* 242 */
  void(ORT_API_CALL* ReleaseDnnlProviderOptions)(OrtDnnlProviderOptions* input) ORT_NOEXCEPT;  /* 243 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetNodeName)(const OrtKernelInfo* info, char* out, size_t* size) ORT_NOEXCEPT;  /* 244 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetLogger)(const OrtKernelInfo* info, const OrtLogger** logger) ORT_NOEXCEPT;  /* 245 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetLogger)(const OrtKernelContext* context, const OrtLogger** logger) ORT_NOEXCEPT;  /* 246 */
  OrtStatusPtr(ORT_API_CALL* Logger_LogMessage)(const OrtLogger* logger, OrtLoggingLevel log_severity_level, const char* message, const ORTCHAR_T* file_path, int line_number, const char* func_name) ORT_NOEXCEPT;  /* 247 */
  OrtStatusPtr(ORT_API_CALL* Logger_GetLoggingSeverityLevel)(const OrtLogger* logger, OrtLoggingLevel* out) ORT_NOEXCEPT;  /* 248 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetConstantInput_tensor)(const OrtKernelInfo* info, size_t index, int* is_constant, const OrtValue** out) ORT_NOEXCEPT;  /* 249 */
  OrtStatusPtr(ORT_API_CALL* CastTypeInfoToOptionalTypeInfo)(const OrtTypeInfo* type_info, const OrtOptionalTypeInfo** out) ORT_NOEXCEPT;  /* 250 */
  OrtStatusPtr(ORT_API_CALL* GetOptionalContainedTypeInfo)(const OrtOptionalTypeInfo* optional_type_info, OrtTypeInfo** out) ORT_NOEXCEPT;  /* 251 */
  OrtStatusPtr(ORT_API_CALL* GetResizedStringTensorElementBuffer)(OrtValue* value, size_t index, size_t length_in_bytes, char** buffer) ORT_NOEXCEPT;  /* 252 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetAllocator)(const OrtKernelContext* context, const OrtMemoryInfo* mem_info, OrtAllocator** out) ORT_NOEXCEPT;  /* 253 */
  const char*(ORT_API_CALL* GetBuildInfoString)(void) ORT_NOEXCEPT;  /* 254 */

  /* ---- added in 1.16 ---- */
  OrtStatusPtr(ORT_API_CALL* CreateROCMProviderOptions)(OrtROCMProviderOptions** out) ORT_NOEXCEPT;  /* 255 */
  OrtStatusPtr(ORT_API_CALL* UpdateROCMProviderOptions)(OrtROCMProviderOptions* rocm_options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 256 */
  OrtStatusPtr(ORT_API_CALL* GetROCMProviderOptionsAsString)(const OrtROCMProviderOptions* rocm_options, OrtAllocator* allocator, char** ptr) ORT_NOEXCEPT;  /* 257 */
  void(ORT_API_CALL* ReleaseROCMProviderOptions)(OrtROCMProviderOptions* input) ORT_NOEXCEPT;  /* 258 */
  OrtStatusPtr(ORT_API_CALL* CreateAndRegisterAllocatorV2)(OrtEnv* env, const char* provider_type, const OrtMemoryInfo* mem_info, const OrtArenaCfg* arena_cfg, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 259 */
  OrtStatusPtr(ORT_API_CALL* RunAsync)(OrtSession* session, const OrtRunOptions* run_options, const char* const* input_names, const OrtValue* const* input, size_t input_len, const char* const* output_names, size_t output_names_len, OrtValue** output, RunAsyncCallbackFn run_async_callback, void* user_data) ORT_NOEXCEPT;  /* 260 */
  OrtStatusPtr(ORT_API_CALL* UpdateTensorRTProviderOptionsWithValue)(OrtTensorRTProviderOptionsV2* tensorrt_options, const char* key, void* value) ORT_NOEXCEPT;  /* 261 */
  OrtStatusPtr(ORT_API_CALL* GetTensorRTProviderOptionsByName)(const OrtTensorRTProviderOptionsV2* tensorrt_options, const char* key, void** ptr) ORT_NOEXCEPT;  /* 262 */
  OrtStatusPtr(ORT_API_CALL* UpdateCUDAProviderOptionsWithValue)(OrtCUDAProviderOptionsV2* cuda_options, const char* key, void* value) ORT_NOEXCEPT;  /* 263 */
  OrtStatusPtr(ORT_API_CALL* GetCUDAProviderOptionsByName)(const OrtCUDAProviderOptionsV2* cuda_options, const char* key, void** ptr) ORT_NOEXCEPT;  /* 264 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetResource)(const OrtKernelContext* context, int resource_version, int resource_id, void** resource) ORT_NOEXCEPT;  /* 265 */

  /* ---- added in 1.17 ---- */
  OrtStatusPtr(ORT_API_CALL* SetUserLoggingFunction)(OrtSessionOptions* options, OrtLoggingFunction user_logging_function, void* user_logging_param) ORT_NOEXCEPT;  /* 266 */
  OrtStatusPtr(ORT_API_CALL* ShapeInferContext_GetInputCount)(const OrtShapeInferContext* context, size_t* out) ORT_NOEXCEPT;  /* 267 */
  OrtStatusPtr(ORT_API_CALL* ShapeInferContext_GetInputTypeShape)(const OrtShapeInferContext* context, size_t index, OrtTensorTypeAndShapeInfo** info) ORT_NOEXCEPT;  /* 268 */
  OrtStatusPtr(ORT_API_CALL* ShapeInferContext_GetAttribute)(const OrtShapeInferContext* context, const char* attr_name, const OrtOpAttr** attr) ORT_NOEXCEPT;  /* 269 */
  OrtStatusPtr(ORT_API_CALL* ShapeInferContext_SetOutputTypeShape)(const OrtShapeInferContext* context, size_t index, const OrtTensorTypeAndShapeInfo* info) ORT_NOEXCEPT;  /* 270 */
  OrtStatusPtr(ORT_API_CALL* SetSymbolicDimensions)(OrtTensorTypeAndShapeInfo* info, const char* dim_params[], size_t dim_params_length) ORT_NOEXCEPT;  /* 271 */
  OrtStatusPtr(ORT_API_CALL* ReadOpAttr)(const OrtOpAttr* op_attr, OrtOpAttrType type, void* data, size_t len, size_t* out) ORT_NOEXCEPT;  /* 272 */
  OrtStatusPtr(ORT_API_CALL* SetDeterministicCompute)(OrtSessionOptions* options, bool value) ORT_NOEXCEPT;  /* 273 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_ParallelFor)(const OrtKernelContext* context, void (*fn)(void*, size_t), size_t total, size_t num_batch, void* usr_data) ORT_NOEXCEPT;  /* 274 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_OpenVINO_V2)(OrtSessionOptions* options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 275 */

  /* ---- added in 1.18 ---- */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_VitisAI)(OrtSessionOptions* options, const char* const* provider_options_keys, const char* const* provider_options_values, size_t num_keys) ORT_NOEXCEPT;  /* 276 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetScratchBuffer)(const OrtKernelContext* context, const OrtMemoryInfo* mem_info, size_t count_or_bytes, void** out) ORT_NOEXCEPT;  /* 277 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAllocator)(const OrtKernelInfo* info, OrtMemType mem_type, OrtAllocator** out) ORT_NOEXCEPT;  /* 278 */
  OrtStatusPtr(ORT_API_CALL* AddExternalInitializersFromFilesInMemory)(OrtSessionOptions* options, const ORTCHAR_T* const* external_initializer_file_names, char* const* external_initializer_file_buffer_array, const size_t* external_initializer_file_lengths, size_t num_external_initializer_files) ORT_NOEXCEPT;  /* 279 */

  /* ---- added in 1.20 ---- */
  OrtStatusPtr(ORT_API_CALL* CreateLoraAdapter)(const ORTCHAR_T* adapter_file_path, OrtAllocator* allocator, OrtLoraAdapter** out) ORT_NOEXCEPT;  /* 280 */
  OrtStatusPtr(ORT_API_CALL* CreateLoraAdapterFromArray)(const void* bytes, size_t num_bytes, OrtAllocator* allocator, OrtLoraAdapter** out) ORT_NOEXCEPT;  /* 281 */
  void(ORT_API_CALL* ReleaseLoraAdapter)(OrtLoraAdapter* input) ORT_NOEXCEPT;  /* 282 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsAddActiveLoraAdapter)(OrtRunOptions* options, const OrtLoraAdapter* adapter) ORT_NOEXCEPT;  /* 283 */
  OrtStatusPtr(ORT_API_CALL* SetEpDynamicOptions)(OrtSession* sess, const char* const* keys, const char* const* values, size_t kv_len) ORT_NOEXCEPT;  /* 284 */

  /* ---- added in 1.22 ---- */
  void(ORT_API_CALL* ReleaseValueInfo)(OrtValueInfo* input) ORT_NOEXCEPT;  /* 285 */
  void(ORT_API_CALL* ReleaseNode)(OrtNode* input) ORT_NOEXCEPT;  /* 286 */
  void(ORT_API_CALL* ReleaseGraph)(OrtGraph* input) ORT_NOEXCEPT;  /* 287 */
  void(ORT_API_CALL* ReleaseModel)(OrtModel* input) ORT_NOEXCEPT;  /* 288 */
  OrtStatusPtr(ORT_API_CALL* GetValueInfoName)(const OrtValueInfo* value_info, const char** name) ORT_NOEXCEPT;  /* 289 */
  OrtStatusPtr(ORT_API_CALL* GetValueInfoTypeInfo)(const OrtValueInfo* value_info, const OrtTypeInfo** type_info) ORT_NOEXCEPT;  /* 290 */
  const OrtModelEditorApi*(ORT_API_CALL* GetModelEditorApi)(void) ORT_NOEXCEPT;  /* 291 */
  OrtStatusPtr(ORT_API_CALL* CreateTensorWithDataAndDeleterAsOrtValue)(OrtAllocator* deleter, void* p_data, size_t p_data_len, const int64_t* shape, size_t shape_len, ONNXTensorElementDataType type, OrtValue** out) ORT_NOEXCEPT;  /* 292 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetLoadCancellationFlag)(OrtSessionOptions* options, bool cancel) ORT_NOEXCEPT;  /* 293 */
  const OrtCompileApi*(ORT_API_CALL* GetCompileApi)(void) ORT_NOEXCEPT;  /* 294 */
  void(ORT_API_CALL* CreateKeyValuePairs)(OrtKeyValuePairs** out) ORT_NOEXCEPT;  /* 295 */
  void(ORT_API_CALL* AddKeyValuePair)(OrtKeyValuePairs* kvps, const char* key, const char* value) ORT_NOEXCEPT;  /* 296 */
  const char*(ORT_API_CALL* GetKeyValue)(const OrtKeyValuePairs* kvps, const char* key) ORT_NOEXCEPT;  /* 297 */
  void(ORT_API_CALL* GetKeyValuePairs)(const OrtKeyValuePairs* kvps, const char* const** keys, const char* const** values, size_t* num_entries) ORT_NOEXCEPT;  /* 298 */
  void(ORT_API_CALL* RemoveKeyValuePair)(OrtKeyValuePairs* kvps, const char* key) ORT_NOEXCEPT;  /* 299 */
  void(ORT_API_CALL* ReleaseKeyValuePairs)(OrtKeyValuePairs* input) ORT_NOEXCEPT;  /* 300 */
  OrtStatusPtr(ORT_API_CALL* RegisterExecutionProviderLibrary)(OrtEnv* env, const char* registration_name, const ORTCHAR_T* path) ORT_NOEXCEPT;  /* 301 */
  OrtStatusPtr(ORT_API_CALL* UnregisterExecutionProviderLibrary)(OrtEnv* env, const char* registration_name) ORT_NOEXCEPT;  /* 302 */
  OrtStatusPtr(ORT_API_CALL* GetEpDevices)(const OrtEnv* env, const OrtEpDevice* const** ep_devices, size_t* num_ep_devices) ORT_NOEXCEPT;  /* 303 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsAppendExecutionProvider_V2)(OrtSessionOptions* session_options, OrtEnv* env, const OrtEpDevice* const* ep_devices, size_t num_ep_devices, const char* const* ep_option_keys, const char* const* ep_option_vals, size_t num_ep_options) ORT_NOEXCEPT;  /* 304 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetEpSelectionPolicy)(OrtSessionOptions* session_options, OrtExecutionProviderDevicePolicy policy) ORT_NOEXCEPT;  /* 305 */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetEpSelectionPolicyDelegate)(OrtSessionOptions* session_options, EpSelectionDelegate delegate, void* delegate_state) ORT_NOEXCEPT;  /* 306 */
  OrtHardwareDeviceType(ORT_API_CALL* HardwareDevice_Type)(const OrtHardwareDevice* device) ORT_NOEXCEPT;  /* 307 */
  uint32_t(ORT_API_CALL* HardwareDevice_VendorId)(const OrtHardwareDevice* device) ORT_NOEXCEPT;  /* 308 */
  const char*(ORT_API_CALL* HardwareDevice_Vendor)(const OrtHardwareDevice* device) ORT_NOEXCEPT;  /* 309 */
  uint32_t(ORT_API_CALL* HardwareDevice_DeviceId)(const OrtHardwareDevice* device) ORT_NOEXCEPT;  /* 310 */
  const OrtKeyValuePairs*(ORT_API_CALL* HardwareDevice_Metadata)(const OrtHardwareDevice* device) ORT_NOEXCEPT;  /* 311 */
  const char*(ORT_API_CALL* EpDevice_EpName)(const OrtEpDevice* ep_device) ORT_NOEXCEPT;  /* 312 */
  const char*(ORT_API_CALL* EpDevice_EpVendor)(const OrtEpDevice* ep_device) ORT_NOEXCEPT;  /* 313 */
  const OrtKeyValuePairs*(ORT_API_CALL* EpDevice_EpMetadata)(const OrtEpDevice* ep_device) ORT_NOEXCEPT;  /* 314 */
  const OrtKeyValuePairs*(ORT_API_CALL* EpDevice_EpOptions)(const OrtEpDevice* ep_device) ORT_NOEXCEPT;  /* 315 */
  const OrtHardwareDevice*(ORT_API_CALL* EpDevice_Device)(const OrtEpDevice* ep_device) ORT_NOEXCEPT;  /* 316 */
  const OrtEpApi*(ORT_API_CALL* GetEpApi)(void) ORT_NOEXCEPT;  /* 317 */

  /* ---- added in 1.23 ---- */
  OrtStatusPtr(ORT_API_CALL* GetTensorSizeInBytes)(const OrtValue* ort_value, size_t* size) ORT_NOEXCEPT;  /* 318 */
  OrtStatusPtr(ORT_API_CALL* AllocatorGetStats)(const OrtAllocator* ort_allocator, OrtKeyValuePairs** out) ORT_NOEXCEPT;  /* 319 */
  OrtStatusPtr(ORT_API_CALL* CreateMemoryInfo_V2)(const char* name, enum OrtMemoryInfoDeviceType device_type, uint32_t vendor_id, int32_t device_id, enum OrtDeviceMemoryType mem_type, size_t alignment, enum OrtAllocatorType allocator_type, OrtMemoryInfo** out) ORT_NOEXCEPT;  /* 320 */
  OrtDeviceMemoryType(ORT_API_CALL* MemoryInfoGetDeviceMemType)(const OrtMemoryInfo* ptr) ORT_NOEXCEPT;  /* 321 */
  uint32_t(ORT_API_CALL* MemoryInfoGetVendorId)(const OrtMemoryInfo* ptr) ORT_NOEXCEPT;  /* 322 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_GetValueProducer)(const OrtValueInfo* value_info, const OrtNode** producer_node, size_t* producer_output_index) ORT_NOEXCEPT;  /* 323 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_GetValueNumConsumers)(const OrtValueInfo* value_info, size_t* num_consumers) ORT_NOEXCEPT;  /* 324 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_GetValueConsumers)(const OrtValueInfo* value_info, const OrtNode** nodes, int64_t* input_indices, size_t num_consumers) ORT_NOEXCEPT;  /* 325 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_GetInitializerValue)(const OrtValueInfo* value_info, const OrtValue** initializer_value) ORT_NOEXCEPT;  /* 326 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_GetExternalInitializerInfo)(const OrtValueInfo* value_info, OrtExternalInitializerInfo** info) ORT_NOEXCEPT;  /* 327 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_IsRequiredGraphInput)(const OrtValueInfo* value_info, bool* is_required_graph_input) ORT_NOEXCEPT;  /* 328 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_IsOptionalGraphInput)(const OrtValueInfo* value_info, bool* is_optional_graph_input) ORT_NOEXCEPT;  /* 329 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_IsGraphOutput)(const OrtValueInfo* value_info, bool* is_graph_output) ORT_NOEXCEPT;  /* 330 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_IsConstantInitializer)(const OrtValueInfo* value_info, bool* is_constant_initializer) ORT_NOEXCEPT;  /* 331 */
  OrtStatusPtr(ORT_API_CALL* ValueInfo_IsFromOuterScope)(const OrtValueInfo* value_info, bool* is_from_outer_scope) ORT_NOEXCEPT;  /* 332 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetName)(const OrtGraph* graph, const char** graph_name) ORT_NOEXCEPT;  /* 333 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetModelPath)(const OrtGraph* graph, const ORTCHAR_T** model_path) ORT_NOEXCEPT;  /* 334 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetOnnxIRVersion)(const OrtGraph* graph, int64_t* onnx_ir_version) ORT_NOEXCEPT;  /* 335 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNumOperatorSets)(const OrtGraph* graph, size_t* num_operator_sets) ORT_NOEXCEPT;  /* 336 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetOperatorSets)(const OrtGraph* graph, const char** domains, int64_t* opset_versions, size_t num_operator_sets) ORT_NOEXCEPT;  /* 337 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNumInputs)(const OrtGraph* graph, size_t* num_inputs) ORT_NOEXCEPT;  /* 338 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetInputs)(const OrtGraph* graph, const OrtValueInfo** inputs, size_t num_inputs) ORT_NOEXCEPT;  /* 339 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNumOutputs)(const OrtGraph* graph, size_t* num_outputs) ORT_NOEXCEPT;  /* 340 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetOutputs)(const OrtGraph* graph, const OrtValueInfo** outputs, size_t num_outputs) ORT_NOEXCEPT;  /* 341 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNumInitializers)(const OrtGraph* graph, size_t* num_initializers) ORT_NOEXCEPT;  /* 342 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetInitializers)(const OrtGraph* graph, const OrtValueInfo** initializers, size_t num_initializers) ORT_NOEXCEPT;  /* 343 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNumNodes)(const OrtGraph* graph, size_t* num_nodes) ORT_NOEXCEPT;  /* 344 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetNodes)(const OrtGraph* graph, const OrtNode** nodes, size_t num_nodes) ORT_NOEXCEPT;  /* 345 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetParentNode)(const OrtGraph* graph, const OrtNode** node) ORT_NOEXCEPT;  /* 346 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetGraphView)(const OrtGraph* src_graph, const OrtNode** nodes, size_t num_nodes, OrtGraph** dst_graph) ORT_NOEXCEPT;  /* 347 */
  OrtStatusPtr(ORT_API_CALL* Node_GetId)(const OrtNode* node, size_t* node_id) ORT_NOEXCEPT;  /* 348 */
  OrtStatusPtr(ORT_API_CALL* Node_GetName)(const OrtNode* node, const char** node_name) ORT_NOEXCEPT;  /* 349 */
  OrtStatusPtr(ORT_API_CALL* Node_GetOperatorType)(const OrtNode* node, const char** operator_type) ORT_NOEXCEPT;  /* 350 */
  OrtStatusPtr(ORT_API_CALL* Node_GetDomain)(const OrtNode* node, const char** domain_name) ORT_NOEXCEPT;  /* 351 */
  OrtStatusPtr(ORT_API_CALL* Node_GetSinceVersion)(const OrtNode* node, int* since_version) ORT_NOEXCEPT;  /* 352 */
  OrtStatusPtr(ORT_API_CALL* Node_GetNumInputs)(const OrtNode* node, size_t* num_inputs) ORT_NOEXCEPT;  /* 353 */
  OrtStatusPtr(ORT_API_CALL* Node_GetInputs)(const OrtNode* node, const OrtValueInfo** inputs, size_t num_inputs) ORT_NOEXCEPT;  /* 354 */
  OrtStatusPtr(ORT_API_CALL* Node_GetNumOutputs)(const OrtNode* node, size_t* num_outputs) ORT_NOEXCEPT;  /* 355 */
  OrtStatusPtr(ORT_API_CALL* Node_GetOutputs)(const OrtNode* node, const OrtValueInfo** outputs, size_t num_outputs) ORT_NOEXCEPT;  /* 356 */
  OrtStatusPtr(ORT_API_CALL* Node_GetNumImplicitInputs)(const OrtNode* node, size_t* num_implicit_inputs) ORT_NOEXCEPT;  /* 357 */
  OrtStatusPtr(ORT_API_CALL* Node_GetImplicitInputs)(const OrtNode* node, const OrtValueInfo** implicit_inputs, size_t num_implicit_inputs) ORT_NOEXCEPT;  /* 358 */
  OrtStatusPtr(ORT_API_CALL* Node_GetNumAttributes)(const OrtNode* node, size_t* num_attributes) ORT_NOEXCEPT;  /* 359 */
  OrtStatusPtr(ORT_API_CALL* Node_GetAttributes)(const OrtNode* node, const OrtOpAttr** attributes, size_t num_attributes) ORT_NOEXCEPT;  /* 360 */
  OrtStatusPtr(ORT_API_CALL* Node_GetAttributeByName)(const OrtNode* node, const char* attribute_name, const OrtOpAttr** attribute) ORT_NOEXCEPT;  /* 361 */
  OrtStatusPtr(ORT_API_CALL* OpAttr_GetTensorAttributeAsOrtValue)(const OrtOpAttr* attribute, OrtValue** attr_tensor) ORT_NOEXCEPT;  /* 362 */
  OrtStatusPtr(ORT_API_CALL* OpAttr_GetType)(const OrtOpAttr* attribute, OrtOpAttrType* type) ORT_NOEXCEPT;  /* 363 */
  OrtStatusPtr(ORT_API_CALL* OpAttr_GetName)(const OrtOpAttr* attribute, const char** name) ORT_NOEXCEPT;  /* 364 */
  OrtStatusPtr(ORT_API_CALL* Node_GetNumSubgraphs)(const OrtNode* node, size_t* num_subgraphs) ORT_NOEXCEPT;  /* 365 */
  OrtStatusPtr(ORT_API_CALL* Node_GetSubgraphs)(const OrtNode* node, const OrtGraph** subgraphs, size_t num_subgraphs, const char** attribute_names) ORT_NOEXCEPT;  /* 366 */
  OrtStatusPtr(ORT_API_CALL* Node_GetGraph)(const OrtNode* node, const OrtGraph** graph) ORT_NOEXCEPT;  /* 367 */
  OrtStatusPtr(ORT_API_CALL* Node_GetEpName)(const OrtNode* node, const char** out) ORT_NOEXCEPT;  /* 368 */
  void(ORT_API_CALL* ReleaseExternalInitializerInfo)(OrtExternalInitializerInfo* input) ORT_NOEXCEPT;  /* 369 */
  const ORTCHAR_T*(ORT_API_CALL* ExternalInitializerInfo_GetFilePath)(const OrtExternalInitializerInfo* info) ORT_NOEXCEPT;  /* 370 */
  int64_t(ORT_API_CALL* ExternalInitializerInfo_GetFileOffset)(const OrtExternalInitializerInfo* info) ORT_NOEXCEPT;  /* 371 */
  size_t(ORT_API_CALL* ExternalInitializerInfo_GetByteSize)(const OrtExternalInitializerInfo* info) ORT_NOEXCEPT;  /* 372 */
  const char*(ORT_API_CALL* GetRunConfigEntry)(const OrtRunOptions* options, const char* config_key) ORT_NOEXCEPT;  /* 373 */
  const OrtMemoryInfo*(ORT_API_CALL* EpDevice_MemoryInfo)(const OrtEpDevice* ep_device, OrtDeviceMemoryType memory_type) ORT_NOEXCEPT;  /* 374 */
  OrtStatusPtr(ORT_API_CALL* CreateSharedAllocator)(OrtEnv* env, const OrtEpDevice* ep_device, OrtDeviceMemoryType mem_type, OrtAllocatorType allocator_type, const OrtKeyValuePairs* allocator_options, OrtAllocator** allocator) ORT_NOEXCEPT;  /* 375 */
  OrtStatusPtr(ORT_API_CALL* GetSharedAllocator)(OrtEnv* env, const OrtMemoryInfo* mem_info, OrtAllocator** allocator) ORT_NOEXCEPT;  /* 376 */
  OrtStatusPtr(ORT_API_CALL* ReleaseSharedAllocator)(OrtEnv* env, const OrtEpDevice* ep_device, OrtDeviceMemoryType mem_type) ORT_NOEXCEPT;  /* 377 */
  OrtStatusPtr(ORT_API_CALL* GetTensorData)(const OrtValue* value, const void** out) ORT_NOEXCEPT;  /* 378 */
  OrtStatusPtr(ORT_API_CALL* GetSessionOptionsConfigEntries)(const OrtSessionOptions* options, OrtKeyValuePairs** out) ORT_NOEXCEPT;  /* 379 */
  OrtStatusPtr(ORT_API_CALL* SessionGetMemoryInfoForInputs)(const OrtSession* session, const OrtMemoryInfo** inputs_memory_info, size_t num_inputs) ORT_NOEXCEPT;  /* 380 */
  OrtStatusPtr(ORT_API_CALL* SessionGetMemoryInfoForOutputs)(const OrtSession* session, const OrtMemoryInfo** outputs_memory_info, size_t num_outputs) ORT_NOEXCEPT;  /* 381 */
  OrtStatusPtr(ORT_API_CALL* SessionGetEpDeviceForInputs)(const OrtSession* session, const OrtEpDevice** inputs_ep_devices, size_t num_inputs) ORT_NOEXCEPT;  /* 382 */
  OrtStatusPtr(ORT_API_CALL* CreateSyncStreamForEpDevice)(const OrtEpDevice* ep_device, const OrtKeyValuePairs* stream_options, OrtSyncStream** stream) ORT_NOEXCEPT;  /* 383 */
  void*(ORT_API_CALL* SyncStream_GetHandle)(OrtSyncStream* stream) ORT_NOEXCEPT;  /* 384 */
  void(ORT_API_CALL* ReleaseSyncStream)(OrtSyncStream* input) ORT_NOEXCEPT;  /* 385 */
  OrtStatusPtr(ORT_API_CALL* CopyTensors)(const OrtEnv* env, const OrtValue* const* src_tensors, OrtValue* const* dst_tensors, OrtSyncStream* stream, size_t num_tensors) ORT_NOEXCEPT;  /* 386 */
  OrtStatusPtr(ORT_API_CALL* Graph_GetModelMetadata)(const OrtGraph* graph, OrtModelMetadata** out) ORT_NOEXCEPT;  /* 387 */
  OrtStatusPtr(ORT_API_CALL* GetModelCompatibilityForEpDevices)(const OrtEpDevice* const* ep_devices, size_t num_ep_devices, const char* compatibility_info, OrtCompiledModelCompatibility* out_status) ORT_NOEXCEPT;  /* 388 */
  OrtStatusPtr(ORT_API_CALL* CreateExternalInitializerInfo)(const ORTCHAR_T* filepath, int64_t file_offset, size_t byte_size, OrtExternalInitializerInfo** out) ORT_NOEXCEPT;  /* 389 */

  /* ---- added in 1.24 ---- */
  bool(ORT_API_CALL* TensorTypeAndShape_HasShape)(const OrtTensorTypeAndShapeInfo* info) ORT_NOEXCEPT;  /* 390 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetConfigEntries)(const OrtKernelInfo* info, OrtKeyValuePairs** out) ORT_NOEXCEPT;  /* 391 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOperatorDomain)(const OrtKernelInfo* info, char* out, size_t* size) ORT_NOEXCEPT;  /* 392 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOperatorType)(const OrtKernelInfo* info, char* out, size_t* size) ORT_NOEXCEPT;  /* 393 */
  OrtStatusPtr(ORT_API_CALL* KernelInfo_GetOperatorSinceVersion)(const OrtKernelInfo* info, int* since_version) ORT_NOEXCEPT;  /* 394 */
  const OrtInteropApi*(ORT_API_CALL* GetInteropApi)(void) ORT_NOEXCEPT;  /* 395 */
  OrtStatusPtr(ORT_API_CALL* SessionGetEpDeviceForOutputs)(const OrtSession* session, const OrtEpDevice** outputs_ep_devices, size_t num_outputs) ORT_NOEXCEPT;  /* 396 */
  OrtStatusPtr(ORT_API_CALL* GetNumHardwareDevices)(const OrtEnv* env, size_t* num_devices) ORT_NOEXCEPT;  /* 397 */
  OrtStatusPtr(ORT_API_CALL* GetHardwareDevices)(const OrtEnv* env, const OrtHardwareDevice** devices, size_t num_devices) ORT_NOEXCEPT;  /* 398 */
  OrtStatusPtr(ORT_API_CALL* GetHardwareDeviceEpIncompatibilityDetails)(const OrtEnv* env, const char* ep_name, const OrtHardwareDevice* hw, OrtDeviceEpIncompatibilityDetails** details) ORT_NOEXCEPT;  /* 399 */
  OrtStatusPtr(ORT_API_CALL* DeviceEpIncompatibilityDetails_GetReasonsBitmask)(const OrtDeviceEpIncompatibilityDetails* details, uint32_t* reasons_bitmask) ORT_NOEXCEPT;  /* 400 */
  OrtStatusPtr(ORT_API_CALL* DeviceEpIncompatibilityDetails_GetNotes)(const OrtDeviceEpIncompatibilityDetails* details, const char** notes) ORT_NOEXCEPT;  /* 401 */
  OrtStatusPtr(ORT_API_CALL* DeviceEpIncompatibilityDetails_GetErrorCode)(const OrtDeviceEpIncompatibilityDetails* details, int32_t* error_code) ORT_NOEXCEPT;  /* 402 */
  void(ORT_API_CALL* ReleaseDeviceEpIncompatibilityDetails)(OrtDeviceEpIncompatibilityDetails* input) ORT_NOEXCEPT;  /* 403 */
  OrtStatusPtr(ORT_API_CALL* GetCompatibilityInfoFromModel)(const ORTCHAR_T* model_path, const char* ep_type, OrtAllocator* allocator, char** compatibility_info) ORT_NOEXCEPT;  /* 404 */
  OrtStatusPtr(ORT_API_CALL* GetCompatibilityInfoFromModelBytes)(const void* model_data, size_t model_data_length, const char* ep_type, OrtAllocator* allocator, char** compatibility_info) ORT_NOEXCEPT;  /* 405 */
  OrtStatusPtr(ORT_API_CALL* CreateEnvWithOptions)(const OrtEnvCreationOptions* options, OrtEnv** out) ORT_NOEXCEPT;  /* 406 */
  OrtStatusPtr(ORT_API_CALL* Session_GetEpGraphAssignmentInfo)(const OrtSession* session, const OrtEpAssignedSubgraph* const** ep_subgraphs, size_t* num_ep_subgraphs) ORT_NOEXCEPT;  /* 407 */
  OrtStatusPtr(ORT_API_CALL* EpAssignedSubgraph_GetEpName)(const OrtEpAssignedSubgraph* ep_subgraph, const char** out) ORT_NOEXCEPT;  /* 408 */
  OrtStatusPtr(ORT_API_CALL* EpAssignedSubgraph_GetNodes)(const OrtEpAssignedSubgraph* ep_subgraph, const OrtEpAssignedNode* const** ep_nodes, size_t* num_ep_nodes) ORT_NOEXCEPT;  /* 409 */
  OrtStatusPtr(ORT_API_CALL* EpAssignedNode_GetName)(const OrtEpAssignedNode* ep_node, const char** out) ORT_NOEXCEPT;  /* 410 */
  OrtStatusPtr(ORT_API_CALL* EpAssignedNode_GetDomain)(const OrtEpAssignedNode* ep_node, const char** out) ORT_NOEXCEPT;  /* 411 */
  OrtStatusPtr(ORT_API_CALL* EpAssignedNode_GetOperatorType)(const OrtEpAssignedNode* ep_node, const char** out) ORT_NOEXCEPT;  /* 412 */
  void(ORT_API_CALL* RunOptionsSetSyncStream)(OrtRunOptions* options, OrtSyncStream* sync_stream) ORT_NOEXCEPT;  /* 413 */
  OrtStatusPtr(ORT_API_CALL* GetTensorElementTypeAndShapeDataReference)(const OrtValue* value, ONNXTensorElementDataType* elem_type, const int64_t** shape_data, size_t* shape_data_count) ORT_NOEXCEPT;  /* 414 */

  /* ---- added in 1.25 ---- */
  OrtStatusPtr(ORT_API_CALL* RunOptionsEnableProfiling)(OrtRunOptions* options, const ORTCHAR_T* profile_file_prefix) ORT_NOEXCEPT;  /* 415 */
  OrtStatusPtr(ORT_API_CALL* RunOptionsDisableProfiling)(OrtRunOptions* options) ORT_NOEXCEPT;  /* 416 */
  OrtStatusPtr(ORT_API_CALL* KernelInfoGetAttributeArray_string)(const OrtKernelInfo* info, const char* name, OrtAllocator* allocator, char*** out, size_t* size) ORT_NOEXCEPT;  /* 417 */
  OrtStatusPtr(ORT_API_CALL* SetPerSessionThreadPoolCallbacks)(OrtEnv* env, const OrtThreadPoolCallbacksConfig* config) ORT_NOEXCEPT;  /* 418 */

  /* ---- added in 1.27 ---- */
  OrtStatusPtr(ORT_API_CALL* GetMemPatternEnabled)(const OrtSessionOptions* options, int* out) ORT_NOEXCEPT;  /* 419 */
  OrtStatusPtr(ORT_API_CALL* GetSessionExecutionMode)(const OrtSessionOptions* options, ExecutionMode* out) ORT_NOEXCEPT;  /* 420 */
  OrtStatusPtr(ORT_API_CALL* SessionReleaseCapturedGraph)(OrtSession* session, int graph_annotation_id) ORT_NOEXCEPT;  /* 421 */

  /* ---- added in 1.28 ---- */
  OrtExperimentalFnPtr(ORT_API_CALL* GetExperimentalFunction)(const char* name) ORT_NOEXCEPT;  /* 422 */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetSyncStream)(const OrtKernelContext* context, OrtSyncStream** out) ORT_NOEXCEPT;  /* 423 */

  /* ---- added in 1.29 ---- */
  OrtStatusPtr(ORT_API_CALL* SessionOptionsSetWeightlessSourceModelBuffer)(OrtSessionOptions* options, const void* source_model_data, size_t source_model_data_length) ORT_NOEXCEPT;  /* 424 */

  /* ---- added in 1.30 ---- */
  OrtStatusPtr(ORT_API_CALL* KernelContext_GetPreallocatedOutput)(const OrtKernelContext* context, size_t output_index, OrtValue** output) ORT_NOEXCEPT;  /* 425 */
};

/* ---- custom operators ----
 * A custom operator is a table of callbacks the library defining it fills
 * (Ort::CustomOpBase does it for C++). `version` is the ORT_API_VERSION the
 * library was built with: the runtime calls only the callbacks that existed
 * at that version (characteristics from 8, input memory type from 11,
 * variadic arity from 14, the status-returning CreateKernelV2 /
 * KernelComputeV2 and InferOutputShapeFn from 16, the opset range from 17,
 * in-place hints from 18, alias maps from 20). The field order is the
 * binary interface. */
typedef enum OrtCustomOpInputOutputCharacteristic {
  INPUT_OUTPUT_REQUIRED = 0,
  INPUT_OUTPUT_OPTIONAL,
  INPUT_OUTPUT_VARIADIC,
} OrtCustomOpInputOutputCharacteristic;

struct OrtCustomOp {
  uint32_t version;
  /* Version 1: a kernel per node (returns the kernel, NULL is a failure). */
  void*(ORT_API_CALL* CreateKernel)(const struct OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info);
  const char*(ORT_API_CALL* GetName)(const struct OrtCustomOp* op);
  const char*(ORT_API_CALL* GetExecutionProviderType)(const struct OrtCustomOp* op);
  ONNXTensorElementDataType(ORT_API_CALL* GetInputType)(const struct OrtCustomOp* op, size_t index);
  size_t(ORT_API_CALL* GetInputTypeCount)(const struct OrtCustomOp* op);
  ONNXTensorElementDataType(ORT_API_CALL* GetOutputType)(const struct OrtCustomOp* op, size_t index);
  size_t(ORT_API_CALL* GetOutputTypeCount)(const struct OrtCustomOp* op);
  void(ORT_API_CALL* KernelCompute)(void* op_kernel, OrtKernelContext* context);
  void(ORT_API_CALL* KernelDestroy)(void* op_kernel);
  /* Version 8. */
  OrtCustomOpInputOutputCharacteristic(ORT_API_CALL* GetInputCharacteristic)(const struct OrtCustomOp* op, size_t index);
  OrtCustomOpInputOutputCharacteristic(ORT_API_CALL* GetOutputCharacteristic)(const struct OrtCustomOp* op, size_t index);
  /* Version 11. */
  OrtMemType(ORT_API_CALL* GetInputMemoryType)(const struct OrtCustomOp* op, size_t index);
  /* Version 14. */
  int(ORT_API_CALL* GetVariadicInputMinArity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicInputHomogeneity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicOutputMinArity)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetVariadicOutputHomogeneity)(const struct OrtCustomOp* op);
  /* Version 16: status-returning kernel creation and compute (preferred when set). */
  OrtStatusPtr(ORT_API_CALL* CreateKernelV2)(const struct OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info,
                                             void** kernel);
  OrtStatusPtr(ORT_API_CALL* KernelComputeV2)(void* op_kernel, OrtKernelContext* context);
  OrtStatusPtr(ORT_API_CALL* InferOutputShapeFn)(const struct OrtCustomOp* op, OrtShapeInferContext* context);
  /* Version 17: the opset versions of the domain this definition serves. */
  int(ORT_API_CALL* GetStartVersion)(const struct OrtCustomOp* op);
  int(ORT_API_CALL* GetEndVersion)(const struct OrtCustomOp* op);
  /* Version 18. */
  size_t(ORT_API_CALL* GetMayInplace)(int** input_index, int** output_index);
  void(ORT_API_CALL* ReleaseMayInplace)(int* input_index, int* output_index);
  /* Version 20. */
  size_t(ORT_API_CALL* GetAliasMap)(int** input_index, int** output_index);
  void(ORT_API_CALL* ReleaseAliasMap)(int* input_index, int* output_index);
};

/* Appends the CPU execution provider to a session's options (exported, as
 * ONNX Runtime exports it; on spindle the CPU is the only provider, so this
 * checks its arguments and changes nothing). */
ORT_EXPORT OrtStatus* ORT_API_CALL OrtSessionOptionsAppendExecutionProvider_CPU(OrtSessionOptions* options,
                                                                                int use_arena) ORT_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SPINDLE_ONNXRUNTIME_C_API_H */
