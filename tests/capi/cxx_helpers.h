// cxx_helpers.h — what the C++ test programs of the C API share: a run of a
// one-input, one-output float model (input "x", output "y") and a bitwise
// comparison of float outputs. Written against the C++ API only, so the
// programs also run on ONNX Runtime's library.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace capi_test {

// Runs the session on x (of the given shape) and returns all of y.
inline std::vector<float> run_x_to_y(Ort::Session& session, std::vector<float> x, const std::vector<int64_t>& shape) {
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(memory, x.data(), x.size(), shape.data(), shape.size());
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  auto out = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
  const float* y = out[0].GetTensorData<float>();
  return std::vector<float>(y, y + out[0].GetTensorTypeAndShapeInfo().GetElementCount());
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace capi_test
