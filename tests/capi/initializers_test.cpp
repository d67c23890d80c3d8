// initializers_test.cpp — initializers the program supplies through ONNX
// Runtime's C and C++ APIs, on make_models.py's init.onnx (y = x * w + b,
// w = [1, 2, 3] in external data, b = [0.5, 0.5, 0.5]):
// - AddInitializer (C) and Ort::SessionOptions::AddInitializer: b read from
//   the caller's buffer; the session is created and run at 1 and 2 intra-op
//   threads with the same results;
// - AddExternalInitializers (C) and Ort::SessionOptions::AddExternalInitializers:
//   w replaced by a value the program may free once the session exists
//   (its buffer is overwritten after creation; results unchanged);
// - a name given twice or a NULL value is refused; a value of another shape
//   fails (spindle at creation, ONNX Runtime at the first run), one of
//   another element type fails creation on spindle; a name the model lacks
//   is left unused.
// Every expectation is ONNX Runtime's: the program also runs on its library
// (ctest capi_initializers_on_onnxruntime).
//
//   initializers_test INIT_MODEL [--onnxruntime]
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

// Runs the model on x at `threads` intra-op threads.
std::vector<float> run(Ort::Env& env, const char* model, Ort::SessionOptions& options, std::vector<float> x,
                       int threads) {
  options.SetIntraOpNumThreads(threads);
  Ort::Session session(env, model, options);
  return capi_test::run_x_to_y(session, std::move(x), {3});
}

using capi_test::same_bits;

// Session creation with these options, or its first run, fails (the message printed).
bool creation_fails(Ort::Env& env, const char* model, Ort::SessionOptions& options) {
  try {
    Ort::Session session(env, model, options);
    std::printf("  created\n");
    auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    const int64_t shape[] = {3};
    float x[3] = {1, 1, 1};
    Ort::Value input = Ort::Value::CreateTensor<float>(memory, x, 3, shape, 1);
    const char* in_names[] = {"x"};
    const char* out_names[] = {"y"};
    auto out = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
    const float* y = out[0].GetTensorData<float>();
    std::printf("  ran: %g %g %g\n", y[0], y[1], y[2]);
  } catch (const Ort::Exception& e) {
    std::printf("  failed as expected: %s\n", e.what());
    return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: initializers_test INIT_MODEL [--onnxruntime]\n");
    return 2;
  }
  const char* model = argv[1];
  const bool on_onnxruntime = std::strcmp(argv[argc - 1], "--onnxruntime") == 0;
  ort = &Ort::GetApi();
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "initializers");
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const int64_t shape3[] = {3};
  const std::vector<float> x = {1, -1, 2};

  {  // The model's own initializers.
    Ort::SessionOptions options;
    EXPECT(same_bits(run(env, model, options, x, 1), std::vector<float>({1.5f, -1.5f, 6.5f})));
  }
  {  // C: AddInitializer over the caller's buffer, at 1 and 2 threads.
    float b[3] = {10, 20, 30};
    OrtValue* value = nullptr;
    CHECK(ort->CreateTensorWithDataAsOrtValue(memory, b, sizeof b, shape3, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &value));
    OrtSessionOptions* raw = nullptr;
    CHECK(ort->CreateSessionOptions(&raw));
    CHECK(ort->AddInitializer(raw, "b", value));
    // The same name again.
    OrtStatus* again = ort->AddInitializer(raw, "b", value);
    EXPECT(again != nullptr);
    if (again) {
      std::printf("  AddInitializer twice: %s\n", ort->GetErrorMessage(again));
      ort->ReleaseStatus(again);
    }
    OrtStatus* null_value = ort->AddInitializer(raw, "w", nullptr);
    EXPECT(null_value != nullptr);
    if (null_value) ort->ReleaseStatus(null_value);
    Ort::SessionOptions options(raw);
    const std::vector<float> one = run(env, model, options, x, 1);
    const std::vector<float> two = run(env, model, options, x, 2);
    EXPECT(same_bits(one, std::vector<float>({11.f, 18.f, 36.f})));
    EXPECT(same_bits(one, two));
    ort->ReleaseValue(value);
  }
  {  // C++: Ort::SessionOptions::AddInitializer.
    std::vector<float> b = {-1, -2, -3};
    Ort::Value value = Ort::Value::CreateTensor<float>(memory, b.data(), b.size(), shape3, 1);
    Ort::SessionOptions options;
    options.AddInitializer("b", value);
    EXPECT(same_bits(run(env, model, options, x, 1), std::vector<float>({0.f, -4.f, 3.f})));
  }
  {  // C: AddExternalInitializers; the value's buffer may change once the session exists.
    std::vector<float> w = {2, 2, 2};
    Ort::Value value = Ort::Value::CreateTensor<float>(memory, w.data(), w.size(), shape3, 1);
    const char* names[] = {"w"};
    const OrtValue* values[] = {value};
    Ort::SessionOptions options;
    CHECK(ort->AddExternalInitializers(options, names, values, 1));
    options.SetIntraOpNumThreads(1);
    Ort::Session session(env, model, options);
    w.assign({100, 100, 100});
    std::vector<float> in = x;
    Ort::Value input = Ort::Value::CreateTensor<float>(memory, in.data(), in.size(), shape3, 1);
    const char* in_names[] = {"x"};
    const char* out_names[] = {"y"};
    auto out = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
    const float* y = out[0].GetTensorData<float>();
    EXPECT(same_bits(std::vector<float>(y, y + 3), std::vector<float>({2.5f, -1.5f, 4.5f})));
  }
  {  // C++: AddExternalInitializers, at 1 and 2 threads.
    std::vector<float> w = {3, 0, -1};
    std::vector<Ort::Value> values;
    values.push_back(Ort::Value::CreateTensor<float>(memory, w.data(), w.size(), shape3, 1));
    Ort::SessionOptions options;
    options.AddExternalInitializers({"w"}, values);
    const std::vector<float> one = run(env, model, options, x, 1);
    EXPECT(same_bits(one, std::vector<float>({3.5f, 0.5f, -1.5f})));
    EXPECT(same_bits(one, run(env, model, options, x, 2)));
  }
  {  // A value of another shape.
    float b[2] = {1, 2};
    const int64_t shape2[] = {2};
    Ort::Value value = Ort::Value::CreateTensor<float>(memory, b, 2, shape2, 1);
    Ort::SessionOptions options;
    options.AddInitializer("b", value);
    EXPECT(creation_fails(env, model, options));
  }
  {  // Another element type: spindle refuses it at creation (ONNX Runtime
     // does not check, and reads the doubles as floats).
    double b[3] = {1, 2, 3};
    Ort::Value value = Ort::Value::CreateTensor<double>(memory, b, 3, shape3, 1);
    Ort::SessionOptions options;
    options.AddInitializer("b", value);
    const bool failed = creation_fails(env, model, options);
    if (!on_onnxruntime) EXPECT(failed);
  }
  {  // A name the model has no initializer of is left unused.
    float v[3] = {1, 2, 3};
    Ort::Value value = Ort::Value::CreateTensor<float>(memory, v, 3, shape3, 1);
    Ort::SessionOptions options;
    options.AddInitializer("nope", value);
    EXPECT(same_bits(run(env, model, options, x, 1), std::vector<float>({1.5f, -1.5f, 6.5f})));
  }
  {  // AddExternalInitializers naming an initializer whose data is inside the
     // model: ONNX Runtime refuses it; spindle, which does not keep where an
     // initializer's data came from, uses the value.
    float v[3] = {1, 2, 3};
    std::vector<Ort::Value> values;
    values.push_back(Ort::Value::CreateTensor<float>(memory, v, 3, shape3, 1));
    Ort::SessionOptions options;
    options.AddExternalInitializers({"b"}, values);
    if (on_onnxruntime) {
      EXPECT(creation_fails(env, model, options));
    } else {
      EXPECT(same_bits(run(env, model, options, x, 1), std::vector<float>({2.f, 0.f, 9.f})));
    }
  }
  return CHECKS_DONE("initializers_test");
}
