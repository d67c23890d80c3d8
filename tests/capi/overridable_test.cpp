// overridable_test.cpp — initializers that are also graph inputs (IR >= 4),
// through ONNX Runtime's C and C++ APIs, on make_models.py's over.onnx:
//   x float32 [1, 1, 3, 3] -> y = Conv(x, w, b), z = w * w
//   w = [[[[1, 2], [3, 4]]]] and b = [0.5] are initializers listed as inputs.
// - the session's inputs are x alone; w and b are its overridable
//   initializers, in model order, with their types and shapes;
// - a run without w or b uses the initializers; a feed of w (or b) wins,
//   through the Conv as through the Mul, and the next run without it is back
//   to the initializer; at 1 and 2 intra-op threads, at every optimization
//   level, with the same results;
// - the optimized model a session writes back keeps them overridable.
// Every expectation is ONNX Runtime's: the program also runs on its library
// (ctest capi_overridable_on_onnxruntime).
//
//   overridable_test OVER_MODEL [--onnxruntime]
#include <onnxruntime_cxx_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks.h"
#include "cxx_helpers.h"

namespace {
int failures = 0;
const OrtApi* ort = nullptr;

struct Outputs {
  std::vector<float> y, z;
};

// Runs the session on x = 1..9 with the extra feeds given.
Outputs run(Ort::Session& session, const std::vector<const char*>& extra_names, std::vector<Ort::Value>& extra) {
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int64_t shape[] = {1, 1, 3, 3};
  std::vector<Ort::Value> feeds;
  feeds.push_back(Ort::Value::CreateTensor<float>(memory, x, 9, shape, 4));
  std::vector<const char*> names = {"x"};
  for (size_t i = 0; i < extra.size(); ++i) {
    names.push_back(extra_names[i]);
    feeds.push_back(std::move(extra[i]));
  }
  const char* out_names[] = {"y", "z"};
  auto out = session.Run(Ort::RunOptions{nullptr}, names.data(), feeds.data(), feeds.size(), out_names, 2);
  Outputs r;
  const float* y = out[0].GetTensorData<float>();
  const float* z = out[1].GetTensorData<float>();
  r.y.assign(y, y + out[0].GetTensorTypeAndShapeInfo().GetElementCount());
  r.z.assign(z, z + out[1].GetTensorTypeAndShapeInfo().GetElementCount());
  return r;
}

using capi_test::same_bits;

// What the session reports: x the only input, w and b overridable.
void check_metadata(Ort::Session& session) {
  EXPECT(session.GetInputCount() == 1);
  EXPECT(session.GetOverridableInitializerCount() == 2);
  Ort::AllocatorWithDefaultOptions allocator;
  if (session.GetOverridableInitializerCount() != 2) return;
  EXPECT(std::string(session.GetOverridableInitializerNameAllocated(0, allocator).get()) == "w");
  EXPECT(std::string(session.GetOverridableInitializerNameAllocated(1, allocator).get()) == "b");
  Ort::TypeInfo w_type = session.GetOverridableInitializerTypeInfo(0);
  EXPECT(w_type.GetONNXType() == ONNX_TYPE_TENSOR);
  auto w_info = w_type.GetTensorTypeAndShapeInfo();
  EXPECT(w_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT(w_info.GetShape() == std::vector<int64_t>({1, 1, 2, 2}));
  Ort::TypeInfo b_type = session.GetOverridableInitializerTypeInfo(1);
  EXPECT(b_type.GetTensorTypeAndShapeInfo().GetShape() == std::vector<int64_t>({1}));
  // Through the C API: an index past the end is refused.
  OrtTypeInfo* info = nullptr;
  OrtStatus* status = ort->SessionGetOverridableInitializerTypeInfo(session, 2, &info);
  EXPECT(status != nullptr);
  if (status) ort->ReleaseStatus(status);
}

void check_runs(Ort::Env& env, const char* model, GraphOptimizationLevel level, int threads) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(level);
  options.SetIntraOpNumThreads(threads);
  Ort::Session session(env, model, options);
  check_metadata(session);
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> none;
  const Outputs defaults = run(session, {}, none);
  EXPECT(same_bits(defaults.y, {37.5f, 47.5f, 67.5f, 77.5f}));
  EXPECT(same_bits(defaults.z, {1, 4, 9, 16}));
  float w[4] = {1, 0, 0, -1};
  const int64_t w_shape[] = {1, 1, 2, 2};
  std::vector<Ort::Value> fed_w;
  fed_w.push_back(Ort::Value::CreateTensor<float>(memory, w, 4, w_shape, 4));
  const Outputs with_w = run(session, {"w"}, fed_w);
  EXPECT(same_bits(with_w.y, {-3.5f, -3.5f, -3.5f, -3.5f}));
  EXPECT(same_bits(with_w.z, {1, 0, 0, 1}));
  float b[1] = {100};
  const int64_t b_shape[] = {1};
  std::vector<Ort::Value> fed_b;
  fed_b.push_back(Ort::Value::CreateTensor<float>(memory, b, 1, b_shape, 1));
  const Outputs with_b = run(session, {"b"}, fed_b);
  EXPECT(same_bits(with_b.y, {137.f, 147.f, 167.f, 177.f}));
  const Outputs again = run(session, {}, none);
  EXPECT(same_bits(again.y, defaults.y));
  EXPECT(same_bits(again.z, defaults.z));
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: overridable_test OVER_MODEL [--onnxruntime]\n");
    return 2;
  }
  ort = &Ort::GetApi();
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "overridable");
  const char* model = argv[1];
  try {
    for (GraphOptimizationLevel level : {ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_ALL})
      for (int threads : {1, 2}) check_runs(env, model, level, threads);
    // The optimized model written back keeps them overridable, with their values.
    const std::string written = std::string(model) + (argc > 2 ? ".ort-optimized.onnx" : ".optimized.onnx");
    {
      Ort::SessionOptions options;
      options.SetGraphOptimizationLevel(ORT_ENABLE_BASIC);
      options.SetOptimizedModelFilePath(written.c_str());
      Ort::Session session(env, model, options);
    }
    Ort::SessionOptions options;
    Ort::Session again(env, written.c_str(), options);
    check_metadata(again);
    std::vector<Ort::Value> none;
    EXPECT(same_bits(run(again, {}, none).y, {37.5f, 47.5f, 67.5f, 77.5f}));
  } catch (const Ort::Exception& e) {
    std::printf("FAILED: %s\n", e.what());
    ++failures;
  }
  return CHECKS_DONE("overridable_test");
}
