/* values_extra_test.c — smaller slots of ONNX Runtime's C API that
 * programs use beside the main ones: TensorAt, tensors over memory a
 * deleter frees (CreateTensorWithDataAndDeleterAsOrtValue), arena
 * configurations and allocators shared through the environment
 * (CreateArenaCfg, CreateArenaCfgV2, CreateAndRegisterAllocator,
 * CreateAndRegisterAllocatorV2, UnregisterAllocator), and the session
 * options' config entries read back (GetSessionOptionsConfigEntries).
 * Compiled as C against include/onnxruntime/onnxruntime_c_api.h only; the
 * same program runs on ONNX Runtime's own library (ctest
 * capi_values_extra_on_onnxruntime), so what it expects is ONNX Runtime's
 * behaviour.
 *
 *   values_extra_test RELU_MODEL [--onnxruntime]
 *
 * RELU_MODEL is make_models.py's relu.onnx (f float [batch, 3] -> f_out = Relu(f) * 2).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxruntime/onnxruntime_c_api.h"
#include "checks.h"

static const OrtApi* ort;
static int failures;

static void expect_error(OrtStatus* st, OrtErrorCode code, const char* what, int line) {
  if (!st) {
    fprintf(stderr, "line %d: %s: expected an error, got success\n", line, what);
    failures++;
    return;
  }
  const char* msg = ort->GetErrorMessage(st);
  if (ort->GetErrorCode(st) != code || !msg || !*msg) {
    fprintf(stderr, "line %d: %s: expected code %d, got %d: '%s'\n", line, what, (int)code, (int)ort->GetErrorCode(st),
            msg ? msg : "(null)");
    failures++;
  } else {
    printf("  %s -> code %d: %s\n", what, (int)code, msg);
  }
  ort->ReleaseStatus(st);
}
#define EXPECT_ERROR(expr, code) expect_error((expr), (code), #expr, __LINE__)

/* ---- an allocator whose Free is counted (the deleter of a tensor's memory) ---- */
typedef struct {
  OrtAllocator base; /* first: the runtime sees an OrtAllocator* */
  int frees;
  void* last_freed;
  OrtMemoryInfo* info;
} CountingAllocator;

static void* ORT_API_CALL counting_alloc(OrtAllocator* a, size_t size) {
  (void)a;
  return malloc(size);
}
static void ORT_API_CALL counting_free(OrtAllocator* a, void* p) {
  CountingAllocator* c = (CountingAllocator*)a;
  c->frees++;
  c->last_freed = p;
  free(p);
}
static const OrtMemoryInfo* ORT_API_CALL counting_info(const OrtAllocator* a) {
  return ((const CountingAllocator*)a)->info;
}

static void test_tensor_at(const OrtMemoryInfo* mem) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  const int64_t shape[2] = {2, 3};
  OrtValue* v = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, data, sizeof data, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &v));
  const int64_t at[2] = {1, 2};
  void* p = NULL;
  CHECK(ort->TensorAt(v, at, 2, &p));
  EXPECT(p == (void*)&data[5]);
  *(float*)p = 50;
  EXPECT(data[5] == 50);
  const int64_t past[2] = {2, 0};
  EXPECT_ERROR(ort->TensorAt(v, past, 2, &p), ORT_INVALID_ARGUMENT);
  const int64_t negative[2] = {0, -1};
  EXPECT_ERROR(ort->TensorAt(v, negative, 2, &p), ORT_INVALID_ARGUMENT);
  EXPECT_ERROR(ort->TensorAt(v, at, 1, &p), ORT_INVALID_ARGUMENT);
  ort->ReleaseValue(v);
}

static void test_deleter(OrtEnv* env, const char* model, OrtMemoryInfo* mem) {
  CountingAllocator deleter;
  memset(&deleter, 0, sizeof deleter);
  deleter.base.version = ORT_API_VERSION;
  deleter.base.Alloc = counting_alloc;
  deleter.base.Free = counting_free;
  deleter.base.Info = counting_info;
  deleter.info = mem;
  float* data = (float*)malloc(6 * sizeof(float));
  for (int k = 0; k < 6; ++k) data[k] = (float)k - 2.0f;
  const int64_t shape[2] = {2, 3};
  OrtValue* v = NULL;
  CHECK(ort->CreateTensorWithDataAndDeleterAsOrtValue(&deleter.base, data, 6 * sizeof(float), shape, 2,
                                                      ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &v));
  float* inside = NULL;
  CHECK(ort->GetTensorMutableData(v, (void**)&inside));
  EXPECT(inside == data);
  /* Fed to a run, then released: the deleter frees the memory once. */
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, model, NULL, &session));
  const char* in_name[1] = {"f"};
  const char* out_name[1] = {"f_out"};
  OrtValue* out = NULL;
  CHECK(ort->Run(session, NULL, in_name, (const OrtValue* const*)&v, 1, out_name, 1, &out));
  EXPECT(deleter.frees == 0);
  ort->ReleaseValue(v);
  EXPECT(deleter.frees == 1 && deleter.last_freed == data);
  const float* y = NULL;
  CHECK(ort->GetTensorData(out, (const void**)&y));
  EXPECT(y[0] == 0 && y[3] == 2 && y[5] == 6);
  ort->ReleaseValue(out);
  ort->ReleaseSession(session);
  EXPECT(deleter.frees == 1);
}

static void test_env_allocators(OrtEnv* env, const char* model, OrtMemoryInfo* mem) {
  OrtArenaCfg* arena = NULL;
  CHECK(ort->CreateArenaCfg(0, -1, -1, -1, &arena));
  ort->ReleaseArenaCfg(arena);
  const char* keys[2] = {"max_mem", "arena_extend_strategy"};
  const size_t values[2] = {1 << 26, 1};
  CHECK(ort->CreateArenaCfgV2(keys, values, 2, &arena));
  const char* bad_key[1] = {"no_such_key"};
  OrtArenaCfg* bad = NULL;
  EXPECT_ERROR(ort->CreateArenaCfgV2(bad_key, values, 1, &bad), ORT_INVALID_ARGUMENT);

  CHECK(ort->CreateAndRegisterAllocator(env, mem, arena));
  CHECK(ort->CreateAndRegisterAllocator(env, mem, arena)); /* again: replaces it */
  /* A session using the environment's allocators runs as any other. */
  OrtSessionOptions* options = NULL;
  CHECK(ort->CreateSessionOptions(&options));
  CHECK(ort->AddSessionConfigEntry(options, "session.use_env_allocators", "1"));
  CHECK(ort->AddSessionConfigEntry(options, "session.intra_op.allow_spinning", "0"));
  OrtKeyValuePairs* entries = NULL;
  CHECK(ort->GetSessionOptionsConfigEntries(options, &entries));
  EXPECT(entries != NULL);
  if (entries) {
    const char* v = ort->GetKeyValue(entries, "session.use_env_allocators");
    EXPECT(v && strcmp(v, "1") == 0);
    v = ort->GetKeyValue(entries, "session.intra_op.allow_spinning");
    EXPECT(v && strcmp(v, "0") == 0);
    const char* const* all_keys = NULL;
    const char* const* all_values = NULL;
    size_t n = 0;
    ort->GetKeyValuePairs(entries, &all_keys, &all_values, &n);
    EXPECT(n == 2);
    ort->ReleaseKeyValuePairs(entries);
  }
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, model, options, &session));
  float f[3] = {1, -1, 2};
  const int64_t shape[2] = {1, 3};
  OrtValue* x = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, f, sizeof f, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &x));
  const char* in_name[1] = {"f"};
  const char* out_name[1] = {"f_out"};
  OrtValue* out = NULL;
  CHECK(ort->Run(session, NULL, in_name, (const OrtValue* const*)&x, 1, out_name, 1, &out));
  const float* y = NULL;
  CHECK(ort->GetTensorData(out, (const void**)&y));
  EXPECT(y[0] == 2 && y[1] == 0 && y[2] == 4);
  ort->ReleaseValue(out);
  ort->ReleaseValue(x);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);

  CHECK(ort->UnregisterAllocator(env, mem));
  CHECK(ort->CreateAndRegisterAllocatorV2(env, "CPUExecutionProvider", mem, arena, NULL, NULL, 0));
  CHECK(ort->UnregisterAllocator(env, mem));
  ort->ReleaseArenaCfg(arena);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: values_extra_test RELU_MODEL [--onnxruntime]\n");
    return 2;
  }
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv* env = NULL;
  CHECK(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "values_extra_test", &env));
  OrtMemoryInfo* mem = NULL;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  test_tensor_at(mem);
  test_deleter(env, argv[1], mem);
  test_env_allocators(env, argv[1], mem);
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseEnv(env);
  return CHECKS_DONE("values_extra_test");
}
