/* custom_infer_test.c — a custom operator written in C whose output element
 * type is chosen by its InferOutputShapeFn (through the ShapeInferContext_*
 * slots and ReadOpAttr), and whose kernel logs through the session's logger
 * (KernelInfo_GetLogger, KernelContext_GetLogger, Logger_LogMessage,
 * Logger_GetLoggingSeverityLevel) into the environment's custom logger; it
 * also names its operator (KernelInfo_GetOperatorDomain / Type) and uses
 * the kernel's allocator and a scratch buffer.
 * The same program runs on ONNX Runtime's own library (ctest
 * capi_custom_infer_on_onnxruntime): what it expects is ONNX Runtime's
 * behaviour.
 *
 *   custom_infer_test CONVERT_MODEL CONVERT_BAD_MODEL [--onnxruntime]
 *
 * The models are make_models.py's convert.onnx and convert_bad.onnx:
 *   Convert(x float [n]; to) -> y of element type `to` (float or int64 only),
 *   declared with an undefined output type; z = Add(y, y). convert_bad.onnx
 *   asks for int16, which the inference refuses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxruntime/onnxruntime_c_api.h"
#include "checks.h"

static const OrtApi* ort;
static int failures;
static int on_onnxruntime;

/* ---- the environment's log: messages of the kernel counted ---- */
static int kernel_messages, infer_calls;
static char last_logid[64];

static void ORT_API_CALL log_sink(void* param, OrtLoggingLevel severity, const char* category, const char* logid,
                                  const char* code_location, const char* message) {
  (void)param;
  (void)category;
  (void)code_location;
  if (strstr(message, "Convert kernel:")) {
    if (severity == ORT_LOGGING_LEVEL_WARNING) kernel_messages++;
    snprintf(last_logid, sizeof last_logid, "%s", logid ? logid : "");
    printf("  log [%d] %s: %s\n", (int)severity, logid ? logid : "", message);
  }
}

/* ---- the custom op ---- */
typedef struct {
  int64_t to;
  const OrtLogger* logger;
} ConvertKernel;

static OrtStatus* read_to(const OrtOpAttr* attr, int64_t* to) {
  size_t size = 0;
  return ort->ReadOpAttr(attr, ORT_OP_ATTR_INT, to, sizeof *to, &size);
}

static OrtStatus* ORT_API_CALL convert_infer(const OrtCustomOp* op, OrtShapeInferContext* ctx) {
  (void)op;
  infer_calls++;
  size_t inputs = 0;
  OrtStatus* st = ort->ShapeInferContext_GetInputCount(ctx, &inputs);
  if (st) return st;
  if (inputs != 1) return ort->CreateStatus(ORT_INVALID_ARGUMENT, "Convert: expected 1 input");
  /* The input's type and shape: the context's (not released here). */
  OrtTensorTypeAndShapeInfo* info = NULL;
  if ((st = ort->ShapeInferContext_GetInputTypeShape(ctx, 0, &info))) return st;
  ONNXTensorElementDataType in_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  if ((st = ort->GetTensorElementType(info, &in_type))) return st;
  if (in_type != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT)
    return ort->CreateStatus(ORT_INVALID_ARGUMENT, "Convert: the input is not float");
  const OrtOpAttr* attr = NULL;
  if ((st = ort->ShapeInferContext_GetAttribute(ctx, "to", &attr))) return st;
  int64_t to = 0;
  if ((st = read_to(attr, &to))) return st;
  if (to != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && to != ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
    return ort->CreateStatus(ORT_INVALID_ARGUMENT, "Convert: 'to' must be float (1) or int64 (7)");
  /* The output: a new type and shape, the input's dimensions with element type `to`. */
  size_t rank = 0;
  int64_t dims[8];
  const char* names[8];
  ort->GetDimensionsCount(info, &rank);
  if (rank > 8) rank = 8;
  ort->GetDimensions(info, dims, rank);
  ort->GetSymbolicDimensions(info, names, rank);
  OrtTensorTypeAndShapeInfo* out = NULL;
  if ((st = ort->CreateTensorTypeAndShapeInfo(&out))) return st;
  if (!st) st = ort->SetTensorElementType(out, (ONNXTensorElementDataType)to);
  if (!st) st = ort->SetDimensions(out, dims, rank);
  if (!st) st = ort->SetSymbolicDimensions(out, names, rank);
  if (!st) st = ort->ShapeInferContext_SetOutputTypeShape(ctx, 0, out);
  ort->ReleaseTensorTypeAndShapeInfo(out);
  return st;
}

static OrtStatus* ORT_API_CALL convert_create(const OrtCustomOp* op, const OrtApi* api, const OrtKernelInfo* info,
                                              void** kernel) {
  (void)op;
  (void)api;
  ConvertKernel* k = (ConvertKernel*)calloc(1, sizeof(ConvertKernel));
  OrtStatus* st = ort->KernelInfoGetAttribute_int64(info, "to", &k->to);
  /* The node's operator, by the size protocol: the size first, then the name. */
  char domain[32] = {0}, type[32] = {0};
  size_t size = 0;
  if (!st) st = ort->KernelInfo_GetOperatorDomain(info, NULL, &size);
  if (!st && size != strlen("infer.domain") + 1) st = ort->CreateStatus(ORT_FAIL, "Convert: the domain's size is wrong");
  if (!st) st = ort->KernelInfo_GetOperatorDomain(info, domain, &size);
  size = sizeof type;
  if (!st) st = ort->KernelInfo_GetOperatorType(info, type, &size);
  if (!st && (strcmp(domain, "infer.domain") != 0 || strcmp(type, "Convert") != 0))
    st = ort->CreateStatus(ORT_FAIL, "Convert: the kernel info names another operator");
  /* The kernel's allocator. */
  OrtAllocator* allocator = NULL;
  if (!st) st = ort->KernelInfoGetAllocator(info, OrtMemTypeDefault, &allocator);
  if (!st) {
    void* p = allocator->Alloc(allocator, 256);
    if (!p) st = ort->CreateStatus(ORT_FAIL, "Convert: the kernel's allocator gave NULL");
    else {
      memset(p, 1, 256);
      allocator->Free(allocator, p);
    }
    ort->ReleaseAllocator(allocator);
  }
  if (!st) st = ort->KernelInfo_GetLogger(info, &k->logger);
  if (!st) st = ort->Logger_LogMessage(k->logger, ORT_LOGGING_LEVEL_WARNING, "Convert kernel: created", __FILE__,
                                       __LINE__, "convert_create");
  if (st) {
    free(k);
    return st;
  }
  *kernel = k;
  return NULL;
}

static OrtStatus* ORT_API_CALL convert_compute(void* kernel, OrtKernelContext* ctx) {
  ConvertKernel* k = (ConvertKernel*)kernel;
  const OrtLogger* logger = NULL;
  OrtStatus* st = ort->KernelContext_GetLogger(ctx, &logger);
  if (st) return st;
  OrtLoggingLevel level = ORT_LOGGING_LEVEL_FATAL;
  if ((st = ort->Logger_GetLoggingSeverityLevel(logger, &level))) return st;
  if (level != ORT_LOGGING_LEVEL_WARNING) return ort->CreateStatus(ORT_FAIL, "Convert: the session logs from WARNING");
  /* Below the session's level: not logged. */
  if ((st = ort->Logger_LogMessage(logger, ORT_LOGGING_LEVEL_INFO, "Convert kernel: not shown", __FILE__, __LINE__,
                                   "convert_compute")))
    return st;
  if ((st = ort->Logger_LogMessage(logger, ORT_LOGGING_LEVEL_WARNING, "Convert kernel: computing", __FILE__, __LINE__,
                                   "convert_compute")))
    return st;
  /* A scratch buffer, freed through the context's allocator. */
  OrtMemoryInfo* cpu = NULL;
  if ((st = ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &cpu))) return st;
  void* scratch = NULL;
  OrtAllocator* allocator = NULL;
  st = ort->KernelContext_GetScratchBuffer(ctx, cpu, 128, &scratch);
  if (!st) st = ort->KernelContext_GetAllocator(ctx, cpu, &allocator);
  ort->ReleaseMemoryInfo(cpu);
  if (st) return st;
  if (!scratch) return ort->CreateStatus(ORT_FAIL, "Convert: no scratch buffer");
  memset(scratch, 0, 128);
  allocator->Free(allocator, scratch);
  ort->ReleaseAllocator(allocator);
  const OrtValue* x = NULL;
  if ((st = ort->KernelContext_GetInput(ctx, 0, &x))) return st;
  OrtTensorTypeAndShapeInfo* info = NULL;
  if ((st = ort->GetTensorTypeAndShape(x, &info))) return st;
  size_t rank = 0, n = 0;
  int64_t dims[8];
  ort->GetDimensionsCount(info, &rank);
  if (rank > 8) rank = 8;
  ort->GetDimensions(info, dims, rank);
  ort->GetTensorShapeElementCount(info, &n);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  const float* in = NULL;
  if ((st = ort->GetTensorData(x, (const void**)&in))) return st;
  OrtValue* y = NULL;
  if ((st = ort->KernelContext_GetOutput(ctx, 0, dims, rank, &y))) return st;
  /* The output was allocated with the inferred type. */
  if ((st = ort->GetTensorTypeAndShape(y, &info))) return st;
  ONNXTensorElementDataType out_type;
  ort->GetTensorElementType(info, &out_type);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  if ((int64_t)out_type != k->to) return ort->CreateStatus(ORT_FAIL, "Convert: the output's type is not 'to'");
  void* out = NULL;
  if ((st = ort->GetTensorMutableData(y, &out))) return st;
  for (size_t i = 0; i < n; ++i) {
    if (k->to == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64)
      ((int64_t*)out)[i] = (int64_t)in[i];
    else
      ((float*)out)[i] = in[i];
  }
  return NULL;
}

static void ORT_API_CALL convert_destroy(void* kernel) { free(kernel); }
static const char* ORT_API_CALL convert_name(const OrtCustomOp* op) {
  (void)op;
  return "Convert";
}
static const char* ORT_API_CALL convert_provider(const OrtCustomOp* op) {
  (void)op;
  return "CPUExecutionProvider";
}
static ONNXTensorElementDataType ORT_API_CALL convert_input_type(const OrtCustomOp* op, size_t i) {
  (void)op;
  (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static ONNXTensorElementDataType ORT_API_CALL convert_output_type(const OrtCustomOp* op, size_t i) {
  (void)op;
  (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; /* chosen by convert_infer */
}
static size_t ORT_API_CALL one(const OrtCustomOp* op) {
  (void)op;
  return 1;
}
static OrtCustomOpInputOutputCharacteristic ORT_API_CALL required(const OrtCustomOp* op, size_t i) {
  (void)op;
  (void)i;
  return INPUT_OUTPUT_REQUIRED;
}
static OrtMemType ORT_API_CALL default_memory(const OrtCustomOp* op, size_t i) {
  (void)op;
  (void)i;
  return OrtMemTypeDefault;
}
static int ORT_API_CALL min_arity(const OrtCustomOp* op) {
  (void)op;
  return 1;
}
static int ORT_API_CALL homogeneous(const OrtCustomOp* op) {
  (void)op;
  return 1;
}
static int ORT_API_CALL start_version(const OrtCustomOp* op) {
  (void)op;
  return 1;
}
static int ORT_API_CALL end_version(const OrtCustomOp* op) {
  (void)op;
  return 1000;
}

static OrtCustomOp make_convert_op(void) {
  OrtCustomOp op;
  memset(&op, 0, sizeof op);
  op.version = 17;
  op.GetName = convert_name;
  op.GetExecutionProviderType = convert_provider;
  op.GetInputType = convert_input_type;
  op.GetInputTypeCount = one;
  op.GetOutputType = convert_output_type;
  op.GetOutputTypeCount = one;
  op.KernelDestroy = convert_destroy;
  op.GetInputCharacteristic = required;
  op.GetOutputCharacteristic = required;
  op.GetInputMemoryType = default_memory;
  op.GetVariadicInputMinArity = min_arity;
  op.GetVariadicInputHomogeneity = homogeneous;
  op.GetVariadicOutputMinArity = min_arity;
  op.GetVariadicOutputHomogeneity = homogeneous;
  op.CreateKernelV2 = convert_create;
  op.KernelComputeV2 = convert_compute;
  op.InferOutputShapeFn = convert_infer;
  op.GetStartVersion = start_version;
  op.GetEndVersion = end_version;
  return op;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: custom_infer_test CONVERT_MODEL CONVERT_BAD_MODEL [--onnxruntime]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  on_onnxruntime = argc > 3 && strcmp(argv[3], "--onnxruntime") == 0;
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv* env = NULL;
  CHECK(ort->CreateEnvWithCustomLogger(log_sink, NULL, ORT_LOGGING_LEVEL_WARNING, "infer_env", &env));

  OrtCustomOp convert = make_convert_op();
  OrtCustomOpDomain* domain = NULL;
  CHECK(ort->CreateCustomOpDomain("infer.domain", &domain));
  CHECK(ort->CustomOpDomain_Add(domain, &convert));
  OrtSessionOptions* options = NULL;
  CHECK(ort->CreateSessionOptions(&options));
  CHECK(ort->AddCustomOpDomain(options, domain));
  CHECK(ort->SetSessionLogId(options, "convert_session"));

  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, argv[1], options, &session));
  EXPECT(infer_calls >= 1);
  EXPECT(kernel_messages == 1); /* "created" */

  /* z's type comes from the custom op's inference: int64 + int64. */
  OrtTypeInfo* type_info = NULL;
  CHECK(ort->SessionGetOutputTypeInfo(session, 1, &type_info));
  const OrtTensorTypeAndShapeInfo* tensor_info = NULL;
  CHECK(ort->CastTypeInfoToTensorInfo(type_info, &tensor_info));
  ONNXTensorElementDataType z_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  if (tensor_info) CHECK(ort->GetTensorElementType(tensor_info, &z_type));
  printf("  z's element type: %d\n", (int)z_type);
  EXPECT(z_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  ort->ReleaseTypeInfo(type_info);

  OrtMemoryInfo* mem = NULL;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  float x[4] = {1.5f, -2.0f, 3.9f, 0.0f};
  const int64_t shape[1] = {4};
  OrtValue* input = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, x, sizeof x, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &input));
  const char* in_names[1] = {"x"};
  const char* out_names[2] = {"y", "z"};
  OrtValue* outputs[2] = {NULL, NULL};
  CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)&input, 1, out_names, 2, outputs));
  const int64_t* y = NULL;
  const int64_t* z = NULL;
  CHECK(ort->GetTensorData(outputs[0], (const void**)&y));
  CHECK(ort->GetTensorData(outputs[1], (const void**)&z));
  EXPECT(y[0] == 1 && y[1] == -2 && y[2] == 3 && y[3] == 0);
  EXPECT(z[0] == 2 && z[1] == -4 && z[2] == 6 && z[3] == 0);
  EXPECT(kernel_messages == 2); /* "computing"; the INFO message is below the level */
  EXPECT(strcmp(last_logid, "convert_session") == 0);
  ort->ReleaseValue(outputs[0]);
  ort->ReleaseValue(outputs[1]);
  outputs[0] = outputs[1] = NULL;

  /* The inference refuses to=int16. As in ONNX Runtime, that error leaves
   * the output's type to the model and the session is created; the kernel
   * then finds an output that is not of type `to` and fails the run. */
  const int calls_before = infer_calls;
  OrtSession* bad = NULL;
  CHECK(ort->CreateSession(env, argv[2], options, &bad));
  printf("  inference calls for convert_bad.onnx: %d\n", infer_calls - calls_before);
  EXPECT(infer_calls > calls_before);
  OrtStatus* st = ort->Run(bad, NULL, in_names, (const OrtValue* const*)&input, 1, out_names, 1, outputs);
  EXPECT(st != NULL);
  if (st) {
    const char* msg = ort->GetErrorMessage(st);
    printf("  convert_bad.onnx run -> code %d: %s\n", (int)ort->GetErrorCode(st), msg);
    EXPECT(strstr(msg, "the output's type is not 'to'") != NULL);
    EXPECT(ort->GetErrorCode(st) == ORT_FAIL);
    ort->ReleaseStatus(st);
  }
  ort->ReleaseSession(bad);

  ort->ReleaseValue(input);
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
  ort->ReleaseCustomOpDomain(domain);
  ort->ReleaseEnv(env);
  return CHECKS_DONE("custom_infer_test");
}
