/* binding_test.c — IO bindings and map values through ONNX Runtime's C API,
 * compiled as C against include/onnxruntime/onnxruntime_c_api.h only. The
 * same program runs on ONNX Runtime's own library (ctest
 * capi_binding_on_onnxruntime), so what it expects is ONNX Runtime's
 * behaviour.
 *
 *   binding_test BIND_MODEL [--onnxruntime]
 *
 * BIND_MODEL is tests/capi/make_models.py's bind.onnx:
 *   f float [batch, 3] -> f_out = Relu(f) * 2;  i64 int64 [batch, 3] -> i64_out = i64 + 7
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

/* Expects `st` to be an error with one of two codes and a message naming
 * `word` (NULL: any message); releases it. */
static void expect_error(OrtStatus* st, OrtErrorCode code, const char* word, const char* what, int line) {
  if (!st) {
    fprintf(stderr, "line %d: %s: expected an error, got success\n", line, what);
    failures++;
    return;
  }
  const char* msg = ort->GetErrorMessage(st);
  if (ort->GetErrorCode(st) != code || !msg || !*msg || (word && !strstr(msg, word))) {
    fprintf(stderr, "line %d: %s: expected code %d naming '%s', got %d: '%s'\n", line, what, (int)code,
            word ? word : "", (int)ort->GetErrorCode(st), msg ? msg : "(null)");
    failures++;
  } else {
    printf("  %s -> code %d: %s\n", what, (int)code, msg);
  }
  ort->ReleaseStatus(st);
}
#define EXPECT_ERROR(expr, code, word) expect_error((expr), (code), (word), #expr, __LINE__)

static OrtValue* tensor_over(const OrtMemoryInfo* mem, void* data, size_t bytes, const int64_t* shape, size_t rank,
                             ONNXTensorElementDataType type) {
  OrtValue* v = NULL;
  CHECK(ort->CreateTensorWithDataAsOrtValue(mem, data, bytes, shape, rank, type, &v));
  return v;
}

/* The names GetBoundOutputNames gives, joined by ',' into `out`. */
static size_t bound_names(const OrtIoBinding* binding, OrtAllocator* allocator, char* out, size_t room) {
  char* buffer = NULL;
  size_t* lengths = NULL;
  size_t count = 0;
  CHECK(ort->GetBoundOutputNames(binding, allocator, &buffer, &lengths, &count));
  out[0] = '\0';
  size_t at = 0, used = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i) strncat(out, ",", room - strlen(out) - 1);
    strncat(out, buffer + at, lengths[i] < room - strlen(out) - 1 ? lengths[i] : room - strlen(out) - 1);
    at += lengths[i];
    used++;
  }
  if (buffer) CHECK(ort->AllocatorFree(allocator, buffer));
  if (lengths) CHECK(ort->AllocatorFree(allocator, lengths));
  return used;
}

/* The element count of the one output bound (0 when there is not exactly
 * one); its first `n_head` floats into `head`. */
static size_t single_output(const OrtIoBinding* binding, OrtAllocator* allocator, float* head, size_t n_head) {
  OrtValue** values = NULL;
  size_t count = 0, n = 0;
  CHECK(ort->GetBoundOutputValues(binding, allocator, &values, &count));
  EXPECT(count == 1);
  if (count == 1) {
    OrtTensorTypeAndShapeInfo* info = NULL;
    CHECK(ort->GetTensorTypeAndShape(values[0], &info));
    CHECK(ort->GetTensorShapeElementCount(info, &n));
    ort->ReleaseTensorTypeAndShapeInfo(info);
    const float* got = NULL;
    CHECK(ort->GetTensorData(values[0], (const void**)&got));
    for (size_t k = 0; k < n_head && k < n; ++k) head[k] = got[k];
  }
  for (size_t k = 0; k < count; ++k) ort->ReleaseValue(values[k]);
  if (values) CHECK(ort->AllocatorFree(allocator, values));
  return count == 1 ? n : 0;
}

static void test_binding(OrtEnv* env, const char* types_model) {
  OrtSessionOptions* options = NULL;
  CHECK(ort->CreateSessionOptions(&options));
  CHECK(ort->SetIntraOpNumThreads(options, 1));
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, types_model, options, &session));
  OrtMemoryInfo* mem = NULL;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  OrtAllocator* allocator = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&allocator));

  float f[6] = {-1, 2, -3, 4, 5, -6};
  int64_t i64[6] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[2] = {2, 3};
  OrtValue* f_in = tensor_over(mem, f, sizeof f, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  OrtValue* i64_in = tensor_over(mem, i64, sizeof i64, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  /* f_out is written into the caller's buffer; i64_out is allocated by the run. */
  float f_out[6];
  for (int k = 0; k < 6; ++k) f_out[k] = 99.0f;
  OrtValue* f_out_value = tensor_over(mem, f_out, sizeof f_out, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);

  OrtIoBinding* binding = NULL;
  CHECK(ort->CreateIoBinding(session, &binding));
  char names[256];
  EXPECT(bound_names(binding, allocator, names, sizeof names) == 0);
  OrtValue** values = NULL;
  size_t count = 7;
  CHECK(ort->GetBoundOutputValues(binding, allocator, &values, &count));
  EXPECT(count == 0 && values == NULL);

  CHECK(ort->BindInput(binding, "f", f_in));
  CHECK(ort->BindInput(binding, "i64", i64_in));
  CHECK(ort->BindOutput(binding, "f_out", f_out_value));
  CHECK(ort->BindOutputToDevice(binding, "i64_out", mem));
  CHECK(ort->SynchronizeBoundInputs(binding));
  EXPECT(bound_names(binding, allocator, names, sizeof names) == 2);
  EXPECT(strcmp(names, "f_out,i64_out") == 0);

  CHECK(ort->RunWithBinding(session, NULL, binding));
  CHECK(ort->SynchronizeBoundOutputs(binding));
  /* Written in place: Relu(f) * 2. */
  const float want_f[6] = {0, 4, 0, 8, 10, 0};
  for (int k = 0; k < 6; ++k) EXPECT(f_out[k] == want_f[k]);
  CHECK(ort->GetBoundOutputValues(binding, allocator, &values, &count));
  EXPECT(count == 2);
  if (count == 2) {
    void* data = NULL;
    CHECK(ort->GetTensorMutableData(values[0], &data));
    EXPECT(data == (void*)f_out);
    const int64_t* got = NULL;
    CHECK(ort->GetTensorData(values[1], (const void**)&got));
    for (int k = 0; k < 6; ++k) EXPECT(got[k] == i64[k] + 7);
    OrtTensorTypeAndShapeInfo* info = NULL;
    CHECK(ort->GetTensorTypeAndShape(values[1], &info));
    ONNXTensorElementDataType type;
    size_t rank = 0;
    int64_t dims[2] = {0, 0};
    CHECK(ort->GetTensorElementType(info, &type));
    CHECK(ort->GetDimensionsCount(info, &rank));
    CHECK(ort->GetDimensions(info, dims, 2));
    EXPECT(type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 && rank == 2 && dims[0] == 2 && dims[1] == 3);
    ort->ReleaseTensorTypeAndShapeInfo(info);
    for (size_t k = 0; k < count; ++k) ort->ReleaseValue(values[k]);
    CHECK(ort->AllocatorFree(allocator, values));
  }

  /* Inputs are bound by reference: a change to the caller's buffer is the next run's feed. */
  f[0] = 7;
  i64[5] = 100;
  OrtRunOptions* run_options = NULL;
  CHECK(ort->CreateRunOptions(&run_options));
  CHECK(ort->RunWithBinding(session, run_options, binding));
  EXPECT(f_out[0] == 14.0f);
  CHECK(ort->GetBoundOutputValues(binding, allocator, &values, &count));
  EXPECT(count == 2);
  if (count == 2) {
    const int64_t* got = NULL;
    CHECK(ort->GetTensorData(values[1], (const void**)&got));
    EXPECT(got[5] == 107 && got[0] == 8);
    for (size_t k = 0; k < count; ++k) ort->ReleaseValue(values[k]);
    CHECK(ort->AllocatorFree(allocator, values));
  }

  /* Binding a name again replaces the value. */
  float g[6] = {1, 1, 1, 1, 1, 1};
  OrtValue* g_in = tensor_over(mem, g, sizeof g, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  CHECK(ort->BindInput(binding, "f", g_in));
  CHECK(ort->RunWithBinding(session, run_options, binding));
  for (int k = 0; k < 6; ++k) EXPECT(f_out[k] == 2.0f);

  /* A terminated run fails and leaves the binding usable. */
  CHECK(ort->RunOptionsSetTerminate(run_options));
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_FAIL, NULL);
  CHECK(ort->RunOptionsUnsetTerminate(run_options));
  CHECK(ort->RunWithBinding(session, run_options, binding));

  /* A pre-bound output of the wrong shape or type is refused; the session stays usable. */
  float wrong_shape[9];
  const int64_t shape33[2] = {3, 3};
  OrtValue* wrong_shape_value = tensor_over(mem, wrong_shape, sizeof wrong_shape, shape33, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  CHECK(ort->BindOutput(binding, "f_out", wrong_shape_value));
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_INVALID_ARGUMENT, "shape");
  int32_t wrong_type[6];
  OrtValue* wrong_type_value = tensor_over(mem, wrong_type, sizeof wrong_type, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32);
  CHECK(ort->BindOutput(binding, "f_out", wrong_type_value));
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_INVALID_ARGUMENT, "type");
  CHECK(ort->BindOutput(binding, "f_out", f_out_value));
  f_out[3] = -1;
  CHECK(ort->RunWithBinding(session, run_options, binding));
  EXPECT(f_out[3] == 2.0f);

  /* Unknown names: an input when it is bound, an output when the run fetches it. */
  EXPECT_ERROR(ort->BindInput(binding, "no_such_input", f_in), ORT_FAIL, "no_such_input");
  CHECK(ort->BindOutputToDevice(binding, "no_such_output", mem));
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_INVALID_ARGUMENT, "no_such_output");

  /* Without outputs nothing runs; without an input the run says which. */
  ort->ClearBoundOutputs(binding);
  EXPECT(bound_names(binding, allocator, names, sizeof names) == 0);
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_INVALID_ARGUMENT, NULL);
  CHECK(ort->BindOutputToDevice(binding, "f_out", mem));
  ort->ClearBoundInputs(binding);
  /* ONNX Runtime: ORT_FAIL from the node missing it; spindle: ORT_INVALID_ARGUMENT before the run. */
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), on_onnxruntime ? ORT_FAIL : ORT_INVALID_ARGUMENT, NULL);
  /* Bound again with another batch: the output bound to memory follows the new shape. */
  const int64_t shape13[2] = {1, 3};
  float h[3] = {-2, 3, 0.5f};
  OrtValue* h_in = tensor_over(mem, h, sizeof h, shape13, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  CHECK(ort->BindInput(binding, "f", h_in));
  CHECK(ort->BindInput(binding, "i64", i64_in));
  CHECK(ort->RunWithBinding(session, run_options, binding));
  float head[3] = {-1, -1, -1};
  EXPECT(single_output(binding, allocator, head, 3) == 3);
  EXPECT(head[0] == 0.0f && head[1] == 6.0f && head[2] == 1.0f);
  /* The output a run allocated stays bound: the next run writes into it, so a
   * batch of another size is refused until the output is bound again. */
  CHECK(ort->BindInput(binding, "f", g_in));
  EXPECT_ERROR(ort->RunWithBinding(session, run_options, binding), ORT_INVALID_ARGUMENT, "shape");
  CHECK(ort->BindOutputToDevice(binding, "f_out", mem));
  CHECK(ort->RunWithBinding(session, run_options, binding));
  EXPECT(single_output(binding, allocator, head, 3) == 6);
  EXPECT(head[0] == 2.0f);

  ort->ReleaseIoBinding(binding);
  ort->ReleaseRunOptions(run_options);
  ort->ReleaseValue(h_in);
  ort->ReleaseValue(g_in);
  ort->ReleaseValue(wrong_shape_value);
  ort->ReleaseValue(wrong_type_value);
  ort->ReleaseValue(f_in);
  ort->ReleaseValue(i64_in);
  ort->ReleaseValue(f_out_value);
  ort->ReleaseMemoryInfo(mem);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
}

/* Maps: built from a keys tensor and a values tensor, read back through GetValue. */
static void test_maps(OrtEnv* env, const char* bind_model) {
  OrtMemoryInfo* mem = NULL;
  CHECK(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mem));
  OrtAllocator* allocator = NULL;
  CHECK(ort->GetAllocatorWithDefaultOptions(&allocator));

  int64_t keys[3] = {30, 10, 20};
  float vals[3] = {3.5f, 1.5f, 2.5f};
  const int64_t shape[1] = {3};
  OrtValue* key_tensor = tensor_over(mem, keys, sizeof keys, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  OrtValue* val_tensor = tensor_over(mem, vals, sizeof vals, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  const OrtValue* parts[2] = {key_tensor, val_tensor};
  OrtValue* map = NULL;
  CHECK(ort->CreateValue(parts, 2, ONNX_TYPE_MAP, &map));
  ONNXType type;
  CHECK(ort->GetValueType(map, &type));
  EXPECT(type == ONNX_TYPE_MAP);
  int is_tensor = 1;
  CHECK(ort->IsTensor(map, &is_tensor));
  EXPECT(is_tensor == 0);
  size_t count = 0;
  CHECK(ort->GetValueCount(map, &count));
  EXPECT(count == 2);
  /* Keys come back in key order, each with its value. */
  OrtValue* got_keys = NULL;
  OrtValue* got_vals = NULL;
  CHECK(ort->GetValue(map, 0, allocator, &got_keys));
  CHECK(ort->GetValue(map, 1, allocator, &got_vals));
  const int64_t* k = NULL;
  const float* v = NULL;
  CHECK(ort->GetTensorData(got_keys, (const void**)&k));
  CHECK(ort->GetTensorData(got_vals, (const void**)&v));
  EXPECT(k[0] == 10 && k[1] == 20 && k[2] == 30);
  EXPECT(v[0] == 1.5f && v[1] == 2.5f && v[2] == 3.5f);
  EXPECT_ERROR(ort->GetValue(map, 2, allocator, &got_keys), ORT_FAIL, NULL);
  ort->ReleaseValue(got_keys);
  ort->ReleaseValue(got_vals);

  /* Its type: map(int64, tensor(float)). */
  OrtTypeInfo* type_info = NULL;
  CHECK(ort->GetTypeInfo(map, &type_info));
  ONNXType onnx_type;
  CHECK(ort->GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
  EXPECT(onnx_type == ONNX_TYPE_MAP);
  const OrtMapTypeInfo* map_info = NULL;
  CHECK(ort->CastTypeInfoToMapTypeInfo(type_info, &map_info));
  EXPECT(map_info != NULL);
  if (map_info) {
    ONNXTensorElementDataType key_type;
    CHECK(ort->GetMapKeyType(map_info, &key_type));
    EXPECT(key_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
    OrtTypeInfo* value_type = NULL;
    CHECK(ort->GetMapValueType(map_info, &value_type));
    const OrtTensorTypeAndShapeInfo* tensor_info = NULL;
    CHECK(ort->CastTypeInfoToTensorInfo(value_type, &tensor_info));
    EXPECT(tensor_info != NULL);
    if (tensor_info) {
      ONNXTensorElementDataType elem;
      CHECK(ort->GetTensorElementType(tensor_info, &elem));
      EXPECT(elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
    }
    ort->ReleaseTypeInfo(value_type);
  }
  const OrtTensorTypeAndShapeInfo* not_tensor = (const OrtTensorTypeAndShapeInfo*)1;
  CHECK(ort->CastTypeInfoToTensorInfo(type_info, &not_tensor));
  EXPECT(not_tensor == NULL);
  ort->ReleaseTypeInfo(type_info);

  /* String keys. */
  OrtValue* skeys = NULL;
  const int64_t two[1] = {2};
  CHECK(ort->CreateTensorAsOrtValue(allocator, two, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &skeys));
  const char* words[2] = {"pear", "apple"};
  CHECK(ort->FillStringTensor(skeys, words, 2));
  int64_t counts[2] = {4, 9};
  OrtValue* count_tensor = tensor_over(mem, counts, sizeof counts, two, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  const OrtValue* sparts[2] = {skeys, count_tensor};
  OrtValue* smap = NULL;
  CHECK(ort->CreateValue(sparts, 2, ONNX_TYPE_MAP, &smap));
  CHECK(ort->GetValue(smap, 0, allocator, &got_keys));
  CHECK(ort->GetValue(smap, 1, allocator, &got_vals));
  char first[16] = {0};
  size_t len = 0;
  CHECK(ort->GetStringTensorElementLength(got_keys, 0, &len));
  EXPECT(len == 5);
  CHECK(ort->GetStringTensorElement(got_keys, sizeof first, 0, first));
  EXPECT(strcmp(first, "apple") == 0);
  CHECK(ort->GetTensorData(got_vals, (const void**)&k));
  EXPECT(k[0] == 9 && k[1] == 4);
  ort->ReleaseValue(got_keys);
  ort->ReleaseValue(got_vals);

  /* A key given twice keeps its first value. */
  int64_t twice[3] = {5, 1, 5};
  OrtValue* twice_keys = tensor_over(mem, twice, sizeof twice, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  const OrtValue* twice_parts[2] = {twice_keys, val_tensor};
  OrtValue* twice_map = NULL;
  CHECK(ort->CreateValue(twice_parts, 2, ONNX_TYPE_MAP, &twice_map));
  CHECK(ort->GetValue(twice_map, 1, allocator, &got_vals));
  OrtTensorTypeAndShapeInfo* twice_info = NULL;
  CHECK(ort->GetTensorTypeAndShape(got_vals, &twice_info));
  size_t twice_count = 0;
  CHECK(ort->GetTensorShapeElementCount(twice_info, &twice_count));
  CHECK(ort->GetTensorData(got_vals, (const void**)&v));
  printf("  map {5: 3.5, 1: 1.5, 5: 2.5} -> %zu values: %g %g\n", twice_count, v[0], twice_count > 1 ? v[1] : 0.0);
  EXPECT(twice_count == 2 && v[0] == 1.5f && v[1] == 3.5f);
  ort->ReleaseTensorTypeAndShapeInfo(twice_info);
  ort->ReleaseValue(got_vals);
  ort->ReleaseValue(twice_map);
  ort->ReleaseValue(twice_keys);

  /* A sequence of maps (what ZipMap gives). */
  const OrtValue* maps[2] = {map, map};
  OrtValue* seq = NULL;
  CHECK(ort->CreateValue(maps, 2, ONNX_TYPE_SEQUENCE, &seq));
  CHECK(ort->GetValueType(seq, &type));
  EXPECT(type == ONNX_TYPE_SEQUENCE);
  CHECK(ort->GetValueCount(seq, &count));
  EXPECT(count == 2);
  OrtValue* item = NULL;
  CHECK(ort->GetValue(seq, 1, allocator, &item));
  CHECK(ort->GetValueType(item, &type));
  EXPECT(type == ONNX_TYPE_MAP);
  CHECK(ort->GetValueCount(item, &count));
  EXPECT(count == 2);
  ort->ReleaseValue(item);
  CHECK(ort->GetTypeInfo(seq, &type_info));
  const OrtSequenceTypeInfo* seq_info = NULL;
  CHECK(ort->CastTypeInfoToSequenceTypeInfo(type_info, &seq_info));
  EXPECT(seq_info != NULL);
  if (seq_info) {
    OrtTypeInfo* element = NULL;
    CHECK(ort->GetSequenceElementType(seq_info, &element));
    CHECK(ort->GetOnnxTypeFromTypeInfo(element, &onnx_type));
    EXPECT(onnx_type == ONNX_TYPE_MAP);
    ort->ReleaseTypeInfo(element);
  }
  ort->ReleaseTypeInfo(type_info);
  ort->ReleaseValue(seq);

  /* Refused: keys and values of different lengths, one part, a map as a tensor. */
  const int64_t one[1] = {1};
  OrtValue* short_vals = tensor_over(mem, vals, sizeof(float), one, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  const OrtValue* mismatched[2] = {key_tensor, short_vals};
  OrtValue* bad = NULL;
  EXPECT_ERROR(ort->CreateValue(mismatched, 2, ONNX_TYPE_MAP, &bad), ORT_FAIL, NULL);
  EXPECT_ERROR(ort->CreateValue(parts, 1, ONNX_TYPE_MAP, &bad), ORT_FAIL, NULL);
  const void* data = NULL;
  EXPECT_ERROR(ort->GetTensorData(map, &data), ORT_FAIL, NULL);
  /* A map fed where the model takes a tensor. */
  OrtSession* session = NULL;
  CHECK(ort->CreateSession(env, bind_model, NULL, &session));
  const char* in_name[1] = {"f"};
  const char* out_name[1] = {"f_out"};
  const OrtValue* feed[1] = {map};
  OrtValue* result = NULL;
  EXPECT_ERROR(ort->Run(session, NULL, in_name, feed, 1, out_name, 1, &result), ORT_INVALID_ARGUMENT, NULL);
  ort->ReleaseSession(session);

  ort->ReleaseValue(short_vals);
  ort->ReleaseValue(smap);
  ort->ReleaseValue(skeys);
  ort->ReleaseValue(count_tensor);
  ort->ReleaseValue(map);
  ort->ReleaseValue(key_tensor);
  ort->ReleaseValue(val_tensor);
  ort->ReleaseMemoryInfo(mem);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: binding_test BIND_MODEL [--onnxruntime]\n");
    return 2;
  }
  on_onnxruntime = argc > 2 && strcmp(argv[2], "--onnxruntime") == 0;
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (!ort) {
    fprintf(stderr, "GetApi(%d) gave NULL\n", ORT_API_VERSION);
    return 1;
  }
  OrtEnv* env = NULL;
  CHECK(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "binding_test", &env));
  test_binding(env, argv[1]);
  test_maps(env, argv[1]);
  ort->ReleaseEnv(env);
  return CHECKS_DONE("binding_test");
}
