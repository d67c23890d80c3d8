// custom_op_cxx_test.cpp — custom operators through ONNX Runtime's C++ API,
// as an application defining its own: the ops of custom_ops.h added to an
// Ort::CustomOpDomain, the domain to the session options (AddCustomOpDomain),
// a model using them run at 1 and 2 intra-op threads, outputs checked
// against values computed here (bitwise equal at both counts), an op's
// error status surfacing as Ort::Exception with its message, and the
// session usable afterwards; a kernel's log messages counted in the
// environment's custom logger; with CONVERT_MODEL (make_models.py's
// convert.onnx) an op whose output type only its InferOutputShape
// (Ort::ShapeInferContext) knows.
//
//   custom_op_cxx_test CUSTOM_OPS_MODEL CUSTOM_FAIL_MODEL [CONVERT_MODEL] [--onnxruntime]
#include <onnxruntime_cxx_api.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "checks.h"
#include "custom_ops.h"

namespace {
int failures = 0;

// The environment's log: messages of the kernels counted.
std::atomic<int> computed_messages{0}, hidden_messages{0};
void ORT_API_CALL log_sink(void*, OrtLoggingLevel, const char*, const char*, const char*, const char* message) {
  if (std::strstr(message, "ParallelIds: computed")) computed_messages++;
  if (std::strstr(message, "ParallelIds: below")) hidden_messages++;
}

const test_ops::ScaledSumOp scaled_sum;
const test_ops::ParallelIdsOp parallel_ids;
const test_ops::FailIfOp fail_if;
const test_ops::ConvertOp convert;

std::vector<float> run(Ort::Env& env, Ort::CustomOpDomain& domain, const char* model, int threads,
                       const std::vector<float>& a, const std::vector<float>& b) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(threads);
  options.Add(domain);
  Ort::Session session(env, model, options);
  auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const int64_t n = static_cast<int64_t>(a.size());
  std::vector<Ort::Value> feeds;
  feeds.push_back(Ort::Value::CreateTensor<float>(mem, const_cast<float*>(a.data()), a.size(), &n, 1));
  feeds.push_back(Ort::Value::CreateTensor<float>(mem, const_cast<float*>(b.data()), b.size(), &n, 1));
  const char* in_names[] = {"a", "b"};
  const char* out_names[] = {"s", "y", "tids"};
  auto outs = session.Run(Ort::RunOptions{nullptr}, in_names, feeds.data(), 2, out_names, 3);
  std::vector<float> result;
  for (int k = 0; k < 2; ++k) {
    const float* p = outs[k].GetTensorData<float>();
    result.insert(result.end(), p, p + a.size());
  }
  const int64_t* tids = outs[2].GetTensorData<int64_t>();
  std::set<int64_t> distinct(tids, tids + outs[2].GetTensorTypeAndShapeInfo().GetElementCount());
  std::printf("  %d intra-op thread(s): ParallelFor batches on %zu thread(s)\n", threads, distinct.size());
  if (threads == 1) EXPECT(distinct.size() == 1);
  return result;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: custom_op_cxx_test CUSTOM_OPS_MODEL CUSTOM_FAIL_MODEL [CONVERT_MODEL] [--onnxruntime]\n");
    return 2;
  }
  const bool on_onnxruntime = std::strcmp(argv[argc - 1], "--onnxruntime") == 0;
  const char* convert_model = argc > 3 && std::strcmp(argv[3], "--onnxruntime") != 0 ? argv[3] : nullptr;
  Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "custom_op_cxx_test", log_sink, nullptr);
  Ort::CustomOpDomain domain("test.domain");
  domain.Add(&scaled_sum);
  domain.Add(&parallel_ids);
  domain.Add(&fail_if);

  std::vector<float> a(37), b(37);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = 0.1f * static_cast<float>(i) - 2.0f;
    b[i] = 1.5f - 0.3f * static_cast<float>(i);
  }
  const std::vector<float> one = run(env, domain, argv[1], 1, a, b);
  const std::vector<float> two = run(env, domain, argv[1], 2, a, b);
  EXPECT(one == two);
  // Each ParallelIds compute logged once at WARNING; its INFO message is below the session's level.
  EXPECT(computed_messages.load() == 2 && hidden_messages.load() == 0);
  for (size_t i = 0; i < a.size(); ++i) {
    const float want = 0.5f * (a[i] - b[i]);
    if (one[i] != want || one[a.size() + i] != 2.0f * want) {
      std::fprintf(stderr, "element %zu: s %g y %g, expected %g and %g\n", i, one[i], one[a.size() + i], want, 2 * want);
      ++failures;
    }
  }

  Ort::SessionOptions options;
  options.Add(domain);
  Ort::Session session(env, argv[2], options);
  auto mem = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const char* in_name = "x";
  const char* out_name = "y";
  float bad[2] = {-1.0f, 4.0f}, good[2] = {5.0f, 4.0f};
  const int64_t n = 2;
  Ort::Value x = Ort::Value::CreateTensor<float>(mem, bad, 2, &n, 1);
  try {
    session.Run(Ort::RunOptions{nullptr}, &in_name, &x, 1, &out_name, 1);
    std::fprintf(stderr, "FailIf on a negative input ran without an error\n");
    ++failures;
  } catch (const Ort::Exception& e) {
    std::printf("  FailIf -> code %d: %s\n", static_cast<int>(e.GetOrtErrorCode()), e.what());
    EXPECT(std::strstr(e.what(), "FailIf: element 0 is negative") != nullptr);
    if (!on_onnxruntime) EXPECT(e.GetOrtErrorCode() == ORT_INVALID_ARGUMENT);
  }
  Ort::Value ok = Ort::Value::CreateTensor<float>(mem, good, 2, &n, 1);
  auto y = session.Run(Ort::RunOptions{nullptr}, &in_name, &ok, 1, &out_name, 1);
  const float* out = y[0].GetTensorData<float>();
  EXPECT(out[0] == 5.0f && out[1] == 4.0f);

  // Convert's output type comes from its InferOutputShape (Ort::ShapeInferContext).
  if (convert_model) {
    Ort::CustomOpDomain infer_domain("infer.domain");
    infer_domain.Add(&convert);
    Ort::SessionOptions convert_options;
    convert_options.Add(infer_domain);
    Ort::Session convert_session(env, convert_model, convert_options);
    EXPECT(convert_session.GetOutputTypeInfo(1).GetTensorTypeAndShapeInfo().GetElementType() ==
           ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
    float xs[3] = {1.5f, -2.5f, 7.0f};
    const int64_t n3[1] = {3};
    auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::Value xv = Ort::Value::CreateTensor<float>(memory, xs, 3, n3, 1);
    const char* x_name = "x";
    const char* z_name = "z";
    auto z = convert_session.Run(Ort::RunOptions{nullptr}, &x_name, &xv, 1, &z_name, 1);
    const int64_t* zs = z[0].GetTensorData<int64_t>();
    EXPECT(zs[0] == 2 && zs[1] == -4 && zs[2] == 14);
  }

  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("custom_op_cxx_test: all checks passed\n");
  return 0;
}
