// kernel_info_test.cpp — what a custom kernel reads from its node at
// creation through ONNX Runtime's C++ API: a tensor attribute
// (Ort::ConstKernelInfo::GetTensorAttribute, KernelInfoGetAttribute_tensor),
// a list of strings (GetAttributes<std::string>,
// KernelInfoGetAttributeArray_string) and a constant initializer input
// (GetTensorConstantInput, KernelInfoGetConstantInput_tensor). The op
// Offset(x, k; bias: tensor, tags: strings) of the domain "info.domain"
// computes y = x + bias + k * len(tags), with k read at creation when it is
// constant; make_models.py writes it with k an initializer (kinfo.onnx) and
// with k a graph input (kinfo_input.onnx). Outputs are checked against
// values computed here at 1 and 2 intra-op threads; a missing attribute is
// an error naming it. The program also runs on ONNX Runtime's library
// (ctest capi_kernel_info_on_onnxruntime).
//
// With KOP_MODEL, the op Leaky(x; alpha) runs the built-in LeakyRelu from
// inside its kernel (Ort::OpAttr, Ort::Op::Create, Ort::Op::Invoke:
// CreateOpAttr, CreateOp, InvokeOp), checked at 1 and 2 threads; a type
// constraint LeakyRelu does not take (T = int64) refuses the session; on
// spindle also a constraint name LeakyRelu does not have, and an input of
// another type than the constraint fixed (InvokeOp's error).
//
//   kernel_info_test KINFO_MODEL KINFO_INPUT_MODEL [KOP_MODEL] [--onnxruntime]
#include <onnxruntime_cxx_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checks.h"
#include "cxx_helpers.h"

namespace {
int failures = 0;

// What the last kernel created saw.
struct Seen {
  int k_constant = -1, x_constant = -1;
  std::vector<float> bias, k;
  std::vector<std::string> tags;
  std::string missing_error;
};
Seen seen;

struct OffsetKernel {
  OffsetKernel(const OrtApi&, const OrtKernelInfo* info) {
    Ort::ConstKernelInfo ki(info);
    Ort::AllocatorWithDefaultOptions allocator;
    Ort::Value bias = ki.GetTensorAttribute("bias", allocator);
    const float* b = bias.GetTensorData<float>();
    bias_.assign(b, b + bias.GetTensorTypeAndShapeInfo().GetElementCount());
    tags_ = ki.GetAttributes<std::string>("tags");
    int is_constant = -1;
    Ort::ConstValue k = ki.GetTensorConstantInput(1, &is_constant);
    if (is_constant) {
      const float* kv = k.GetTensorData<float>();
      k_.assign(kv, kv + k.GetTensorTypeAndShapeInfo().GetElementCount());
    }
    seen.k_constant = is_constant;
    ki.GetTensorConstantInput(0, &seen.x_constant);
    seen.bias = bias_;
    seen.k = k_;
    seen.tags = tags_;
    try {
      ki.GetTensorAttribute("absent", allocator);
    } catch (const Ort::Exception& e) {
      seen.missing_error = e.what();
    }
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    Ort::KernelContext ctx(context);
    Ort::ConstValue x = ctx.GetInput(0);
    const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
    const size_t n = x.GetTensorTypeAndShapeInfo().GetElementCount();
    if (n != bias_.size()) return Ort::GetApi().CreateStatus(ORT_INVALID_ARGUMENT, "Offset: x and bias differ in size");
    const float* k = k_.empty() ? ctx.GetInput(1).GetTensorData<float>() : k_.data();
    const float* a = x.GetTensorData<float>();
    float* y = ctx.GetOutput(0, shape).GetTensorMutableData<float>();
    for (size_t i = 0; i < n; ++i) y[i] = a[i] + bias_[i] + k[i] * static_cast<float>(tags_.size());
    return nullptr;
  }
  std::vector<float> bias_, k_;
  std::vector<std::string> tags_;
};

struct OffsetOp : Ort::CustomOpBase<OffsetOp, OffsetKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new OffsetKernel(api, info);
    } catch (const Ort::Exception& e) {
      return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
    }
    return nullptr;
  }
  const char* GetName() const { return "Offset"; }
  size_t GetInputTypeCount() const { return 2; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};
const OffsetOp offset_op;

// Leaky(x; alpha: float) runs the built-in LeakyRelu (opset 16) on its
// input through Ort::Op, made once at kernel creation.
// The type constraint the next LeakyKernel gives CreateOp, and whether it
// invokes the op on an int64 tensor (recording the error in invoke_error).
struct LeakySetup {
  const char* constraint = "T";
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
  bool invoke_int64 = false;
  std::string invoke_error;
};
LeakySetup leaky;

struct LeakyKernel {
  LeakyKernel(const OrtApi&, const OrtKernelInfo* info) {
    const float alpha = Ort::ConstKernelInfo(info).GetAttribute<float>("alpha");
    Ort::OpAttr attrs[] = {Ort::OpAttr("alpha", &alpha, 1, ORT_OP_ATTR_FLOAT)};
    const char* type_names[] = {leaky.constraint};
    const ONNXTensorElementDataType type_values[] = {leaky.type};
    op_ = Ort::Op::Create(info, "LeakyRelu", "", 16, type_names, type_values, 1, attrs, 1, 1, 1);
  }
  OrtStatusPtr ComputeV2(OrtKernelContext* context) {
    try {
      Ort::KernelContext ctx(context);
      if (leaky.invoke_int64) {
        auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
        int64_t v[2] = {-1, 1};
        const int64_t shape[] = {2};
        Ort::Value wrong = Ort::Value::CreateTensor<int64_t>(memory, v, 2, shape, 1);
        Ort::Value result{nullptr};
        const OrtValue* in[] = {wrong};
        OrtValue* out[] = {result};
        try {
          op_.Invoke(context, in, 1, out, 1);
        } catch (const Ort::Exception& e) {
          leaky.invoke_error = e.what();
        }
      }
      Ort::ConstValue x = ctx.GetInput(0);
      Ort::UnownedValue y = ctx.GetOutput(0, x.GetTensorTypeAndShapeInfo().GetShape());
      const OrtValue* in[] = {x};
      OrtValue* out[] = {y};
      op_.Invoke(context, in, 1, out, 1);
    } catch (const Ort::Exception& e) {
      return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
    }
    return nullptr;
  }
  Ort::Op op_{nullptr};
};

struct LeakyOp : Ort::CustomOpBase<LeakyOp, LeakyKernel, true> {
  OrtStatusPtr CreateKernelV2(const OrtApi& api, const OrtKernelInfo* info, void** kernel) const {
    try {
      *kernel = new LeakyKernel(api, info);
    } catch (const Ort::Exception& e) {
      return Ort::GetApi().CreateStatus(ORT_FAIL, e.what());
    }
    return nullptr;
  }
  const char* GetName() const { return "Leaky"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
};
const LeakyOp leaky_op;

std::vector<float> run(Ort::Env& env, Ort::CustomOpDomain& domain, const char* model, int threads, bool feed_k) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(threads);
  options.Add(domain);
  Ort::Session session(env, model, options);
  auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const int64_t shape[] = {3};
  float x[3] = {1, 2, 3}, k[3] = {-1, -2, -3};
  std::vector<Ort::Value> inputs;
  inputs.push_back(Ort::Value::CreateTensor<float>(memory, x, 3, shape, 1));
  if (feed_k) inputs.push_back(Ort::Value::CreateTensor<float>(memory, k, 3, shape, 1));
  const char* in_names[] = {"x", "k"};
  const char* out_names[] = {"y"};
  auto out = session.Run(Ort::RunOptions{nullptr}, in_names, inputs.data(), inputs.size(), out_names, 1);
  const float* y = out[0].GetTensorData<float>();
  return std::vector<float>(y, y + 3);
}

using capi_test::same_bits;
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kernel_info_test KINFO_MODEL KINFO_INPUT_MODEL [KOP_MODEL] [--onnxruntime]\n");
    return 2;
  }
  const bool on_onnxruntime = std::strcmp(argv[argc - 1], "--onnxruntime") == 0;
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "kernel_info");
  Ort::CustomOpDomain domain("info.domain");
  domain.Add(&offset_op);

  // k = [10, 20, 30] an initializer; bias = [0.5, 0.25, 0.125]; tags = ["a", "b"].
  const std::vector<float> expected = {1 + 0.5f + 20, 2 + 0.25f + 40, 3 + 0.125f + 60};
  const std::vector<float> one = run(env, domain, argv[1], 1, false);
  EXPECT(seen.k_constant == 1);
  EXPECT(seen.x_constant == 0);
  EXPECT(same_bits(seen.k, std::vector<float>({10, 20, 30})));
  EXPECT(same_bits(seen.bias, std::vector<float>({0.5f, 0.25f, 0.125f})));
  EXPECT(seen.tags == std::vector<std::string>({"a", "b"}));
  EXPECT(seen.missing_error.find("absent") != std::string::npos);
  std::printf("  missing attribute: %s\n", seen.missing_error.c_str());
  EXPECT(same_bits(one, expected));
  EXPECT(same_bits(one, run(env, domain, argv[1], 2, false)));

  // k a graph input: not constant, read at run time.
  const std::vector<float> fed = run(env, domain, argv[2], 1, true);
  EXPECT(seen.k_constant == 0);
  EXPECT(seen.k.empty());
  EXPECT(same_bits(fed, std::vector<float>({1 + 0.5f - 2, 2 + 0.25f - 4, 3 + 0.125f - 6})));

  if (argc > 3 && std::strcmp(argv[3], "--onnxruntime") != 0) {  // KOP_MODEL: y = Leaky(x; alpha = 0.25)
    Ort::CustomOpDomain leaky_domain("info.domain");
    leaky_domain.Add(&leaky_op);
    auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    std::vector<float> x(1000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 150.0f;
    std::vector<float> expected_y(x.size());
    for (size_t i = 0; i < x.size(); ++i) expected_y[i] = x[i] >= 0 ? x[i] : x[i] * 0.25f;
    auto run_leaky = [&](int threads) {
      Ort::SessionOptions options;
      options.SetIntraOpNumThreads(threads);
      options.Add(leaky_domain);
      Ort::Session session(env, argv[3], options);
      const int64_t shape[] = {static_cast<int64_t>(x.size())};
      Ort::Value input = Ort::Value::CreateTensor<float>(memory, x.data(), x.size(), shape, 1);
      const char* in_names[] = {"x"};
      const char* out_names[] = {"y"};
      auto out = session.Run(Ort::RunOptions{nullptr}, in_names, &input, 1, out_names, 1);
      const float* y = out[0].GetTensorData<float>();
      return std::vector<float>(y, y + x.size());
    };
    for (int threads : {1, 2}) EXPECT(same_bits(run_leaky(threads), expected_y));
    auto refused = [&](const char* what) {
      try {
        Ort::SessionOptions options;
        options.Add(leaky_domain);
        Ort::Session session(env, argv[3], options);
      } catch (const Ort::Exception& e) {
        std::printf("  %s: %s\n", what, e.what());
        return true;
      }
      return false;
    };
    leaky.type = ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    EXPECT(refused("T = int64 refused"));
    leaky.type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    if (!on_onnxruntime) {
      leaky.constraint = "U";
      EXPECT(refused("constraint U refused"));
      leaky.constraint = "T";
      leaky.invoke_int64 = true;
      const std::vector<float> y = run_leaky(1);
      std::printf("  int64 input refused: %s\n", leaky.invoke_error.c_str());
      EXPECT(leaky.invoke_error.find("fixed its type 'T' to float32") != std::string::npos);
      EXPECT(same_bits(y, expected_y));
      leaky.invoke_int64 = false;
    }
  }
  return CHECKS_DONE("kernel_info_test");
}
