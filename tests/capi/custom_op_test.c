/* custom_op_test.c — custom operators through ONNX Runtime's C API: a
 * library of them (custom_op_library.cpp, built from custom_ops.h) loaded
 * with RegisterCustomOpsLibrary_V2, a model using them run and its outputs
 * checked against values computed here; KernelContext_ParallelFor's
 * batches recorded by thread id and checked to run on the session's
 * intra-op pool threads (created through the per-session create-thread
 * callback, which records each one); errors: a missing library, a library
 * without RegisterCustomOps, a model with the ops unregistered, an op
 * returning an error status (the session stays usable).
 *
 *   custom_op_test LIBRARY CUSTOM_OPS_MODEL CUSTOM_FAIL_MODEL [--onnxruntime]
 *
 * The models are make_models.py's. --onnxruntime (the same program on ONNX
 * Runtime's own library) skips the checks of spindle's error codes and
 * messages.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "onnxruntime/onnxruntime_c_api.h"
#include "checks.h"

static const OrtApi* ort;
static int failures;
static int on_onnxruntime;

/* Expects an error whose message contains `part` (and, on spindle, whose
 * code is `code`); releases it. */
static void expect_error(OrtStatus* st, OrtErrorCode code, const char* part, const char* what, int line) {
  if (!st) {
    fprintf(stderr, "line %d: %s: expected an error, got success\n", line, what);
    failures++;
    return;
  }
  const char* msg = ort->GetErrorMessage(st);
  const int code_ok = on_onnxruntime || ort->GetErrorCode(st) == code;
  const int msg_ok = msg && *msg && (on_onnxruntime || !part || strstr(msg, part));
  if (!code_ok || !msg_ok) {
    fprintf(stderr, "line %d: %s: expected code %d with '%s' in the message, got %d: '%s'\n", line, what, (int)code,
            part ? part : "", (int)ort->GetErrorCode(st), msg ? msg : "(null)");
    failures++;
  } else {
    printf("  %s -> code %d: %s\n", what, (int)ort->GetErrorCode(st), msg);
  }
  ort->ReleaseStatus(st);
}
#define EXPECT_ERROR(expr, code, part) expect_error((expr), (code), (part), #expr, __LINE__)

/* ---- pool threads: each records its Linux thread id when it starts ---- */
#define MAX_THREADS 64
static atomic_int num_pool_tids;
static int64_t pool_tids[MAX_THREADS];

typedef struct {
  pthread_t thread;
  OrtThreadWorkerFn fn;
  void* param;
} PoolThread;

static void* thread_main(void* arg) {
  PoolThread* t = (PoolThread*)arg;
  const int slot = atomic_fetch_add(&num_pool_tids, 1);
  if (slot < MAX_THREADS) pool_tids[slot] = (int64_t)syscall(SYS_gettid);
  t->fn(t->param);
  return NULL;
}
static OrtCustomThreadHandle create_thread(void* options, OrtThreadWorkerFn fn, void* param) {
  (void)options;
  PoolThread* t = (PoolThread*)calloc(1, sizeof(PoolThread));
  t->fn = fn;
  t->param = param;
  if (pthread_create(&t->thread, NULL, thread_main, t) != 0) {
    free(t);
    return NULL;
  }
  return (OrtCustomThreadHandle)t;
}
static void join_thread(OrtCustomThreadHandle handle) {
  PoolThread* t = (PoolThread*)handle;
  pthread_join(t->thread, NULL);
  free(t);
}
static int is_pool_thread(int64_t tid) {
  const int n = atomic_load(&num_pool_tids);
  for (int i = 0; i < n && i < MAX_THREADS; ++i)
    if (pool_tids[i] == tid) return 1;
  return 0;
}

static OrtValue* float_tensor(OrtMemoryInfo* mem, float* data, int64_t n) {
  OrtValue* v = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, data, (size_t)n * sizeof(float), &n, 1,
                                            ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &v));
  return v;
}

/* Runs custom_ops.onnx with `threads` intra-op threads (the library loaded
 * with RegisterCustomOpsLibrary_V2); returns the number of distinct thread
 * ids ParallelIds' batches ran on. */
static int run_custom_ops(OrtEnv* env, const char* library, const char* model, int threads) {
  OrtSessionOptions* so;
  CHECK(ort->CreateSessionOptions(&so));
  CHECK(ort->SetIntraOpNumThreads(so, threads));
  CHECK(ort->SessionOptionsSetCustomCreateThreadFn(so, create_thread));
  CHECK(ort->SessionOptionsSetCustomJoinThreadFn(so, join_thread));
  CHECK(ort->RegisterCustomOpsLibrary_V2(so, library));
  atomic_store(&num_pool_tids, 0);
  OrtSession* session;
  CHECK(ort->CreateSession(env, model, so, &session));

  enum { N = 10 };
  float a[N], b[N];
  for (int i = 0; i < N; ++i) {
    a[i] = 0.25f * (float)i - 1.0f;
    b[i] = 3.0f - 0.5f * (float)i;
  }
  OrtMemoryInfo* mem;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  OrtValue* feeds[2] = {float_tensor(mem, a, N), float_tensor(mem, b, N)};
  const char* in_names[2] = {"a", "b"};
  const char* out_names[3] = {"s", "y", "tids"};
  const int64_t caller = (int64_t)syscall(SYS_gettid);
  int distinct_max = 0;
  for (int run = 0; run < 3; ++run) {
    OrtValue* outs[3] = {NULL, NULL, NULL};
    CHECK(ort->Run(session, NULL, in_names, (const OrtValue* const*)feeds, 2, out_names, 3, outs));
    float *s, *y;
    int64_t* tids;
    CHECK(ort->GetTensorMutableData(outs[0], (void**)&s));
    CHECK(ort->GetTensorMutableData(outs[1], (void**)&y));
    CHECK(ort->GetTensorMutableData(outs[2], (void**)&tids));
    OrtTensorTypeAndShapeInfo* info;
    CHECK(ort->GetTensorTypeAndShape(outs[2], &info));
    size_t count;
    CHECK(ort->GetTensorShapeElementCount(info, &count));
    ort->ReleaseTensorTypeAndShapeInfo(info);
    EXPECT(count == 4);
    for (int i = 0; i < N; ++i) {
      const float want = 0.5f * (a[i] - b[i]); /* scale=0.5, mode="diff" */
      if (s[i] != want || y[i] != 2.0f * want) {
        fprintf(stderr, "element %d: s %g y %g, expected %g and %g\n", i, s[i], y[i], want, 2.0f * want);
        failures++;
      }
    }
    int distinct = 0;
    for (size_t k = 0; k < count && count == 4; ++k) {
      int seen = 0;
      for (size_t j = 0; j < k; ++j) seen |= tids[j] == tids[k];
      distinct += !seen;
      if (tids[k] != caller && !is_pool_thread(tids[k])) {
        fprintf(stderr, "batch %zu ran on thread %lld: neither the caller nor a pool thread\n", k, (long long)tids[k]);
        failures++;
      }
      if (threads == 1 && tids[k] != caller) {
        fprintf(stderr, "batch %zu ran on thread %lld with one intra-op thread; expected the caller\n", k,
                (long long)tids[k]);
        failures++;
      }
    }
    if (distinct > distinct_max) distinct_max = distinct;
    for (int k = 0; k < 3; ++k) ort->ReleaseValue(outs[k]);
  }
  printf("  %d intra-op thread(s): %d pool thread(s) created, batches on at most %d distinct thread(s)\n", threads,
         atomic_load(&num_pool_tids), distinct_max);
  ort->ReleaseValue(feeds[0]);
  ort->ReleaseValue(feeds[1]);
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(so);
  return distinct_max;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: custom_op_test LIBRARY CUSTOM_OPS_MODEL CUSTOM_FAIL_MODEL [--onnxruntime]\n");
    return 2;
  }
  const char* library = argv[1];
  on_onnxruntime = argc > 4 && strcmp(argv[4], "--onnxruntime") == 0;
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv* env;
  CHECK(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "custom_op_test", &env));

  printf("custom ops, ParallelFor on the intra-op pool:\n");
  EXPECT(run_custom_ops(env, library, argv[2], 1) == 1);
  EXPECT(run_custom_ops(env, library, argv[2], 2) > 1);

  printf("errors:\n");
  OrtSessionOptions* so;
  CHECK(ort->CreateSessionOptions(&so));
  EXPECT_ERROR(ort->RegisterCustomOpsLibrary_V2(so, "/nonexistent/libcustom.so"), ORT_NO_SUCHFILE, "does not exist");
  EXPECT_ERROR(ort->RegisterCustomOpsLibrary_V2(so, "libm.so.6"), ORT_FAIL, "RegisterCustomOps");
  OrtSession* session = NULL;
  EXPECT_ERROR(ort->CreateSession(env, argv[3], so, &session), ORT_NOT_IMPLEMENTED, "FailIf");

  CHECK(ort->RegisterCustomOpsLibrary_V2(so, library));
  CHECK(ort->CreateSession(env, argv[3], so, &session));
  OrtMemoryInfo* mem;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  float bad[3] = {1.0f, 2.0f, -3.0f}, good[3] = {1.0f, 2.0f, 3.0f};
  const char* in_name = "x";
  const char* out_name = "y";
  OrtValue* x = float_tensor(mem, bad, 3);
  OrtValue* y = NULL;
  EXPECT_ERROR(ort->Run(session, NULL, &in_name, (const OrtValue* const*)&x, 1, &out_name, 1, &y),
               ORT_INVALID_ARGUMENT, "FailIf: element 2 is negative");
  ort->ReleaseValue(x);
  x = float_tensor(mem, good, 3);
  y = NULL;
  CHECK(ort->Run(session, NULL, &in_name, (const OrtValue* const*)&x, 1, &out_name, 1, &y));
  float* out;
  CHECK(ort->GetTensorMutableData(y, (void**)&out));
  EXPECT(out[0] == 1.0f && out[1] == 2.0f && out[2] == 3.0f);
  ort->ReleaseValue(y);
  ort->ReleaseValue(x);
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(so);
  ort->ReleaseEnv(env);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("custom_op_test: all checks passed\n");
  return 0;
}
