/* capi_test.c — ONNX Runtime's C API used the way ONNX Runtime's
 * documentation uses it, compiled as C against
 * include/onnxruntime/onnxruntime_c_api.h only and linked to
 * libonnxruntime.so.1. The same program runs on ONNX Runtime's own library
 * (ctest test capi_c_on_onnxruntime): that both pass is the check that the
 * header's table layout is ONNX Runtime's.
 *
 *   capi_test TYPES_MODEL [CLS_MODEL OUT_FILE] [--onnxruntime]
 *
 * TYPES_MODEL is tests/capi/make_models.py's types.onnx. With CLS_MODEL (the
 * PP-OCR direction classifier) the program runs it on a fixed input and
 * writes the output floats to OUT_FILE (capi_compare checks them against
 * spindle's C++ API). --onnxruntime skips what only spindle promises (the
 * ORT_NOT_IMPLEMENTED slot).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxruntime/onnxruntime_c_api.h"
#include "checks.h"

static const OrtApi* ort;
static int failures;

/* Expects `st` to be an error with `code` and a message; releases it. */
static void expect_error(OrtStatus* st, OrtErrorCode code, const char* what, int line) {
  if (!st) {
    fprintf(stderr, "line %d: %s: expected error code %d, got success\n", line, what, (int)code);
    failures++;
    return;
  }
  const char* msg = ort->GetErrorMessage(st);
  if (ort->GetErrorCode(st) != code || !msg || !*msg) {
    fprintf(stderr, "line %d: %s: expected code %d with a message, got %d: '%s'\n", line, what, (int)code,
            (int)ort->GetErrorCode(st), msg ? msg : "(null)");
    failures++;
  } else {
    printf("  %s -> code %d: %s\n", what, (int)code, msg);
  }
  ort->ReleaseStatus(st);
}
#define EXPECT_ERROR(expr, code) expect_error((expr), (code), #expr, __LINE__)

/* ---- custom pool threads: every one counted when created and joined ---- */
static atomic_int threads_created, threads_joined;
static int creation_options_tag = 42;

typedef struct {
  pthread_t thread;
  OrtThreadWorkerFn fn;
  void* param;
} CountedThread;

static void* thread_main(void* arg) {
  CountedThread* t = (CountedThread*)arg;
  t->fn(t->param);
  return NULL;
}

static OrtCustomThreadHandle create_thread(void* options, OrtThreadWorkerFn fn, void* param) {
  if (options != &creation_options_tag) {
    fprintf(stderr, "create_thread: the creation options are not the ones set\n");
    return NULL;
  }
  CountedThread* t = (CountedThread*)calloc(1, sizeof(CountedThread));
  t->fn = fn;
  t->param = param;
  if (pthread_create(&t->thread, NULL, thread_main, t) != 0) {
    free(t);
    return NULL;
  }
  atomic_fetch_add(&threads_created, 1);
  return (OrtCustomThreadHandle)t;
}

static void join_thread(OrtCustomThreadHandle handle) {
  CountedThread* t = (CountedThread*)handle;
  pthread_join(t->thread, NULL);
  free(t);
  atomic_fetch_add(&threads_joined, 1);
}

/* A custom logger (CreateEnvWithCustomLogger): counts what it receives. */
struct LogCounts {
  int info_threads;   /* info messages naming the intra-op threads, with the session's log id */
  int verbose;        /* messages below the environment's level */
  int bad_category;   /* messages not in category "spindle" */
};
static void count_log(void* param, OrtLoggingLevel severity, const char* category, const char* logid,
                      const char* code_location, const char* message) {
  struct LogCounts* c = (struct LogCounts*)param;
  (void)code_location;
  if (strcmp(category, "spindle") != 0) c->bad_category++;
  if (severity == ORT_LOGGING_LEVEL_VERBOSE) c->verbose++;
  if (severity == ORT_LOGGING_LEVEL_INFO && strcmp(logid, "capi_logged") == 0 && strstr(message, "intra-op: 2 thread(s)"))
    c->info_threads++;
}

static void* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc((size_t)n);
  *len = fread(data, 1, (size_t)n, f);
  fclose(f);
  return data;
}

static OrtValue* tensor_over(const OrtMemoryInfo* mem, void* data, size_t bytes, const int64_t* shape, size_t rank,
                             ONNXTensorElementDataType type) {
  OrtValue* v = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, data, bytes, shape, rank, type, &v));
  return v;
}

/* Inputs and outputs, names, type infos and metadata of types.onnx. */
static void check_model_info(OrtSession* session) {
  size_t n_in = 0, n_out = 0;
  CHECK(ort->SessionGetInputCount(session, &n_in));
  CHECK(ort->SessionGetOutputCount(session, &n_out));
  EXPECT(n_in == 6 && n_out == 6);
  OrtAllocator* alloc = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&alloc));
  static const char* in_names[] = {"f", "i64", "i32", "u8", "b", "s"};
  static const ONNXTensorElementDataType in_types[] = {
      ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32,
      ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL,  ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING};
  for (size_t i = 0; i < n_in && i < 6; ++i) {
    char* name = NULL;
    CHECK(ort->SessionGetInputName(session, i, alloc, &name));
    EXPECT(strcmp(name, in_names[i]) == 0);
    CHECK(ort->AllocatorFree(alloc, name));
    OrtTypeInfo* ti = NULL;
    CHECK(ort->SessionGetInputTypeInfo(session, i, &ti));
    ONNXType kind;
    CHECK(ort->GetOnnxTypeFromTypeInfo(ti, &kind));
    EXPECT(kind == ONNX_TYPE_TENSOR);
    const OrtTensorTypeAndShapeInfo* info = NULL;
    CHECK(ort->CastTypeInfoToTensorInfo(ti, &info));
    ONNXTensorElementDataType type;
    CHECK(ort->GetTensorElementType(info, &type));
    EXPECT(type == in_types[i]);
    size_t rank = 0;
    CHECK(ort->GetDimensionsCount(info, &rank));
    EXPECT(rank == (i == 5 ? 1u : 2u));
    int64_t dims[2] = {0, 0};
    const char* sym[2] = {NULL, NULL};
    CHECK(ort->GetDimensions(info, dims, rank));
    CHECK(ort->GetSymbolicDimensions(info, sym, rank));
    EXPECT(dims[0] == -1 && strcmp(sym[0], "batch") == 0);
    if (rank == 2) EXPECT(dims[1] == 3 && strcmp(sym[1], "") == 0);
    ort->ReleaseTypeInfo(ti);
  }
  const OrtMemoryInfo* where[6];
  CHECK(ort->SessionGetMemoryInfoForInputs(session, where, 6));
  for (int k = 0; k < 6; ++k) {
    const char* mem_name = NULL;
    CHECK(ort->MemoryInfoGetName(where[k], &mem_name));
    EXPECT(strcmp(mem_name, "Cpu") == 0);
  }
  size_t n_init = 1;
  CHECK(ort->SessionGetOverridableInitializerCount(session, &n_init));
  EXPECT(n_init == 0);
  char* out_name = NULL;
  CHECK(ort->SessionGetOutputName(session, 4, alloc, &out_name));
  EXPECT(strcmp(out_name, "b_out") == 0);
  CHECK(ort->AllocatorFree(alloc, out_name));

  OrtModelMetadata* meta = NULL;
  CHECK(ort->SessionGetModelMetadata(session, &meta));
  char* s = NULL;
  CHECK(ort->ModelMetadataGetProducerName(meta, alloc, &s));
  EXPECT(strcmp(s, "capi-test") == 0);
  CHECK(ort->AllocatorFree(alloc, s));
  CHECK(ort->ModelMetadataGetGraphName(meta, alloc, &s));
  EXPECT(strcmp(s, "capi_types") == 0);
  CHECK(ort->AllocatorFree(alloc, s));
  CHECK(ort->ModelMetadataGetDomain(meta, alloc, &s));
  EXPECT(strcmp(s, "org.spindle.test") == 0);
  CHECK(ort->AllocatorFree(alloc, s));
  CHECK(ort->ModelMetadataGetDescription(meta, alloc, &s));
  EXPECT(strcmp(s, "element types through the C API") == 0);
  CHECK(ort->AllocatorFree(alloc, s));
  int64_t version = 0;
  CHECK(ort->ModelMetadataGetVersion(meta, &version));
  EXPECT(version == 3);
  CHECK(ort->ModelMetadataLookupCustomMetadataMap(meta, alloc, "purpose", &s));
  EXPECT(s && strcmp(s, "c-api") == 0);
  if (s) CHECK(ort->AllocatorFree(alloc, s));
  CHECK(ort->ModelMetadataLookupCustomMetadataMap(meta, alloc, "absent", &s));
  EXPECT(s == NULL);
  char** keys = NULL;
  int64_t n_keys = 0;
  CHECK(ort->ModelMetadataGetCustomMetadataMapKeys(meta, alloc, &keys, &n_keys));
  EXPECT(n_keys == 2);
  for (int64_t k = 0; k < n_keys; ++k) CHECK(ort->AllocatorFree(alloc, keys[k]));
  if (keys) CHECK(ort->AllocatorFree(alloc, keys));
  ort->ReleaseModelMetadata(meta);
}

/* Runs types.onnx on batch 2 and checks every output element, then on
 * batch 1 (refused when the session fixes "batch" at 2). */
static void run_types(OrtSession* session, const OrtMemoryInfo* mem, int batch_fixed_at_2) {
  float f[6] = {-1.5f, 0.0f, 2.25f, 3.0f, -0.0f, 1e-3f};
  int64_t i64[6] = {1, -2, 3, INT64_C(1) << 40, -7, 0};
  int32_t i32[6] = {1, -2, 3, 1000000, -7, 0};
  uint8_t u8[6] = {0, 1, 254, 255, 7, 128};
  bool b[6] = {true, false, true, true, false, false};
  const char* strs[2] = {"hello", "spindle \xe2\x9c\x93"};
  const int64_t shape[2] = {2, 3};
  const int64_t sshape[1] = {2};

  OrtValue* in[6];
  in[0] = tensor_over(mem, f, sizeof f, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  in[1] = tensor_over(mem, i64, sizeof i64, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  in[2] = tensor_over(mem, i32, sizeof i32, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  in[3] = tensor_over(mem, u8, sizeof u8, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8);
  in[4] = tensor_over(mem, b, sizeof b, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  OrtAllocator* alloc = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&alloc));
  CHECK(ort->CreateTensorAsOrtValue(alloc, sshape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &in[5]));
  CHECK(ort->FillStringTensor(in[5], strs, 2));
  int is_tensor = 0;
  CHECK(ort->IsTensor(in[0], &is_tensor));
  EXPECT(is_tensor == 1);
  void* data = NULL;
  CHECK(ort->GetTensorMutableData(in[0], &data));
  EXPECT(data == (void*)f); /* wrapped, not copied */

  const char* in_names[6] = {"f", "i64", "i32", "u8", "b", "s"};
  const char* out_names[6] = {"f_out", "i64_out", "i32_out", "u8_out", "b_out", "s_out"};
  OrtValue* out[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)in, 6, out_names, 6, out));

  float* fo;
  int64_t* lo;
  int32_t* io;
  uint8_t* uo;
  bool* bo;
  CHECK(ort->GetTensorMutableData(out[0], (void**)&fo));
  CHECK(ort->GetTensorMutableData(out[1], (void**)&lo));
  CHECK(ort->GetTensorMutableData(out[2], (void**)&io));
  CHECK(ort->GetTensorMutableData(out[3], (void**)&uo));
  CHECK(ort->GetTensorMutableData(out[4], (void**)&bo));
  for (int k = 0; k < 6; ++k) {
    EXPECT(fo[k] == (f[k] > 0 ? f[k] * 2 : 0.0f));
    EXPECT(lo[k] == i64[k] + 7);
    EXPECT(io[k] == i32[k] * 3);
    EXPECT(uo[k] == (uint8_t)(u8[k] + 1));
    EXPECT(bo[k] == !b[k]);
  }
  OrtTensorTypeAndShapeInfo* info = NULL;
  CHECK(ort->GetTensorTypeAndShape(out[1], &info));
  size_t count = 0;
  ONNXTensorElementDataType type;
  CHECK(ort->GetTensorShapeElementCount(info, &count));
  CHECK(ort->GetTensorElementType(info, &type));
  EXPECT(count == 6 && type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  ort->ReleaseTensorTypeAndShapeInfo(info);
  ONNXType vt;
  CHECK(ort->GetValueType(out[5], &vt));
  EXPECT(vt == ONNX_TYPE_TENSOR);
  size_t total = 0;
  CHECK(ort->GetStringTensorDataLength(out[5], &total));
  EXPECT(total == strlen(strs[0]) + strlen(strs[1]));
  char buf[64];
  size_t offsets[2];
  CHECK(ort->GetStringTensorContent(out[5], buf, sizeof buf, offsets, 2));
  EXPECT(offsets[0] == 0 && offsets[1] == strlen(strs[0]));
  EXPECT(memcmp(buf, "hellospindle \xe2\x9c\x93", total) == 0);
  for (int k = 0; k < 6; ++k) {
    ort->ReleaseValue(in[k]);
    ort->ReleaseValue(out[k]);
  }

  /* A subset of the outputs, with run options. */
  OrtRunOptions* ro = NULL;
  CHECK(ort->CreateRunOptions(&ro));
  CHECK(ort->RunOptionsSetRunTag(ro, "subset"));
  const char* tag = NULL;
  CHECK(ort->RunOptionsGetRunTag(ro, &tag));
  EXPECT(strcmp(tag, "subset") == 0);
  float g[3] = {1, -1, 4};
  const int64_t one[2] = {1, 3};
  int64_t l1[3] = {0, 0, 0};
  int32_t n1[3] = {0, 0, 0};
  uint8_t c1[3] = {0, 0, 0};
  bool b1[3] = {false, false, false};
  OrtValue* in2[6];
  in2[0] = tensor_over(mem, g, sizeof g, one, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  in2[1] = tensor_over(mem, l1, sizeof l1, one, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  in2[2] = tensor_over(mem, n1, sizeof n1, one, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  in2[3] = tensor_over(mem, c1, sizeof c1, one, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8);
  in2[4] = tensor_over(mem, b1, sizeof b1, one, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  const int64_t s1[1] = {1};
  const char* word[1] = {"x"};
  CHECK(ort->CreateTensorAsOrtValue(alloc, s1, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &in2[5]));
  CHECK(ort->FillStringTensor(in2[5], word, 1));
  const char* just_f[1] = {"f_out"};
  OrtValue* fout = NULL;
  if (batch_fixed_at_2) {
    EXPECT_ERROR(ort->Run(session, ro, in_names, (const OrtValue* const*)in2, 6, just_f, 1, &fout), ORT_INVALID_ARGUMENT);
    for (int k = 0; k < 6; ++k) ort->ReleaseValue(in2[k]);
    ort->ReleaseRunOptions(ro);
    return;
  }
  CHECK(ort->Run(session, ro, in_names, (const OrtValue* const*)in2, 6, just_f, 1, &fout));
  float* fd = NULL;
  CHECK(ort->GetTensorMutableData(fout, (void**)&fd));
  EXPECT(fd[0] == 2 && fd[1] == 0 && fd[2] == 8);
  ort->ReleaseValue(fout);

  /* Error paths of a run: an unknown feed name, then a terminated run. */
  const char* bad_names[6] = {"f", "i64", "i32", "u8", "b", "no_such_input"};
  fout = NULL;
  EXPECT_ERROR(ort->Run(session, NULL, bad_names, (const OrtValue* const*)in2, 6, just_f, 1, &fout),
               ORT_INVALID_ARGUMENT);
  CHECK(ort->RunOptionsSetTerminate(ro));
  OrtStatus* st = ort->Run(session, ro, in_names, (const OrtValue* const*)in2, 6, just_f, 1, &fout);
  EXPECT(st != NULL);
  if (st) ort->ReleaseStatus(st);
  CHECK(ort->RunOptionsUnsetTerminate(ro));
  fout = NULL;
  CHECK(ort->Run(session, ro, in_names, (const OrtValue* const*)in2, 6, just_f, 1, &fout));
  ort->ReleaseValue(fout);
  for (int k = 0; k < 6; ++k) ort->ReleaseValue(in2[k]);
  ort->ReleaseRunOptions(ro);
}

/* RunAsync: the callback gets the outputs and a status it releases. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  size_t n;
  OrtStatus* status;
} AsyncResult;

static void async_done(void* user_data, OrtValue** outputs, size_t n, OrtStatus* status) {
  AsyncResult* r = (AsyncResult*)user_data;
  (void)outputs;
  pthread_mutex_lock(&r->mu);
  r->done = 1;
  r->n = n;
  r->status = status;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static void run_async_types(OrtSession* session, const OrtMemoryInfo* mem) {
  float f[3] = {-2, 0.5f, 8};
  int64_t l[3] = {0, 0, 0};
  int32_t n[3] = {0, 0, 0};
  uint8_t c[3] = {0, 0, 0};
  bool b[3] = {false, false, false};
  const int64_t shape[2] = {1, 3};
  const int64_t sshape[1] = {1};
  const char* word[1] = {"async"};
  OrtValue* in[6];
  in[0] = tensor_over(mem, f, sizeof f, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  in[1] = tensor_over(mem, l, sizeof l, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  in[2] = tensor_over(mem, n, sizeof n, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  in[3] = tensor_over(mem, c, sizeof c, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8);
  in[4] = tensor_over(mem, b, sizeof b, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL);
  OrtAllocator* alloc = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&alloc));
  CHECK(ort->CreateTensorAsOrtValue(alloc, sshape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &in[5]));
  CHECK(ort->FillStringTensor(in[5], word, 1));
  const char* in_names[6] = {"f", "i64", "i32", "u8", "b", "s"};
  const char* out_names[2] = {"f_out", "s_out"};
  OrtValue* out[2] = {NULL, NULL};
  AsyncResult r;
  memset(&r, 0, sizeof r);
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  CHECK(ort->RunAsync(session, NULL, in_names, (const OrtValue* const*)in, 6, out_names, 2, out, async_done, &r));
  pthread_mutex_lock(&r.mu);
  while (!r.done) pthread_cond_wait(&r.cv, &r.mu);
  pthread_mutex_unlock(&r.mu);
  if (r.status) {
    fprintf(stderr, "RunAsync failed: %s\n", ort->GetErrorMessage(r.status));
    ort->ReleaseStatus(r.status);
    failures++;
  } else {
    EXPECT(r.n == 2);
    float* y = NULL;
    CHECK(ort->GetTensorMutableData(out[0], (void**)&y));
    EXPECT(y[0] == 0 && y[1] == 1 && y[2] == 16);
    size_t len = 0;
    CHECK(ort->GetStringTensorElementLength(out[1], 0, &len));
    EXPECT(len == 5);
  }
  for (int k = 0; k < 2; ++k) ort->ReleaseValue(out[k]);
  for (int k = 0; k < 6; ++k) ort->ReleaseValue(in[k]);
  pthread_mutex_destroy(&r.mu);
  pthread_cond_destroy(&r.cv);
}

/* Sequences: built with CreateValue, read with GetValueCount / GetValue. */
static void run_seq(OrtEnv* env, const OrtSessionOptions* so, const char* path, const OrtMemoryInfo* mem) {
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, path, so, &session));
  /* The sequence input's type: a sequence of float tensors. */
  OrtTypeInfo* ti = NULL;
  CHECK(ort->SessionGetInputTypeInfo(session, 0, &ti));
  ONNXType kind;
  CHECK(ort->GetOnnxTypeFromTypeInfo(ti, &kind));
  EXPECT(kind == ONNX_TYPE_SEQUENCE);
  const OrtTensorTypeAndShapeInfo* not_tensor = NULL;
  CHECK(ort->CastTypeInfoToTensorInfo(ti, &not_tensor));
  EXPECT(not_tensor == NULL);
  const OrtMapTypeInfo* not_map = NULL;
  CHECK(ort->CastTypeInfoToMapTypeInfo(ti, &not_map));
  EXPECT(not_map == NULL);
  const OrtSequenceTypeInfo* seq_info = NULL;
  CHECK(ort->CastTypeInfoToSequenceTypeInfo(ti, &seq_info));
  EXPECT(seq_info != NULL);
  if (seq_info) {
    OrtTypeInfo* elem = NULL;
    CHECK(ort->GetSequenceElementType(seq_info, &elem));
    const OrtTensorTypeAndShapeInfo* elem_tensor = NULL;
    CHECK(ort->CastTypeInfoToTensorInfo(elem, &elem_tensor));
    ONNXTensorElementDataType elem_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (elem_tensor) CHECK(ort->GetTensorElementType(elem_tensor, &elem_type));
    EXPECT(elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    ort->ReleaseTypeInfo(elem);
  }
  ort->ReleaseTypeInfo(ti);
  float a[2] = {1, 2}, b[2] = {3, 4}, x[2] = {5, 6};
  const int64_t shape[1] = {2};
  OrtValue* parts[2];
  parts[0] = tensor_over(mem, a, sizeof a, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  parts[1] = tensor_over(mem, b, sizeof b, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  OrtValue* in[2];
  CHECK(ort->CreateValue((const OrtValue* const*)parts, 2, ONNX_TYPE_SEQUENCE, &in[0]));
  in[1] = tensor_over(mem, x, sizeof x, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  const char* in_names[2] = {"items", "x"};
  const char* out_names[2] = {"joined", "count"};
  OrtValue* out[2] = {NULL, NULL};
  CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)in, 2, out_names, 2, out));
  ONNXType type;
  CHECK(ort->GetValueType(out[0], &type));
  EXPECT(type == ONNX_TYPE_SEQUENCE);
  size_t count = 0;
  CHECK(ort->GetValueCount(out[0], &count));
  EXPECT(count == 3);
  OrtAllocator* alloc = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&alloc));
  OrtValue* last = NULL;
  CHECK(ort->GetValue(out[0], 2, alloc, &last));
  float* y = NULL;
  CHECK(ort->GetTensorMutableData(last, (void**)&y));
  EXPECT(y[0] == 5 && y[1] == 6);
  int64_t* n = NULL;
  CHECK(ort->GetTensorMutableData(out[1], (void**)&n));
  EXPECT(*n == 3);
  ort->ReleaseValue(last);
  for (int k = 0; k < 2; ++k) {
    ort->ReleaseValue(out[k]);
    ort->ReleaseValue(in[k]);
    ort->ReleaseValue(parts[k]);
  }
  ort->ReleaseSession(session);
}

/* Outputs belong to the caller: writing into one that is a feed passed
 * through or an initializer changes neither the feed nor the next run. */
static void run_const(OrtEnv* env, const OrtSessionOptions* so, const char* path, const OrtMemoryInfo* mem) {
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, path, so, &session));
  float x[2] = {3, 4};
  const int64_t shape[1] = {2};
  OrtValue* in = tensor_over(mem, x, sizeof x, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  const char* in_names[1] = {"x"};
  const char* out_names[2] = {"y", "w"};
  for (int round = 0; round < 2; ++round) {
    OrtValue* out[2] = {NULL, NULL};
    CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)&in, 1, out_names, 2, out));
    float *y = NULL, *w = NULL;
    CHECK(ort->GetTensorMutableData(out[0], (void**)&y));
    CHECK(ort->GetTensorMutableData(out[1], (void**)&w));
    EXPECT(y[0] == 3 && y[1] == 4);
    EXPECT(w[0] == 1 && w[1] == 2);
    y[0] = 99;
    w[0] = 99;
    EXPECT(x[0] == 3);
    ort->ReleaseValue(out[0]);
    ort->ReleaseValue(out[1]);
  }
  ort->ReleaseValue(in);
  ort->ReleaseSession(session);
}

/* The PP-OCR direction classifier on a fixed input; writes the output. */
static int run_cls(OrtSession* session, const OrtMemoryInfo* mem, const char* out_path) {
  enum { N = 1 * 3 * 48 * 192 };
  static float x[N];
  for (int i = 0; i < N; ++i) x[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
  const int64_t shape[4] = {1, 3, 48, 192};
  OrtValue* in = tensor_over(mem, x, sizeof x, shape, 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  OrtAllocator* alloc = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&alloc));
  char *in_name = NULL, *out_name = NULL;
  CHECK(ort->SessionGetInputName(session, 0, alloc, &in_name));
  CHECK(ort->SessionGetOutputName(session, 0, alloc, &out_name));
  const char* in_names[1] = {in_name};
  const char* out_names[1] = {out_name};
  OrtValue* out = NULL;
  CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)&in, 1, out_names, 1, &out));
  OrtTensorTypeAndShapeInfo* info = NULL;
  CHECK(ort->GetTensorTypeAndShape(out, &info));
  size_t count = 0;
  CHECK(ort->GetTensorShapeElementCount(info, &count));
  ort->ReleaseTensorTypeAndShapeInfo(info);
  float* y = NULL;
  CHECK(ort->GetTensorMutableData(out, (void**)&y));
  EXPECT(count == 2);
  printf("  cls output: %.7f %.7f\n", y[0], y[1]);
  FILE* f = fopen(out_path, "wb");
  if (!f || fwrite(y, sizeof(float), count, f) != count) {
    fprintf(stderr, "cannot write %s\n", out_path);
    failures++;
  }
  if (f) fclose(f);
  CHECK(ort->AllocatorFree(alloc, in_name));
  CHECK(ort->AllocatorFree(alloc, out_name));
  ort->ReleaseValue(out);
  ort->ReleaseValue(in);
  return 0;
}

int main(int argc, char** argv) {
  int on_onnxruntime = 0;
  const char* args[3] = {NULL, NULL, NULL};
  int n_args = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--onnxruntime") == 0)
      on_onnxruntime = 1;
    else if (n_args < 3)
      args[n_args++] = argv[i];
  }
  if (n_args != 1 && n_args != 3) {
    fprintf(stderr, "usage: capi_test TYPES_MODEL [CLS_MODEL OUT_FILE] [--onnxruntime]\n");
    return 2;
  }

  const OrtApiBase* base = OrtGetApiBase();
  ort = base->GetApi(ORT_API_VERSION);
  if (!ort) {
    fprintf(stderr, "GetApi(%d) returned NULL\n", ORT_API_VERSION);
    return 1;
  }
  printf("library version %s\n", base->GetVersionString());
  EXPECT(strncmp(base->GetVersionString(), "1.30", 4) == 0);
  EXPECT(base->GetApi(1) != NULL);
  if (!on_onnxruntime) EXPECT(base->GetApi(ORT_API_VERSION + 1) == NULL);

  /* Key-value pairs: ordered, a repeated key replaces its value. */
  OrtKeyValuePairs* kv = NULL;
  ort->CreateKeyValuePairs(&kv);
  EXPECT(kv != NULL);
  ort->AddKeyValuePair(kv, "a", "1");
  ort->AddKeyValuePair(kv, "b", "2");
  ort->AddKeyValuePair(kv, "a", "3");
  EXPECT(strcmp(ort->GetKeyValue(kv, "a"), "3") == 0);
  EXPECT(ort->GetKeyValue(kv, "c") == NULL);
  ort->RemoveKeyValuePair(kv, "b");
  const char* const* kv_keys = NULL;
  const char* const* kv_values = NULL;
  size_t kv_n = 0;
  ort->GetKeyValuePairs(kv, &kv_keys, &kv_values, &kv_n);
  EXPECT(kv_n == 1 && strcmp(kv_keys[0], "a") == 0 && strcmp(kv_values[0], "3") == 0);
  ort->ReleaseKeyValuePairs(kv);

  /* An environment from creation options (no global pools), used and released. */
  {
    OrtEnvCreationOptions env_options;
    memset(&env_options, 0, sizeof env_options);
    env_options.version = ORT_API_VERSION;
    env_options.logging_severity_level = ORT_LOGGING_LEVEL_ERROR;
    env_options.log_id = "capi_test_options";
    OrtEnv* plain_env = NULL;
    CHECK(ort->CreateEnvWithOptions(&env_options, &plain_env));
    OrtSession* plain = NULL;
    CHECK(ort->CreateSession(plain_env, args[0], NULL, &plain));
    size_t n_in = 0;
    CHECK(ort->SessionGetInputCount(plain, &n_in));
    EXPECT(n_in == 6);
    ort->ReleaseSession(plain);
    ort->ReleaseEnv(plain_env);
  }

  /* A custom logger receives spindle's messages at the environment's level. */
  if (!on_onnxruntime) {
    struct LogCounts counts = {0, 0, 0};
    OrtEnv* log_env = NULL;
    CHECK(ort->CreateEnvWithCustomLogger(count_log, &counts, ORT_LOGGING_LEVEL_INFO, "capi_env", &log_env));
    OrtSessionOptions* log_so = NULL;
    CHECK(ort->CreateSessionOptions(&log_so));
    CHECK(ort->SetIntraOpNumThreads(log_so, 2));
    CHECK(ort->SetSessionLogId(log_so, "capi_logged"));
    OrtSession* logged = NULL;
    CHECK(ort->CreateSession(log_env, args[0], log_so, &logged));
    EXPECT(counts.info_threads == 1);
    EXPECT(counts.verbose == 0);
    EXPECT(counts.bad_category == 0);
    ort->ReleaseSession(logged);
    /* The session's own severity wins: warning logs nothing at creation. */
    struct LogCounts before = counts;
    CHECK(ort->SetSessionLogSeverityLevel(log_so, ORT_LOGGING_LEVEL_WARNING));
    CHECK(ort->CreateSession(log_env, args[0], log_so, &logged));
    EXPECT(counts.info_threads == before.info_threads && counts.verbose == 0);
    ort->ReleaseSession(logged);
    ort->ReleaseSessionOptions(log_so);
    ort->ReleaseEnv(log_env);
  }

  /* Global thread pools with custom thread creation (the documentation's snippet). */
  OrtThreadingOptions* tp = NULL;
  CHECK(ort->CreateThreadingOptions(&tp));
  CHECK(ort->SetGlobalIntraOpNumThreads(tp, 3));
  CHECK(ort->SetGlobalInterOpNumThreads(tp, 2));
  CHECK(ort->SetGlobalSpinControl(tp, 0));
  CHECK(ort->SetGlobalDenormalAsZero(tp));
  CHECK(ort->SetGlobalCustomCreateThreadFn(tp, create_thread));
  CHECK(ort->SetGlobalCustomThreadCreationOptions(tp, &creation_options_tag));
  CHECK(ort->SetGlobalCustomJoinThreadFn(tp, join_thread));
  OrtEnv* env = NULL;
  CHECK(ort->CreateEnvWithGlobalThreadPools(ORT_LOGGING_LEVEL_WARNING, "capi_test", tp, &env));
  ort->ReleaseThreadingOptions(tp);

  OrtSessionOptions* so = NULL;
  CHECK(ort->CreateSessionOptions(&so));
  CHECK(ort->DisablePerSessionThreads(so));
  CHECK(ort->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL));
  CHECK(ort->SetSessionExecutionMode(so, ORT_SEQUENTIAL));
  CHECK(ort->SetSessionLogId(so, "capi_test"));
  CHECK(ort->AddSessionConfigEntry(so, "session.intra_op.allow_spinning", "0"));
  int has = 0;
  CHECK(ort->HasSessionConfigEntry(so, "session.intra_op.allow_spinning", &has));
  EXPECT(has == 1);
  CHECK(ort->HasSessionConfigEntry(so, "session.inter_op.allow_spinning", &has));
  EXPECT(has == 0);
  size_t size = 0;
  CHECK(ort->GetSessionConfigEntry(so, "session.intra_op.allow_spinning", NULL, &size));
  EXPECT(size == 2);
  char value[8];
  size = sizeof value;
  CHECK(ort->GetSessionConfigEntry(so, "session.intra_op.allow_spinning", value, &size));
  EXPECT(strcmp(value, "0") == 0);

  OrtMemoryInfo* mem = NULL;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  const char* mem_name = NULL;
  CHECK(ort->MemoryInfoGetName(mem, &mem_name));
  EXPECT(strcmp(mem_name, "Cpu") == 0);

  /* types.onnx from its path and from bytes. */
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, args[0], so, &session));
  check_model_info(session);
  run_types(session, mem, 0);
  size_t model_len = 0;
  void* model_bytes = read_file(args[0], &model_len);
  EXPECT(model_bytes != NULL);
  OrtSession* from_bytes = NULL;
  CHECK(ort->CreateSessionFromArray(env, model_bytes, model_len, so, &from_bytes));
  free(model_bytes);
  check_model_info(from_bytes);
  run_types(from_bytes, mem, 0);
  run_async_types(session, mem);
  {
    /* seq.onnx and const.onnx lie beside types.onnx (tests/capi/make_models.py). */
    char seq_path[4096];
    const char* slash = strrchr(args[0], '/');
    size_t dir_len = slash ? (size_t)(slash - args[0] + 1) : 0;
    snprintf(seq_path, sizeof seq_path, "%.*sseq.onnx", (int)dir_len, args[0]);
    run_seq(env, so, seq_path, mem);
    snprintf(seq_path, sizeof seq_path, "%.*sconst.onnx", (int)dir_len, args[0]);
    run_const(env, so, seq_path, mem);
  }

  /* A free dimension fixed by name: reported as its value, enforced on feeds. */
  OrtSessionOptions* fixed = NULL;
  CHECK(ort->CloneSessionOptions(so, &fixed));
  CHECK(ort->AddFreeDimensionOverrideByName(fixed, "batch", 2));
  OrtSession* fixed_session = NULL;
  CHECK(ort->CreateSession(env, args[0], fixed, &fixed_session));
  OrtTypeInfo* fixed_info = NULL;
  CHECK(ort->SessionGetInputTypeInfo(fixed_session, 0, &fixed_info));
  const OrtTensorTypeAndShapeInfo* fixed_shape = NULL;
  CHECK(ort->CastTypeInfoToTensorInfo(fixed_info, &fixed_shape));
  int64_t fixed_dims[2] = {0, 0};
  CHECK(ort->GetDimensions(fixed_shape, fixed_dims, 2));
  EXPECT(fixed_dims[0] == 2 && fixed_dims[1] == 3);
  ort->ReleaseTypeInfo(fixed_info);
  run_types(fixed_session, mem, 1);
  ort->ReleaseSession(fixed_session);
  ort->ReleaseSessionOptions(fixed);

  /* The optimized graph written by SetOptimizedModelFilePath loads back and
   * runs as the original (each library reads the file it wrote). */
  {
    char optimized[4096];
    const char* slash = strrchr(args[0], '/');
    snprintf(optimized, sizeof optimized, "%.*soptimized-%d.onnx", (int)(slash ? slash - args[0] + 1 : 0), args[0],
             (int)getpid());
    OrtSessionOptions* save = NULL;
    CHECK(ort->CloneSessionOptions(so, &save));
    CHECK(ort->SetOptimizedModelFilePath(save, optimized));
    OrtSession* saving = NULL;
    CHECK(ort->CreateSession(env, args[0], save, &saving));
    ort->ReleaseSession(saving);
    ort->ReleaseSessionOptions(save);
    OrtSession* reloaded = NULL;
    CHECK(ort->CreateSession(env, optimized, so, &reloaded));
    run_types(reloaded, mem, 0);
    ort->ReleaseSession(reloaded);
    remove(optimized);
  }

  if (n_args == 3) {
    OrtSession* cls = NULL;
    CHECK(ort->CreateSession(env, args[1], so, &cls));
    run_cls(cls, mem, args[2]);
    ort->ReleaseSession(cls);
  }

  /* A session's own pools through per-session callbacks: all joined when
   * the session is released. */
  {
    int created0 = atomic_load(&threads_created), joined0 = atomic_load(&threads_joined);
    OrtSessionOptions* own = NULL;
    CHECK(ort->CreateSessionOptions(&own));
    CHECK(ort->SetIntraOpNumThreads(own, 2));
    CHECK(ort->SessionOptionsSetCustomCreateThreadFn(own, create_thread));
    CHECK(ort->SessionOptionsSetCustomThreadCreationOptions(own, &creation_options_tag));
    CHECK(ort->SessionOptionsSetCustomJoinThreadFn(own, join_thread));
    OrtSession* own_session = NULL;
    CHECK(ort->CreateSession(env, args[0], own, &own_session));
    run_types(own_session, mem, 0);
    ort->ReleaseSession(own_session);
    ort->ReleaseSessionOptions(own);
    int created1 = atomic_load(&threads_created) - created0, joined1 = atomic_load(&threads_joined) - joined0;
    printf("session pool threads: %d created through the callbacks, %d joined\n", created1, joined1);
    EXPECT(created1 >= 1);
    EXPECT(created1 == joined1);
  }
  /* Error paths. */
  OrtSession* none = NULL;
  EXPECT_ERROR(ort->CreateSession(env, "/nonexistent/model.onnx", so, &none), ORT_NO_SUCHFILE);
  static const char garbage[] = "this is not an onnx model, just some bytes \x01\x02\x03\xff\xfe";
  EXPECT_ERROR(ort->CreateSessionFromArray(env, garbage, sizeof garbage, so, &none), ORT_INVALID_PROTOBUF);
  {
    /* A feed of the wrong element type, a buffer smaller than its shape. */
    int32_t wrong[6] = {0, 0, 0, 0, 0, 0};
    const int64_t shape[2] = {2, 3};
    OrtValue* bad = NULL;
    EXPECT_ERROR(ort->CreateTensorWithDataAsOrtValue(mem, wrong, 4, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, &bad),
                 ORT_INVALID_ARGUMENT);
    bad = tensor_over(mem, wrong, sizeof wrong, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
    const char* f_name[1] = {"f"};
    const char* f_out[1] = {"f_out"};
    OrtValue* y = NULL;
    EXPECT_ERROR(ort->Run(session, NULL, f_name, (const OrtValue* const*)&bad, 1, f_out, 1, &y), ORT_INVALID_ARGUMENT);
    ort->ReleaseValue(bad);
  }
  if (!on_onnxruntime) {
    OrtAllocator* allocator = NULL;
    CHECK(ort->GetAllocatorWithDefaultOptions(&allocator));
    const int64_t dense[1] = {4};
    OrtValue* sparse = NULL;
    EXPECT_ERROR(ort->CreateSparseTensorAsOrtValue(allocator, dense, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &sparse),
                 ORT_NOT_IMPLEMENTED);
  }

  ort->ReleaseSession(session);
  ort->ReleaseSession(from_bytes);
  ort->ReleaseSessionOptions(so);
  ort->ReleaseMemoryInfo(mem);
  int created_before_release = atomic_load(&threads_created) - atomic_load(&threads_joined);
  ort->ReleaseEnv(env);
  int created = atomic_load(&threads_created), joined = atomic_load(&threads_joined);
  printf("pool threads: %d created through the callbacks, %d joined\n", created, joined);
  /* intra-op 3 (the caller and 2 workers) and inter-op 2: at least the 2
   * intra-op workers of the global pools were alive until the env went. */
  EXPECT(created_before_release >= 2);
  EXPECT(created == joined);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
