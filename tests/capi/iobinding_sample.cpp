// iobinding_sample.cpp — a program written the way ONNX Runtime's public C++
// samples are: Ort::Env, Ort::Session, input names and shapes from the
// model, then the run twice, once with Session::Run and once through an
// Ort::IoBinding (the inputs bound, one output written into the program's
// own buffer, the others allocated by the run). It includes only
// <onnxruntime_cxx_api.h> and builds unchanged against ONNX Runtime's
// headers and library and against spindle's (ctest capi_iobinding_sample and
// capi_iobinding_sample_on_onnxruntime run it on both).
//
//   iobinding_sample MODEL [--onnxruntime]
//
// Every input must be float; a dynamic batch (first) dimension is fed as 1,
// another dynamic dimension as 64. The two runs
// must give the same outputs, bit for bit.
#include <onnxruntime_cxx_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

int main(int argc, char* argv[]) {
  if (argc < 2) {
    std::cerr << "usage: iobinding_sample MODEL [--onnxruntime]\n";
    return 2;
  }
  try {
    Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "iobinding_sample");
    Ort::SessionOptions session_options;
    session_options.SetIntraOpNumThreads(2);
    session_options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
    Ort::Session session(env, argv[1], session_options);

    Ort::AllocatorWithDefaultOptions allocator;
    auto memory_info = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);

    // Inputs: names and shapes from the model, filled with a fixed pattern.
    std::vector<std::string> input_names;
    std::vector<std::vector<float>> input_data;
    std::vector<Ort::Value> input_tensors;
    for (size_t i = 0; i < session.GetInputCount(); ++i) {
      input_names.emplace_back(session.GetInputNameAllocated(i, allocator).get());
      auto type_info = session.GetInputTypeInfo(i);
      auto tensor_info = type_info.GetTensorTypeAndShapeInfo();
      if (tensor_info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
        std::cerr << "input " << input_names.back() << " is not float\n";
        return 2;
      }
      std::vector<int64_t> shape = tensor_info.GetShape();
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] < 0) shape[d] = d == 0 ? 1 : 64;
      const size_t count = std::accumulate(shape.begin(), shape.end(), size_t{1},
                                           [](size_t a, int64_t d) { return a * static_cast<size_t>(d); });
      std::vector<float> data(count);
      for (size_t k = 0; k < count; ++k) data[k] = std::sin(0.01f * static_cast<float>(k)) * 0.5f;
      input_data.push_back(std::move(data));
      input_tensors.push_back(Ort::Value::CreateTensor<float>(memory_info, input_data.back().data(), count,
                                                              shape.data(), shape.size()));
    }
    std::vector<std::string> output_names;
    for (size_t i = 0; i < session.GetOutputCount(); ++i)
      output_names.emplace_back(session.GetOutputNameAllocated(i, allocator).get());

    std::vector<const char*> input_ptrs, output_ptrs;
    for (auto& n : input_names) input_ptrs.push_back(n.c_str());
    for (auto& n : output_names) output_ptrs.push_back(n.c_str());

    // The plain run.
    auto expected = session.Run(Ort::RunOptions{nullptr}, input_ptrs.data(), input_tensors.data(),
                                input_tensors.size(), output_ptrs.data(), output_ptrs.size());

    // The bound run: the first output goes into this buffer, the rest to CPU memory.
    auto first_info = expected[0].GetTensorTypeAndShapeInfo();
    std::vector<int64_t> first_shape = first_info.GetShape();
    std::vector<float> first_output(first_info.GetElementCount(), -1.0f);
    Ort::Value first_value = Ort::Value::CreateTensor<float>(memory_info, first_output.data(), first_output.size(),
                                                             first_shape.data(), first_shape.size());
    Ort::IoBinding io_binding{session};
    for (size_t i = 0; i < input_tensors.size(); ++i) io_binding.BindInput(input_ptrs[i], input_tensors[i]);
    io_binding.BindOutput(output_ptrs[0], first_value);
    Ort::MemoryInfo output_mem_info{"Cpu", OrtDeviceAllocator, 0, OrtMemTypeDefault};
    for (size_t i = 1; i < output_ptrs.size(); ++i) io_binding.BindOutput(output_ptrs[i], output_mem_info);
    io_binding.SynchronizeInputs();
    session.Run(Ort::RunOptions{nullptr}, io_binding);
    io_binding.SynchronizeOutputs();

    std::vector<std::string> bound_names = io_binding.GetOutputNames();
    std::vector<Ort::Value> bound = io_binding.GetOutputValues();
    int failures = 0;
    if (bound_names != output_names || bound.size() != expected.size()) {
      std::cerr << "the binding names " << bound_names.size() << " outputs, the model has " << output_names.size() << "\n";
      return 1;
    }
    for (size_t i = 0; i < bound.size(); ++i) {
      auto info = expected[i].GetTensorTypeAndShapeInfo();
      const size_t count = info.GetElementCount();
      const float* want = expected[i].GetTensorData<float>();
      const float* got = i == 0 ? first_output.data() : bound[i].GetTensorData<float>();
      if (bound[i].GetTensorTypeAndShapeInfo().GetShape() != info.GetShape() ||
          std::memcmp(want, got, count * sizeof(float)) != 0) {
        std::cerr << "output " << output_names[i] << " differs between Run and the bound run\n";
        failures++;
      }
      if (i == 0 && bound[0].GetTensorData<float>() != first_output.data()) {
        std::cerr << "output " << output_names[0] << " was not written into the bound buffer\n";
        failures++;
      }
      double sum = 0;
      for (size_t k = 0; k < count; ++k) sum += want[k];
      std::printf("%s: %zu values, sum %.6f\n", output_names[i].c_str(), count, sum);
    }
    io_binding.ClearBoundInputs();
    io_binding.ClearBoundOutputs();
    if (failures) return 1;
    std::printf("iobinding_sample: the bound run equals the plain run\n");
  } catch (const Ort::Exception& e) {
    std::cerr << "error " << e.GetOrtErrorCode() << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
