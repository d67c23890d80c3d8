// denotation_test.cpp — AddFreeDimensionOverride (free dimensions fixed by
// their denotation) through ONNX Runtime's C and C++ APIs, on make_models.py's
// denot.onnx: x float32 [batch, 3] -> y = Relu(x), x's dimensions denoted
// DATA_BATCH and DATA_CHANNEL.
// - DATA_BATCH (or data_batch: denotations match without regard to case)
//   fixed at 2: x's type info reports [2, 3]; a feed of 2 rows runs, one of 3
//   is refused and the session stays usable;
// - DATA_CHANNEL fixed at 2, where the model says 3: the session is refused;
// - a denotation the model does not use changes nothing;
// - a negative size is refused by the call.
// Every expectation is ONNX Runtime's: the program also runs on its library
// (ctest capi_denotation_on_onnxruntime).
//
//   denotation_test DENOT_MODEL [--onnxruntime]
#include <onnxruntime_cxx_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks.h"

namespace {
int failures = 0;
const OrtApi* ort = nullptr;

// Runs x = `rows` rows of [-1, 0, 2]; true when the run succeeded with Relu's result.
bool runs(Ort::Session& session, int64_t rows) {
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<float> x;
  for (int64_t r = 0; r < rows; ++r) x.insert(x.end(), {-1.f, 0.f, 2.f});
  const int64_t shape[] = {rows, 3};
  Ort::Value input = Ort::Value::CreateTensor<float>(memory, x.data(), x.size(), shape, 2);
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  try {
    auto out = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
    const float* y = out[0].GetTensorData<float>();
    bool ok = out[0].GetTensorTypeAndShapeInfo().GetShape() == std::vector<int64_t>({rows, 3});
    for (int64_t r = 0; ok && r < rows; ++r) ok = y[3 * r] == 0.f && y[3 * r + 1] == 0.f && y[3 * r + 2] == 2.f;
    return ok;
  } catch (const Ort::Exception& e) {
    std::printf("  run of %lld rows refused: %s\n", static_cast<long long>(rows), e.what());
    EXPECT(e.GetOrtErrorCode() == ORT_INVALID_ARGUMENT);
    return false;
  }
}

std::vector<int64_t> input_shape(Ort::Session& session) {
  Ort::TypeInfo type = session.GetInputTypeInfo(0);
  return type.GetTensorTypeAndShapeInfo().GetShape();
}

Ort::SessionOptions fixing(const char* denotation, int64_t size) {
  Ort::SessionOptions options;
  CHECK(ort->AddFreeDimensionOverride(options, denotation, size));
  return options;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: denotation_test DENOT_MODEL [--onnxruntime]\n");
    return 2;
  }
  ort = &Ort::GetApi();
  Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "denotation");
  const char* model = argv[1];
  for (const char* batch : {"DATA_BATCH", "data_batch"}) {
    Ort::SessionOptions options = fixing(batch, 2);
    Ort::Session session(env, model, options);
    EXPECT(input_shape(session) == std::vector<int64_t>({2, 3}));
    EXPECT(runs(session, 2));
    EXPECT(!runs(session, 3));
    EXPECT(runs(session, 2));
  }
  {  // A dimension the model fixes at another size.
    Ort::SessionOptions options = fixing("DATA_CHANNEL", 2);
    bool refused = false;
    try {
      Ort::Session session(env, model, options);
    } catch (const Ort::Exception& e) {
      std::printf("  refused: %s\n", e.what());
      refused = true;
    }
    EXPECT(refused);
  }
  {  // The size the model has: accepted.
    Ort::SessionOptions options = fixing("DATA_CHANNEL", 3);
    Ort::Session session(env, model, options);
    EXPECT(runs(session, 3));
  }
  {  // A denotation the model does not use.
    Ort::SessionOptions options = fixing("DATA_FEATURE", 2);
    Ort::Session session(env, model, options);
    EXPECT(input_shape(session) == std::vector<int64_t>({-1, 3}));
    EXPECT(runs(session, 2));
    EXPECT(runs(session, 3));
  }
  {  // A negative size.
    Ort::SessionOptions options;
    OrtStatus* status = ort->AddFreeDimensionOverride(options, "DATA_BATCH", -1);
    const bool refused_here = status != nullptr;
    if (status) ort->ReleaseStatus(status);
    if (!refused_here) {
      // ONNX Runtime may take it and refuse the session instead.
      bool refused = false;
      try {
        Ort::Session session(env, model, options);
      } catch (const Ort::Exception&) {
        refused = true;
      }
      std::printf("  negative size: session %s\n", refused ? "refused" : "created");
    }
  }
  return CHECKS_DONE("denotation_test");
}
